"""Merging two histories of ``refs/notes/redline`` by union, never by overwrite.

Notes written on two machines diverge: an approval made in one clone, another
made in a second, the daemon's new notes in a third. Merging the notes ref
another clone published (fetched to ``refs/notes/redline-remote/<remote>``)
into the local one keeps every note of both sides. A note that only one side
changed since their common notes commit takes that side's version (a removal
too — unless the other side changed it: evidence is never lost); a note both
sides changed is merged as JSON (:func:`union`): the approvals of both, and the
evidence of either. The result is a notes commit with both tips as parents,
made in the same compare-and-swap loop as every other notes write, so a note
published at the same moment (the daemon, ``redline approve``, ``git notes``)
is kept too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pygit2

from redline.engine.records import field, record
from redline.gitops import refs, sent
from redline.gitops.errors import GitModeError, RefMoved
from redline.gitops.notes import (
    current,
    encode,
    evidence_digest,
    note_object,
    notes_commit,
    notes_tree,
    squashed,
)
from redline.gitops.objects import write_blob, write_commit
from redline.gitops.repo import NOTES_REF, signature
from redline.gitops.signing import allowed_signers, vouched
from redline.gitops.trees import FILE, Entry, with_entries
from redline.gitops.writer import PLAIN, Writer

_ATTEMPTS = 50
_HEX = frozenset("0123456789abcdef")


@record
class Merged:
    """What merging another notes tip did: ``how`` is "up to date", "fast-forward" or
    "merged"; ``kept`` lists commits whose local note was kept because the two notes
    differ and one of them is not a readable redline note."""

    how: str
    tip: pygit2.Oid | None
    kept: list[str] = field(default_factory=list)


def merge_into(
    repo: pygit2.Repository,
    theirs: pygit2.Oid,
    label: str = "another clone",
    writer: Writer = PLAIN,
) -> Merged:
    """Bring the notes of notes commit ``theirs`` into ``refs/notes/redline`` by union."""
    if not isinstance(repo.get(theirs), pygit2.Commit):
        raise GitModeError(
            f"the notes to merge from {label} ({str(theirs)[:12]}) are not a commit of this "
            "repository; fetch them again (`redline notes sync`)"
        )
    for _ in range(_ATTEMPTS):
        ours = current(repo)
        notes_commit(repo)  # CorruptNotes when the local ref is broken: never built upon
        kept: list[str] = []
        if ours == theirs or (ours is not None and repo.descendant_of(ours, theirs)):
            return Merged("up to date", ours)
        if ours is None or repo.descendant_of(theirs, ours):
            new, how = theirs, "fast-forward"
        else:
            tree = merged_tree(repo, ours, theirs, kept, writer)
            sig = signature(repo)
            message = f"Notes merged by redline from {label}\n"
            new = write_commit(repo, tree, [ours, theirs], sig, sig, message, writer)
            how = "merged"
        try:
            refs.update(repo, NOTES_REF, ours, new, f"redline: notes {how} from {label}")
        except RefMoved:
            continue
        return Merged(how, new, kept)
    raise GitModeError(
        f"{NOTES_REF} kept moving while redline was merging notes into it ({_ATTEMPTS} tries); "
        "another program is writing notes in a loop — stop it, then retry"
    )


def merged_tree(
    repo: pygit2.Repository,
    ours: pygit2.Oid,
    theirs: pygit2.Oid,
    kept: list[str],
    writer: Writer = PLAIN,
) -> pygit2.Oid:
    """The notes tree of ``ours`` with what ``theirs`` changed since their merge base."""
    base_id = repo.merge_base(ours, theirs)
    base = notes_tree(repo, base_id) if base_id is not None else None
    mine = notes_tree(repo, ours)
    other = notes_tree(repo, theirs)
    assert mine is not None and other is not None
    changes: dict[str, Entry | None] = {}
    allowed = _head_signers(repo)
    for name in _changed(repo, base, other):
        b, o, t = _find(base, name), _find(mine, name), _find(other, name)
        if _same(o, t) or _same(t, b):
            continue  # both sides agree, or only ours changed it
        if _same(o, b) or o is None:
            result = t[1] if t is not None else None  # only theirs changed it (or we removed it)
        elif t is None:
            continue  # theirs removed a note we changed: ours stays
        else:
            result = _union_blob(repo, name, o[1], t[1], kept, writer, allowed)
        if o is not None:
            changes[o[0]] = None
        if result is not None:
            changes[f"{name[:2]}/{name[2:]}"] = Entry(result, FILE)
    changes.update(_requests_only_in(repo, other, mine))
    if not changes:
        return mine.id
    return with_entries(repo, mine, changes)


def _requests_only_in(
    repo: pygit2.Repository, other: pygit2.Tree, mine: pygit2.Tree
) -> dict[str, Entry | None]:
    """The requests as sent (gitops.sent) that ``other`` holds and ``mine`` lacks: a
    request blob's path is its id, so the union of the two folders is all there is."""
    if sent.FOLDER not in other:
        return {}
    if sent.FOLDER in mine and mine[sent.FOLDER].id == other[sent.FOLDER].id:
        return {}
    found: dict[str, Entry | None] = {}
    stack = [(other[sent.FOLDER].id, sent.FOLDER)]
    while stack:
        tree_id, prefix = stack.pop()
        folder = repo.get(tree_id)
        if not isinstance(folder, pygit2.Tree):
            continue
        for item in folder:
            path = f"{prefix}/{item.name}"
            if item.type_str == "tree":
                stack.append((item.id, path))
            elif path not in mine:
                found[path] = Entry(item.id, FILE)
    return found


Vouched = Callable[[dict[str, Any]], bool]  # does a verified signed approval stand behind it?


