"""Merging two histories of refs/notes/redline by union (gitops.notes_merge).

Notes commits are made with redline's own writer on two diverging parents, the
way two clones make them; what the merge wrote is read back with ``git notes``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitmode_fixtures import git, note_of
from redline.gitops import notes
from redline.gitops.errors import CorruptNotes
from redline.gitops.notes_merge import merge_into, union
from redline.gitops.repo import NOTES_REF, signature

ALICE = {"by": "Alice <alice@example.com>", "at": "2026-01-02T10:00:00Z"}
BOB = {"by": "Bob <bob@example.com>", "at": "2026-01-02T11:00:00Z"}


def note(edit: str, *approvals: dict[str, str], **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schema": notes.SCHEMA,
        "edit": edit,
        "request": "r1",
        "session": "s",
        "tool": "edit",
        "model": None,
        "source": "agent",
        "created": "2026-01-01T00:00:00Z",
        "operations": [
            {
                "path": "a.txt",
                "op": "edit",
                "match_type": "fuzzy",
                "confidence": 0.93,
                "start_line": 2,
                "end_line": 4,
            },
        ],
        "policy": {
            "verdict": "flagged",
            "action": "review",
            "source": ".redline.toml",
            "violations": [{"rule": "r", "path": "a.txt", "reason": "fuzzy"}],
        },
        "approvals": list(approvals),
    }
    data.update(extra)
    return data


def placeholder(edit: str, *approvals: dict[str, str]) -> dict[str, Any]:
    """The note ``redline approve`` writes for a commit whose evidence is gone."""
    return note(
        edit,
        *approvals,
        tool="unknown",
        source="unknown",
        request="",
        session="",
        operations=[{"path": "a.txt", "op": "write"}],
        policy={"verdict": "flagged", "action": "review", "source": "evidence missing",
                "violations": [{"rule": "evidence missing", "path": "a.txt", "reason": "gone"}]},
    )  # fmt: skip


@pytest.fixture
def commits(repo: Path) -> tuple[pygit2.Repository, list[pygit2.Oid]]:
    """The repository and three commits to annotate."""
    for name in ("x", "y", "z"):
        (repo / f"{name}.txt").write_text(f"{name}\n")
        git(repo, "add", f"{name}.txt")
        git(repo, "commit", "-q", "-m", name)
    handle = pygit2.Repository(str(repo))
    ids = [handle.revparse_single(f"HEAD~{n}").id for n in (2, 1, 0)]
    return handle, ids


def commit_notes(
    repo: pygit2.Repository, parent: pygit2.Oid | None, added: dict[pygit2.Oid, Any]
) -> pygit2.Oid:
    return notes.prepare(repo, added, signature(repo), parent)


def removed(repo: pygit2.Repository, parent: pygit2.Oid, commit: pygit2.Oid) -> pygit2.Oid:
    """A notes commit on ``parent`` without ``commit``'s note (as `git notes remove`)."""
    tree = notes.notes_tree(repo, parent)
    assert tree is not None
    builder = repo.TreeBuilder(tree)
    sub = repo[tree[str(commit)[:2]].id]
    assert isinstance(sub, pygit2.Tree)
    inner = repo.TreeBuilder(sub)
    inner.remove(str(commit)[2:])
    builder.insert(str(commit)[:2], inner.write(), pygit2.enums.FileMode.TREE)
    sig = signature(repo)
    return repo.create_commit(None, sig, sig, "Notes removed\n", builder.write(), [parent])


def set_ref(repo: pygit2.Repository, target: pygit2.Oid) -> None:
    repo.references.create(NOTES_REF, target, force=True)


def test_approvals_made_on_both_sides_are_all_kept(
    repo: Path, commits: tuple[pygit2.Repository, list[pygit2.Oid]]
) -> None:
    handle, (x, y, z) = commits
    base = commit_notes(handle, None, {x: note("e1"), y: note("e2")})
    ours = commit_notes(handle, base, {x: note("e1", ALICE)})
    theirs = commit_notes(handle, base, {x: note("e1", BOB), z: note("e3")})
    set_ref(handle, ours)

    merged = merge_into(handle, theirs, "origin")

    assert merged.how == "merged" and merged.kept == []
    tip = handle[merged.tip]
    assert isinstance(tip, pygit2.Commit)
    assert tip.parent_ids == [ours, theirs]
    assert note_of(repo, str(x))["approvals"] == [ALICE, BOB]
    assert note_of(repo, str(y)) == note("e2")
    assert note_of(repo, str(z)) == note("e3")
    # what git lists is what the merge holds: one note per annotated commit
    listed = git(repo, "notes", "--ref=redline", "list").split()
    assert sorted(listed[1::2]) == sorted(map(str, (x, y, z)))


