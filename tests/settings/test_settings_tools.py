"""settings.tools: the repository's settings over the user's, key by key; errors name file and key.

The user's file is found through platformdirs, so each test points
``XDG_CONFIG_HOME`` at its own folder (HOME must stay empty).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engine.errors import RedlineError, SettingsError
from redline.settings.tools import (
    Committed,
    ConfigError,
    Override,
    load_config,
    parse_config,
    repository_root,
    user_config_file,
)
from redline.tools.permissions import Decision


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's config folder for this test (``$XDG_CONFIG_HOME/redline``)."""
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    return xdg / "redline"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_user_file_is_in_the_platform_config_folder(user_dir: Path) -> None:
    assert user_config_file() == user_dir / "config.toml"


def test_no_file_gives_no_settings(user_dir: Path, repo: Path) -> None:
    config = load_config(repo)
    assert config.sources == ()
    assert config.compat == {}
    assert config.permissions.rules == {}
    assert config.permissions.root == str(repo)


def test_compat_is_the_repositorys_key_by_key_permissions_the_stricter(
    user_dir: Path, repo: Path
) -> None:
    user = write(
        user_dir / "config.toml",
        """
[compat.apply_patch]
enabled = true
freeform = false
[compat.providers.openrouter.apply_patch]
freeform = false
[permission]
edit = "ask"
write = "deny"
[permission.delete]
"**" = "deny"
""",
    )
    own = write(
        repo / ".redline.toml",
        """
[guard]
action = "reject"
[compat.apply_patch]
freeform = true
[permission.edit]
"**" = "allow"
"migrations/**" = "deny"
""",
    )
    config = load_config(repo)
    assert config.sources == (str(user), str(own))
    # compat: each setting on its own
    assert config.compat[("all", "", "enabled")] == Override(
        True, "compat.apply_patch.enabled", str(user)
    )
    assert config.compat[("all", "", "freeform")] == Override(
        True, "compat.apply_patch.freeform", str(own)
    )
    assert config.compat[("provider", "openrouter", "freeform")].source == str(user)
    # permission: each file decides with its own rules; the stricter decision stands
    permissions = config.permissions
    assert [r.pattern for r in permissions.rules["edit"]] == ["**", "migrations/**"]
    assert permissions.decide("edit", "migrations/1.sql").action == "deny"
    # the repository's "**" = "allow" does not lift the user's edit = "ask"
    assert permissions.decide("edit", "src/a.py") == Decision(
        "ask", 'permission.edit = "ask"', str(user)
    )
    assert permissions.decide("write", "a").source == str(user)
    assert permissions.decide("delete", "a").action == "deny"


@pytest.mark.parametrize(
    ("users", "repositorys", "expected"),
    [
        ('write = "deny"', 'write = "allow"', "deny"),
        ('"*" = "deny"', 'write = "allow"', "deny"),
        ('write = "ask"', '"*" = "allow"', "ask"),
        ('write = "allow"', 'write = "deny"', "deny"),  # the repository adds a restriction
        ('[permission.write]\n"**" = "deny"', '[permission.write]\n"a" = "allow"', "deny"),
    ],
)
def test_a_repository_cannot_lift_the_users_restriction(
    user_dir: Path, repo: Path, users: str, repositorys: str, expected: str
) -> None:
    def table(rules: str) -> str:
        return rules if rules.startswith("[") else f"[permission]\n{rules}\n"

    write(user_dir / "config.toml", table(users))
    write(repo / ".redline.toml", table(repositorys))
    permissions = load_config(repo).permissions
    assert permissions.decide("write", "a").action == expected
    assert permissions.available("write") is (expected != "deny")


def test_only_the_users_file_can_let_an_agent_change_the_settings_files(
    user_dir: Path, repo: Path
) -> None:
    assert load_config(repo).policy_files is False
    write(user_dir / "config.toml", '[permission]\npolicy_files = "allow"\n')
    assert load_config(repo).policy_files is True
    write(repo / ".redline.toml", '[permission]\npolicy_files = "allow"\n')
    with pytest.raises(ConfigError) as info:
        load_config(repo)
    assert info.value.where == "permission.policy_files"
    assert "only your own config file can let an agent change" in info.value.problem
    write(repo / ".redline.toml", "")
    write(user_dir / "config.toml", '[permission]\npolicy_files = "yes"\n')
    with pytest.raises(ConfigError) as info:
        load_config(repo)
    assert 'must be "allow" or "deny"' in info.value.problem


