"""Evidence checked against the code: does a commit's note describe the commit's change?

A note records, per file, the blob its commit's parent had and the blob the
commit wrote (``files``), and its operations name the files and lines they
matched text in. The gate reads the note of each commit a change brings and
compares those claims with the commit itself: the files it changed, their
bytes before and after, the files its operations matched text in. A note that
says something else — edited by hand, copied onto a commit it does not
describe (a rebase that rewrote the change, an amend), or written for another
commit — cannot be trusted to say whether the edit was flagged, so the gate
fails closed and names the commit.

Notes written before the blob ids were recorded are checked by the paths their
operations name. A squash commit's note (``redline land --squash``) is checked
by its own ``files``; the edits it carries describe commits that are not
there.

What the edit matched is written twice by redline: in the note, and in the
commit's message (``redline: edit PATH (fuzzy 0.93)``, or for a patch ``Hunks
matched: strip, exact``). A note edited by hand to say ``exact`` where the
commit says otherwise, or saying ``exact`` with a confidence below 1 or a
tolerance used, contradicts the commit or itself. (A note rewritten in every
field, consistently, cannot be told from a genuine one without a secret; the
blob ids tie it to the bytes of the commit it is attached to.)

A commit and a note blob never change, so a note found to describe its commit
is remembered (``<git-common-dir>/redline/checked-notes``, a commit id and a
note blob id per record) and not checked again; a note edited since is a new
blob, checked anew.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pygit2

from redline.engine.records import field, record
from redline.gitops import notes
from redline.gitops.repo import common_dir
from redline.hooks.ledger import Ledger

_RECORD = 40  # a commit id and a note blob id, 20 bytes each
# What redline writes in an edit commit's message about the match (gitops.evidence).
_EDITED = re.compile(r"\Aredline: edit .* \(([a-z_]+) [0-9.]+\)$", re.M)
_HUNKS = re.compile(r"Hunks matched: ([a-z_]+(?:, [a-z_]+)*)\.")


@record(frozen=True)
class Mismatch:
    """A commit whose note does not describe its change, and how."""

    commit: str
    reason: str


@record
class Checked:
    """The (commit, note blob) pairs found to agree, read from and added to a file."""

    path: Path
    known: set[bytes] = field(default_factory=set)
    added: list[bytes] = field(default_factory=list)

    @classmethod
    def load(cls, repo: pygit2.Repository) -> Checked:
        path = common_dir(repo) / "redline" / "checked-notes"
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        whole = len(data) - len(data) % _RECORD  # a record cut short by a crash is ignored
        return cls(path, {data[i : i + _RECORD] for i in range(0, whole, _RECORD)})

    def __contains__(self, record: bytes) -> bool:
        return record in self.known

    def add(self, record: bytes) -> None:
        self.known.add(record)
        self.added.append(record)

    def save(self) -> None:
        """Append the records added (nothing is lost when it cannot be written: the notes
        are checked again next time)."""
        if not self.added:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fd).st_size
                pad = (-size) % _RECORD  # finish a record cut short, so the next ones align
                os.write(fd, b"\0" * pad + b"".join(self.added))
            finally:
                os.close(fd)
        except OSError:
            pass
        self.added = []


def mismatches(
    repo: pygit2.Repository, ledger: Ledger, commits: Iterable[pygit2.Commit]
) -> list[Mismatch]:
    """The commits among ``commits`` whose readable note's claims the commit contradicts
    (a commit without a note, or with an unreadable one, is the business of
    hooks.evidence and Ledger.unreadable)."""
    tree: pygit2.Tree | None = None
    checked: Checked | None = None
    found = []
    for commit in commits:
        sha = str(commit.id)
        if sha not in ledger.edits:
            continue
        if tree is None or checked is None:
            tree = notes.notes_tree(repo)
            if tree is None:
                return []
            checked = Checked.load(repo)
        blob = notes.note_blob(tree, sha)
        if blob is None:
            continue  # gone since the ledger read it: the next run reads the notes again
        record = commit.id.raw + blob.raw
        if record in checked:
            continue
        note = notes.note_object(repo, blob)
        if note is None:
            continue
        reason = contradiction(repo, commit, note)
        if reason is not None and _joined_part_describes(repo, commit, blob):
            reason = None
        if reason is not None:
            found.append(Mismatch(sha, reason))
        else:
            checked.add(record)
    if checked is not None:
        checked.save()
    return found


def _joined_part_describes(
    repo: pygit2.Repository, commit: pygit2.Commit, blob_id: pygit2.Oid
) -> bool:
    """Whether one of the notes git joined into this one (a rebase or an amend carrying
    a note onto a commit that has one) describes the commit: that part is the commit's
    evidence, the others came with git's copy. The joined note keeps every part's flags
    (notes.decode_note), so nothing is lost by accepting it."""
    blob = repo.get(blob_id)
    if not isinstance(blob, pygit2.Blob):
        return False
    try:
        parts = notes.note_parts(blob.data)
    except ValueError:
        return False
    return len(parts) > 1 and any(contradiction(repo, commit, part) is None for part in parts)


def contradiction(
    repo: pygit2.Repository, commit: pygit2.Commit, note: Mapping[str, Any]
) -> str | None:
    """How ``commit`` contradicts ``note`` (None: it does not)."""
    parent = commit.parents[0].tree if commit.parents else None
    changed = _changed(parent, commit.tree)
    files = note.get("files")
    if isinstance(files, list):
        claimed: dict[str, tuple[object, object]] = {}
        for item in files:
            if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
                return "its list of files is not a list of {path, before, after} objects"
            claimed[item["path"]] = (item.get("before"), item.get("after"))
        for path, (before, after) in sorted(claimed.items()):
            actual = changed.get(path)
            if actual is None:
                return f"it says {path} changed; the commit leaves {path} as it was"
            if (before, after) != actual:
                return (
                    f"it says {path} went from {_blob(before)} to {_blob(after)}; the commit "
                    f"changed it from {_blob(actual[0])} to {_blob(actual[1])}"
                )
        unnamed = sorted(set(changed) - set(claimed))
        if unnamed:
            return f"the commit also changes {_list(unnamed)}, which the note does not name"
    elif not notes.squashed(note):
        named = {str(op.get("path")) for op in _operations(note)}
        untouched = sorted(named - set(changed))
        if untouched:
            return f"it names {_list(untouched)}, which the commit leaves as it was"
        unnamed = sorted(set(changed) - named)
        if unnamed:
            return f"the commit also changes {_list(unnamed)}, which the note does not name"
    return _matches(commit, note) or _lines(changed, note)


def _matches(commit: pygit2.Commit, note: Mapping[str, Any]) -> str | None:
    """How the note's match evidence contradicts itself or the commit's message."""
    ops = [op for op in _operations(note) if op.get("match_type") is not None]
    for op in ops:
        confidence = op.get("confidence", 1.0)
        if op.get("match_type") == "exact" and confidence != 1:
            return f"it says {op.get('path')} matched exact with confidence {confidence}"
    tolerated = note.get("tolerances")
    every_exact = bool(ops) and all(op.get("match_type") == "exact" for op in ops)
    if isinstance(tolerated, list) and tolerated and every_exact:
        used = ", ".join(map(str, tolerated))
        return f"it says every match was exact, and also that it used {used}"
    message = commit.message or ""
    said = [str(op.get("match_type")) for op in ops]
    edited = _EDITED.search(message)
    if edited is not None and note.get("tool") == "edit" and said and set(said) != {edited[1]}:
        return (
            f"it says the edit matched {', '.join(sorted(set(said)))}; the commit's message "
            f"says {edited.group(1)}"
        )
    hunks = _HUNKS.search(message)
    if hunks is not None and note.get("tool") == "apply_patch":
        written = hunks.group(1).split(", ")
        if said != written:
            return (
                f"it says the hunks matched {', '.join(said) or 'nothing'}; the commit's "
                f"message says {', '.join(written)}"
            )
    return None


def _lines(
    changed: Mapping[str, tuple[str | None, str | None]], note: Mapping[str, Any]
) -> str | None:
    """The first operation that names a file the commit did not change, or lines that are
    no range (the file's bytes are not read: the blob ids already tie the note to them)."""
    for op in _operations(note):
        path = op.get("path")
        if op.get("match_type") is not None and path not in changed:
            return (
                f"it says text of {path} was matched and replaced; the commit leaves it as it was"
            )
        start, end = op.get("start_line"), op.get("end_line")
        if isinstance(start, int) and isinstance(end, int) and not 1 <= start <= end:
            return f"it says lines {start}-{end} of {path} were matched, which is no range of lines"
    return None


def _changed(
    parent: pygit2.Tree | None, tree: pygit2.Tree
) -> dict[str, tuple[str | None, str | None]]:
    """Each path the commit changed: its blob before and after (hex; None: no file)."""
    diff = parent.diff_to_tree(tree) if parent is not None else tree.diff_to_tree(swap=True)
    before: dict[str, str] = {}
    after: dict[str, str] = {}
    for delta in diff.deltas:
        if delta.status != pygit2.enums.DeltaStatus.ADDED:
            before[delta.old_file.path] = str(delta.old_file.id)
        if delta.status != pygit2.enums.DeltaStatus.DELETED:
            after[delta.new_file.path] = str(delta.new_file.id)
    return {path: (before.get(path), after.get(path)) for path in before.keys() | after.keys()}


def _operations(note: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    ops = note.get("operations")
    return [op for op in ops if isinstance(op, Mapping)] if isinstance(ops, list) else []


def _blob(value: object) -> str:
    return f"blob {str(value)[:12]}" if value else "no file"


def _list(paths: list[str]) -> str:
    shown = ", ".join(paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def describe_mismatched(found: list[Mismatch], lead: str, again: str | None = None) -> str:
    """The refusal for notes that do not describe their commits, and the ways out."""
    count = len(found)
    lines = [
        f"{lead}the evidence note of {count} commit"
        + ("" if count == 1 else "s")
        + " does not describe the commit's change (edited by hand, or copied onto a commit "
        "it does not describe), so it cannot tell whether the edit was flagged:"
    ]
    lines += [f"  commit {m.commit[:12]}: {m.reason}" for m in found]
    commit = found[0].commit[:12] if count == 1 else "COMMIT"
    then = f", then {again} again" if again else ", then try again"
    lines.append(
        "Restore the note from a good copy of refs/notes/redline, or have a person review "
        f"the commit's diff and remove the note (`git notes --ref=redline remove {commit}`): "
        f"the commit then counts as an edit whose evidence is missing until that person "
        f"approves it (`redline approve {commit}`){then}."
    )
    return "\n".join(lines)