def union(
    ours: dict[str, Any], theirs: dict[str, Any], vouched: Vouched | None = None
) -> dict[str, Any]:
    """One note for one commit from two: the approvals of both (each once; signed ones
    are told apart by their signatures, so every signed approval is kept), and the
    evidence of the one that holds it.

    Where the two notes' evidence differs and ``vouched`` says a signed approval that
    verifies stands behind exactly one of them (gitops.signing.vouched), that one's
    evidence is kept whole: an unsigned change never replaces evidence a person
    signed for. Otherwise a note an approval wrote for a commit whose evidence was
    missing (source "unknown") gives way to a note with the evidence, and two notes
    with different evidence (which redline never writes for one commit) keep the
    first in a stable order, flagged when either is, with the violations of both: a
    flag is never lost in a merge. A squash commit's note (``squashed``) is merged
    edit by edit the same way: the approvals of each edit it carries sit in that
    edit's entry. The result is the same whichever side is "ours".
    """
    approvals: dict[tuple[str, ...], dict[str, Any]] = {}
    for side in (ours, theirs):
        for approval in side.get("approvals") or []:
            if isinstance(approval, dict):
                key = (
                    str(approval.get("at", "")),
                    str(approval.get("by", "")),
                    str(approval.get("signature") or ""),
                )
                approvals.setdefault(key, approval)
    ranked = sorted((ours, theirs), key=lambda n: (n.get("source") == "unknown", encode(n)))
    first, second = ranked
    backed = _vouched_side(first, second, vouched)
    if backed is not None:
        merged = dict(backed)
    else:
        merged = dict(first)
        if second.get("source") != "unknown" or first.get("source") == "unknown":
            merged["policy"] = _stricter(first.get("policy"), second.get("policy"))
    merged["approvals"] = [approvals[k] for k in sorted(approvals)]
    if "squashed" in first or "squashed" in second:
        merged["squashed"] = _union_squashed(squashed(first), squashed(second))
    return merged


def _vouched_side(
    one: dict[str, Any], other: dict[str, Any], vouched: Vouched | None
) -> dict[str, Any] | None:
    """The one of two notes with different evidence that a verified signed approval
    stands behind, when exactly one is."""
    if vouched is None or evidence_digest(one) == evidence_digest(other):
        return None
    backed = [note for note in (one, other) if vouched(note)]
    return backed[0] if len(backed) == 1 else None


def _union_squashed(
    first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The edits two notes of one squash commit carry, each edit's two entries merged by
    :func:`union` (in ``first``'s order, then those only ``second`` has)."""
    others = {str(e.get("edit")): e for e in second}
    out = []
    for entry in first:
        other = others.pop(str(entry.get("edit")), None)
        out.append(entry if other is None else union(entry, other))
    return out + list(others.values())


def _stricter(one: Any, other: Any) -> Any:
    """A verdict flagged when either is, with the violations of both."""
    flagged = [p for p in (one, other) if isinstance(p, dict) and p.get("verdict") == "flagged"]
    if not flagged:
        return one
    result = dict(flagged[0])
    seen: list[Any] = []
    for policy in flagged:
        for violation in policy.get("violations") or []:
            if violation not in seen:
                seen.append(violation)
    result["violations"] = seen
    return result


def _union_blob(
    repo: pygit2.Repository,
    name: str,
    ours: pygit2.Oid,
    theirs: pygit2.Oid,
    kept: list[str],
    writer: Writer,
    allowed: bytes = b"",
) -> pygit2.Oid:
    one, other = _parsed(repo, ours), _parsed(repo, theirs)
    if one is None or other is None:
        kept.append(name)  # not both redline notes: ours stays, and the caller says so
        return ours
    vouch = (lambda note: vouched(note, name, allowed)) if allowed else None
    return write_blob(repo, encode(union(one, other, vouch)), writer)


def _head_signers(repo: pygit2.Repository) -> bytes:
    """The allowed signers HEAD's tree lists: whose signed approvals decide which of two
    evidences of one commit a merge keeps (none in a bare or empty repository)."""
    try:
        if repo.is_bare or repo.head_is_unborn:
            return b""
        return allowed_signers(repo, [repo.head.peel(pygit2.Commit).tree])
    except (pygit2.GitError, KeyError, ValueError):
        return b""


def _parsed(repo: pygit2.Repository, blob_id: pygit2.Oid) -> dict[str, Any] | None:
    data = note_object(repo, blob_id)
    if data is None or not str(data.get("schema", "")).startswith("redline.note/"):
        return None
    return data


def _changed(repo: pygit2.Repository, base: pygit2.Tree | None, tree: pygit2.Tree) -> list[str]:
    """The annotated commits whose notes differ between ``base`` and ``tree``."""
    diff = base.diff_to_tree(tree) if base is not None else tree.diff_to_tree(swap=True)
    names = []
    for delta in diff.deltas:
        for side in (delta.old_file, delta.new_file):
            name = side.path.replace("/", "")
            if len(name) in (40, 64) and set(name) <= _HEX:
                names.append(name)
    return sorted(set(names))


def _find(tree: pygit2.Tree | None, name: str) -> tuple[str, pygit2.Oid] | None:
    """Where ``name``'s note is in ``tree`` (any fan-out git uses) and its blob."""
    if tree is None:
        return None
    for path in (f"{name[:2]}/{name[2:]}", name, f"{name[:2]}/{name[2:4]}/{name[4:]}"):
        try:
            return path, tree[path].id
        except KeyError:
            continue
    return None


def _same(one: tuple[str, pygit2.Oid] | None, other: tuple[str, pygit2.Oid] | None) -> bool:
    if one is None or other is None:
        return one is other
    return one[1] == other[1]