def test_the_union_is_the_same_whichever_side_merges(
    commits: tuple[pygit2.Repository, list[pygit2.Oid]],
) -> None:
    handle, (x, _, _) = commits
    base = commit_notes(handle, None, {x: note("e1")})
    ours = commit_notes(handle, base, {x: note("e1", BOB, ALICE)})
    theirs = commit_notes(handle, base, {x: note("e1", BOB)})
    set_ref(handle, ours)
    one = merge_into(handle, theirs).tip
    set_ref(handle, theirs)
    other = merge_into(handle, ours).tip
    assert one is not None and other is not None
    assert notes.blob_of(handle, x, one) == notes.blob_of(handle, x, other)
    # each approval once, in time order
    assert notes.read_note(handle, x, at=one)["approvals"] == [ALICE, BOB]  # type: ignore[index]


def test_fast_forward_and_up_to_date(
    commits: tuple[pygit2.Repository, list[pygit2.Oid]],
) -> None:
    handle, (x, y, _) = commits
    base = commit_notes(handle, None, {x: note("e1")})
    ahead = commit_notes(handle, base, {y: note("e2")})

    assert merge_into(handle, base).how == "fast-forward"  # no local notes yet
    assert notes.current(handle) == base
    assert merge_into(handle, ahead).how == "fast-forward"
    assert notes.current(handle) == ahead
    assert merge_into(handle, base).how == "up to date"
    assert notes.current(handle) == ahead


def test_a_note_removed_on_one_side_stays_removed_unless_the_other_changed_it(
    repo: Path, commits: tuple[pygit2.Repository, list[pygit2.Oid]]
) -> None:
    handle, (x, y, z) = commits
    base = commit_notes(handle, None, {x: note("e1"), y: note("e2")})
    # ours removes x's note (reviewed and dropped) and approves y; theirs removes y's
    # note while we changed it, and adds z
    ours = commit_notes(handle, removed(handle, base, x), {y: note("e2", ALICE)})
    theirs = commit_notes(handle, removed(handle, base, y), {z: note("e3")})
    set_ref(handle, ours)
    merge_into(handle, theirs)
    assert notes.read_note(handle, x) is None
    assert note_of(repo, str(y))["approvals"] == [ALICE]  # a changed note is never lost
    assert note_of(repo, str(z)) == note("e3")


def test_evidence_replaces_the_note_approve_wrote_without_it(
    repo: Path, commits: tuple[pygit2.Repository, list[pygit2.Oid]]
) -> None:
    handle, (x, _, _) = commits
    # one clone had the evidence; the other had lost it and approved the commit's diff
    ours = commit_notes(handle, None, {x: note("e1")})
    theirs = commit_notes(handle, None, {x: placeholder("e1", BOB)})
    set_ref(handle, ours)
    assert merge_into(handle, theirs).how == "merged"
    merged = note_of(repo, str(x))
    assert merged == note("e1", BOB)


def test_differing_evidence_keeps_every_flag() -> None:
    flagged = note("e1", ALICE)
    passed = note("e1", BOB, policy={"verdict": "pass", "source": ".redline.toml"})
    other = note("e1", policy={"verdict": "flagged", "action": "review", "source": "x",
                               "violations": [{"rule": "q", "path": "a.txt", "reason": "z"}]})  # fmt: skip
    for one, two in ((flagged, passed), (passed, flagged)):
        merged = union(one, two)
        assert merged["policy"]["verdict"] == "flagged"
        assert merged["approvals"] == [ALICE, BOB]
    both = union(flagged, other)
    assert [v["rule"] for v in both["policy"]["violations"]] == ["r", "q"]
    assert union(flagged, other) == union(other, flagged)


def test_a_note_that_is_no_redline_note_is_kept_and_reported(
    repo: Path, commits: tuple[pygit2.Repository, list[pygit2.Oid]]
) -> None:
    handle, (x, _, _) = commits
    base = commit_notes(handle, None, {x: note("e1")})
    ours = commit_notes(handle, base, {x: handle.create_blob(b"hand-written text\n")})
    theirs = commit_notes(handle, base, {x: note("e1", BOB)})
    set_ref(handle, ours)
    merged = merge_into(handle, theirs)
    assert merged.kept == [str(x)]
    assert git(repo, "notes", "--ref=redline", "show", str(x)) == "hand-written text\n"


def test_flat_notes_written_by_git_merge_with_fanned_out_ones(
    repo: Path, commits: tuple[pygit2.Repository, list[pygit2.Oid]]
) -> None:
    handle, (x, y, _) = commits
    base = commit_notes(handle, None, {y: note("e2")})
    set_ref(handle, base)
    theirs_text = json.dumps(note("e1", BOB))
    git(repo, "notes", "--ref=redline", "add", "-m", theirs_text, str(x))  # flat, by git
    theirs = notes.current(handle)
    assert theirs is not None
    set_ref(handle, base)
    ours = commit_notes(handle, base, {x: note("e1", ALICE)})  # fanned out, by redline
    set_ref(handle, ours)
    merge_into(handle, theirs)
    assert note_of(repo, str(x))["approvals"] == [ALICE, BOB]
    tree = notes.notes_tree(handle)
    assert tree is not None and str(x) not in tree  # one note, at one path


