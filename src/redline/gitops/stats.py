"""Statistics per match_type, from the evidence: the notes, the history, the outcome log.

``redline stats`` answers "which tiers can we trust on which paths" from what
the repository already records, without a daemon:

- the **notes** (``refs/notes/redline``) of agent edit commits reachable from a
  branch (or HEAD): each operation's match_type and confidence, the policy's
  verdict (flagged) and the approvals;
- the **history** after each edit: the share of the lines it inserted that a
  later commit changed or removed within ``later`` commits (gitops.follow) —
  a proxy for edits that were wrong, where an "applied rate" alone would reward
  the most aggressive tool;
- the **outcome log** (gitops.outcomes): the requests refused as ``rejected``,
  ``validation_failed``, ``no_match`` or ``ambiguous``, which leave no commit.
  It is local to this clone.

One note records one edit; an edit copied with its note (rebase, ``git notes
copy``) is counted once, by its edit id. Every count is of operations (a
patch of three hunks is three), attributed to the operation's match_type;
operations that matched no text (add, delete, write) form the row ``none``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pygit2

from redline.engine.follow import Hunk
from redline.engine.match_types import MATCH_TYPES
from redline.gitops import notes, outcomes
from redline.gitops.errors import SessionError
from redline.gitops.follow import Survival, descendants_graph
from redline.gitops.repo import BRANCH_PREFIX, Layout

SCHEMA = "redline.stats/1"
DEFAULT_LATER = 10
NONE = "none"  # the row of operations that matched no text
# Rows in the order of the one table of match types (engine.match_types), then the rest.
ORDER = MATCH_TYPES
_NOTE_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass
class Row:
    """The figures of one match_type."""

    match_type: str
    edits: int = 0
    confidences: list[float] = field(default_factory=list)
    tools: Counter[str] = field(default_factory=Counter)
    flagged: int = 0
    approved: int = 0
    rejected: int = 0
    validation_failed: int = 0
    inserted_lines: int = 0
    later_changed_lines: int = 0

    @property
    def later_changed_rate(self) -> float | None:
        if not self.inserted_lines:
            return None
        return self.later_changed_lines / self.inserted_lines

    def to_json(self, total: int) -> dict[str, Any]:
        rate = self.later_changed_rate
        return {
            "match_type": self.match_type,
            "edits": self.edits,
            "share": _round(self.edits / total) if total else 0.0,
            "confidence": quartiles(self.confidences),
            "tools": dict(sorted(self.tools.items())),
            "flagged": self.flagged,
            "approved": self.approved,
            "rejected": self.rejected,
            "validation_failed": self.validation_failed,
            "inserted_lines": self.inserted_lines,
            "later_changed_lines": self.later_changed_lines,
            "later_changed_rate": _round(rate) if rate is not None else None,
        }


@dataclass
class Report:
    session: str | None  # None: every session
    since: float | None  # seconds since the epoch, or None
    later: int
    rows: dict[str, Row] = field(default_factory=dict)
    requests: int = 0  # edit commits (notes) counted
    noted: int = 0  # agent notes reachable from a branch, before --session/--since
    older: int = 0  # of those, left out by --since
    outcomes: Counter[str] = field(default_factory=Counter)  # refused requests by status
    unreadable: int = 0  # notes that are not redline notes (skipped)

    def row(self, match_type: str | None) -> Row:
        name = match_type or NONE
        if name not in self.rows:
            self.rows[name] = Row(name)
        return self.rows[name]

    @property
    def edits(self) -> int:
        return sum(row.edits for row in self.rows.values())

    def ordered(self) -> list[Row]:
        def key(row: Row) -> tuple[int, str]:
            if row.match_type in ORDER:
                return ORDER.index(row.match_type), ""
            return (len(ORDER) + (row.match_type == NONE), row.match_type)

        return sorted(self.rows.values(), key=key)

    def to_json(self) -> dict[str, Any]:
        total = self.edits
        inserted = sum(r.inserted_lines for r in self.rows.values())
        changed = sum(r.later_changed_lines for r in self.rows.values())
        return {
            "schema": SCHEMA,
            "session": self.session,
            "since": _iso(self.since) if self.since is not None else None,
            "later": self.later,
            "requests": self.requests,
            "edits": total,
            "inserted_lines": inserted,
            "later_changed_lines": changed,
            "later_changed_rate": _round(changed / inserted) if inserted else None,
            "match_types": [row.to_json(total) for row in self.ordered()],
            "outcomes": {s: self.outcomes.get(s, 0) for s in outcomes.RECORDED},
            "noted": self.noted,
            "older": self.older,
            "unreadable_notes": self.unreadable,
        }


def quartiles(values: Iterable[float]) -> dict[str, float] | None:
    """min, q1, median, q3, max (linear interpolation between closest ranks)."""
    ordered = sorted(values)
    if not ordered:
        return None

    def at(p: float) -> float:
        pos = p * (len(ordered) - 1)
        low = math.floor(pos)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)

    return {
        "min": _round(ordered[0]),
        "q1": _round(at(0.25)),
        "median": _round(at(0.5)),
        "q3": _round(at(0.75)),
        "max": _round(ordered[-1]),
    }


def _round(value: float) -> float:
    return round(value, 4)


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> float | None:
    """Seconds since the epoch of an ISO 8601 time (a note's ``created``); None if not one."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


# --- computing ----------------------------------------------------------------------------


def compute(
    repo: pygit2.Repository,
    layout: Layout,
    *,
    session: str | None = None,
    since: float | None = None,
    later: int = DEFAULT_LATER,
) -> Report:
    """The statistics of one session's edits (``session``) or of all, made at or after
    ``since``, following inserted lines ``later`` commits forward.

    Raises SessionError when ``session`` names nothing this repository knows of (no
    note, no branch, no outcome), and CorruptNotes when the notes ref is broken.
    """
    report = Report(session, since, later)
    found = list(_note_blobs(repo, report))
    children, reachable = descendants_graph(repo, _tips(repo), (c for c, _ in found))
    follower = Survival(repo, children, later)
    approvals: dict[str, bool] = {}
    chosen: list[tuple[pygit2.Commit, dict[str, Any]]] = []
    counted: set[str] = set()
    named = False  # some note names ``session``
    # An edit's own note first; the edits a squash commit's note carries (``redline
    # land --squash``) count through the squash when their own commits are gone.
    readable: list[tuple[pygit2.Oid, dict[str, Any]]] = []
    for commit_id, blob_id in found:
        if commit_id not in reachable:
            continue
        note = _read(repo, blob_id)
        if note is None:
            report.unreadable += 1
            continue
        readable.append((commit_id, note))
    own = [(c, note) for c, note in readable if note.get("source") == "agent"]
    carried = [(c, entry) for c, note in readable for entry in notes.squashed(note)]
    for commit_id, note in readable + carried:
        edit = str(note.get("edit") or commit_id)
        approvals[edit] = approvals.get(edit, False) or bool(note.get("approvals"))
    for commit_id, note in own + carried:
        edit = str(note.get("edit") or commit_id)
        if note.get("source") != "agent" or edit in counted:
            continue
        counted.add(edit)
        report.noted += 1
        if session is not None and note.get("session") != session:
            continue
        named = True
        commit = repo[commit_id].peel(pygit2.Commit)
        if since is not None:
            made = parse_time(note.get("created"))
            if (made if made is not None else commit.commit_time) < since:
                report.older += 1
                continue
        chosen.append((commit, note))
    followed: set[tuple[pygit2.Oid, str]] = set()
    for chosen_commit, note in chosen:
        _count(report, follower, chosen_commit, note, approvals, followed)
    for line in outcomes.read(layout, session):
        _count_outcome(report, line)
    if session is not None and not named and not report.outcomes:
        _check_session(repo, layout, session)
    return report


def _count(
    report: Report,
    follower: Survival,
    commit: pygit2.Commit,
    note: dict[str, Any],
    approvals: dict[str, bool],
    followed: set[tuple[pygit2.Oid, str]],
) -> None:
    """Count ``note``'s operations, and follow the lines ``commit`` inserted in their
    paths (once a commit and path: a squash carries several edits' lines together, and
    each hunk goes to the edit nearest it)."""
    report.requests += 1
    edit = str(note.get("edit") or commit.id)
    policy = note.get("policy") or {}
    flagged_paths: set[str | None] = set()
    if policy.get("verdict") == "flagged":
        flagged_paths = {v.get("path") for v in policy.get("violations", [])} or {None}
    operations: list[dict[str, Any]] = note["operations"]
    for op in operations:
        row = report.row(op.get("match_type"))
        row.edits += 1
        row.tools[str(note.get("tool") or "?")] += 1
        if op.get("match_type") is not None:
            confidence = op.get("confidence")
            row.confidences.append(float(confidence) if confidence is not None else 1.0)
        if op.get("path") in flagged_paths or None in flagged_paths:
            row.flagged += 1
            row.approved += approvals.get(edit, False)
    by_path: dict[str, list[dict[str, Any]]] = {}
    for op in operations:
        if op.get("op") != "delete" and isinstance(op.get("path"), str):
            by_path.setdefault(op["path"], []).append(op)
    for path, ops in by_path.items():
        if (commit.id, path) in followed:
            continue
        followed.add((commit.id, path))
        inserted = follower.inserted(commit, path)
        lines = [line for group in inserted.lines for line in group]
        if not lines:
            continue
        changed = follower.changed(commit.id, path, lines)
        for hunk, hunk_lines in zip(inserted.hunks, inserted.lines, strict=True):
            row = report.row(_owner(ops, hunk).get("match_type"))
            row.inserted_lines += len(hunk_lines)
            row.later_changed_lines += sum(1 for line in hunk_lines if line in changed)


def _owner(ops: list[dict[str, Any]], hunk: Hunk) -> dict[str, Any]:
    """The operation a diff hunk belongs to: the one whose lines (in the file before the
    edit) it overlaps, else the nearest."""
    if len(ops) == 1:
        return ops[0]
    # The hunk's lines in the file before the edit, from 1 (an insertion: the two lines
    # either side of it).
    low, high = (hunk.a + 1, hunk.a + hunk.a_len) if hunk.a_len else (hunk.a, hunk.a + 1)

    def distance(op: dict[str, Any]) -> float:
        start, end = op.get("start_line"), op.get("end_line")
        if not isinstance(start, int) or not isinstance(end, int):
            return math.inf
        return max(0, start - high, low - end)

    return min(ops, key=distance)


def _count_outcome(report: Report, line: dict[str, Any]) -> None:
    status = line.get("status")
    if status not in outcomes.RECORDED:
        return
    if report.since is not None:
        made = parse_time(line.get("time"))
        if made is None or made < report.since:
            return
    report.outcomes[str(status)] += 1
    match_type = line.get("match_type")
    match_type = match_type if isinstance(match_type, str) else None
    if status == "rejected":
        report.row(match_type).rejected += 1
    elif status == "validation_failed":
        report.row(match_type).validation_failed += 1


def _check_session(repo: pygit2.Repository, layout: Layout, session: str) -> None:
    from redline.gitops import session as sessions

    branch = f"refs/heads/{BRANCH_PREFIX}{session}"
    if sessions.find(layout, session) is None and notes.ref_target(repo, branch) is None:
        raise SessionError(
            f"no session named {session!r}: no edit note names it, there is no branch "
            f"{BRANCH_PREFIX}{session} and no refused request was logged for it; "
            "`redline stats --all` covers every session"
        )


# --- reading -----------------------------------------------------------------------------


def _note_blobs(repo: pygit2.Repository, report: Report) -> Iterator[tuple[pygit2.Oid, pygit2.Oid]]:
    """(annotated commit, note blob) for every note (flat or fanned out)."""
    tree = notes.notes_tree(repo)
    if tree is None:
        return
    stack: list[tuple[pygit2.Tree, str]] = [(tree, "")]
    while stack:
        folder, prefix = stack.pop()
        for item in folder:
            name = prefix + (item.name or "")
            if not prefix and not notes.is_note_path(name):
                continue  # the requests as sent (gitops.sent)
            if item.type_str == "tree":
                sub = repo.get(item.id)
                if isinstance(sub, pygit2.Tree) and len(name) < 40:
                    stack.append((sub, name))
                continue
            if _NOTE_NAME.fullmatch(name):
                yield pygit2.Oid(hex=name), item.id
            else:
                report.unreadable += 1


def _read(repo: pygit2.Repository, blob_id: pygit2.Oid) -> dict[str, Any] | None:
    """A redline note's JSON; None for anything else."""
    note = notes.note_object(repo, blob_id)
    if note is None or not str(note.get("schema", "")).startswith("redline.note/"):
        return None
    carried = note.get("squashed", [])
    if not isinstance(carried, list) or not all(isinstance(e, dict) for e in carried):
        return None
    if not all(_counts(entry) for entry in (note, *carried)):
        return None
    return note


def _counts(note: dict[str, Any]) -> bool:
    """Whether one edit's evidence (a note, or an edit a squash's note carries) has the
    shape the figures read."""
    ops = note.get("operations")
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        return False
    for op in ops:
        confidence = op.get("confidence")
        if confidence is not None and (
            isinstance(confidence, bool) or not isinstance(confidence, (int, float))
        ):
            return False
    policy = note.get("policy")
    if policy is not None and not isinstance(policy, dict):
        return False
    violations = (policy or {}).get("violations", [])
    if not isinstance(violations, list) or not all(isinstance(v, dict) for v in violations):
        return False
    return isinstance(note.get("approvals", []), list)


def _tips(repo: pygit2.Repository) -> list[pygit2.Oid]:
    """Every local branch, and HEAD when it is detached."""
    tips: list[pygit2.Oid] = []
    for name in repo.references:
        if not name.startswith("refs/heads/"):
            continue
        target = repo.references[name].target
        if isinstance(target, pygit2.Oid):
            tips.append(target)
    if repo.head_is_detached:
        tips.append(repo.head.target)  # type: ignore[arg-type]
    return list(dict.fromkeys(tips))
