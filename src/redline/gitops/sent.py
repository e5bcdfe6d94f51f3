"""The request as the agent sent it, kept with the evidence of the edit it made.

Each agent edit's note names (``sent``) a blob holding the request as the engine
received it, as JSON (schema ``redline.request/1``): the tool, the path, the
tool's arguments (old_string, new_string, replace_all or a batch's edits and
the threshold; the patch text; a write's content) and the engine's version —
what it takes to run the request again (:func:`Sent.request`).

The blob sits in the notes tree itself, under ``requests/ab/cdef…`` (a folder
git's notes code keeps as a non-note entry): whatever carries
``refs/notes/redline`` — ``git push``/``git fetch`` of the ref, ``redline notes
sync``, the union merge of two clones' notes, ``redline land --squash``, whose
note carries each edit's ``sent`` — carries the requests with it.

A request larger than :data:`CAP` bytes is not kept: its note says so
(``over_cap``), with its size and SHA-256, so that a copy can still be checked.
Like the note's preview of the matched text, the kept request has likely
secrets replaced by ``[REDACTED]`` (``gitops.notes.redact``): nothing in the
notes ref carries a password or a key, even after the history that held it is
rewritten. Such a request is marked ``redacted`` (its record's SHA-256 is the
request's as sent), and :meth:`Sent.request` refuses to rebuild it
(:class:`~redline.gitops.errors.RequestRedacted`): it is not what was sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pygit2

from redline import __version__
from redline.engine.records import record
from redline.gitops.errors import CorruptNotes, RequestRedacted
from redline.gitops.objects import write_blob
from redline.gitops.repo import NOTES_REF
from redline.gitops.writer import PLAIN, Writer

if TYPE_CHECKING:
    from redline.engine.requests import Request

SCHEMA = "redline.request/1"
CAP = 256 * 1024  # bytes of a request kept whole; past it, only its size and digest
FOLDER = "requests"  # where the notes tree holds the requests (never a note's name)


@record(frozen=True)
class Sent:
    """A request as the agent sent it: enough to run it again."""

    tool: str  # edit | apply_patch | write | delete
    path: str | None  # None for a patch (its paths are in its text)
    arguments: dict[str, Any]
    engine: str  # redline's version that applied it
    redacted: bool = False  # likely secrets were replaced: not the request as sent
    edit: str = ""

    def request(self) -> Request:
        """The engine request, as the engine received it (RequestRedacted when what is
        kept had secrets taken out: it is not what was sent)."""
        if self.redacted:
            raise RequestRedacted(self.edit)
        from redline.engine.edit import EditItem, EditRequest
        from redline.engine.patch import PatchRequest
        from redline.engine.write import DeleteRequest, WriteRequest

        args = self.arguments
        validate = bool(args.get("validate", False))
        if self.tool == "apply_patch":
            return PatchRequest(str(args["patch"]), validate)
        path = str(self.path)
        if self.tool == "write":
            return WriteRequest(path, str(args["content"]), args.get("line_ending"), validate)
        if self.tool == "delete":
            return DeleteRequest(path)
        items = tuple(
            EditItem(str(e["old_string"]), str(e["new_string"]), bool(e.get("replace_all")))
            for e in args["edits"]
        )
        return EditRequest(path, items, bool(args.get("batch")), float(args["threshold"]),
                           validate=validate)  # fmt: skip

    def old_text_of(self, path: str | None = None) -> str:
        """What the agent quoted of the file: old_string (a batch's, one after another),
        or a patch's context and '-' lines (of ``path``'s sections, when given); "" for
        a write or a delete."""
        if self.tool == "edit":
            return "".join(str(e["old_string"]) for e in self.arguments.get("edits", []))
        if self.tool == "apply_patch":
            return _patch_side(str(self.arguments.get("patch", "")), "-", path)
        return ""

    def new_text_of(self, path: str | None = None) -> str:
        """What the agent wrote: new_string, a patch's context and '+' lines, a write's
        content."""
        if self.tool == "edit":
            return "".join(str(e["new_string"]) for e in self.arguments.get("edits", []))
        if self.tool == "apply_patch":
            return _patch_side(str(self.arguments.get("patch", "")), "+", path)
        return str(self.arguments.get("content", ""))


_SECTION = ("*** Update File: ", "*** Add File: ", "*** Delete File: ")


def _patch_side(patch: str, side: str, path: str | None) -> str:
    """A patch's hunk lines as the file had them (``-``) or as they become (``+``), in
    the sections of ``path`` (every section when None)."""
    out = []
    inside = path is None
    for line in patch.splitlines():
        if line.startswith(_SECTION):
            inside = path is None or line.split(": ", 1)[1].strip() == path
            continue
        if line.startswith("*** Move to: ") and path is not None:
            inside = inside or line.split(": ", 1)[1].strip() == path
            continue
        if not inside or line.startswith(("***", "@@")):
            continue
        if line[:1] in (" ", side):
            out.append(line[1:])
        elif not line:
            out.append("")
    return "\n".join(out) + ("\n" if out else "")


def encode(request: Request) -> bytes:
    """The request as stored: JSON, keys sorted (one request, one blob)."""
    from redline.engine.edit import EditRequest
    from redline.engine.patch import PatchRequest
    from redline.engine.write import DeleteRequest, WriteRequest

    path: str | None = None
    if isinstance(request, EditRequest):
        tool, path = "edit", request.path
        arguments: dict[str, Any] = {
            "edits": [
                {"old_string": e.old_string, "new_string": e.new_string,
                 "replace_all": e.replace_all}
                for e in request.edits
            ],
            "batch": request.batch,
            "threshold": request.threshold,
            "validate": request.validate,
        }  # fmt: skip
    elif isinstance(request, PatchRequest):
        tool, arguments = "apply_patch", {"patch": request.patch, "validate": request.validate}
    elif isinstance(request, WriteRequest):
        tool, path = "write", request.path
        arguments = {"content": request.content, "validate": request.validate}
        if request.line_ending is not None:
            arguments["line_ending"] = request.line_ending
    elif isinstance(request, DeleteRequest):
        tool, path, arguments = "delete", request.path, {}
    else:
        raise TypeError(f"no stored form for {type(request).__name__}")
    data = {"schema": SCHEMA, "tool": tool, "path": path, "arguments": arguments,
            "engine": __version__}  # fmt: skip
    return json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogatepass")


def keep(repo: pygit2.Repository, request: Request, writer: Writer = PLAIN) -> dict[str, Any]:
    """Write ``request`` as a blob (unless over :data:`CAP`), likely secrets redacted;
    the note's ``sent`` record (size and SHA-256 of the request as sent)."""
    data = encode(request)
    record: dict[str, Any] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                              "cap": CAP}  # fmt: skip
    if len(data) > CAP:
        record["over_cap"] = True
        return record
    stored = json.loads(data)
    arguments = _redacted(stored["arguments"])
    if arguments != stored["arguments"]:
        stored["arguments"], stored["redacted"] = arguments, True
        data = json.dumps(stored, ensure_ascii=False, sort_keys=True).encode(
            "utf-8", "surrogatepass"
        )
        record["redacted"] = True
    record["blob"] = str(write_blob(repo, data, writer))
    return record


