"""The read tool: a file's lines, numbered as the edit errors number them.

Lines are those of the file's LF view (:mod:`redline.engine.newlines`), 1-based,
so ``start_line`` of an edit error, a nearest block's ``offset=``/``limit=`` and
the numbers shown here all name the same line. A final newline ends the last
line rather than starting another; an empty file has no lines.

:func:`plan_read` plans a read as every other tool is planned (engine.plan): against
a snapshot of the files, which each mode supplies — embedded mode the folder on disk
(fsops.apply), git mode the session's worktree on disk (gitops.worktree), not the
committed tree, since the agent reads what it sees there. A read changes nothing,
so its plan is its result.

Also here: how the text tools describe a file's encoding and line endings, and
the wording of a path that names a folder or nothing (shared by every mode).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, ClassVar

from redline.engine import newlines
from redline.engine.decode import Decoded, decode
from redline.engine.errors import BinaryFileError, RequestError
from redline.engine.paths import checked_path
from redline.engine.records import record
from redline.engine.result import Result

if TYPE_CHECKING:
    from redline.engine.plan import Snapshot

DEFAULT_LIMIT = 2000
STYLES = {newlines.LF: "lf", newlines.CRLF: "crlf", newlines.CR: "cr"}


@record(frozen=True)
class ReadRequest:
    """``{"tool": "read", "path", "offset"?, "limit"?}``: lines ``offset`` (1-based) on,
    at most ``limit`` of them."""

    path: str
    offset: int = 1
    limit: int = DEFAULT_LIMIT
    tool: ClassVar[str] = "read"


def numbered(lines: list[str], first: int) -> str:
    """``lines`` as ``cat -n`` shows them, the first numbered ``first``: the one formatter."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, first))


def text_lines(lf_text: str) -> list[str]:
    """The lines of an LF view, without the empty "line" after a final newline."""
    if not lf_text:
        return []
    lines = lf_text.split("\n")
    if lf_text.endswith("\n"):
        lines.pop()
    return lines


def encoding_name(decoded: Decoded) -> str:
    """``"utf-8"``, ``"utf-8 with BOM"``, ``"utf-16-le with BOM"``, ``"gb18030"``..."""
    return decoded.encoding + (" with BOM" if decoded.bom else "")


def dominant_ending(text: str) -> str:
    """The newline ``text`` uses most (the first one seen on a tie); LF without any."""
    _, endings = newlines.split(text)
    if endings.per_line is None:
        return endings.uniform or newlines.LF
    return Counter(endings.per_line).most_common(1)[0][0]


def is_a_directory(path: str, tool: str) -> str:
    return f"{path!r} is a directory; {tool} works on one file — name a file inside it"


def unreadable(path: str, exc: OSError) -> str:
    """A file the operating system would not let redline read (permissions, I/O)."""
    return f"cannot read {path!r}: {exc.strerror}; check its permissions"


def no_such_file(path: str, tool: str) -> str:
    what = {
        "read": "to create it, use write",
        "delete": "nothing was deleted",
    }.get(tool, "check the path")
    return (
        f"file {path!r} does not exist; {what}. Paths are relative to the root (or absolute "
        "inside it): check the spelling and the folder"
    )


def binary_refusal(path: str, tool: str, error: BinaryFileError) -> str:
    if tool == "write":
        then = (
            "write replaces text files only; to replace it with text, delete it first, then "
            "write the new file"
        )
    else:
        then = "read shows text files only; inspect it with a tool made for its format"
    what = f"a binary file or not in a detectable text encoding ({error.reason})"
    return f"{path!r} is {what}; {then}"


def plan_read(request: ReadRequest, files: Snapshot) -> Result:
    """The ``read`` result for ``request`` against ``files``: the path made relative and
    checked by the one path policy, the file's bytes as ``files`` reads them (a path it
    refuses, or a file it cannot read, raises RequestError: ``invalid`` with its
    reason), a folder or a missing file worded as every tool words them."""
    path = files.relative(request.path)
    try:
        path = checked_path(path)
        data = files.read(path)
    except RequestError as exc:
        return Result("invalid", path=path, error=str(exc))
    if data is None:
        folder = files.is_dir(path)
        error = is_a_directory(path, "read") if folder else no_such_file(path, "read")
        return Result("invalid", path=path, error=error)
    return read_text(data, request, path)


def read_text(data: bytes, request: ReadRequest, path: str) -> Result:
    """The ``read`` result for the file ``path`` holding ``data``."""
    try:
        decoded = decode(data)
    except BinaryFileError as exc:
        return Result("invalid", path=path, error=binary_refusal(path, "read", exc))
    lf_text, endings = newlines.split(decoded.text)
    lines = text_lines(lf_text)
    total = len(lines)
    if request.offset > max(total, 1):
        return Result(
            "invalid",
            path=path,
            error=(
                f"offset {request.offset} is past the end of {path!r}, which has "
                f"{_lines(total)}; read from an offset between 1 and {max(total, 1)}"
            ),
        )
    first = request.offset
    shown = lines[first - 1 : first - 1 + request.limit]
    last = first + len(shown) - 1
    result = Result(
        "read",
        path=path,
        content=numbered(shown, first),
        start_line=first,
        end_line=last,
        total_lines=total,
        encoding=encoding_name(decoded),
        line_ending=STYLES.get(endings.uniform or "", "mixed"),
        truncated=last < total,
    )
    if last < total:
        result.hint = (
            f"lines {first}-{last} of {total} shown; read on with offset={last + 1}, or read "
            "the region you need"
        )
    return result


def _lines(n: int) -> str:
    return f"{n} line" + ("" if n == 1 else "s")
