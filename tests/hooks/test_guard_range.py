"""``redline guard --range BASE..HEAD``: the CI gate over the commits of a range.

Each row of the table builds one way an agent's edit reaches main — approved,
unapproved, its note deleted, squashed, cherry-picked, or no agent at all — and
runs the gate over ``base..main`` as a CI job would, checking the verdict,
the exit code, what is named, and the one-line summary last.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from guard_fixtures import (
    APP,
    APP_FUZZY_NEW,
    APP_FUZZY_OLD,
    APP_TEXT,
    MIGRATION,
    POLICY,
    agent,
    flagged_edit,
    head,
    redline,
    user_repo,
)

from gitmode_fixtures import git


@dataclass(frozen=True)
class Case:
    repo: Path
    base: str
    edit: str  # the agent's edit the row is about ("" for none)
    commit: str  # its commit on the session branch


def approved(repo: Path) -> Case:
    f = flagged_edit(repo)
    redline(repo, "approve", f.edit, "--repo", str(repo), check=True)
    git(repo, "merge", "-q", "--ff-only", f.branch)
    return Case(repo, f.base, f.edit, f.commit)


def unapproved(repo: Path) -> Case:
    f = flagged_edit(repo)
    git(repo, "merge", "-q", "--ff-only", f.branch)
    return Case(repo, f.base, f.edit, f.commit)


def note_deleted(repo: Path) -> Case:
    """An exact edit — nothing to flag — whose note is then removed."""
    base = head(repo)
    result = agent(repo).edit(APP, "load_config()", "load_config(strict=True)")
    assert result["status"] == "applied" and not result["flags"], result
    [commit] = result["commits"]
    git(repo, "notes", "--ref=redline", "remove", commit["commit"])
    git(repo, "merge", "-q", "--ff-only", "redline/s")
    return Case(repo, base, commit["edit"], commit["commit"])


def squashed(repo: Path) -> Case:
    f = flagged_edit(repo)
    git(repo, "merge", "-q", "--squash", f.branch)
    git(repo, "commit", "-q", "--no-verify", "-m", "the session, squashed")
    return Case(repo, f.base, f.edit, f.commit)


def squashed_approved(repo: Path) -> Case:
    case = squashed(repo)
    redline(repo, "approve", case.edit, "--repo", str(repo), check=True)
    return case


def cherry_picked(repo: Path) -> Case:
    f = flagged_edit(repo)
    git(repo, "cherry-pick", f.commit)
    return Case(repo, f.base, f.edit, f.commit)


def by_hand(repo: Path) -> Case:
    base = head(repo)
    (repo / APP).write_text(APP_TEXT + "\n# by hand\n")
    git(repo, "commit", "-q", "-am", "by hand")
    return Case(repo, base, "", "")


# row: how main got the change -> (exit code, what is named: blocked / missing / nothing)
TABLE: list[tuple[str, Callable[[Path], Case], int, str]] = [
    ("approved edit", approved, 0, "nothing"),
    ("unapproved flagged edit", unapproved, 1, "blocked"),
    ("redline commit whose note was deleted", note_deleted, 1, "missing"),
    ("squash commit of a session, unapproved", squashed, 1, "blocked"),
    ("squash commit of a session, approved", squashed_approved, 0, "nothing"),
    ("cherry-pick of an unapproved flagged edit", cherry_picked, 1, "blocked"),
    ("a commit made by hand", by_hand, 0, "nothing"),
]


def gate(repo: Path, spec: str, *extra: str) -> Any:
    return redline(repo, "guard", "--range", spec, *extra)


@pytest.mark.parametrize(("row", "build", "code", "named"), TABLE, ids=[r[0] for r in TABLE])
def test_the_range_verdict_table(
    tmp_path: Path, row: str, build: Callable[[Path], Case], code: int, named: str
) -> None:
    case = build(user_repo(tmp_path / "repo"))
    spec = f"{case.base}..main"
    commits = len(git(case.repo, "rev-list", spec).split())

    proc = gate(case.repo, spec)
    assert proc.returncode == code, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    verdict = "passed" if code == 0 else "FAILED"
    assert lines[-1].startswith(f"redline guard --range {spec}: {verdict} — {commits} commit"), (
        lines[-1]
    )

    data = json.loads(gate(case.repo, spec, "--json").stdout)
    assert (data["ok"], data["commits"], data["head"]) == (code == 0, commits, head(case.repo))
    blocked = [(b["edit"], b["commit"]) for b in data["blocked"]]
    missing = [(m["edit"], m["commit"]) for m in data["missing"]]
    assert blocked == ([(case.edit, case.commit)] if named == "blocked" else [])
    assert missing == ([(case.edit, case.commit)] if named == "missing" else [])
    assert data["unreadable"] == []
    assert data["summary"] == lines[-1]
    if named == "blocked":
        [item] = data["blocked"]
        assert (item["path"], item["match_type"]) == (MIGRATION, "fuzzy")
        # the lines matched in the file before the edit, and where its lines are now
        assert (item["start_line"], item["end_line"]) == (2, 4)
        assert item["lines"] == [[4, 5]]
        assert 0 < item["confidence"] < 1
        text = proc.stdout
        assert (
            f"  edit {case.edit} (commit {case.commit[:12]}): {MIGRATION} lines 4-5, fuzzy" in text
        )
        assert f"`redline approve {case.edit}` and push the notes (`redline notes sync`)" in text
    if named == "missing":
        assert proc.stdout.startswith("evidence missing: fetch refs/notes/redline before the check")
        assert "git fetch origin '+refs/notes/*:refs/notes/*'" in proc.stdout
        assert f"evidence missing for edit {case.edit} (commit {case.commit[:12]})" in proc.stdout


def test_one_range_with_every_row_names_each_failure_once(tmp_path: Path) -> None:
    src_rule = '\n[[guard.protect]]\npaths = ["src/**"]\nrequire = "exact"\n'
    repo = user_repo(
        tmp_path / "repo", POLICY + src_rule, **{"lib/util.py": "def util():\n    return 1\n"}
    )
    base = head(repo)
    bad = flagged_edit(repo, name="bad")
    git(repo, "cherry-pick", bad.commit)
    good = flagged_edit(repo, path=APP, old=APP_FUZZY_OLD, new=APP_FUZZY_NEW, name="good")
    redline(repo, "approve", good.edit, "--repo", str(repo), check=True)
    git(repo, "merge", "-q", "--no-edit", "--no-verify", good.branch)
    result = agent(repo, "gone").edit("lib/util.py", "return 1", "return 2")
    [lost] = result["commits"]
    git(repo, "notes", "--ref=redline", "remove", lost["commit"])
    git(repo, "merge", "-q", "--no-edit", "--no-verify", "redline/gone")

    data = json.loads(gate(repo, f"{base}..HEAD", "--json").stdout)
    assert not data["ok"]
    assert [(b["edit"], b["path"]) for b in data["blocked"]] == [(bad.edit, MIGRATION)]
    assert [(m["edit"], m["commit"]) for m in data["missing"]] == [(lost["edit"], lost["commit"])]
    assert data["summary"].endswith(
        "1 unapproved flagged edit, 1 edit with evidence missing, 0 unreadable notes"
    )


def test_a_range_whose_base_moved_on_is_judged_from_the_merge_base(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    f = flagged_edit(repo)
    # main moves on after the session started; the pull request is the session branch
    (repo / "NOTES.md").write_text("later\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "main moves on")
    data = json.loads(gate(repo, f"main..{f.branch}", "--json").stdout)
    assert data["commits"] == 1
    assert [b["edit"] for b in data["blocked"]] == [f.edit]
    redline(repo, "approve", f.edit, "--repo", str(repo), check=True)
    assert gate(repo, f"main...{f.branch}").returncode == 0


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("main", "--range takes BASE..HEAD"),
        ("..main", "--range takes BASE..HEAD"),
        ("nosuch..main", "cannot resolve BASE 'nosuch'"),
        ("main..0123456789abcdef0123", "cannot resolve HEAD '0123456789abcdef0123'"),
    ],
)
def test_a_range_that_names_no_two_commits_says_so(tmp_path: Path, spec: str, says: str) -> None:
    repo = user_repo(tmp_path / "repo")
    proc = gate(repo, spec)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr
    assert "Traceback" not in proc.stderr
