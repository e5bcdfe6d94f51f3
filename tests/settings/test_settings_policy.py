"""settings.policy: the policy from ``.redline.toml`` or ``[tool.redline]``, and its errors.

The policy is read from a committed tree (never the worktree), so the file
cases build real commits with git. Every invalid policy must be refused with a
message that names the file and the key, and says what to do.
"""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import git, make_repo
from redline.engine.policy import Policy, default_rules
from redline.settings.policy import PolicyError, parse_policy, policy_from_tree, stricter_policy

DEFAULTS = default_rules()


def tree_of(repo: Path) -> pygit2.Tree:
    git_repo = pygit2.Repository(str(repo))
    return git_repo.head.peel(pygit2.Commit).tree


def policy_in(tmp_path: Path, files: dict[str, str | bytes]) -> Policy:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n", **files})
    return policy_from_tree(pygit2.Repository(str(repo)), tree_of(repo))


def error_in(text: str, source: str = ".redline.toml") -> PolicyError:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, source)
    return caught.value


# --- where the policy comes from ----------------------------------------------------------


def test_no_policy_file_gives_the_defaults(tmp_path: Path) -> None:
    policy = policy_in(tmp_path, {})
    assert policy == Policy(rules=DEFAULTS)
    assert policy.action == "review"
    assert policy.check(".redline.toml", "fuzzy", 0.99)
    assert policy.check(".pre-commit-config.yaml", "fuzzy", 0.99)
    assert policy.check("src/app.py", "fuzzy", 0.5) == []


def test_an_unborn_branch_gives_the_defaults(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "empty"))
    assert policy_from_tree(repo, None) == Policy(rules=DEFAULTS)


def test_redline_toml(tmp_path: Path) -> None:
    policy = policy_in(
        tmp_path,
        {
            ".redline.toml": (
                '[guard]\naction = "reject"\n\n'
                '[[guard.protect]]\npaths = ["migrations/**", "src/auth/**"]\nrequire = "exact"\n\n'
                '[[guard.protect]]\npaths = ["docs/**"]\nmin_confidence = 0.8\n'
            )
        },
    )
    assert policy.action == "reject"
    assert policy.source == ".redline.toml"
    assert policy.rules[0] == DEFAULTS[0]
    migrations, docs = policy.rules[1:]
    assert migrations.name == "guard.protect[1] (migrations/**, src/auth/**)"
    assert migrations.paths == ("migrations/**", "src/auth/**")
    assert migrations.require == frozenset({"exact"})
    assert migrations.min_confidence is None
    assert docs.name == "guard.protect[2] (docs/**)"
    assert docs.require is None
    assert docs.min_confidence == 0.8
    assert policy.check("src/auth/login.py", "whitespace", 0.95)
    assert policy.check("docs/a.md", "fuzzy", 0.8) == []
    assert policy.check("docs/a.md", "fuzzy", 0.79)
    assert policy.check(".redline.toml", "fuzzy", 0.99)  # still protected by default


def test_a_policy_file_in_the_worktree_only_is_not_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    (repo / ".redline.toml").write_text('[guard]\naction = "reject"\n')
    policy = policy_from_tree(pygit2.Repository(str(repo)), tree_of(repo))
    assert policy == Policy(rules=DEFAULTS)


def test_tool_redline_in_pyproject(tmp_path: Path) -> None:
    policy = policy_in(
        tmp_path,
        {
            "pyproject.toml": (
                '[project]\nname = "demo"\n\n'
                '[tool.redline.guard]\naction = "review"\n\n'
                '[[tool.redline.guard.protect]]\npaths = "migrations/**"\n'
                'require = ["exact", "whitespace"]\n'
            )
        },
    )
    assert policy.source == "pyproject.toml [tool.redline]"
    [default, rule] = policy.rules
    assert rule.paths == ("migrations/**",)
    assert rule.require == frozenset({"exact", "whitespace"})
    assert "pyproject.toml" in default.paths
    # pyproject.toml now holds the policy, so every edit of it needs a person
    [violation] = policy.check("pyproject.toml", "fuzzy", 0.99)
    assert violation.rule == "default (guard files: policy, hooks, CI)"
    assert policy.check("pyproject.toml", "exact", 1.0) == [violation]
    assert policy.check("migrations/1.sql", "whitespace", 0.95) == []
    assert policy.check("migrations/1.sql", "fuzzy", 0.99)


