"""The review ledger: tolerant edits and their verdicts, derived from the notes.

Reading 5,000 notes on every commit would be slow, so the ledger is cached in
``<git-common-dir>/redline/ledger.json``, keyed by the notes commit it was
built from, and brought up to date by diffing the notes trees (only changed
notes are read). The notes stay the source of truth.

What cannot be read is never skipped silently: a notes ref that does not lead
to a notes tree raises :class:`~redline.gitops.errors.CorruptNotes`, and a
note that is not a redline note (bad JSON, a missing blob, the wrong shape) is
listed in ``Ledger.unreadable`` by its commit, for the guard to refuse on.
Notes that look like exact-only redline notes are checked for their shape
(an object naming the redline schema), not parsed: most notes are those.

Every readable note's edit id is kept too (``Ledger.edits``): a commit whose
``Redline-Edit:`` trailer names an edit no note records has lost its evidence,
and the guard refuses it (hooks.evidence).

A squash commit (``redline land --squash``) carries several edits, and its note
each one's evidence (``squashed``): each is learnt as an edit of that commit too,
so the guard, ``review`` and ``approve`` see every edit a squash carries even
where the session's own commits are not (a teammate's clone).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pygit2

from redline.engine.records import asdict, field, record
from redline.fsops.atomic import replace_file
from redline.gitops import notes
from redline.gitops.errors import CorruptNotes
from redline.gitops.repo import NOTES_REF, common_dir

VERSION = 6
# Only notes with a tolerant match, a confidence below 1 or a flag enter the
# ledger; this finds the rest without parsing their JSON (most notes are exact).
_MAYBE_TOLERANT = re.compile(
    rb'"match_type":\s*"(?!exact")|"confidence":\s*0|"verdict":\s*"flagged"|"squashed":'
)
# Keys the ledger adds to each approval it keeps: the commit whose note holds it and the
# evidence digest of that note (notes.evidence_digest).
NOTE_KEY = "_note"
EVIDENCE_KEY = "_evidence"
_NOTE_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # a note's path, fan-out removed
# The edit id of a note that is not parsed: its first "edit" key, the top-level one
# (keys are sorted; "approvals" and "cleaned" come before it and hold no such key).
_EDIT_ID = re.compile(rb'"edit":\s*"([^"\\]*)"')


@record
class RecordedOperation:
    path: str
    match_type: str | None  # None: no text was matched (an add, a delete, a write)
    confidence: float | None
    start_line: int | None
    end_line: int | None
    op: str | None = None  # edit | update | add | delete | create | overwrite | write


@record
class EditRecord:
    """One edit (an edit id) that used a tolerance or was flagged, wherever its notes are."""

    edit: str
    commits: list[str]
    operations: list[RecordedOperation]
    flagged: list[dict[str, Any]]  # violations recorded at edit time
    approvals: list[dict[str, Any]] = field(default_factory=list)

    @property
    def approved(self) -> bool:
        return bool(self.approvals)


@record
class Ledger:
    notes_commit: str | None
    entries: dict[str, EditRecord]
    by_commit: dict[str, list[str]]  # note's commit -> the edit ids it holds in ``entries``
    unreadable: dict[str, str] = field(default_factory=dict)  # note's commit -> why
    edits: dict[str, str] = field(default_factory=dict)  # every readable note's commit -> edit
    # a commit whose note carries several edits (a squash, or notes git joined) -> those edits
    squashes: dict[str, list[str]] = field(default_factory=dict)

    def noted_edits(self) -> set[str]:
        """The edit ids some readable note records: the edits whose evidence is here."""
        found = set(self.edits.values())
        for carried in self.squashes.values():
            found.update(carried)
        return found

    def forget(self, commit: str) -> None:
        self.unreadable.pop(commit, None)
        self.edits.pop(commit, None)
        self.squashes.pop(commit, None)
        for edit in self.by_commit.pop(commit, []):
            entry = self.entries.get(edit)
            if entry is None:
                continue
            if commit in entry.commits:
                entry.commits.remove(commit)
            if not entry.commits:
                del self.entries[edit]

    def learn(self, commit: str, note: dict[str, Any]) -> None:
        self.edits[commit] = str(note.get("edit") or commit)
        if "squashed" in note:  # a squash commit: learn each edit it carries
            carried = notes.squashed(note)
            self.squashes[commit] = [str(e.get("edit")) for e in carried if e.get("edit")]
            for entry in carried:
                if entry.get("edit"):
                    self._learn_edit(commit, str(entry["edit"]), entry)
            return
        self._learn_edit(commit, self.edits[commit], note)

    def _learn_edit(self, commit: str, edit: str, note: dict[str, Any]) -> None:
        operations = [_recorded(op) for op in note.get("operations", [])]
        policy = note.get("policy") or {}
        flagged = list(policy.get("violations", [])) if policy.get("verdict") == "flagged" else []
        tolerant = [
            op
            for op in operations
            if op.match_type is not None
            and (op.match_type != "exact" or (op.confidence or 0.0) < 1.0)
        ]
        if not tolerant and not flagged:
            return
        entry = self.entries.get(edit)
        if entry is None:
            entry = EditRecord(edit, [], operations, flagged)
            self.entries[edit] = entry
        if commit not in entry.commits:
            entry.commits.append(commit)
        # Each approval with where it was found: the commit of its note, and that note's
        # evidence digest — what a signed approval must have signed (hooks.signed).
        digest = notes.evidence_digest(note) if note.get("approvals") else ""
        for approval in note.get("approvals", []):
            if isinstance(approval, dict):
                found = {**approval, NOTE_KEY: commit, EVIDENCE_KEY: digest}
                if found not in entry.approvals:
                    entry.approvals.append(found)
        held = self.by_commit.setdefault(commit, [])
        if edit not in held:
            held.append(edit)


def _recorded(op: dict[str, Any]) -> RecordedOperation:
    match_type = op.get("match_type")
    confidence = op.get("confidence")
    if match_type is not None and confidence is None:
        confidence = 1.0
    return RecordedOperation(
        str(op.get("path", "")),
        str(match_type) if match_type is not None else None,
        float(confidence) if confidence is not None else None,
        op.get("start_line"),
        op.get("end_line"),
        str(op["op"]) if op.get("op") is not None else None,
    )


def cache_path(repo: pygit2.Repository) -> Path:
    return common_dir(repo) / "redline" / "ledger.json"


def load(repo: pygit2.Repository) -> Ledger:
    """The ledger as of the current notes, from the cache when it can be.

    Raises CorruptNotes when the notes ref does not lead to a readable notes tree.
    """
    commit = notes.notes_commit(repo)
    current = commit.id if commit is not None else None
    cached = _read_cache(cache_path(repo))
    if cached is not None and cached.notes_commit == (str(current) if current else None):
        return cached
    ledger = cached or Ledger(None, {}, {})
    _catch_up(repo, ledger, commit)
    _write_cache(cache_path(repo), ledger)
    return ledger


def _catch_up(repo: pygit2.Repository, ledger: Ledger, tip: pygit2.Commit | None) -> None:
    """Bring ``ledger`` to the notes of ``tip`` (the notes commit; None: no notes)."""
    try:
        _catch_up_to(repo, ledger, tip)
    except (KeyError, pygit2.GitError) as exc:  # an object of the notes tree is missing
        raise CorruptNotes(
            NOTES_REF,
            f"points at notes commit {str(tip.id)[:12] if tip else '?'}, whose tree cannot "
            f"be read whole ({exc})",
        ) from None


def _catch_up_to(repo: pygit2.Repository, ledger: Ledger, tip: pygit2.Commit | None) -> None:
    current = tip.id if tip is not None else None
    new_tree = tip.tree if tip is not None else None
    old_tree = _tree(repo, pygit2.Oid(hex=ledger.notes_commit)) if ledger.notes_commit else None
    if ledger.notes_commit and old_tree is None:  # the old notes commit is gone: rebuild
        _clear(ledger)
    if new_tree is None:
        _clear(ledger)
    elif old_tree is None:
        for path, blob_id in _walk(repo, new_tree, ""):
            _learn_blob(repo, ledger, _note_name(path, current), blob_id)
    else:
        changed = {
            _note_name(side.path, current)
            for delta in old_tree.diff_to_tree(new_tree).deltas
            for side in (delta.old_file, delta.new_file)
            if notes.is_note_path(side.path)
        }
        # Forget first, then learn: a note that moved between flat and fanned-out
        # paths shows as two deltas. An edit is relearned whole, from all its
        # commits' notes, since its approvals may sit in any of them.
        again = set(changed)
        for commit in changed:
            for edit in ledger.by_commit.get(commit, []):
                entry = ledger.entries.get(edit)
                if entry is not None:
                    again.update(entry.commits)
        for commit in again:
            ledger.forget(commit)
        for commit in sorted(again):
            note_id = _note_id(new_tree, commit)
            if note_id is not None:
                _learn_blob(repo, ledger, commit, note_id)
    ledger.notes_commit = str(current) if current else None


def _clear(ledger: Ledger) -> None:
    ledger.entries.clear()
    ledger.by_commit.clear()
    ledger.unreadable.clear()
    ledger.edits.clear()
    ledger.squashes.clear()


def _note_name(path: str, notes_commit: pygit2.Oid | None) -> str:
    """The commit a notes tree path annotates; CorruptNotes for a path that is no note."""
    name = path.replace("/", "")
    if not _NOTE_NAME.fullmatch(name):
        raise CorruptNotes(
            NOTES_REF,
            f"points at commit {str(notes_commit)[:12]}, whose tree holds {path!r}, which is "
            "not a note (is it an ordinary commit rather than a notes commit?)",
        )
    return name


def _note_id(tree: pygit2.Tree, commit: str) -> pygit2.Oid | None:
    for path in (f"{commit[:2]}/{commit[2:]}", commit):
        try:
            return tree[path].id
        except KeyError:
            continue
    return None


def _tree(repo: pygit2.Repository, commit: pygit2.Oid | None) -> pygit2.Tree | None:
    if commit is None:
        return None
    try:
        obj = repo[commit]
    except KeyError:
        return None
    return obj.tree if isinstance(obj, pygit2.Commit) else None


def _walk(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> list[tuple[str, pygit2.Oid]]:
    out = []
    for item in tree:
        path = f"{prefix}{item.name}"
        if not notes.is_note_path(path):
            continue  # the requests as sent (gitops.sent): no notes
        if item.filemode == pygit2.enums.FileMode.TREE:
            sub = repo[item.id]
            assert isinstance(sub, pygit2.Tree)
            out.extend(_walk(repo, sub, path + "/"))
        else:
            out.append((path, item.id))
    return out


def _learn_blob(repo: pygit2.Repository, ledger: Ledger, commit: str, blob_id: pygit2.Oid) -> None:
    blob = repo.get(blob_id)
    if not isinstance(blob, pygit2.Blob):
        what = "missing from the repository" if blob is None else f"a {blob.type_str}, not a blob"
        ledger.unreadable[commit] = f"the note ({blob_id}) is {what}"
        return
    data = blob.data
    if not _MAYBE_TOLERANT.search(data):
        # An exact-only, unflagged note never enters the ledger: check its shape, skip parsing.
        stripped = data.strip()
        if not (stripped.startswith(b"{") and stripped.endswith(b"}")):
            ledger.unreadable[commit] = "the note is not a JSON object"
        elif b'"redline.note/' not in data:
            ledger.unreadable[commit] = "the note does not name the redline.note schema"
        else:
            found = _EDIT_ID.search(data)
            ledger.edits[commit] = found.group(1).decode("utf-8", "replace") if found else commit
        return
    try:
        parts = notes.note_parts(data)
        if _joined(parts):
            _learn_joined(ledger, commit, parts)
            return
        note = notes.decode_note(data)
    except ValueError as exc:
        where = (
            f" ({exc.msg} at line {exc.lineno} column {exc.colno})"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        ledger.unreadable[commit] = f"the note is not valid JSON{where}"
        return
    problem = _shape_problem(note)
    if problem is not None:
        ledger.unreadable[commit] = f"the note {problem}"
        return
    ledger.learn(commit, note)


def _joined(parts: list[Any]) -> bool:
    """Whether a note holds the notes of different edits that git joined: a rebase that
    drops a commit gives its note to the commit before it (``notes.rewriteRef``)."""
    edits = {part.get("edit") for part in parts if isinstance(part, dict)}
    return len(parts) > 1 and len(edits) > 1


def _learn_joined(ledger: Ledger, commit: str, parts: list[Any]) -> None:
    """Each note git joined is its own edit's evidence, held by ``commit`` too — never
    merged into one (that would keep one edit's id and file another's flags under it)."""
    for part in parts:
        problem = _shape_problem(part)
        if problem is not None:
            ledger.unreadable[commit] = f"the note {problem} (one of the notes git joined)"
            return
    carried: list[str] = []
    for part in parts:
        ledger.learn(commit, part)
        carried += ledger.squashes.pop(commit, []) or [ledger.edits[commit]]
    ledger.edits[commit] = str(parts[0].get("edit") or commit)
    ledger.squashes[commit] = list(dict.fromkeys(carried))


def _shape_problem(note: Any) -> str | None:
    """What keeps ``note`` from being read as a redline note (None when nothing does)."""
    if not isinstance(note, dict):
        return "is not a JSON object"
    if not str(note.get("schema", "")).startswith("redline.note/"):
        return "does not name the redline.note schema"
    if "squashed" in note:
        carried = note["squashed"]
        if not isinstance(carried, list) or not all(isinstance(e, dict) for e in carried):
            return "has squashed edits that are not a list of objects"
        for entry in carried:
            problem = _evidence_problem(entry)
            if problem is not None:
                return f"{problem} (squashed edit {entry.get('edit')!r})"
    return _evidence_problem(note)


def _evidence_problem(note: dict[str, Any]) -> str | None:
    """What keeps one edit's evidence from being read (None when nothing does)."""
    operations = note.get("operations", [])
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        return "has operations that are not a list of objects"
    for op in operations:
        confidence = op.get("confidence", 1.0)
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
            return f"has an operation whose confidence is not a number ({confidence!r})"
    if not isinstance(note.get("policy") or {}, dict):
        return "has a policy that is not an object"
    policy = note.get("policy") or {}
    if not isinstance(policy.get("violations", []), list):
        return "has policy violations that are not a list"
    if not isinstance(note.get("approvals", []), list):
        return "has approvals that are not a list"
    return None


def _read_cache(path: Path) -> Ledger | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != VERSION:
            return None
        entries = {
            edit: EditRecord(
                e["edit"],
                e["commits"],
                [RecordedOperation(**op) for op in e["operations"]],
                e["flagged"],
                e["approvals"],
            )
            for edit, e in data["entries"].items()
        }
        return Ledger(
            data["notes"],
            entries,
            data["by_commit"],
            data["unreadable"],
            data["edits"],
            data["squashes"],
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_cache(path: Path, ledger: Ledger) -> None:
    data = {
        "version": VERSION,
        "notes": ledger.notes_commit,
        "entries": {edit: asdict(e) for edit, e in ledger.entries.items()},
        "by_commit": ledger.by_commit,
        "unreadable": ledger.unreadable,
        "edits": ledger.edits,
        "squashes": ledger.squashes,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, json.dumps(data).encode("utf-8"))
    except OSError:
        pass  # a cache that cannot be written is rebuilt next time
