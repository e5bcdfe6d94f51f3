"""hooks.claims: the gate checks each note's claims against the commit it is attached to.

Each note records the blobs its commit changed (``files``); ``redline guard
--range`` (and every gate, through hooks.gate.judge) compares them, the match
evidence and the lines it names with the commit, and fails closed naming the
commit when they disagree: a note edited by hand, or attached to a commit it
does not describe. Genuine notes pass, and are remembered as checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import pytest
from click.testing import CliRunner
from guard_fixtures import (
    APP,
    MIGRATION,
    Flagged,
    agent,
    flagged_edit,
    head,
    user_repo,
)

from gitmode_fixtures import git, note_of
from redline.cli.main import cli
from redline.hooks import ledger as ledgers
from redline.hooks.approve import approve
from redline.hooks.claims import Checked
from redline.hooks.gate import check_range


@pytest.fixture
def flagged(tmp_path: Path) -> Flagged:
    return flagged_edit(user_repo(tmp_path / "repo"))


def blob(repo: Path, rev: str) -> str:
    return git(repo, "rev-parse", rev).strip()


def rewrite_note(repo: Path, commit: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit a commit's note by hand, as ``git notes edit`` would."""
    note = note_of(repo, commit)
    change(note)
    git(repo, "notes", "--ref=redline", "add", "-f", "-m", json.dumps(note), commit)


def verdict(repo: Path, spec: str) -> dict[str, Any]:
    base, tip = spec.split("..")
    handle = pygit2.Repository(str(repo))
    return check_range(handle, ledgers.load(handle), base, tip).to_json(spec)


def test_a_note_records_the_blobs_its_commit_changed(flagged: Flagged) -> None:
    note = note_of(flagged.repo, flagged.commit)
    assert note["files"] == [
        {
            "path": MIGRATION,
            "before": blob(flagged.repo, f"{flagged.base}:{MIGRATION}"),
            "after": blob(flagged.repo, f"{flagged.commit}:{MIGRATION}"),
        }
    ]


def test_a_move_records_both_files_and_a_patch_names_its_hunks_in_the_commit(
    tmp_path: Path,
) -> None:
    repo = user_repo(tmp_path / "repo")
    session = agent(repo)
    result = session.patch(
        f"*** Update File: {APP}\n*** Move to: src/main.py\n@@\n def main():\n"
        "-    config = load_config()\n+    config = load_config(strict=True)\n"
    )
    assert result["status"] == "applied", result
    [made] = result["commits"]
    note = note_of(repo, made["commit"])
    assert note["files"] == [
        {"path": APP, "before": blob(repo, f"HEAD:{APP}"), "after": None},
        {
            "path": "src/main.py",
            "before": None,
            "after": blob(repo, f"{made['commit']}:src/main.py"),
        },
    ]
    message = git(repo, "log", "-1", "--format=%B", made["commit"])
    assert "Hunks matched: exact." in message
    assert verdict(repo, f"HEAD..{session.branch}")["mismatched"] == []


def test_genuine_notes_pass_and_are_remembered(flagged: Flagged) -> None:
    git(flagged.repo, "merge", "-q", "--ff-only", flagged.branch)
    assert verdict(flagged.repo, f"{flagged.base}..main")["mismatched"] == []
    handle = pygit2.Repository(str(flagged.repo))
    checked = Checked.load(handle)
    note_blob = git(flagged.repo, "notes", "--ref=redline", "list", flagged.commit).strip()
    record = pygit2.Oid(hex=flagged.commit).raw + pygit2.Oid(hex=note_blob).raw
    assert checked.known == {record}
    # a note edited since is another blob: checked anew
    rewrite_note(flagged.repo, flagged.commit, lambda n: n.update(operations=[]))
    assert verdict(flagged.repo, f"{flagged.base}..main")["mismatched"] == []  # still true
    assert len(Checked.load(handle).known) == 2


def exact_now(note: dict[str, Any]) -> None:
    """The hand edit the guard is about: a fuzzy match re-labelled exact."""
    for op in note["operations"]:
        op["match_type"], op["confidence"] = "exact", 1.0
    note.pop("tolerances", None)
    note["policy"] = {"verdict": "pass", "source": ".redline.toml"}


def other_after(note: dict[str, Any]) -> None:
    note["files"][0]["after"] = "0" * 40


def fewer_files(note: dict[str, Any]) -> None:
    note["files"] = []


def more_files(note: dict[str, Any]) -> None:
    note["files"].append({"path": APP, "before": None, "after": "1" * 40})