def _redacted(value: Any) -> Any:
    """``value`` with likely secrets in its strings replaced (gitops.notes.redact)."""
    from redline.gitops.notes import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    return value


def path_of(blob: str) -> str:
    """Where the notes tree holds the request blob ``blob``."""
    return f"{FOLDER}/{blob[:2]}/{blob[2:]}"


def blobs_named(note: Mapping[str, Any]) -> Iterator[str]:
    """The request blobs a note names: its own and, in a squash's note, each edit's."""
    for item in (note, *[e for e in note.get("squashed") or [] if isinstance(e, Mapping)]):
        record = item.get("sent")
        if isinstance(record, Mapping) and isinstance(record.get("blob"), str):
            yield str(record["blob"])


def record_of(note: Mapping[str, Any], edit: str | None = None) -> Mapping[str, Any] | None:
    """The ``sent`` record of ``edit`` in a note (its own, or a squash's entry for it)."""
    if edit is not None and note.get("edit") != edit:
        for entry in note.get("squashed") or []:
            if isinstance(entry, Mapping) and entry.get("edit") == edit:
                return record_of(entry)
        return None
    record = note.get("sent")
    return record if isinstance(record, Mapping) else None


def request_of(
    repo: pygit2.Repository, note: Mapping[str, Any], edit: str | None = None
) -> Sent | None:
    """The request as sent for the edit of ``note`` (in a squash's note: for ``edit``).

    None when the note keeps no request (an older note, an external change, an undo,
    or a request over :data:`CAP`: then ``record_of`` says so). CorruptNotes when the
    note names a request blob this repository lacks or cannot read.
    """
    record = record_of(note, edit)
    if record is None or not isinstance(record.get("blob"), str):
        return None
    blob_id = str(record["blob"])
    try:
        blob = repo.get(blob_id)
    except ValueError:
        blob = None
    if not isinstance(blob, pygit2.Blob):
        raise CorruptNotes(
            NOTES_REF,
            f"names the request blob {blob_id[:12]} of edit {note.get('edit')}, which is "
            "missing from this repository",
            "Fetch refs/notes/redline again (`redline notes sync`): the requests travel in it",
        )
    try:
        data = json.loads(blob.data)
        return Sent(str(data["tool"]), data.get("path"), dict(data["arguments"]),
                    str(data.get("engine", "")), bool(data.get("redacted")),
                    str(note.get("edit", "") if edit is None else edit))  # fmt: skip
    except (ValueError, KeyError, TypeError):
        raise CorruptNotes(
            NOTES_REF, f"names the request blob {blob_id[:12]}, which is not a stored request"
        ) from None
