"""``redline apply`` enforces ``[permission]``: embedded and through a session.

A denied request (or one that would need asking: stdin has no one to ask) gets
a ``rejected`` result naming the rule, exit 1, and nothing changes — no file,
no commit. Allowed requests in the same stream still apply.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitmode_fixtures import GitMode, branch_commits, gm, rev
from redline.cli.main import cli
from support.env import without_caller_variables
from support.requests import edit

__all__ = ["gm"]

RULES = """
[permission]
"*" = "allow"
[permission.edit]
"**" = "allow"
"migrations/**" = "deny"
"*.lock" = "ask"
"""
DENY_RULE = 'permission.edit."migrations/**" = "deny"'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    (folder / "migrations").mkdir(parents=True)
    (folder / "src").mkdir()
    (folder / "migrations" / "001.sql").write_text("CREATE TABLE a;\n")
    (folder / "src" / "app.py").write_text("x = 1\n")
    (folder / "poetry.lock").write_text("lock\n")
    (folder / ".redline.toml").write_text(RULES)
    return folder


def run(
    root: Path, *requests: dict[str, Any], extra: tuple[str, ...] = ()
) -> tuple[int, list[dict[str, Any]]]:
    jsonl = len(requests) != 1
    payload = "".join(json.dumps(r) + "\n" for r in requests)
    args = ["apply", "--root", str(root), *(["--jsonl"] if jsonl else []), *extra]
    outcome = CliRunner().invoke(cli, args, input=payload)
    results = [json.loads(line) for line in outcome.output.splitlines()]
    assert len(results) == len(requests), outcome.output
    return outcome.exit_code, results


def test_a_denied_edit_is_rejected_naming_the_rule(root: Path) -> None:
    code, [result] = run(root, edit("migrations/001.sql", "a;", "b;"))
    assert code == 1
    assert result["status"] == "rejected"
    assert result["path"] == "migrations/001.sql"
    assert DENY_RULE in result["error"]
    assert str(root / ".redline.toml") in result["error"]
    assert (root / "migrations" / "001.sql").read_text() == "CREATE TABLE a;\n"


def test_a_denied_file_is_rejected_through_a_link_to_its_folder(root: Path) -> None:
    (root / "db").symlink_to("migrations")
    (root / "current.sql").symlink_to("migrations/001.sql")
    code, results = run(
        root,
        edit("db/001.sql", "a;", "b;"),
        edit("current.sql", "a;", "b;"),
        edit("src/app.py", "x = 1", "x = 2"),
    )
    assert code == 1
    assert [r["status"] for r in results] == ["rejected", "rejected", "applied"]
    assert DENY_RULE in results[0]["error"] and DENY_RULE in results[1]["error"]
    assert (root / "migrations" / "001.sql").read_text() == "CREATE TABLE a;\n"


def test_ask_is_rejected_with_what_to_configure(root: Path) -> None:
    code, [result] = run(root, edit("poetry.lock", "lock", "LOCK"))
    assert code == 1
    assert result["status"] == "rejected"
    assert "needs the user to allow it" in result["error"]
    assert '[permission.edit] "poetry.lock" = "allow"' in result["error"]
    assert "`redline mcp`" in result["error"]
    assert (root / "poetry.lock").read_text() == "lock\n"


def test_allowed_requests_in_the_same_stream_still_apply(root: Path) -> None:
    code, results = run(
        root,
        edit("src/app.py", "x = 1", "x = 2"),
        edit("migrations/001.sql", "a;", "b;"),
        edit("src/app.py", "x = 2", "x = 3"),
    )
    assert [r["status"] for r in results] == ["applied", "rejected", "applied"]
    assert code == 1
    assert (root / "src" / "app.py").read_text() == "x = 3\n"


def test_the_sibling_rule_covers_apply_patch_and_every_path_of_the_patch(root: Path) -> None:
    patch = (
        "*** Begin Patch\n*** Add File: src/new.py\n+y = 1\n"
        "*** Update File: migrations/001.sql\n@@\n-CREATE TABLE a;\n+CREATE TABLE b;\n"
        "*** End Patch\n"
    )
    code, [result] = run(root, {"tool": "apply_patch", "patch": patch})
    assert code == 1
    assert result["status"] == "rejected"
    assert result["path"] == "migrations/001.sql"
    assert result["error"].startswith("apply_patch of 'migrations/001.sql' is denied by")
    assert not (root / "src" / "new.py").exists()  # not even the allowed part


def test_a_move_into_a_denied_path_is_rejected(root: Path) -> None:
    patch = "*** Begin Patch\n*** Update File: src/app.py\n*** Move to: migrations/app.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
    code, [result] = run(root, {"tool": "apply_patch", "patch": patch})
    assert (code, result["status"], result["path"]) == (1, "rejected", "migrations/app.py")
    assert (root / "src" / "app.py").read_text() == "x = 1\n"


def test_an_absolute_path_inside_the_root_is_judged_by_its_place(root: Path) -> None:
    code, [result] = run(root, edit(str(root / "migrations" / "001.sql"), "a;", "b;"))
    assert (code, result["status"]) == (1, "rejected")
    assert (root / "migrations" / "001.sql").read_text() == "CREATE TABLE a;\n"


def test_a_dry_run_is_judged_too(root: Path) -> None:
    code, [result] = run(root, edit("migrations/001.sql", "a;", "b;"), extra=("--dry-run",))
    assert (code, result["status"]) == (1, "rejected")


def test_write_and_delete_follow_their_own_rules(root: Path) -> None:
    (root / ".redline.toml").write_text(
        '[permission]\nwrite = "deny"\ndelete = { "src/**" = "ask" }\n'
    )
    code, results = run(
        root,
        {"tool": "write", "path": "src/new.py", "content": "y = 1\n"},
        {"tool": "delete", "path": "src/app.py"},
        edit("src/app.py", "x = 1", "x = 2"),
    )
    assert code == 1
    assert [r["status"] for r in results] == ["rejected", "rejected", "applied"]
    assert 'permission.write = "deny"' in results[0]["error"]
    assert 'permission.delete."src/**" = "ask"' in results[1]["error"]
    assert not (root / "src" / "new.py").exists()


def test_without_rules_everything_is_allowed(root: Path) -> None:
    (root / ".redline.toml").unlink()
    code, [result] = run(root, edit("migrations/001.sql", "a;", "b;"))
    assert (code, result["status"]) == (0, "applied")


def test_an_unreadable_setting_applies_nothing_and_says_why(root: Path) -> None:
    (root / ".redline.toml").write_text('[permission]\nedit = "maybe"\n')
    code, [result] = run(root, edit("src/app.py", "x = 1", "x = 2"))
    assert code == 1
    assert result["status"] == "failed"
    assert result["error"].startswith(
        f"invalid redline configuration in {root / '.redline.toml'}: permission.edit: "
    )
    assert result["error"].endswith(
        "nothing was applied, since the permissions it holds are unknown"
    )
    assert (root / "src" / "app.py").read_text() == "x = 1\n"


def test_an_unreadable_setting_still_lets_a_read_through(root: Path) -> None:
    (root / ".redline.toml").write_text('[permission]\nedit = "maybe"\n')
    code, [result] = run(root, {"tool": "read", "path": ".redline.toml"})
    assert (code, result["status"]) == (0, "read")  # read needs no permission: fix the file
    assert 'edit = "maybe"' in result["content"]


def test_the_users_file_applies_when_the_folder_has_none(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / ".redline.toml").unlink()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user = tmp_path / "xdg" / "redline" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[permission]\n"*" = "deny"\n')
    code, [result] = run(root, edit("src/app.py", "x = 1", "x = 2"))
    assert (code, result["status"]) == (1, "rejected")
    assert f'permission."*" = "deny" (in {user})' in result["error"]


@pytest.mark.e2e  # the real process
def test_the_real_process_answers_the_same(root: Path, tmp_path: Path) -> None:
    env = without_caller_variables(os.environ)
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    proc = subprocess.run(
        [sys.executable, "-m", "redline", "apply", "--root", str(root)],
        input=json.dumps(edit("migrations/001.sql", "a;", "b;")),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr == ""
    result = json.loads(proc.stdout)
    assert result["status"] == "rejected" and DENY_RULE in result["error"]


# --- git mode: through a daemon session ------------------------------------------------------


def session_apply(gm: GitMode, *requests: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    payload = "".join(json.dumps(r) + "\n" for r in requests)
    proc = gm.cli.run("apply", "--session", "s", "--repo", str(gm.repo), "--jsonl", input=payload)
    assert "Traceback" not in proc.stderr
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def test_a_session_enforces_the_repositorys_rules(gm: GitMode) -> None:
    (gm.repo / ".redline.toml").write_text(
        '[permission.edit]\n"docs/**" = "deny"\n"c.txt" = "ask"\n'
    )
    gm.git("add", ".redline.toml")
    gm.git("commit", "-q", "-m", "rules")  # the daemon's guard reads the same file
    base = rev(gm.repo, "HEAD")
    gm.cli.open_session("s")
    code, results = session_apply(
        gm,
        edit("docs/readme.md", "Some text.", "Other text."),
        edit("c.txt", "beta", "BETA"),
        edit("b.py", "VALUE = 1", "VALUE = 2"),
    )
    assert code == 1
    assert [r["status"] for r in results] == ["rejected", "rejected", "applied"]
    assert all(r["session"] == "s" for r in results)
    assert 'permission.edit."docs/**" = "deny"' in results[0]["error"]
    assert "needs the user to allow it" in results[1]["error"]
    # one commit: the allowed edit's
    [commit] = branch_commits(gm.repo, "redline/s", base, gm.env)
    assert gm.git("diff-tree", "--no-commit-id", "--name-only", "-r", commit).split() == ["b.py"]


def test_a_session_from_a_folder_inside_the_repository_finds_its_rules(gm: GitMode) -> None:
    (gm.repo / ".redline.toml").write_text('[permission]\n"*" = "deny"\n')
    gm.git("add", ".redline.toml")
    gm.git("commit", "-q", "-m", "rules")  # the main line's committed rules govern
    gm.cli.open_session("s")
    payload = json.dumps(edit("b.py", "VALUE = 1", "VALUE = 2"))
    proc = gm.cli.run("apply", "--session", "s", "--repo", str(gm.repo / "docs"), input=payload)
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert (result["status"], result["session"]) == ("rejected", "s")


def test_a_session_judges_an_absolute_path_by_its_place_in_the_worktree(gm: GitMode) -> None:
    """Agents send absolute paths: one inside the session's worktree meets the same rule."""
    (gm.repo / ".redline.toml").write_text('[permission.edit]\n"docs/**" = "deny"\n')
    gm.git("add", ".redline.toml")
    gm.git("commit", "-q", "-m", "rules")
    opened = gm.cli.open_session("s")
    worktree = Path(opened["worktree"])
    code, results = session_apply(
        gm,
        edit(str(worktree / "docs" / "readme.md"), "Some text.", "Other text."),
        edit(str(worktree / "b.py"), "VALUE = 1", "VALUE = 2"),
    )
    assert [r["status"] for r in results] == ["rejected", "applied"], results
    assert 'permission.edit."docs/**" = "deny"' in results[0]["error"]
    assert "Some text." in (worktree / "docs" / "readme.md").read_text()
    assert code == 1