def test_committed_settings_stand_in_for_the_repositorys_files(user_dir: Path, repo: Path) -> None:
    write(repo / ".redline.toml", '[permission]\nwrite = "allow"\n')  # the worktree's
    committed = Committed({".redline.toml": b'[permission]\nwrite = "deny"\n'}, "on main")
    config = load_config(repo, committed)
    assert config.sources == (".redline.toml on main",)
    assert config.permissions.decide("write", "a") == Decision(
        "deny", 'permission.write = "deny"', ".redline.toml on main"
    )
    pyproject = b'[tool.redline.permission]\ndelete = "deny"\n'
    config = load_config(repo, Committed({"pyproject.toml": pyproject}, "on main"))
    assert config.permissions.decide("delete", "a").action == "deny"
    assert load_config(repo, Committed({}, "on main")).permissions.rules == {}


def test_pyproject_tool_redline_is_read_when_there_is_no_redline_toml(
    user_dir: Path, repo: Path
) -> None:
    write(
        repo / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.redline.permission]\nedit = "deny"\n',
    )
    config = load_config(repo)
    assert config.sources == (f"{repo / 'pyproject.toml'} [tool.redline]",)
    assert config.permissions.decide("edit", "a").action == "deny"
    write(repo / ".redline.toml", '[permission]\nwrite = "deny"\n')
    config = load_config(repo)
    assert config.sources == (str(repo / ".redline.toml"),)
    assert config.permissions.decide("edit", "a").action == "allow"
    assert config.permissions.decide("write", "a").action == "deny"


def test_a_pyproject_without_the_table_gives_nothing(user_dir: Path, repo: Path) -> None:
    write(repo / "pyproject.toml", '[project]\nname = "x"\n')
    assert load_config(repo).sources == ()


@pytest.mark.parametrize(
    ("scope", "model", "provider", "expected"),
    [
        ("model", "gpt-5", None, "compat.models.gpt-5.apply_patch.enabled"),
        ("model", "openai/gpt-5", "openai", 'compat.models."openai/gpt-5".apply_patch.enabled'),
        ("bare", "azure/gpt-5", "azure", "compat.models.gpt-5.apply_patch.enabled"),
        ("provider", "gpt-5.5", "openrouter", "compat.providers.openrouter.apply_patch.enabled"),
        ("all", "gpt-5.5", "other", "compat.apply_patch.enabled"),
        ("all", None, None, "compat.apply_patch.enabled"),
    ],
)
def test_the_model_beats_the_provider_beats_every_model(
    scope: str, model: str | None, provider: str | None, expected: str
) -> None:
    config = parse_config(
        """
[compat.apply_patch]
enabled = true
[compat.providers.openrouter.apply_patch]
enabled = false
[compat.models."gpt-5".apply_patch]
enabled = false
[compat.models."openai/gpt-5".apply_patch]
enabled = true
""",
        ".redline.toml",
    )
    found = config.apply_patch_setting("enabled", model, provider)
    assert found is not None
    assert found.key == expected
    assert config.apply_patch_setting("freeform", model, provider) is None


INVALID = [
    ("[permission\n", "line 1, column 12", "not valid TOML: Expected ']'"),
    ('[permissions]\nedit = "deny"\n', "permissions", "unknown key; use [permission], [compat]"),
    ('permission = "deny"\n', "permission", "must be a table of tool = action"),
    ('[permission]\nread = "deny"\n', "permission.read", "unknown tool; use edit, apply_patch"),
    (
        '[permission]\nedit = "block"\n',
        "permission.edit",
        'must be "allow", "deny" or "ask" (got \'block\')',
    ),
    (
        "[permission]\nedit = true\n",
        "permission.edit",
        "or a table of path globs to actions (got True)",
    ),
    ("[permission.edit]\n", "permission.edit", "a table of path globs to actions (got {})"),
    ('[permission.edit]\n"src/**" = "no"\n', 'permission.edit."src/**"', "(got 'no')"),
    (
        '[permission.edit]\n"!src/**" = "deny"\n',
        'permission.edit."!src/**"',
        "'!' (negation) is not supported",
    ),
    (
        '[permission.edit]\n"a\\\\" = "deny"\n',
        'permission.edit."a\\\\"',
        "not a valid gitignore-style glob",
    ),
    (
        '[permission]\npatch = "deny"\napply_patch = "allow"\n',
        "permission.apply_patch",
        "apply_patch and patch name the same tool; keep one",
    ),
    ("[compat]\nedit = 1\n", "compat.edit", "unknown key; use [compat.apply_patch]"),
    (
        '[compat.apply_patch]\nenabled = "yes"\n',
        "compat.apply_patch.enabled",
        "must be true or false (leave it out to infer it; got 'yes')",
    ),
    (
        "[compat.apply_patch]\ngrammar = true\n",
        "compat.apply_patch.grammar",
        "unknown key; use enabled or freeform",
    ),
    (
        '[compat]\napply_patch = "on"\n',
        "compat.apply_patch",
        "must be a table with enabled and/or freeform",
    ),
    ('[compat]\nproviders = "openai"\n', "compat.providers", "must be a table of names"),
    (
        '[compat.models."gpt-5"]\nfreeform = false\n',
        "compat.models.gpt-5",
        "must hold only an apply_patch table",
    ),
    (
        "[compat.providers.openai.apply_patch]\nfreeform = 0\n",
        "compat.providers.openai.apply_patch.freeform",
        "must be true or false",
    ),
    ('agent = "gpt-5"\n', "agent", "must be a table with model and provider"),
    ('[agent]\nname = "gpt-5"\n', "agent.name", "unknown key; use model, provider"),
    ('[agent]\nmodel = ""\n', "agent.model", "must be a non-empty string"),
]