def test_pyproject_without_tool_redline_gives_the_defaults(tmp_path: Path) -> None:
    policy = policy_in(
        tmp_path, {"pyproject.toml": '[project]\nname = "demo"\n\n[tool.ruff]\nline-length = 100\n'}
    )
    assert policy == Policy(rules=DEFAULTS)
    assert policy.check("pyproject.toml", "fuzzy", 0.99) == []


def test_redline_toml_wins_over_pyproject(tmp_path: Path) -> None:
    policy = policy_in(
        tmp_path,
        {
            ".redline.toml": '[guard]\naction = "reject"\n',
            "pyproject.toml": '[tool.redline.guard]\naction = "review"\n',
        },
    )
    assert policy.source == ".redline.toml"
    assert policy.action == "reject"


def test_a_broken_pyproject_is_reported(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"pyproject.toml": "[tool.redline\n"})
    with pytest.raises(PolicyError) as caught:
        policy_from_tree(pygit2.Repository(str(repo)), tree_of(repo))
    assert str(caught.value).startswith(
        "invalid guard policy in pyproject.toml: line 1, column 14: not valid TOML: "
    )
    assert caught.value.file == "pyproject.toml"


def test_a_broken_section_in_pyproject_names_it(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo", {"pyproject.toml": '[tool.redline.guard]\naction = "block"\n'}
    )
    with pytest.raises(PolicyError) as caught:
        policy_from_tree(pygit2.Repository(str(repo)), tree_of(repo))
    message = str(caught.value)
    assert message.startswith("invalid guard policy in pyproject.toml [tool.redline]: guard.action")
    assert "'block'" in message


def test_a_tool_redline_that_is_not_a_table_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"pyproject.toml": '[tool]\nredline = "on"\n'})
    with pytest.raises(PolicyError) as caught:
        policy_from_tree(pygit2.Repository(str(repo)), tree_of(repo))
    assert str(caught.value).startswith(
        "invalid guard policy in pyproject.toml [tool.redline]: top level: must be a table"
    )


def test_a_pyproject_whose_tool_is_not_a_table_has_no_policy(tmp_path: Path) -> None:
    policy = policy_in(tmp_path, {"pyproject.toml": 'tool = "none"\n'})
    assert policy == Policy(rules=DEFAULTS)


def test_an_empty_policy_file_gives_the_defaults_from_that_file() -> None:
    policy = parse_policy("", ".redline.toml")
    assert policy.rules == DEFAULTS
    assert policy.action == "review"
    assert policy.source == ".redline.toml"


