"""The evidence of a session's commit: its note (gitops.notes) and its message.

Every commit a session makes ends with a ``Redline-Edit:`` trailer naming the edit its
note describes; an edit commit's message also says how its text was matched, as its note
does (hooks.claims compares the two).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from redline.engine.confidence import shown_confidence
from redline.engine.paths import safe_text, shown_path
from redline.engine.plan import FileChange, GroupPlan
from redline.engine.result import HunkReport, Result
from redline.engine.write import operation
from redline.gitops.notes import Note, NoteOperation


def new_edit() -> str:
    """A new edit id (the ``Redline-Edit:`` trailer, the note's ``edit``)."""
    return secrets.token_hex(6)


def note(
    edit: str,
    request_id: str,
    session: str,
    tool: str,
    model: str | None,
    source: str,
    operations: list[NoteOperation],
) -> Note:
    return Note(edit, request_id, session, tool, model, source, operations)


def hunk_operations(hunks: Sequence[HunkReport]) -> list[NoteOperation]:
    """The note's operations of a patch's matched hunks."""
    return [
        NoteOperation.matched(
            h.path, "update", h.match_type, h.confidence, h.start_line, h.end_line,
            h.matched_text, other_candidates=h.other_matches, anchor_found=h.anchor_found,
            tolerated=[t.to_json() for t in h.tolerated],
        )
        for h in hunks
    ]  # fmt: skip


def edit_operations(path: str, result: Result) -> list[NoteOperation]:
    """The note's operations of an edit's matches, each with what it tolerated."""
    return [
        NoteOperation.matched(
            path, "edit", m.match_type, m.confidence, m.start_line, m.end_line, m.matched_text,
            tolerated=[t.to_json() for t in result.tolerated
                       if not t.lines or m.start_line <= t.lines[0] <= m.end_line],
        )
        for m in result.matches
    ]  # fmt: skip


def operations(tool: str, result: Result, group: GroupPlan) -> list[NoteOperation]:
    """What the note says a planned ``group`` did: the text each edit or hunk matched, and
    the files a tool wrote whole, created or deleted."""
    if tool == "edit":
        return edit_operations(group.paths[0], result)
    hunks = [h for h in result.hunks if h.path in group.paths]
    return hunk_operations(hunks) + [
        NoteOperation(c.path, _patched(c) if tool == "apply_patch" else operation(c))
        for c in group.changes
        if tool != "apply_patch" or c.before is None or c.after is None
    ]


def _patched(change: FileChange) -> str:
    if change.before is None:
        return "add"
    if change.after is None:
        return "delete"
    return "update"


def trailer(body: str, edit: str) -> str:
    """``body`` with the edit's trailer."""
    return f"{body}\n\nRedline-Edit: {edit}\n"


def edit_message(session: str, path: str, result: Result, edit: str) -> str:
    kind = (
        f"{result.match_type} {shown_confidence(result.confidence)}"
        if result.match_type
        else "edit"
    )
    message = f"redline: edit {shown_path(path)} ({kind})"
    return trailer(f"{message}\n\nApplied by redline session {session} (edit).", edit)


def group_message(
    session: str, tool: str, operations: Sequence[str], hunks: Sequence[HunkReport], edit: str
) -> str:
    """The message of a file group of a patch, a write or a delete."""
    summary = safe_text(", ".join(operations), keep="")
    message = f"redline: {summary}"[:72]
    body = f"{message}\n\nApplied by redline session {session} ({tool})."
    if hunks:  # what the note says, in the commit too (hooks.claims compares them)
        body += f" Hunks matched: {', '.join(h.match_type for h in hunks)}."
    return trailer(body, edit)


def external_message(session: str, paths: Sequence[str], edit: str) -> str:
    count = f"{len(paths)} file" + ("" if len(paths) == 1 else "s")
    message = (
        f"redline: external changes to {count}\n\n"
        f"Changes made in session {session} by other tools, committed before "
        f"redline's next edit.\n\n" + "\n".join(f"  - {shown_path(p)}" for p in paths[:50])
    )
    return trailer(message, edit)


def undo_message(session: str, edit: str, commit: str, summary: str, new: str) -> str:
    return (
        f"redline: undo edit {edit}\n\n"
        f"Reverts commit {commit} ({summary}) in session {session}.\n\n"
        f"Redline-Undoes: {edit}\nRedline-Edit: {new}\n"
    )
