"""What the agent sent beside what the file had, for a person judging one edit.

``redline review``, its HTML page, ``redline log`` and the guard's CI output show,
per flagged edit: the tolerated differences in words (engine.tolerated, as the
note keeps them), the text the agent quoted and wrote (the request as sent,
gitops.sent), and the text of the file it matched — the lines of the file
before the edit, read from the parent of the edit's own commit (or of the squash
commit carrying it), checked against the note's digest of the matched text; when
neither holds it, the note's redacted preview.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pygit2

from redline.gitops import notes, sent
from redline.gitops.errors import CorruptNotes


def entry_of(note: Mapping[str, Any], edit: str) -> Mapping[str, Any]:
    """The evidence of ``edit`` in a note: the note itself, or a squash's entry for it."""
    if note.get("edit") != edit:
        for entry in notes.squashed(note):
            if entry.get("edit") == edit:
                return entry
    return note


def operation_of(
    entry: Mapping[str, Any], path: str | None, start_line: int | None
) -> Mapping[str, Any]:
    """The note's operation on ``path`` at ``start_line`` (the first on ``path`` else)."""
    ops = [op for op in entry.get("operations") or [] if isinstance(op, Mapping)]
    on_path = [op for op in ops if op.get("path") == path]
    exact = [op for op in on_path if op.get("start_line") == start_line]
    return (exact or on_path or [{}])[0]


def sent_and_found(
    repo: pygit2.Repository,
    commit: pygit2.Commit,
    edit: str,
    path: str | None,
    start_line: int | None,
) -> dict[str, Any]:
    """For one flagged operation of ``edit`` (noted on ``commit``): ``tolerated`` (its
    records), ``sent_old``/``sent_new`` (what the agent quoted and wrote, None when the
    note keeps no request), ``sent_said`` (why not, or ""), ``tool`` and ``found`` (the
    file's text the agent's matched, or None)."""
    note = notes.read_note(repo, commit.id) or {}
    entry = entry_of(note, edit)
    op = operation_of(entry, path, start_line)
    tolerated = [t for t in op.get("tolerated") or [] if isinstance(t, Mapping)]
    out: dict[str, Any] = {
        "tolerated": [dict(t) for t in tolerated],
        "tool": entry.get("tool"),
        "sent_old": None,
        "sent_new": None,
        "sent_said": "",
        "found": _found(repo, commit, entry, op),
    }
    record = sent.record_of(entry)
    try:
        request = sent.request_of(repo, entry)
    except CorruptNotes as exc:
        out["sent_said"] = f"the request as sent is not readable here: {exc.problem}"
        return out
    if request is not None:
        out["sent_old"] = request.old_text_of(path)
        out["sent_new"] = request.new_text_of(path)
        if request.redacted:
            out["sent_said"] = "likely secrets in it were redacted before it went into the notes"
    elif record is not None and record.get("over_cap"):
        out["sent_said"] = (
            f"the request as sent ({record.get('bytes')} bytes) was over the {record.get('cap')}"
            f"-byte cap, so only its SHA-256 is kept ({str(record.get('sha256'))[:16]}…)"
        )
    else:
        out["sent_said"] = "this edit's note keeps no request as sent (an older note)"
    return out


def _found(
    repo: pygit2.Repository,
    carrier: pygit2.Commit,
    entry: Mapping[str, Any],
    op: Mapping[str, Any],
) -> str | None:
    """The file's lines the operation matched, as they were before the edit."""
    path, start, end = op.get("path"), op.get("start_line"), op.get("end_line")
    if not isinstance(path, str) or not isinstance(start, int) or not isinstance(end, int):
        return None
    preview = op.get("matched_preview")
    own = repo.get(str(entry["commit"])) if isinstance(entry.get("commit"), str) else None
    for commit in (own, carrier):
        if not isinstance(commit, pygit2.Commit) or not commit.parents:
            continue
        lines = _lines(repo, commit.parents[0].tree, path, start, end)
        if lines is None:
            continue
        digest = op.get("matched_sha256")
        if notes.sha256(lines) == digest or notes.sha256(lines.rstrip("\n")) == digest:
            return lines
        if isinstance(preview, str) and "…" not in preview and preview.strip() in lines:
            return lines
    return preview if isinstance(preview, str) else None


def _lines(
    repo: pygit2.Repository, tree: pygit2.Tree, path: str, start: int, end: int
) -> str | None:
    try:
        blob = repo[tree[path].id]
    except KeyError:
        return None
    if not isinstance(blob, pygit2.Blob) or blob.is_binary:
        return None
    text = blob.data.decode("utf-8", "replace").replace("\r\n", "\n")
    return "".join(text.splitlines(keepends=True)[start - 1 : end])