def no_range(note: dict[str, Any]) -> None:
    note["operations"][0]["start_line"], note["operations"][0]["end_line"] = 41, 40


def matched_elsewhere(note: dict[str, Any]) -> None:
    note["operations"][0]["path"] = APP


def old_note_elsewhere(note: dict[str, Any]) -> None:
    """A note without blob ids (as before they were recorded) naming another file."""
    del note["files"]
    note["operations"][0]["path"] = APP


def exact_with_less(note: dict[str, Any]) -> None:
    exact_now(note)
    note["operations"][0]["confidence"] = 0.93


TAMPERED = [
    (
        "relabelled exact",
        exact_now,
        "it says the edit matched exact; the commit's message says fuzzy",
    ),
    ("another blob", other_after, f"it says {MIGRATION} went from blob "),
    ("a file left out", fewer_files, f"the commit also changes {MIGRATION}, which the note does"),
    ("a file it did not change", more_files, f"it says {APP} changed; the commit leaves {APP} as"),
    ("no range of lines", no_range, f"it says lines 41-40 of {MIGRATION} were matched, which"),
    ("text matched elsewhere", matched_elsewhere, f"it says text of {APP} was matched and"),
    ("an old note naming another file", old_note_elsewhere, f"it names {APP}, which the commit"),
    ("exact below 1", exact_with_less, f"it says {MIGRATION} matched exact with confidence 0.93"),
]


@pytest.mark.parametrize(("name", "tamper", "says"), TAMPERED, ids=[t[0] for t in TAMPERED])
def test_a_note_that_does_not_describe_its_commit_fails_the_range(
    flagged: Flagged,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    tamper: Callable[[dict[str, Any]], None],
    says: str,
) -> None:
    git(flagged.repo, "merge", "-q", "--ff-only", flagged.branch)
    rewrite_note(flagged.repo, flagged.commit, tamper)
    spec = f"{flagged.base}..main"
    data = verdict(flagged.repo, spec)
    assert not data["ok"]
    [item] = data["mismatched"]
    assert item["commit"] == flagged.commit
    assert item["reason"].startswith(says), item["reason"]
    assert data["summary"].endswith("0 unreadable notes, 1 note not describing its commit")

    monkeypatch.chdir(flagged.repo)
    outcome = CliRunner().invoke(cli, ["guard", "--range", spec])
    assert outcome.exit_code == 1, outcome.output
    assert (
        "redline guard: refused — the evidence note of 1 commit does not describe the commit's "
        "change" in outcome.output
    )
    assert f"  commit {flagged.commit[:12]}: {says}" in outcome.output
    assert f"`git notes --ref=redline remove {flagged.commit[:12]}`" in outcome.output
    assert "Traceback" not in outcome.output


def test_a_removed_note_is_then_evidence_missing_until_approved(flagged: Flagged) -> None:
    """The way out the refusal names: a person removes the note, and approves the commit."""
    git(flagged.repo, "merge", "-q", "--ff-only", flagged.branch)
    rewrite_note(flagged.repo, flagged.commit, exact_now)
    git(flagged.repo, "notes", "--ref=redline", "remove", flagged.commit)
    data = verdict(flagged.repo, f"{flagged.base}..main")
    assert (data["mismatched"], [m["commit"] for m in data["missing"]]) == ([], [flagged.commit])
    approve(pygit2.Repository(str(flagged.repo)), [flagged.commit])
    assert verdict(flagged.repo, f"{flagged.base}..main")["ok"]


def test_a_rebased_commit_with_its_note_copied_is_named(tmp_path: Path) -> None:
    """git rebase copies notes when notes.rewriteRef says so; a copy onto a commit whose
    change differs (main changed the same file) no longer describes it."""
    repo = user_repo(tmp_path / "repo")
    session = agent(repo)
    result = session.edit(APP, "    server.serve_forever()\n", "    server.serve_forever()  # ok\n")
    [made] = result["commits"]
    (repo / APP).write_text((repo / APP).read_text().replace("def main", "def run"))
    git(repo, "commit", "-qam", "rename main")
    base = head(repo)
    git(repo, "config", "notes.rewriteRef", "refs/notes/redline")
    git(repo, "checkout", "-q", "-b", "work", session.branch)
    git(repo, "rebase", "-q", "main")
    rebased = head(repo)
    assert rebased != made["commit"]
    assert note_of(repo, rebased)["edit"] == made["edit"]
    data = verdict(repo, f"{base}..work")
    [item] = data["mismatched"]
    assert item["commit"] == rebased
    assert item["reason"].startswith(f"it says {APP} went from blob ")
