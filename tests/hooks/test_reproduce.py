"""Running a recorded request again against its commit's parent (hooks.reproduce).

Edits are made by the in-process git-mode layer on real repositories; the same
request is then run again and compared with what the note and the commit say,
and with notes rewritten the ways a forger would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pygit2
import pytest
from guard_fixtures import (
    APP,
    APP_TEXT,
    EXACT_NEW,
    EXACT_OLD,
    FUZZY_NEW,
    FUZZY_OLD,
    MIGRATION,
    agent,
    user_repo,
)

from redline.engine.edit import EditItem, EditRequest
from redline.engine.patch import PatchRequest
from redline.gitops import notes
from redline.hooks.reproduce import Unreproduced, matched_where_recorded, reproduce

PATCH = (
    "*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n"
    "-    config = load_config()  \n+    config = load_config(strict=True)\n*** End Patch\n"
)


def made(
    repo: Path, request: EditRequest | PatchRequest
) -> tuple[pygit2.Repository, pygit2.Commit, dict[str, Any]]:
    session = agent(repo)
    result = session.applier.apply(request).to_dict()
    assert result["status"] == "applied", result
    [commit] = result["commits"]
    git_repo = pygit2.Repository(str(repo))
    found = git_repo[pygit2.Oid(hex=commit["commit"])]
    assert isinstance(found, pygit2.Commit)
    note = notes.read_note(git_repo, found.id)
    assert note is not None
    return git_repo, found, note


@pytest.mark.parametrize(
    ("old", "new"), [(EXACT_OLD, EXACT_NEW), (FUZZY_OLD, FUZZY_NEW)], ids=["exact", "fuzzy"]
)
def test_a_genuine_note_reproduces(tmp_path: Path, old: str, new: str) -> None:
    request = EditRequest(MIGRATION, (EditItem(old, new),))
    repo, commit, note = made(user_repo(tmp_path / "repo"), request)
    assert reproduce(repo, commit, note, request) is None
    assert matched_where_recorded(repo, commit, note) is None


def test_a_genuine_patch_note_reproduces(tmp_path: Path) -> None:
    request = PatchRequest(PATCH)
    repo, commit, note = made(user_repo(tmp_path / "repo"), request)
    assert note["operations"][0]["match_type"] == "rstrip"
    assert reproduce(repo, commit, note, request) is None
    assert matched_where_recorded(repo, commit, note) is None
    exact = {
        **note,
        "operations": [{**note["operations"][0], "match_type": "exact", "confidence": 1.0}],
    }
    assert reproduce(repo, commit, exact, request) == (
        f"the note says {APP} matched exact; run again, it matches rstrip"
    )


def test_each_rewrite_of_a_fuzzy_note_is_named(tmp_path: Path) -> None:
    request = EditRequest(MIGRATION, (EditItem(FUZZY_OLD, FUZZY_NEW),))
    repo, commit, note = made(user_repo(tmp_path / "repo"), request)
    [op] = note["operations"]
    conf = op["confidence"]

    def said(**changes: Any) -> str | None:
        return reproduce(repo, commit, {**note, "operations": [{**op, **changes}]}, request)

    assert said(match_type="exact", confidence=1.0) == (
        f"the note says {MIGRATION} matched exact; run again, it matches fuzzy"
    )
    assert said(confidence=0.99) == (
        f"the note says {MIGRATION} matched with confidence 0.99; run again, {conf}"
    )
    assert said(matched_sha256=notes.sha256("something else")) == (
        f"the note's matched text of {MIGRATION} (lines {op['start_line']}-{op['end_line']}) is "
        "not the text the request matches there"
    )
    assert said(start_line=1) == (
        f"the note says lines 1-{op['end_line']} of {MIGRATION} were matched; run again, lines "
        f"{op['start_line']}-{op['end_line']}"
    )
    assert reproduce(repo, commit, {**note, "tolerances": []}, request) == (
        "the note says it tolerated none; run again, fuzzy"
    )
    # another request (the agent's swapped for one that writes other bytes)
    other = EditRequest(MIGRATION, (EditItem(FUZZY_OLD, FUZZY_NEW.replace("UNIQUE", "")),))
    assert reproduce(repo, commit, note, other) == (
        f"run again, the request writes other bytes to {MIGRATION} than the commit"
    )


def test_a_note_moved_onto_another_commit_does_not_reproduce_there(tmp_path: Path) -> None:
    repo_path = user_repo(tmp_path / "repo")
    request = EditRequest(MIGRATION, (EditItem(FUZZY_OLD, FUZZY_NEW),))
    repo, _, note = made(repo_path, request)
    later = EditRequest(APP, (EditItem(APP_TEXT.splitlines(True)[1], "    config = {}\n"),))
    session = agent(repo_path, "t")
    [other] = session.applier.apply(later).to_dict()["commits"]
    commit = repo[pygit2.Oid(hex=other["commit"])]
    assert isinstance(commit, pygit2.Commit)
    said = reproduce(repo, commit, note, request)
    assert said is not None and said.startswith("run again, the request")


def test_a_note_of_another_version_says_so() -> None:
    found = Unreproduced(
        "e1", "c" * 40, "the note says a matched exact; run again, fuzzy", "0.0.9", "0.1.0"
    )
    assert found.reason == (
        "recorded by redline 0.0.9, not reproducible by 0.1.0: the note says a matched exact; "
        "run again, fuzzy"
    )
    assert Unreproduced("e1", "c" * 40, "x", "0.1.0", "0.1.0").reason == "x"


def test_without_the_request_the_matched_text_is_checked_where_the_note_puts_it(
    tmp_path: Path,
) -> None:
    request = EditRequest(MIGRATION, (EditItem(FUZZY_OLD, FUZZY_NEW),))
    repo, commit, note = made(user_repo(tmp_path / "repo"), request)
    [op] = note["operations"]

    def said(**changes: Any) -> str | None:
        return matched_where_recorded(repo, commit, {**note, "operations": [{**op, **changes}]})

    assert said() is None
    assert said(matched_sha256=notes.sha256("    id INTEGER PRIMARY KEY,\n")) == (
        f"the note's matched text of {MIGRATION} is not in lines {op['start_line']}-"
        f"{op['end_line']} of the file the commit changed"
    )
    assert said(start_line=1, end_line=1) == (
        f"the note's matched text of {MIGRATION} is not in lines 1-1 of the file the commit changed"
    )
    assert said(end_line=99) == (
        f"the note says lines {op['start_line']}-99 of {MIGRATION} were matched; the file the "
        "commit changed has 5 lines"
    )
    # a fragment of one line is found inside it
    line = "    name TEXT NOT NULL,\n"
    assert said(start_line=3, end_line=3, matched_sha256=notes.sha256("TEXT NOT")) is None
    assert said(start_line=3, end_line=3, matched_sha256=notes.sha256(line)) is None