def test_a_file_that_is_not_toml_is_named_with_its_line_and_column(
    user_dir: Path, repo: Path
) -> None:
    """The same error type as the guard policy's (engine.errors.SettingsError): file, line,
    column, for a user's file and for the repository's."""
    write(repo / ".redline.toml", '[permission]\nedit = "allow\n')
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    assert isinstance(caught.value, SettingsError)
    assert (caught.value.line, caught.value.column) == (2, 14)
    assert caught.value.file == str(repo / ".redline.toml")
    assert ": line 2, column 14: not valid TOML: " in str(caught.value)


@pytest.mark.parametrize(("text", "where", "problem"), INVALID, ids=[w for _, w, _ in INVALID])
def test_a_bad_value_names_the_file_and_the_key(
    user_dir: Path, repo: Path, text: str, where: str, problem: str
) -> None:
    path = write(repo / ".redline.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    error = caught.value
    assert isinstance(error, RedlineError)
    assert (error.source, error.where) == (str(path), where)
    assert problem in error.problem
    assert str(error).startswith(f"invalid redline configuration in {path}: {where}: ")
    assert str(error).endswith(
        'Fix the file and retry (see the README\'s "Tool surfaces and permissions" section)'
    )


def test_the_agent_model_comes_from_the_user_and_the_repository_wins(
    user_dir: Path, repo: Path
) -> None:
    write(user_dir / "config.toml", '[agent]\nmodel = "gpt-5"\nprovider = "openai"\n')
    config = load_config(repo)
    assert (config.model, config.provider) == ("gpt-5", "openai")
    write(repo / ".redline.toml", '[agent]\nmodel = "claude-sonnet-4-5"\n')
    config = load_config(repo)
    assert (config.model, config.provider) == ("claude-sonnet-4-5", "openai")


def test_the_users_file_is_named_when_it_is_the_bad_one(user_dir: Path, repo: Path) -> None:
    path = write(user_dir / "config.toml", "[compat.apply_patch]\nfreeform = 1\n")
    write(repo / ".redline.toml", "[compat.apply_patch]\nfreeform = false\n")
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    assert caught.value.source == str(path)


def test_a_bad_pyproject_section_is_named(user_dir: Path, repo: Path) -> None:
    write(repo / "pyproject.toml", '[tool]\nredline = "on"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    assert caught.value.source == f"{repo / 'pyproject.toml'} [tool.redline]"
    assert caught.value.where == "tool.redline"


def test_a_file_that_is_not_utf8_is_named(user_dir: Path, repo: Path) -> None:
    (repo / ".redline.toml").write_bytes(b'[permission]\nedit = "\xff"\n')
    with pytest.raises(ConfigError, match=r"\.redline\.toml: file: cannot be read"):
        load_config(repo)


def test_the_repository_root_is_the_folder_holding_dot_git(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "deep").mkdir(parents=True)
    assert repository_root(tmp_path / "repo" / "src" / "deep") == tmp_path / "repo"
    # a linked worktree has a .git file
    write(tmp_path / "wt" / ".git", "gitdir: /elsewhere\n")
    assert repository_root(tmp_path / "wt") == tmp_path / "wt"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repository_root(plain) == plain.resolve()
