"""Statistics computed in-process on repositories built with git and the git-mode layer.

The end-to-end table (a real daemon, ``redline approve``, refused requests) is in
``tests/cli/test_stats_cli.py``; here, what the notes and the history alone decide:
which notes count, how a patch's hunks share their inserted lines, and the
outcome log's validation failures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitmode_fixtures import git, make_repo
from redline.gitops import notes, outcomes
from redline.gitops.apply import SessionApplier
from redline.gitops.errors import SessionError
from redline.gitops.repo import main_repository
from redline.gitops.session import open_session
from redline.gitops.stats import Report, compute, parse_time, quartiles
from redline.tools.request import parse_request

BODY = "".join(f"line {i}\n" for i in range(1, 11))


class Agent:
    """A session driven in-process (no policy file: nothing is flagged)."""

    def __init__(self, repo: Path, name: str) -> None:
        handle, layout = main_repository(repo)
        self.applier = SessionApplier(handle, layout, open_session(handle, layout, name, None))
        self.worktree = Path(self.applier.session.worktree)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        request, _turn = parse_request(obj)
        return self.applier.apply(request).to_dict()

    def edit(self, path: str, old: str, new: str) -> dict[str, Any]:
        return self.apply({"tool": "edit", "path": path, "old_string": old, "new_string": new})

    def patch(self, body: str) -> dict[str, Any]:
        return self.apply(
            {"tool": "apply_patch", "patch": f"*** Begin Patch\n{body}*** End Patch\n"}
        )


agent = Agent


def report(repo: Path, **kw: object) -> Report:
    handle, layout = main_repository(repo)
    return compute(handle, layout, **kw)  # type: ignore[arg-type]


def rows(r: Report) -> dict[str, dict[str, object]]:
    data = r.to_json()
    return {row["match_type"]: row for row in data["match_types"]}


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"f.txt": BODY.replace("line 2\n", "line 2  \n")})


def test_quartiles_interpolate_between_ranks() -> None:
    assert quartiles([]) is None
    assert quartiles([0.9]) == {"min": 0.9, "q1": 0.9, "median": 0.9, "q3": 0.9, "max": 0.9}
    assert quartiles([4.0, 1.0, 3.0, 2.0]) == {
        "min": 1.0, "q1": 1.75, "median": 2.5, "q3": 3.25, "max": 4.0,
    }  # fmt: skip
    assert quartiles([0.8, 0.85, 0.9, 0.95, 1.0]) == {
        "min": 0.8, "q1": 0.85, "median": 0.9, "q3": 0.95, "max": 1.0,
    }  # fmt: skip


def test_parse_time() -> None:
    assert parse_time("1970-01-01T00:01:00Z") == 60.0
    assert parse_time("1970-01-01T01:00:00+01:00") == 0.0
    assert parse_time("yesterday") is None
    assert parse_time(None) is None


def test_a_patchs_hunks_share_their_inserted_lines_by_position(repo: Path) -> None:
    """Hunk 1 matches line 2 only without its trailing spaces (rstrip), hunk 2 exactly;
    a later commit rewrites the line hunk 1 inserted."""
    a = agent(repo, "s")
    result = a.patch(
        "*** Update File: f.txt\n@@\n line 1\n-line 2\n+line two\n+line two b\n line 3\n"
        "@@\n line 8\n-line 9\n+line nine\n line 10\n"
    )
    assert result["status"] == "applied", result
    assert [h["match_type"] for h in result["hunks"]] == ["rstrip", "exact"]
    r = rows(report(repo))
    assert (r["rstrip"]["edits"], r["rstrip"]["inserted_lines"]) == (1, 2)
    assert (r["exact"]["edits"], r["exact"]["inserted_lines"]) == (1, 1)
    assert r["rstrip"]["tools"] == {"apply_patch": 1}

    worktree = a.worktree
    text = (worktree / "f.txt").read_text()
    (worktree / "f.txt").write_text(text.replace("line two b\n", "line 2b\n"))
    commit_all(worktree, "a person rewrites one line of hunk 1")
    r = rows(report(repo))
    assert (r["rstrip"]["later_changed_lines"], r["rstrip"]["later_changed_rate"]) == (1, 0.5)
    assert (r["exact"]["later_changed_lines"], r["exact"]["later_changed_rate"]) == (0, 0.0)


def test_validation_failures_come_from_the_outcome_log(repo: Path) -> None:
    assert agent(repo, "s").edit("f.txt", "line 5\n", "line five\n")["status"] == "applied"
    _, layout = main_repository(repo)
    for time, match_type in [
        ("2026-01-01T00:00:00Z", "exact"),
        ("2026-02-01T00:00:00Z", "exact"),
        ("2026-02-01T00:00:00Z", None),
    ]:
        line = {
            "time": time,
            "session": "s",
            "status": "validation_failed",
            "match_type": match_type,
        }
        assert outcomes.record(layout, line) is None
    r = report(repo)
    assert rows(r)["exact"]["validation_failed"] == 2
    assert rows(r)["none"]["validation_failed"] == 1
    assert rows(r)["none"]["edits"] == 0
    assert r.to_json()["outcomes"]["validation_failed"] == 3
    since = parse_time("2026-01-15T00:00:00Z")
    r = report(repo, since=since)
    assert rows(r)["exact"]["validation_failed"] == 1
    assert r.to_json()["outcomes"]["validation_failed"] == 2


def test_a_copied_note_counts_once_and_unreachable_or_foreign_notes_not_at_all(
    repo: Path,
) -> None:
    a = agent(repo, "s")
    result = a.edit("f.txt", "line 5\n", "line five\n")
    [commit] = result["commits"]
    # A cherry-pick onto main with its note copied (as notes.rewriteRef would on a rebase).
    git(repo, "cherry-pick", commit["commit"])
    git(repo, "notes", "--ref=redline", "copy", commit["commit"], "HEAD")
    r = report(repo)
    assert (r.requests, r.edits) == (1, 1)

    # A note that is not redline's: skipped, and counted as such.
    git(repo, "notes", "--ref=redline", "add", "-m", "looks good to me", "HEAD~1")
    assert report(repo).unreadable == 1
    assert report(repo).edits == 1

    # A session abandoned with its branch deleted: its commits are on no branch.
    other = agent(repo, "gone")
    assert other.edit("f.txt", "line 7\n", "line seven\n")["status"] == "applied"
    assert report(repo).edits == 2
    git(repo, "worktree", "remove", "--force", str(other.worktree))
    git(repo, "branch", "-D", "redline/gone")
    assert report(repo).edits == 1


def test_external_changes_are_not_agent_edits(repo: Path) -> None:
    a = agent(repo, "s")
    (a.worktree / "new.txt").write_text("made with another tool\n")
    result = a.edit("f.txt", "line 5\n", "line five\n")
    assert [c["source"] for c in result["commits"]] == ["external", "agent"]
    r = report(repo)
    assert (r.requests, r.edits) == (1, 1)
    assert list(rows(r)) == ["exact"]


def test_a_session_with_nothing_yet_and_an_unknown_one(repo: Path) -> None:
    agent(repo, "empty")
    r = report(repo, session="empty")
    assert (r.requests, r.edits, r.rows) == (0, 0, {})
    with pytest.raises(SessionError, match="no session named 'nope'"):
        report(repo, session="nope")


def test_a_repository_without_notes(repo: Path) -> None:
    r = report(repo)
    assert (r.noted, r.requests, r.edits, r.unreadable) == (0, 0, 0, 0)
    assert r.to_json()["later_changed_rate"] is None


def test_an_unborn_or_detached_head(tmp_path: Path, repo: Path) -> None:
    a = agent(repo, "s")
    [commit] = a.edit("f.txt", "line 5\n", "line five\n")["commits"]
    git(repo, "switch", "-q", "--detach", commit["commit"])
    git(repo, "worktree", "remove", "--force", str(a.worktree))
    git(repo, "branch", "-D", "redline/s")
    assert report(repo).edits == 1  # reachable from the detached HEAD alone
    git(repo, "switch", "-q", "main")
    assert report(repo).edits == 0
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    handle, layout = main_repository(empty)
    assert isinstance(handle, pygit2.Repository)
    assert compute(handle, layout).edits == 0


def test_a_squash_note_whose_carried_evidence_is_broken_is_skipped_as_unreadable(
    repo: Path,
) -> None:
    squash_note = {
        "schema": notes.SCHEMA, "edit": "sq", "request": "", "session": "s",
        "tool": notes.SQUASH_TOOL, "model": None, "source": "land", "operations": [],
        "policy": None, "approvals": [],
        # a hand edit left one carried edit without its operations
        "squashed": [{"edit": "e1", "session": "s", "source": "agent", "commit": "0" * 40}],
    }  # fmt: skip
    git(repo, "notes", "--ref=redline", "add", "-m", json.dumps(squash_note), "HEAD")
    r = report(repo)
    assert (r.unreadable, r.requests, r.edits) == (1, 0, 0)


def test_rows_are_ordered_by_the_one_table_of_match_types() -> None:
    from redline.engine.match_types import MATCH_TYPES
    from redline.gitops import stats

    assert stats.ORDER == MATCH_TYPES