# --- validation: every error names the file and the key --------------------------------------


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("[guard\n", "line 1, column 7", "not valid TOML: Expected ']'"),
        ('guard = "strict"\n', "guard", "must be a table"),
        (
            '[policy]\naction = "review"\n',
            "policy",
            "unknown key; use [guard], [[validate]], [permission], [compat] or [agent]",
        ),
        (
            '[guard]\nmode = "review"\n',
            "guard.mode",
            "unknown key; use action, approvals, files and [[guard.protect]]",
        ),
        (
            '[guard]\naction = "block"\n',
            "guard.action",
            "must be one of review, reject (got 'block')",
        ),
        ("[guard]\naction = 1\n", "guard.action", "must be one of review, reject (got 1)"),
        ('[guard]\nprotect = "migrations/**"\n', "guard.protect", "must be an array of tables"),
        ("[guard]\nprotect = [1]\n", "guard.protect[1]", "must be a table"),
        (
            '[[guard.protect]]\npaths = ["a"]\nrequire = "exact"\npath = "b"\n',
            "guard.protect[1].path",
            "unknown key; use paths, require, min_confidence",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nrequire = "exact"\n\n'
            '[[guard.protect]]\npaths = ["b"]\nrequire = "exactly"\n',
            "guard.protect[2].require",
            "unknown match type 'exactly'; use exact, trailing_newline",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nrequire = ["exact", "levenshtein"]\n',
            "guard.protect[1].require",
            "unknown match type 'levenshtein'",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nrequire = []\n',
            "guard.protect[1].require",
            "must be a match type or a list of them",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nrequire = 1\n',
            "guard.protect[1].require",
            "must be a match type or a list of them",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nrequire = ["exact", 2]\n',
            "guard.protect[1].require",
            "must be a match type or a list of them",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nmin_confidence = 1.5\n',
            "guard.protect[1].min_confidence",
            "must be a number from 0 to 1 (got 1.5)",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nmin_confidence = -0.1\n',
            "guard.protect[1].min_confidence",
            "must be a number from 0 to 1 (got -0.1)",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nmin_confidence = "0.8"\n',
            "guard.protect[1].min_confidence",
            "must be a number from 0 to 1 (got '0.8')",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nmin_confidence = true\n',
            "guard.protect[1].min_confidence",
            "must be a number from 0 to 1 (got True)",
        ),
        (
            '[[guard.protect]]\npaths = ["a"]\nmin_confidence = nan\n',
            "guard.protect[1].min_confidence",
            "must be a number from 0 to 1 (got nan)",
        ),
        (
            '[[guard.protect]]\npaths = ["migrations/**"]\n',
            "guard.protect[1]",
            "says neither require nor min_confidence",
        ),
        (
            '[[guard.protect]]\npaths = []\nrequire = "exact"\n',
            "guard.protect[1].paths",
            "must be a glob or a non-empty list of globs",
        ),
        (
            '[[guard.protect]]\npaths = ""\nrequire = "exact"\n',
            "guard.protect[1].paths",
            "must be a glob or a non-empty list of globs",
        ),
        (
            '[[guard.protect]]\nrequire = "exact"\n',
            "guard.protect[1].paths",
            "must be a glob or a non-empty list of globs",
        ),
        (
            '[[guard.protect]]\npaths = ["a", 3]\nrequire = "exact"\n',
            "guard.protect[1].paths",
            "must be a glob or a non-empty list of globs",
        ),
        (
            '[[guard.protect]]\npaths = ["a", ""]\nrequire = "exact"\n',
            "guard.protect[1].paths",
            "must be a glob or a non-empty list of globs",
        ),
        (
            '[[guard.protect]]\npaths = 7\nrequire = "exact"\n',
            "guard.protect[1].paths",
            "must be a glob or a non-empty list of globs",
        ),
        (
            '[[guard.protect]]\npaths = ["!src/**"]\nrequire = "exact"\n',
            "guard.protect[1].paths",
            "'!src/**': '!' (negation) is not supported here",
        ),
        (
            '[[guard.protect]]\npaths = ["a", "\\\\"]\nrequire = "exact"\n',
            "guard.protect[1].paths",
            "not a valid gitignore-style glob",
        ),
    ],
)
def test_invalid_policies_are_refused_naming_the_key(text: str, where: str, problem: str) -> None:
    error = error_in(text)
    message = str(error)
    assert error.source == ".redline.toml"
    assert error.where == where
    assert problem in error.problem
    assert message.startswith(f"invalid guard policy in .redline.toml: {where}: ")
    assert "Fix the file and retry" in message


def test_bad_toml_reports_the_parser_position() -> None:
    error = error_in('[guard]\naction = "review\n')
    assert (error.line, error.column) == (2, 17)
    assert error.where == "line 2, column 17"
    assert error.problem == "not valid TOML: Illegal character '\\n'"
    assert str(error) == (
        "invalid guard policy in .redline.toml: line 2, column 17: not valid TOML: "
        "Illegal character '\\n'. Fix the file and retry (see the README's Guard section "
        "for the format)"
    )