def test_a_broken_local_notes_ref_is_not_built_upon(
    repo: Path, commits: tuple[pygit2.Repository, list[pygit2.Oid]]
) -> None:
    handle, (x, _, _) = commits
    theirs = commit_notes(handle, None, {x: note("e1", BOB)})
    blob = handle.create_blob(b"not a commit")
    (Path(handle.path) / NOTES_REF).parent.mkdir(parents=True, exist_ok=True)
    (Path(handle.path) / NOTES_REF).write_text(f"{blob}\n")
    with pytest.raises(CorruptNotes):
        merge_into(handle, theirs)
    assert (Path(handle.path) / NOTES_REF).read_text() == f"{blob}\n"


def squash(*entries: dict[str, Any]) -> dict[str, Any]:
    """A squash commit's note (``redline land --squash``): each edit's note under
    ``squashed``, with the commit it came from."""
    carried = [{k: v for k, v in e.items() if k != "schema"} for e in entries]
    return note("sq", tool=notes.SQUASH_TOOL, operations=[], policy=None, squashed=carried)


def test_approvals_of_a_squash_commits_edits_made_on_both_sides_are_all_kept(
    repo: Path, commits: tuple[pygit2.Repository, list[pygit2.Oid]]
) -> None:
    handle, (x, _, _) = commits
    base = commit_notes(handle, None, {x: squash(note("e1"), note("e2"))})
    ours = commit_notes(handle, base, {x: squash(note("e1", ALICE), note("e2"))})
    theirs = commit_notes(handle, base, {x: squash(note("e1"), note("e2", BOB))})
    set_ref(handle, ours)

    merged = merge_into(handle, theirs, "origin")

    assert merged.how == "merged"
    data = note_of(repo, str(x))
    assert [a.to_json() for a in notes.approvals_of(data, "e1")] == [ALICE]
    assert [a.to_json() for a in notes.approvals_of(data, "e2")] == [BOB]
    assert [e["edit"] for e in notes.squashed(data)] == ["e1", "e2"]
    # the same whichever side merges
    set_ref(handle, theirs)
    other = merge_into(handle, ours).tip
    assert other is not None
    assert notes.read_note(handle, x, at=other) == data


def test_signed_approvals_with_the_same_reviewer_and_time_are_all_kept() -> None:
    one = {**BOB, "signature": "SIG-ONE"}
    two = {**BOB, "signature": "SIG-TWO"}
    merged = union(note("e1", one, BOB), note("e1", two))
    assert sorted(a.get("signature", "") for a in merged["approvals"]) == ["", "SIG-ONE", "SIG-TWO"]


def test_evidence_a_signed_approval_vouches_for_is_never_replaced_by_unsigned_evidence() -> None:
    signed = {**BOB, "signature": "SIG"}
    genuine = note("e1", signed)
    forged = note("e1", ALICE, policy={"verdict": "pass", "source": ".redline.toml"})
    forged["operations"] = [{**genuine["operations"][0], "match_type": "exact", "confidence": 1.0}]

    def vouched(data: dict[str, Any]) -> bool:
        return any(a.get("signature") == "SIG" for a in data["approvals"])

    for ours, theirs in ((genuine, forged), (forged, genuine)):
        merged = union(ours, theirs, vouched)
        assert merged["operations"] == genuine["operations"]
        assert merged["policy"] == genuine["policy"]
        assert [a["by"] for a in merged["approvals"]] == [ALICE["by"], BOB["by"]]
    # without a verified signature on either side, the flag of both is kept as before
    merged = union(genuine, forged, lambda data: False)
    assert merged["policy"]["verdict"] == "flagged"


def test_two_notes_git_joined_in_a_rewrite_read_as_their_union() -> None:
    """A rebase or amend that carries a note onto a commit that has one joins the two
    texts with a blank line (git's notes.rewriteMode "concatenate"): read as one note,
    a flag and every approval of either kept."""
    flagged = note("e1", ALICE)
    clean = note("e1", BOB, policy={"verdict": "pass", "action": "review", "violations": []})
    joined = notes.encode(flagged) + b"\n" + notes.encode(clean)
    read = notes.decode_note(joined)
    assert read == union(flagged, clean)
    assert read["policy"]["verdict"] == "flagged"
    assert read["approvals"] == [ALICE, BOB]
    assert notes.decode_note(notes.encode(flagged)) == flagged


@pytest.mark.parametrize("text", [b'{"a": 1}\n\n[1]', b'{"a": 1} x', b"", b"\xff{}"])
def test_a_note_that_is_not_json_objects_is_not_read(text: bytes) -> None:
    with pytest.raises(ValueError):
        notes.decode_note(text)
