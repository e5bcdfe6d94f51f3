"""Evidence checked by running it again: ``redline guard --range … --verify``.

A note records what the engine did with the agent's request: the bytes it
wrote, each match's type, confidence, lines and matched text (as a SHA-256),
the tolerances it used and the invisible characters it removed. With the
request as sent kept beside the note, the gate runs the request again against
the commit's parent tree — the engine is pure, so the same request on the same
bytes gives the same answer — and compares. A note that does not reproduce
(rewritten to ``exact``, its matched text changed, moved onto another commit,
or the request itself swapped) is named with what differs and counts as an
unapproved flagged edit: fail closed. Where the note was recorded by another
version of redline and the answer differs, it says so ("recorded by redline X,
not reproducible by Y") and asks for a person rather than guess. Exact edits
always reproduce.

The engine runs here on bytes read from git objects: nothing is written.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pygit2

from redline import __version__
from redline.engine.records import record, replace
from redline.gitops import notes
from redline.hooks.ledger import Ledger

if TYPE_CHECKING:
    from redline.engine.requests import Request
    from redline.engine.result import HunkReport, Match


@record(frozen=True)
class Unreproduced:
    """A commit whose note the recorded request does not reproduce, and how it differs."""

    edit: str
    commit: str
    differs: str
    recorded_by: str | None = None  # the redline version that recorded the note
    running: str = __version__

    @property
    def reason(self) -> str:
        if self.recorded_by and self.recorded_by != self.running:
            return (
                f"recorded by redline {self.recorded_by}, not reproducible by "
                f"{self.running}: {self.differs}"
            )
        return self.differs


class _TreeFiles:
    """A commit's tree as the engine's read-only snapshot (engine.patch_plan.Snapshot)."""

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree | None) -> None:
        self.repo = repo
        self.tree = tree

    def relative(self, path: str) -> str:
        return path

    def read(self, path: str) -> bytes | None:
        entry = self._entry(path)
        if entry is None or entry.type_str != "blob":
            return None
        blob = self.repo[entry.id]
        return bytes(blob.data) if isinstance(blob, pygit2.Blob) else None

    def is_dir(self, path: str) -> bool:
        entry = self._entry(path)
        return entry is not None and entry.type_str == "tree"

    def _entry(self, path: str) -> pygit2.Object | None:
        if self.tree is None or not path:
            return None
        try:
            return self.tree[path]
        except (KeyError, ValueError):
            return None


NO_REQUEST = "the note keeps no request to run again"


@record(frozen=True)
class Recorded:
    """The request a note keeps, as sent, and the redline version that ran it; or why
    there is none (``missing``)."""

    request: Request | None
    engine: str | None = None
    missing: str = NO_REQUEST


RequestSource = Callable[[pygit2.Repository, Mapping[str, Any]], Recorded]


def recorded_request(repo: pygit2.Repository, note: Mapping[str, Any]) -> Recorded:
    """The request ``note`` keeps as sent, read by gitops.sent (the evidence work, which
    adds it to every agent edit's note); where that module is not there yet, or the note
    keeps no usable request (an older note, one over the size cap, one whose secrets
    were redacted), none: the note is then checked by what it records
    (:func:`matched_where_recorded`)."""
    try:
        sent = importlib.import_module("redline.gitops.sent")
    except ModuleNotFoundError:
        return Recorded(None)
    from redline.gitops.errors import CorruptNotes, GitModeError

    try:
        found = sent.request_of(repo, note)
    except CorruptNotes as exc:
        return Recorded(None, missing=f"its request cannot be read: {exc.problem}")
    if found is None:
        return Recorded(None)
    try:
        return Recorded(found.request(), str(found.engine) or None)
    except GitModeError:  # RequestRedacted: what is kept is not what was sent
        return Recorded(None, str(found.engine) or None)


no_requests = recorded_request


def unreproduced(
    repo: pygit2.Repository,
    ledger: Ledger,
    commits: Iterable[pygit2.Commit],
    recorded: RequestSource = no_requests,
) -> list[Unreproduced]:
    """The agent edit commits among ``commits`` whose note the recorded request does not
    reproduce (an external change, an undo and a squash record no request of their own:
    the claims check covers them). A commit without a readable note is the business of
    hooks.evidence and Ledger.unreadable."""
    found = []
    for commit in commits:
        sha = str(commit.id)
        if sha not in ledger.edits:
            continue
        note = notes.read_note(repo, commit.id)
        if note is None or note.get("source") != "agent" or note.get("undoes"):
            continue
        if notes.squashed(note):
            continue
        edit = str(note.get("edit") or ledger.edits[sha])
        kept = recorded(repo, note)
        if kept.request is None:
            # No request to run again: check what the note records against the parent.
            differs = matched_where_recorded(repo, commit, note)
            if differs is not None:
                found.append(Unreproduced(edit, sha, differs))
            continue
        differs = reproduce(repo, commit, note, kept.request)
        if differs is not None:
            found.append(Unreproduced(edit, sha, differs, kept.engine))
    return found


def reproduce(
    repo: pygit2.Repository, commit: pygit2.Commit, note: Mapping[str, Any], request: Request
) -> str | None:
    """What differs when ``request`` runs again on ``commit``'s parent tree, against what
    ``note`` and the commit record (None: it reproduces)."""
    from redline.engine.edit import EditRequest, apply_edit
    from redline.engine.patch import PatchRequest, apply_patch
    from redline.engine.write import DeleteRequest, WriteRequest, plan_file

    parent = _TreeFiles(repo, commit.parents[0].tree if commit.parents else None)
    after = _TreeFiles(repo, commit.tree)
    if isinstance(request, EditRequest):
        request = replace(request, path=_path(request.path, note))
        data = parent.read(request.path)
        if data is None:
            return f"the request edits {request.path}, which the commit's parent does not hold"
        outcome = apply_edit(data, request)
        result = outcome.result
        if outcome.data is None:
            return f"run again, the request is not applied ({result.status}: {result.error})"
        if outcome.data != after.read(request.path):
            return f"run again, the request writes other bytes to {request.path} than the commit"
        said = _evidence(note, result.matches)
        if said is not None:
            return said
        tolerated = [result.match_type] if result.match_type not in (None, "exact") else []
        recorded = list(note.get("tolerances") or [])
        if recorded != tolerated:
            return f"the note says it tolerated {_words(recorded)}; run again, {_words(tolerated)}"
        return _cleaned(note, result.cleaned)
    if isinstance(request, PatchRequest):
        planned = apply_patch(request.patch, parent)
    elif isinstance(request, WriteRequest | DeleteRequest):
        planned = plan_file(request, parent)
    else:
        return "the recorded request reads a file; it changes nothing the commit changed"
    if planned.plan is None:
        result = planned.result
        return f"run again, the request is not applied ({result.status}: {result.error})"
    changed = _changed_paths(commit)
    groups = [g for g in planned.plan.applied if {c.path for c in g.changes} & changed]
    if not groups:
        return "run again, the request changes none of the files the commit changes"
    writes = {c.path: c.after for g in groups for c in g.changes}
    for path in sorted(changed | set(writes)):
        if writes.get(path, b"missing") != after.read(path) and path in writes:
            return f"run again, the request writes other bytes to {path} than the commit"
        if path not in writes:
            return f"the commit changes {path}, which the request run again leaves alone"
    hunks = [h for h in planned.result.hunks if h.path in writes]
    return _evidence(note, hunks)


def _evidence(note: Mapping[str, Any], matches: Sequence[Match | HunkReport]) -> str | None:
    """How the note's matched operations differ from ``matches`` (None: they agree)."""
    ops = [op for op in note.get("operations") or [] if isinstance(op, Mapping)]
    recorded = [op for op in ops if op.get("match_type") is not None]
    if len(recorded) != len(matches):
        return (
            f"the note records {len(recorded)} match(es); run again, the request makes "
            f"{len(matches)}"
        )
    for op, match in zip(recorded, matches, strict=True):
        path = op.get("path")
        if op.get("match_type") != match.match_type:
            return (
                f"the note says {path} matched {op.get('match_type')}; run again, it matches "
                f"{match.match_type}"
            )
        confidence = op.get("confidence", 1.0)
        if not isinstance(confidence, (int, float)) or not math.isclose(
            float(confidence), float(match.confidence), abs_tol=1e-9
        ):
            return (
                f"the note says {path} matched with confidence {confidence}; run again, "
                f"{match.confidence}"
            )
        lines = (op.get("start_line"), op.get("end_line"))
        if lines != (match.start_line, match.end_line):
            return (
                f"the note says lines {lines[0]}-{lines[1]} of {path} were matched; run "
                f"again, lines {match.start_line}-{match.end_line}"
            )
        if op.get("matched_sha256") != notes.sha256(match.matched_text):
            return (
                f"the note's matched text of {path} (lines {lines[0]}-{lines[1]}) is not "
                "the text the request matches there"
            )
    return None


_SPAN_LIMIT = 256  # characters of a first or last line a match may start or end inside


def matched_where_recorded(
    repo: pygit2.Repository, commit: pygit2.Commit, note: Mapping[str, Any]
) -> str | None:
    """Without the request: whether the text each operation says it matched (its SHA-256)
    is in the commit's parent at the lines it names — a span starting in the first of
    those lines and ending in the last — and None when it is, or cannot be checked (a
    file that is not text). What was asked cannot be checked this way: only that the
    note's match is where the file had it."""
    from redline.engine import newlines
    from redline.engine.decode import decode
    from redline.engine.errors import FileFormatError

    parent = _TreeFiles(repo, commit.parents[0].tree if commit.parents else None)
    for op in note.get("operations") or []:
        if not isinstance(op, Mapping) or op.get("match_type") is None:
            continue
        path, digest = str(op.get("path")), op.get("matched_sha256")
        start, end = op.get("start_line"), op.get("end_line")
        if not isinstance(digest, str) or not isinstance(start, int) or not isinstance(end, int):
            continue
        data = parent.read(path)
        if data is None:
            return f"the note says text of {path} was matched; the commit's parent has no {path}"
        try:
            text = decode(data).text
        except FileFormatError:
            continue
        parts = newlines.split(text)[0].split("\n")
        lines = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        if not 1 <= start <= end <= len(lines):
            return (
                f"the note says lines {start}-{end} of {path} were matched; the file the "
                f"commit changed has {len(lines)} lines"
            )
        if not _holds(lines[start - 1 : end], digest):
            return (
                f"the note's matched text of {path} is not in lines {start}-{end} of the "
                "file the commit changed"
            )
    return None


def _holds(block: list[str], digest: str) -> bool:
    """Whether a span of ``block`` (starting in its first line, ending in its last) has
    the SHA-256 ``digest``: whole lines first, then spans inside the edge lines."""
    whole = "".join(block)
    for candidate in (whole, whole.rstrip("\n"), whole.rstrip("\n") + "\n"):
        if notes.sha256(candidate) == digest:
            return True
    first, last = block[0], block[-1]
    middle = "".join(block[1:-1])
    starts = range(min(len(first), _SPAN_LIMIT))
    if len(block) == 1:
        return any(
            notes.sha256(first[a:b]) == digest
            for a in starts
            for b in range(a + 1, min(len(first), a + _SPAN_LIMIT) + 1)
        )
    ends = range(1, min(len(last), _SPAN_LIMIT) + 1)
    return any(notes.sha256(first[a:] + middle + last[:b]) == digest for a in starts for b in ends)


def _path(sent: str, note: Mapping[str, Any]) -> str:
    """The path an edit request names, as the note records it: the agent may have sent it
    absolute (inside its worktree) or with ``./``; the commit holds it relative."""
    named = {str(op.get("path")) for op in note.get("operations") or [] if isinstance(op, Mapping)}
    if len(named) == 1 and sent not in named:
        return named.pop()
    return sent


def _cleaned(note: Mapping[str, Any], cleaned: Sequence[str]) -> str | None:
    recorded = list(note.get("cleaned") or [])
    if recorded != list(cleaned):
        return (
            f"the note says invisible characters {_words(recorded)} were removed; run again, "
            f"{_words(list(cleaned))}"
        )
    return None


def _changed_paths(commit: pygit2.Commit) -> set[str]:
    parent = commit.parents[0].tree if commit.parents else None
    diff = (
        parent.diff_to_tree(commit.tree)
        if parent is not None
        else commit.tree.diff_to_tree(swap=True)
    )
    return {p for d in diff.deltas for p in (d.old_file.path, d.new_file.path)}


def _words(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "none"


def describe_unreproduced(found: list[Unreproduced], lead: str, again: str | None = None) -> str:
    """The refusal for notes their recorded request does not reproduce, and the ways out."""
    from redline.engine.paths import safe_text

    count = len(found)
    lines = [
        f"{lead}the evidence of {count} edit commit"
        + ("" if count == 1 else "s")
        + " does not reproduce: its request, run again on the commit's parent, does not "
        "give what the note and the commit record, so "
        + ("it counts" if count == 1 else "they count")
        + " as unapproved flagged edits:"
    ]
    lines += [
        safe_text(f"  edit {u.edit} (commit {u.commit[:12]}): {u.reason}", keep="") for u in found
    ]
    edits = " ".join(dict.fromkeys(u.edit for u in found))
    then = f" and {again} again" if again else ""
    lines.append(
        "Restore the notes from a good copy of refs/notes/redline, or have a person review "
        f"each commit's diff and approve it (`redline approve {edits}`){then}."
    )
    return "\n".join(lines)