def test_bad_toml_at_the_end_of_the_file_points_after_its_last_character() -> None:
    error = error_in("[guard]\naction = ")
    assert error.where == "line 2, column 10"
    assert error.problem == "not valid TOML: Invalid value"


def test_unknown_top_level_keys_are_all_named() -> None:
    error = error_in('guards = 1\nprotect = 2\n[guard]\naction = "review"\n')
    assert error.where == "guards, protect"


@pytest.mark.parametrize("value", ["0", "1", "0.5", "1.0", "0.0"])
def test_min_confidence_takes_numbers_from_zero_to_one(value: str) -> None:
    policy = parse_policy(f'[[guard.protect]]\npaths = ["a"]\nmin_confidence = {value}\n', "p")
    assert policy.rules[-1].min_confidence == float(value)
    assert isinstance(policy.rules[-1].min_confidence, float)


def test_require_as_a_string_or_a_list() -> None:
    one = parse_policy('[[guard.protect]]\npaths = "a/**"\nrequire = "whitespace"\n', "p")
    many = parse_policy(
        '[[guard.protect]]\npaths = ["a/**"]\nrequire = ["whitespace", "punctuation"]\n', "p"
    )
    assert one.rules[-1].require == frozenset({"whitespace"})
    assert many.rules[-1].require == frozenset({"whitespace", "punctuation"})


# --- several trees joined: what a commit or push is judged by ------------------------------------


def trees_of(
    tmp_path: Path, versions: list[dict[str, str]]
) -> tuple[pygit2.Repository, list[pygit2.Tree]]:
    """One commit per version of the files (each replacing the last); their trees."""
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n", **versions[0]})
    trees = [tree_of(repo)]
    for files in versions[1:]:
        for name in [p.name for p in repo.iterdir() if p.name.endswith(".toml")]:
            (repo / name).unlink()
        for name, text in files.items():
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "next")
        trees.append(tree_of(repo))
    return pygit2.Repository(str(repo)), trees


STRICT = '[[guard.protect]]\npaths = ["migrations/**", "src/auth/**"]\nrequire = "exact"\n'
WEAK = '[[guard.protect]]\npaths = ["migrations/**"]\nrequire = "exact"\n'


def test_a_joined_policy_keeps_the_rules_a_change_removes(tmp_path: Path) -> None:
    repo, (before, after) = trees_of(tmp_path, [{".redline.toml": STRICT}, {".redline.toml": WEAK}])
    joined = stricter_policy(repo, [(after, "in HEAD"), (before, "before the push")])
    [violation] = joined.check("src/auth/login.py", "fuzzy", 0.9)
    assert violation.rule == (
        "guard.protect[1] (migrations/**, src/auth/**) of .redline.toml before the push"
    )
    assert (
        joined.check("migrations/1.sql", "fuzzy", 0.9)[0].rule == "guard.protect[1] (migrations/**)"
    )
    # the other way round: a policy that adds a rule is judged with it
    assert stricter_policy(repo, [(before, "x"), (after, "y")]).check("src/auth/a.py", "fuzzy", 0.9)


def test_a_deleted_policy_file_does_not_unprotect_anything(tmp_path: Path) -> None:
    repo, (before, after) = trees_of(tmp_path, [{".redline.toml": STRICT}, {}])
    joined = stricter_policy(repo, [(after, "in HEAD"), (before, "before the commit")])
    assert joined.check("src/auth/login.py", "whitespace", 0.95)


def test_a_side_whose_policy_is_broken_is_left_out_unless_all_are(tmp_path: Path) -> None:
    broken = '[guard]\naction = "review\n'
    repo, (good, bad) = trees_of(tmp_path, [{".redline.toml": STRICT}, {".redline.toml": broken}])
    joined = stricter_policy(repo, [(bad, "in HEAD"), (good, "in the commit")])
    assert joined.source == ".redline.toml"
    assert joined.check("src/auth/login.py", "fuzzy", 0.9)
    with pytest.raises(PolicyError, match="line 2, column 17"):
        stricter_policy(repo, [(bad, "in HEAD"), (bad, "in the commit")])


