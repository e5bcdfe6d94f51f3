"""The write and delete tools: a whole file created, overwritten or removed.

Each request is planned as one file group of a patch plan
(:mod:`redline.engine.patch_plan`) — a :class:`FileChange` with the bytes
before and after — so the code that lands a patch's groups on disk (fsops) or
as commits (gitops) lands these too, with the same checks.

write: the content is cleaned of invisible characters (reported in
``cleaned``) and its newlines are made one style: a new file's LF, unless
``line_ending`` says ``crlf``; an existing file's own (uniform CRLF stays CRLF,
CR stays CR; a mixed file takes the ending it uses most, the first one seen on
a tie), unless ``line_ending`` is given, which always wins. An existing file
keeps its encoding and byte-order mark (:mod:`redline.engine.decode`); a new
one is UTF-8 without a BOM. A binary target is refused, and so are folders and
paths whose parent is a file. Identical bytes are ``no_change``. No text is
matched, so the result has no ``match_type`` (the policy judges such an
operation by its path alone, as it does an apply_patch Add or Delete).

delete: removes one file (text or binary); a folder or a missing file is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Literal

from redline.engine import invisible, newlines
from redline.engine.decode import Decoded, decode
from redline.engine.errors import BinaryFileError, FileFormatError, RequestError
from redline.engine.patch import diff
from redline.engine.patch_plan import FileChange, GroupPlan, PatchPlan, Snapshot, file_in_the_way
from redline.engine.paths import checked_path
from redline.engine.plan import PatchOutcome
from redline.engine.read import (
    STYLES,
    binary_refusal,
    dominant_ending,
    encoding_name,
    is_a_directory,
    no_such_file,
)
from redline.engine.records import record
from redline.engine.result import Result

LineEnding = Literal["lf", "crlf"]
_ENDINGS = {"lf": newlines.LF, "crlf": newlines.CRLF}
NEW_FILE = Decoded("", "utf-8")


@record(frozen=True)
class WriteRequest:
    """``{"tool": "write", "path", "content", "line_ending"?}``."""

    path: str
    content: str
    line_ending: LineEnding | None = None
    validate: bool = False  # the new content must parse (engine.validate)
    tool: ClassVar[str] = "write"


@record(frozen=True)
class DeleteRequest:
    """``{"tool": "delete", "path"}``."""

    path: str
    tool: ClassVar[str] = "delete"


FileRequest = WriteRequest | DeleteRequest


def operation(change: FileChange) -> str:
    """What a write or delete did to its file: ``create``, ``overwrite`` or ``delete``."""
    if change.after is None:
        return "delete"
    return "create" if change.before is None else "overwrite"


def plan_file(
    request: FileRequest, snapshot: Snapshot, validate: Callable[[str], bool] | None = None
) -> PatchOutcome:
    """Plan ``request`` against ``snapshot``: a plan of one group (or none when refused).

    ``validate`` says whether a written path must still parse (engine.validate): a
    write that would leave it unparseable is refused ``validation_failed``.
    """
    path = snapshot.relative(request.path)
    try:
        path = checked_path(path)
        if snapshot.is_dir(path):
            return _refused(path, is_a_directory(path, request.tool))
        blocker = file_in_the_way(path, snapshot.read)
        if blocker is not None:
            return _refused(
                path,
                f"cannot {request.tool} {path!r}: {blocker!r} is a file, so nothing can be "
                "inside it; choose another path",
            )
        before = snapshot.read(path)
    except RequestError as exc:
        return _refused(path, str(exc))
    if isinstance(request, DeleteRequest):
        if before is None:
            return _refused(path, no_such_file(path, "delete"))
        return _planned(FileChange(path, before, None), Result("applied", path=path))
    outcome = _write(request, path, before)
    if validate is None or not validate(path) or not outcome.changes or outcome.plan is None:
        return outcome
    from redline.engine.validate import refusal
    from redline.engine.validate import validate as parse

    after = outcome.changes[0].after
    assert after is not None
    report = parse(path, before, after)
    if report.failed:
        return PatchOutcome(refusal(report, change="write"), [])
    outcome.plan.groups[0].validation.append(report)
    outcome.result.validation = report.to_json()
    return outcome


def _write(request: WriteRequest, path: str, before: bytes | None) -> PatchOutcome:
    try:
        decoded = NEW_FILE if before is None else decode(before)
    except BinaryFileError as exc:
        return _refused(path, binary_refusal(path, "write", exc))
    text, removed = invisible.clean(newlines.to_lf(request.content))
    if request.line_ending is not None:
        ending = _ENDINGS[request.line_ending]
    elif before is None:
        ending = newlines.LF
    else:
        ending = dominant_ending(decoded.text)
    try:
        after = decoded.encode(text if ending == newlines.LF else text.replace("\n", ending))
    except FileFormatError as exc:
        return _refused(path, f"cannot write {path!r}: {exc}")
    result = Result(
        "applied" if after != before else "no_change",
        path=path,
        cleaned=invisible.describe(removed),
        encoding=encoding_name(decoded),
        line_ending=STYLES[ending],
    )
    return _planned(FileChange(path, before, after), result)


def _planned(change: FileChange, result: Result) -> PatchOutcome:
    group = GroupPlan((change.path,), (f"{operation(change)} {change.path}",))
    if change.before != change.after:
        group.changes = (change,)
        result.diff = diff(change) or None
    return PatchOutcome(result, list(group.changes), PatchPlan([group]))


def _refused(path: str, error: str) -> PatchOutcome:
    return PatchOutcome(Result("invalid", path=path, error=error), [])