# --- the agent cannot relax what governs it (issue 20, reproduction 8) ----------------------

RELAX = '[permission]\nwrite = "allow"\n"*" = "allow"\n'
SETTINGS_REFUSAL = "would change redline's own settings"


@pytest.fixture
def governed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder whose .redline.toml denies writes under secrets/; no user config."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "governed"
    (folder / "secrets").mkdir(parents=True)
    (folder / "secrets" / "key.txt").write_text("k\n")
    (folder / "notes.toml").write_text("# notes\n")
    (folder / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "1.0"\n')
    (folder / ".redline.toml").write_text('[permission.write]\n"secrets/**" = "deny"\n')
    return folder


def patch_request(body: str) -> dict[str, Any]:
    return {"tool": "apply_patch", "patch": f"*** Begin Patch\n{body}*** End Patch\n"}


AGENT_CHANGES = {
    "write": {"tool": "write", "path": ".redline.toml", "content": RELAX},
    "edit": edit(".redline.toml", '"secrets/**" = "deny"', '"secrets/**" = "allow"'),
    "delete": {"tool": "delete", "path": ".redline.toml"},
    "update": patch_request(
        '*** Update File: .redline.toml\n@@\n-"secrets/**" = "deny"\n+"secrets/**" = "allow"\n'
    ),
    "move-away": patch_request(
        "*** Update File: .redline.toml\n*** Move to: old.toml\n@@\n [permission.write]\n"
    ),
    # (with the rules in pyproject.toml, a .redline.toml moved in would take their place)
    "move-onto": patch_request(
        "*** Update File: notes.toml\n*** Move to: .redline.toml\n@@\n-# notes\n"
        + "".join(f"+{line}\n" for line in RELAX.splitlines())
    ),
    "pyproject": edit("pyproject.toml", '"secrets/**" = "deny"', '"secrets/**" = "allow"'),
}


@pytest.mark.parametrize("how", list(AGENT_CHANGES))
def test_an_agent_cannot_change_its_own_settings_in_embedded_mode(governed: Path, how: str) -> None:
    if how in ("move-onto", "pyproject"):  # the rules in [tool.redline] instead
        (governed / ".redline.toml").unlink()
        with (governed / "pyproject.toml").open("a") as pyproject:
            pyproject.write('[tool.redline.permission.write]\n"secrets/**" = "deny"\n')
    before = {p: p.read_bytes() for p in governed.rglob("*") if p.is_file()}
    for extra in ((), ("--dry-run",)):
        code, [result] = run(governed, AGENT_CHANGES[how], extra=extra)
        assert (code, result["status"]) == (1, "rejected"), result
        assert SETTINGS_REFUSAL in result["error"]
        assert "Ask the user to make this change" in result["error"]
        assert 'policy_files = "allow"' in result["error"]
    assert {p: p.read_bytes() for p in governed.rglob("*") if p.is_file()} == before
    # and the rules it could not change still hold
    code, [denied] = run(governed, {"tool": "write", "path": "secrets/key.txt", "content": "x"})
    assert denied["status"] == "rejected"


def test_the_repro_the_next_apply_is_still_governed(governed: Path) -> None:
    _code, results = run(
        governed,
        AGENT_CHANGES["write"],
        {"tool": "write", "path": "secrets/key.txt", "content": "leaked\n"},
    )
    assert [r["status"] for r in results] == ["rejected", "rejected"]
    _code, [after] = run(governed, {"tool": "write", "path": "secrets/key.txt", "content": "x"})
    assert after["status"] == "rejected"
    assert 'permission.write."secrets/**" = "deny"' in after["error"]
    assert (governed / "secrets" / "key.txt").read_text() == "k\n"


def test_other_changes_of_pyproject_pass(governed: Path) -> None:
    code, [result] = run(governed, edit("pyproject.toml", 'version = "1.0"', 'version = "1.1"'))
    assert (code, result["status"]) == (0, "applied")


def test_a_link_to_the_settings_file_does_not_get_around_it(governed: Path) -> None:
    (governed / "conf").mkdir()
    (governed / ".redline.toml").rename(governed / "conf" / "redline.toml")
    (governed / ".redline.toml").symlink_to("conf/redline.toml")
    change = edit("conf/redline.toml", '"secrets/**" = "deny"', '"secrets/**" = "allow"')
    _code, [result] = run(governed, change)
    assert result["status"] == "rejected" and SETTINGS_REFUSAL in result["error"]


def test_the_users_own_config_can_allow_it_in_so_many_words(governed: Path, tmp_path: Path) -> None:
    user = tmp_path / "xdg" / "redline" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[permission]\n"*" = "allow"\n')  # not in so many words: still refused
    code, [result] = run(governed, AGENT_CHANGES["edit"])
    assert result["status"] == "rejected"
    user.write_text('[permission]\npolicy_files = "allow"\n')
    code, [result] = run(governed, AGENT_CHANGES["edit"])
    assert (code, result["status"]) == (0, "applied")


def test_a_deny_in_the_users_config_is_not_lifted_by_the_repository(
    governed: Path, tmp_path: Path
) -> None:
    user = tmp_path / "xdg" / "redline" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[permission]\nwrite = "deny"\n')
    (governed / ".redline.toml").write_text('[permission]\nwrite = "allow"\n')
    code, [result] = run(governed, {"tool": "write", "path": "notes.toml", "content": "x\n"})
    assert (code, result["status"]) == (1, "rejected")
    assert f'permission.write = "deny" (in {user})' in result["error"]
    assert (governed / "notes.toml").read_text() == "# notes\n"


def test_a_session_reads_the_main_lines_rules_not_its_worktrees(gm: GitMode) -> None:
    """Git mode: the agent rewrites .redline.toml in its session (applied, and flagged for
    a person); the next request — sent from the session's worktree, where the rewritten
    file is — is still judged by the rules committed on main."""
    (gm.repo / ".redline.toml").write_text('[permission.write]\n"secrets/**" = "deny"\n')
    gm.git("add", ".redline.toml")
    gm.git("commit", "-q", "-m", "rules")
    worktree = Path(gm.cli.open_session("s")["worktree"])

    def from_worktree(request: dict[str, Any]) -> dict[str, Any]:
        proc = subprocess.run(
            [sys.executable, "-m", "redline", "apply", "--session", "s"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            cwd=worktree,
            env=gm.env,
            timeout=60,
        )
        assert "Traceback" not in proc.stderr
        answer: dict[str, Any] = json.loads(proc.stdout)
        return answer

    relaxed = from_worktree({"tool": "write", "path": ".redline.toml", "content": RELAX})
    assert relaxed["status"] == "applied"
    assert relaxed["flags"], "an agent's change of the settings must wait for a person"
    leak = {"tool": "write", "path": "secrets/key.txt", "content": "leaked\n"}
    for _attempt in range(2):
        denied = from_worktree(leak)
        assert denied["status"] == "rejected", denied
        assert (
            'permission.write."secrets/**" = "deny" (in .redline.toml on main)' in (denied["error"])
        )
        (worktree / ".redline.toml").write_text(RELAX)  # with its own tools, too
    assert not (worktree / "secrets" / "key.txt").exists()
    log = gm.git("log", "--format=%s", "main..redline/s")
    assert "secrets" not in log
