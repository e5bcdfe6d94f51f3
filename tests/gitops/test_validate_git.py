"""Validation in git mode: a file group that would not parse is not committed; what was
checked is recorded in the note, read back with ``git notes --ref=redline show``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitmode_fixtures import branch_commits, changed_files, git, make_repo, note_of, porcelain, rev
from redline.gitops.apply import SessionApplier
from redline.gitops.repo import main_repository
from redline.gitops.session import open_session
from redline.tools.request import parse_request
from support.requests import edit, patch

BRANCH = "redline/s"
APP_PY = "def total(items):\n    return sum(items)\n"
CONFIG_JSON = '{\n  "name": "app",\n  "debug": false\n}\n'
FILES = {"src/app.py": APP_PY, "config.json": CONFIG_JSON, "notes.xyz": "plain\n"}
POLICY = '[[validate]]\npaths = ["**/*.py"]\n'


def applier_for(repo: Path, *, with_policy: bool = False) -> SessionApplier:
    from redline.settings.policy import policy_from_tree

    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, "s", None)
    if not with_policy:
        return SessionApplier(git_repo, layout, session)
    return SessionApplier(
        git_repo, layout, session, policy_for=lambda tree: policy_from_tree(git_repo, tree)
    )


def apply(applier: SessionApplier, obj: dict[str, Any]) -> dict[str, Any]:
    request, _turn = parse_request(obj)
    return applier.apply(request).to_dict()


BREAK_APP = "*** Update File: src/app.py\n@@\n-    return sum(items)\n+    return sum(items\n"
FIX_CONFIG = '*** Update File: config.json\n@@\n-  "debug": false\n+  "debug": true\n'


def test_an_edit_that_would_not_parse_commits_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    applier = applier_for(repo)
    base = rev(repo, BRANCH)
    result = apply(applier, edit("src/app.py", "sum(items)", "sum(items", validate=True))
    assert result["status"] == "validation_failed"
    assert (result["match_type"], result["confidence"]) == ("exact", 1.0)
    assert result["validation"]["errors"][0]["line"] == 2
    assert result["commits"] == []
    assert rev(repo, BRANCH) == base
    worktree = Path(applier.session.worktree)
    assert (worktree / "src" / "app.py").read_text() == APP_PY
    assert porcelain(worktree) == ""


def test_an_edit_that_parses_records_the_check_in_its_note(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    applier = applier_for(repo)
    result = apply(applier, edit("src/app.py", "sum(items)", "sum(items, 0)", validate=True))
    assert result["status"] == "applied"
    assert result["validation"] == {
        "path": "src/app.py",
        "language": "python",
        "parser": "compile",
        "ok": True,
    }
    [info] = result["commits"]
    note = note_of(repo, info["commit"])
    assert note["validation"] == [{"path": "src/app.py", "language": "python", "parser": "compile"}]


def test_a_note_without_validation_has_no_such_field(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    result = apply(applier_for(repo), edit("src/app.py", "sum(items)", "sum(items, 0)"))
    assert "validation" not in note_of(repo, result["commits"][0]["commit"])


def test_an_unknown_extension_is_noted_as_not_validated(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    result = apply(applier_for(repo), edit("notes.xyz", "plain", "((plain", validate=True))
    assert result["validation"] == {"path": "notes.xyz", "skipped": "no parser for .xyz files"}
    note = note_of(repo, result["commits"][0]["commit"])
    assert note["validation"] == [{"path": "notes.xyz", "skipped": "no parser for .xyz files"}]


def test_a_patch_commits_the_groups_that_parse_and_not_the_one_that_does_not(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    applier = applier_for(repo)
    base = rev(repo, BRANCH)
    result = apply(applier, patch(BREAK_APP + FIX_CONFIG, validate=True))
    assert result["status"] == "partially_applied"
    [info] = result["commits"]
    assert info["paths"] == ["config.json"]
    assert branch_commits(repo, BRANCH, base) == [info["commit"]]
    assert changed_files(repo, info["commit"]) == ["config.json"]
    note = note_of(repo, info["commit"])
    assert note["validation"] == [{"path": "config.json", "language": "json", "parser": "json"}]
    [refused] = result["not_applied"]
    assert refused["paths"] == ["src/app.py"]
    assert refused["validation"][0]["errors"][0]["message"] == "'(' was never closed"
    assert git(repo, "show", f"{BRANCH}:src/app.py") == APP_PY
    assert porcelain(Path(applier.session.worktree)) == ""


def test_the_policy_at_the_tip_turns_validation_on(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**FILES, ".redline.toml": POLICY})
    applier = applier_for(repo, with_policy=True)
    refused = apply(applier, edit("src/app.py", "sum(items)", "sum(items"))
    assert refused["status"] == "validation_failed"
    json_edit = apply(applier, edit("config.json", '"app"', '"app'))  # not named: not checked
    assert (json_edit["status"], json_edit["validation"]) == ("applied", None)
    refused_patch = apply(applier, patch(BREAK_APP))
    assert refused_patch["status"] == "validation_failed"


def test_taking_validation_out_of_the_policy_in_the_session_does_not_turn_it_off(
    tmp_path: Path,
) -> None:
    """The policy at the session's base still applies: a change can add paths to validate,
    never remove them (engine.policy.Policy.stricter)."""
    repo = make_repo(tmp_path / "repo", {**FILES, ".redline.toml": POLICY})
    applier = applier_for(repo, with_policy=True)
    dropped = apply(applier, edit(".redline.toml", POLICY, "# nothing validated\n"))
    assert dropped["status"] == "applied"
    refused = apply(applier, edit("src/app.py", "sum(items)", "sum(items"))
    assert refused["status"] == "validation_failed"


def test_a_policy_added_in_the_session_turns_validation_on(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    applier = applier_for(repo, with_policy=True)
    worktree = Path(applier.session.worktree)
    (worktree / ".redline.toml").write_text('[[validate]]\npaths = ["*.json"]\n')
    refused = apply(applier, edit("config.json", '"app"', '"app'))
    assert refused["status"] == "validation_failed"
    # the policy file itself was committed as an external change
    assert [c["source"] for c in refused["commits"]] == ["external"]


def write(path: str, content: str, **fields: Any) -> dict[str, Any]:
    return {"tool": "write", "path": path, "content": content, **fields}


def test_a_write_that_would_not_parse_commits_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    applier = applier_for(repo)
    base = rev(repo, BRANCH)
    result = apply(applier, write("config.json", '{\n  "name": "app",\n}\n', validate=True))
    assert result["status"] == "validation_failed"
    assert result["error"].startswith("the write would leave config.json unparseable")
    [error] = result["validation"]["errors"]
    assert (error["line"], error["column"], error["text"]) == (3, 1, "}")
    assert result["commits"] == []
    assert rev(repo, BRANCH) == base
    worktree = Path(applier.session.worktree)
    assert (worktree / "config.json").read_text() == CONFIG_JSON
    assert porcelain(worktree) == ""


def test_a_write_that_parses_records_the_check_in_its_note(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    applier = applier_for(repo)
    result = apply(applier, write("config.json", '{"name": "web"}\n', validate=True))
    assert result["status"] == "applied"
    assert result["validation"] == {
        "path": "config.json",
        "language": "json",
        "parser": "json",
        "ok": True,
    }
    [info] = result["commits"]
    note = note_of(repo, info["commit"])
    assert note["tool"] == "write"
    assert note["validation"] == [{"path": "config.json", "language": "json", "parser": "json"}]
    assert git(repo, "show", f"{BRANCH}:config.json") == '{"name": "web"}\n'


def test_a_new_file_written_of_an_unknown_kind_is_noted_as_not_validated(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    result = apply(applier_for(repo), write("more.xyz", "(((\n", validate=True))
    assert result["status"] == "applied"
    note = note_of(repo, result["commits"][0]["commit"])
    assert note["validation"] == [{"path": "more.xyz", "skipped": "no parser for .xyz files"}]


def test_the_policy_validates_the_writes_of_its_paths(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**FILES, ".redline.toml": POLICY})
    applier = applier_for(repo, with_policy=True)
    base = rev(repo, BRANCH)
    refused = apply(applier, write("src/app.py", "def total(items:\n"))
    assert refused["status"] == "validation_failed"
    assert rev(repo, BRANCH) == base
    fine = apply(applier, write("src/app.py", "def total(items):\n    return 0\n"))
    assert fine["status"] == "applied"
    note = note_of(repo, fine["commits"][0]["commit"])
    assert note["validation"] == [{"path": "src/app.py", "language": "python", "parser": "compile"}]
    unnamed = apply(applier, write("config.json", "{"))  # not named by the policy
    assert (unnamed["status"], unnamed["validation"]) == ("applied", None)
    assert "validation" not in note_of(repo, unnamed["commits"][0]["commit"])