def test_the_tool_sections_of_the_same_file_are_left_to_the_tools() -> None:
    text = '[permission]\nedit = "deny"\n\n[compat.apply_patch]\nfreeform = false\n'
    policy = parse_policy(text, ".redline.toml")
    assert policy.rules == DEFAULTS


# --- [[validate]]: the paths whose files must still parse --------------------------------


def test_validate_tables_name_the_paths_to_validate() -> None:
    policy = parse_policy(
        '[[validate]]\npaths = ["**/*.py", "**/*.json"]\n\n[[validate]]\npaths = "ci/*.yml"\n',
        ".redline.toml",
    )
    assert policy.validate == ("**/*.py", "**/*.json", "ci/*.yml")
    assert policy.rules == DEFAULTS  # the guard's rules are untouched
    assert parse_policy('[guard]\naction = "review"\n', ".redline.toml").validate == ()


def test_validate_in_pyproject_and_in_a_commit(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "x"\n\n[[tool.redline.validate]]\npaths = ["src/**/*.py"]\n'
    policy = policy_in(tmp_path, {"pyproject.toml": pyproject})
    assert policy.validate == ("src/**/*.py",)
    assert policy.validates("src/pkg/mod.py")


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ('validate = "**/*.py"\n', "validate", "must be an array of tables"),
        ("validate = [1]\n", "validate[1]", "must be a table with paths"),
        ("[[validate]]\n", "validate[1].paths", "must be a glob or a non-empty list of globs"),
        ("[[validate]]\npaths = []\n", "validate[1].paths", "must be a glob or a non-empty list"),
        (
            '[[validate]]\npaths = ["*.py"]\n\n[[validate]]\npaths = ["*.ts"]\nparser = "x"\n',
            "validate[2].parser",
            "unknown key; use paths",
        ),
    ],
)
def test_a_bad_validate_table_is_refused_with_its_key(text: str, where: str, problem: str) -> None:
    error = error_in(text)
    assert error.where == where
    assert problem in error.problem
    assert str(error).startswith(f"invalid guard policy in .redline.toml: {where}: ")


def test_the_policy_on_disk_is_read_for_embedded_mode(tmp_path: Path) -> None:
    from redline.settings.policy import policy_in_directory

    assert policy_in_directory(tmp_path).validate == ()  # no file: the defaults
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert policy_in_directory(tmp_path).validate == ()
    (tmp_path / "pyproject.toml").write_text('[[tool.redline.validate]]\npaths = "*.toml"\n')
    assert policy_in_directory(tmp_path).validate == ("*.toml",)
    # .redline.toml wins over pyproject.toml, as in a commit
    (tmp_path / ".redline.toml").write_text('[[validate]]\npaths = "*.py"\n')
    assert policy_in_directory(tmp_path).validate == ("*.py",)
    (tmp_path / ".redline.toml").write_text("[[validate]\n")
    with pytest.raises(PolicyError, match="line 1"):
        policy_in_directory(tmp_path)


def test_guard_files_extend_the_default_list() -> None:
    policy = parse_policy('[guard]\nfiles = ["deploy/**", "Makefile"]\n', ".redline.toml")
    assert policy.check("deploy/run.sh", "exact", 1.0)
    assert policy.check("Makefile", None, 0.0)
    assert policy.check(".github/workflows/ci.yml", "exact", 1.0)  # the defaults stay
    assert not policy.check("src/app.py", "fuzzy", 0.5)


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ("3", "must be a glob or a non-empty list of globs"),
        ('["!deploy/**"]', "'!' (negation) is not supported here"),
    ],
)
def test_bad_guard_files_are_refused_naming_the_key(files: str, problem: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(f"[guard]\nfiles = {files}\n", ".redline.toml")
    assert info.value.where == "guard.files"
    assert problem in info.value.problem
