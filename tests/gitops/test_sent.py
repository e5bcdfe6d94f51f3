"""The request as sent, kept with the evidence (gitops.sent): stored, capped, carried.

Requests are written as blobs of a real repository, named by notes written with
redline's own writer, and read back — with ``git`` where what matters is what
git sees (the notes tree, ``git notes``).
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitmode_fixtures import git
from redline.engine.edit import EditItem, EditRequest
from redline.engine.patch import PatchRequest
from redline.engine.write import DeleteRequest, WriteRequest
from redline.gitops import notes, sent
from redline.gitops.errors import CorruptNotes, RequestRedacted
from redline.gitops.notes_merge import merge_into
from redline.gitops.repo import NOTES_REF, signature
from redline.hooks import ledger

PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+X\n*** End Patch\n"
REQUESTS = [
    EditRequest("a.txt", (EditItem("  x = 1\n", "  x = 2\n", False),), threshold=0.85),
    EditRequest("a.txt", (EditItem("a", "b"), EditItem("c", "d", True)), batch=True),
    PatchRequest(PATCH, validate=True),
    WriteRequest("b.txt", "content\r\n", "crlf"),
    DeleteRequest("c.txt"),
]


@pytest.fixture
def handle(repo: Path) -> pygit2.Repository:
    (repo / "x.txt").write_text("x\n")
    git(repo, "add", "x.txt")
    git(repo, "commit", "-q", "-m", "x")
    return pygit2.Repository(str(repo))


def noted(handle: pygit2.Repository, record: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"schema": notes.SCHEMA, "edit": "e1", "tool": "edit", "source": "agent",
            "operations": [], "sent": record, **extra}  # fmt: skip


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_a_kept_request_reads_back_as_the_engine_received_it(
    handle: pygit2.Repository, request_: Any
) -> None:
    record = sent.keep(handle, request_)
    assert record["bytes"] == len(handle[record["blob"]].data) and record["cap"] == sent.CAP
    back = notes.request_of(handle, noted(handle, record))
    assert back is not None
    assert back.request() == request_
    assert back.engine == json.loads(handle[record["blob"]].data)["engine"] != ""


def test_the_texts_shown_beside_the_file() -> None:
    edit = sent.Sent("edit", "a.txt", {"edits": [{"old_string": "o\n", "new_string": "n\n"}]}, "")
    assert (edit.old_text_of("a.txt"), edit.new_text_of("a.txt")) == ("o\n", "n\n")
    two = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+X\n"
        "*** Update File: b.txt\n@@\n ctx\n-y\n+Y\n*** End Patch\n"
    )
    patch = sent.Sent("apply_patch", None, {"patch": two}, "")
    assert patch.old_text_of("a.txt") == "x\n"
    assert patch.new_text_of("b.txt") == "ctx\nY\n"
    assert patch.old_text_of() == "x\nctx\ny\n"


def test_a_request_over_the_cap_keeps_its_size_and_digest_only(
    handle: pygit2.Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sent, "CAP", 64)
    big = WriteRequest("b.txt", "x" * 100)
    record = sent.keep(handle, big)
    assert "blob" not in record and record["over_cap"] is True and record["cap"] == 64
    assert record["sha256"] == __import__("hashlib").sha256(sent.encode(big)).hexdigest()
    assert notes.request_of(handle, noted(handle, record)) is None


def test_a_note_naming_a_missing_request_is_refused_not_skipped(
    handle: pygit2.Repository,
) -> None:
    record = {"blob": "0" * 40, "bytes": 3, "sha256": "", "cap": sent.CAP}
    with pytest.raises(CorruptNotes, match="names the request blob 000000000000 of edit e1"):
        notes.request_of(handle, noted(handle, record))


def test_the_request_sits_in_the_notes_tree_where_git_keeps_it(
    handle: pygit2.Repository, repo: Path
) -> None:
    record = sent.keep(handle, REQUESTS[0])
    commit = handle.head.target
    tip = notes.publish(handle, lambda _tip: {commit: noted(handle, record)}, signature(handle))
    assert tip is not None
    path = sent.path_of(record["blob"])
    assert path in git(repo, "ls-tree", "-r", "--name-only", NOTES_REF).split()
    assert git(repo, "notes", "--ref=redline", "list").split() == [
        str(notes.blob_of(handle, commit, tip)),
        str(commit),
    ]
    # git's own notes commands keep it; redline's readers skip it
    git(repo, "notes", "--ref=redline", "add", "-f", "-m", json.dumps(noted(handle, record)))
    assert path in git(repo, "ls-tree", "-r", "--name-only", NOTES_REF).split()
    read = ledger.load(handle)
    assert read.unreadable == {} and read.edits == {str(commit): "e1"}


def test_merging_two_clones_notes_keeps_the_requests_of_both(
    handle: pygit2.Repository, repo: Path
) -> None:
    commit = handle.head.target
    ours_record, theirs_record = (sent.keep(handle, r) for r in REQUESTS[:2])
    base = notes.prepare(handle, {commit: noted(handle, {})}, signature(handle), None)
    ours = notes.prepare(handle, {commit: noted(handle, ours_record)}, signature(handle), base)
    other = notes.prepare(handle, {commit: noted(handle, theirs_record)}, signature(handle), base)
    handle.references.create(NOTES_REF, ours, force=True)
    assert merge_into(handle, other, "origin").how == "merged"
    listed = git(repo, "ls-tree", "-r", "--name-only", NOTES_REF).split()
    assert sent.path_of(ours_record["blob"]) in listed
    assert sent.path_of(theirs_record["blob"]) in listed


def test_likely_secrets_are_redacted_and_such_a_request_is_never_run_again(
    handle: pygit2.Repository, repo: Path
) -> None:
    secret = 'TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n'
    request = EditRequest("a.txt", (EditItem(secret, "TOKEN = os.environ['T']\n"),))
    record = sent.keep(handle, request)
    assert record["redacted"] is True
    assert record["sha256"] == __import__("hashlib").sha256(sent.encode(request)).hexdigest()
    assert b"ghp_abcdefghijklmnopqrstuvwxyz" not in handle[record["blob"]].data
    back = notes.request_of(handle, noted(handle, record))
    assert back is not None and back.redacted
    assert back.old_text_of() == 'TOKEN = "[REDACTED]"\n'
    with pytest.raises(RequestRedacted, match="the request kept for edit e1 held likely secrets"):
        back.request()


def test_notes_naming_a_new_request_each_keep_no_string_per_note(
    handle: pygit2.Repository,
) -> None:
    """Each note names a request blob new with every edit; looking it up in the notes tree
    must not leave a string behind (pygit2 keeps every path string it is given)."""
    commit = handle.head.target
    records = [
        sent.keep(handle, EditRequest("a.txt", (EditItem(f"x = {n}\n", "y\n", False),)))
        for n in range(1500)
    ]
    tip = notes.prepare(handle, {commit: noted(handle, records[0])}, signature(handle), None)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for record in records[1:]:
        notes.prepare(handle, {commit: noted(handle, record)}, signature(handle), tip)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 60_000, f"{grown} bytes kept by 1,499 notes naming a new request each"
