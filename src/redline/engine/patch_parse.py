"""Parse a Codex-format patch (``apply_patch``) into operations; pure, no I/O.

The format, as written by a model::

    *** Begin Patch
    *** Add File: docs/new.md          every body line starts with '+'
    +hello
    *** Delete File: old.txt
    *** Update File: src/app.py
    *** Move to: src/main.py           optional, right after its Update line
    @@ def main():                     a hunk; the text after '@@ ' is a soft anchor
     context                           ' ' context, '-' removed, '+' added
    -old
    +new
    *** End of File                    optional: pins the hunk to the end of the file
    *** End Patch

What is accepted beyond that strict form (``tools/apply_patch.lark`` is the strict
form shown to models):

- missing ``*** Begin Patch`` / ``*** End Patch`` lines are added; blank lines
  around the patch and whitespace around marker and header lines are ignored;
- a shell heredoc around the patch (``<<'EOF'`` … ``EOF``, optionally preceded by
  a command such as ``apply_patch`` or ``cat``) is unwrapped;
- the first hunk of an Update may start directly with its lines, without ``@@``;
- an empty (or whitespace-only) line inside a hunk is an empty context line,
  also at the end of a hunk (the planner decides whether it must match);
- blank lines between operations, before an Update's first hunk and after
  ``*** End of File`` are skipped.

Lines are split on ``\\n``; one trailing ``\\r`` per line is dropped. Line numbers
in operations, hunks and errors are 1-based lines of the text as given.
Paths are kept as written (only surrounding whitespace is removed); the planner
checks them with :func:`redline.engine.paths.checked_path`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from redline.engine.errors import RequestError

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
END_OF_FILE = "*** End of File"

_OPERATION_HEADER = re.compile(r"\*\*\* (Add File|Delete File|Update File):(.*)")
_MOVE_TO = re.compile(r"\*\*\* Move to:(.*)")
# e.g. "<<'EOF'", "<<EOF", 'apply_patch <<"EOF"', "cat <<'PATCH'", "<<-EOF"
_HEREDOC_START = re.compile(r"(?:[\w./-]+\s+)*<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")

_EXPECTED_OPERATION = (
    "a file operation: '*** Add File: <path>', '*** Update File: <path>' "
    "or '*** Delete File: <path>'"
)
_EXPECTED_HUNK_LINE = "a hunk line starting with ' ', '-' or '+'"
_SHOWN_LINE_LIMIT = 80

HunkKind: TypeAlias = Literal[" ", "-", "+"]  # context, removed, added
_HUNK_KINDS: dict[str, HunkKind] = {" ": " ", "-": "-", "+": "+"}


class PatchSyntaxError(RequestError):
    """The patch text does not follow the apply_patch format.

    ``line_number`` is 1-based in the text as given; ``line`` is that line, or
    None when the text ended where more was expected; ``expected`` says what
    would have been valid there.
    """

    def __init__(self, line_number: int, line: str | None, expected: str) -> None:
        self.line_number = line_number
        self.line = line
        self.expected = expected
        super().__init__(
            f"apply_patch syntax error at line {line_number}: "
            f"expected {expected}, found {_show(line)}",
            "patch",
        )


def _show(line: str | None) -> str:
    if line is None:
        return "the end of the patch"
    if len(line) > _SHOWN_LINE_LIMIT:
        return repr(line[:_SHOWN_LINE_LIMIT]) + "…"
    return repr(line)


@dataclass(frozen=True)
class HunkLine:
    kind: HunkKind
    text: str  # without the prefix and without a line ending


@dataclass(frozen=True)
class Hunk:
    anchor: str | None  # the text after '@@ ', when given
    lines: tuple[HunkLine, ...]
    end_of_file: bool  # '*** End of File' followed the hunk
    # Where the hunk starts in the patch (its '@@' line, or its first line).
    # Position only: not part of equality; 0 when built by hand.
    line_number: int = field(default=0, compare=False, kw_only=True)


@dataclass(frozen=True)
class AddFile:
    path: str
    lines: tuple[str, ...]  # the body lines without their '+'
    line_number: int = field(default=0, compare=False, kw_only=True)


@dataclass(frozen=True)
class DeleteFile:
    path: str
    line_number: int = field(default=0, compare=False, kw_only=True)


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_to: str | None
    hunks: tuple[Hunk, ...]
    line_number: int = field(default=0, compare=False, kw_only=True)


Operation: TypeAlias = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class Patch:
    operations: tuple[Operation, ...]  # in patch order; repeated paths stay separate


def parse_patch(text: str) -> Patch:
    """Parse ``text``; raise :class:`PatchSyntaxError` naming the line and what fits there."""
    lines = _strip_blank_edges(_numbered_lines(text))
    lines = _strip_blank_edges(_unwrap_heredoc(lines))
    after_last = lines[-1][0] + 1 if lines else 1
    body, end = _strip_markers(lines)
    return Patch(_Parser(body, end, after_last).operations())


def format_patch(patch: Patch) -> str:
    """The strict text of ``patch`` (what the grammar accepts).

    For every ``p`` that :func:`parse_patch` returns, ``parse_patch(format_patch(p)) == p``.
    """
    out = [BEGIN_PATCH]
    for op in patch.operations:
        if isinstance(op, AddFile):
            out.append(f"*** Add File: {op.path}")
            out.extend("+" + line for line in op.lines)
        elif isinstance(op, DeleteFile):
            out.append(f"*** Delete File: {op.path}")
        else:
            out.append(f"*** Update File: {op.path}")
            if op.move_to is not None:
                out.append(f"*** Move to: {op.move_to}")
            for hunk in op.hunks:
                out.append("@@" if hunk.anchor is None else f"@@ {hunk.anchor}")
                out.extend(line.kind + line.text for line in hunk.lines)
                if hunk.end_of_file:
                    out.append(END_OF_FILE)
    out.append(END_PATCH)
    return "\n".join(out) + "\n"


_Line: TypeAlias = tuple[int, str]


def _numbered_lines(text: str) -> list[_Line]:
    raw = text.split("\n")
    if raw and raw[-1] == "":
        raw.pop()  # the newline ending the last line does not start another
    return [(i, line.removesuffix("\r")) for i, line in enumerate(raw, start=1)]


def _strip_blank_edges(lines: list[_Line]) -> list[_Line]:
    start, stop = 0, len(lines)
    while start < stop and not lines[start][1].strip():
        start += 1
    while stop > start and not lines[stop - 1][1].strip():
        stop -= 1
    return lines[start:stop]


def _unwrap_heredoc(lines: list[_Line]) -> list[_Line]:
    if not lines:
        return lines
    match = _HEREDOC_START.fullmatch(lines[0][1].strip())
    if match is None:
        return lines
    tag = match.group(2)
    if len(lines) < 2 or lines[-1][1].strip() != tag:
        raise PatchSyntaxError(
            lines[-1][0] + 1, None, f"{tag!r} closing the heredoc opened at line {lines[0][0]}"
        )
    return lines[1:-1]


def _strip_markers(lines: list[_Line]) -> tuple[list[_Line], _Line | None]:
    """Drop the Begin/End marker lines (present or not); return the body and the End line."""
    if lines and lines[0][1].strip() == BEGIN_PATCH:
        lines = lines[1:]
    if lines and lines[-1][1].strip() == END_PATCH:
        return lines[:-1], lines[-1]
    return lines, None


class _Parser:
    """A cursor over the body lines (between the markers)."""

    def __init__(self, body: list[_Line], end: _Line | None, after_last: int) -> None:
        self.body = body
        self.end = end  # the '*** End Patch' line, None when it was added
        self.after_last = after_last  # the line number reported for the end of the text
        self.i = 0

    # -- helpers -------------------------------------------------------------

    def _peek(self) -> str | None:
        return self.body[self.i][1] if self.i < len(self.body) else None

    def _error(self, expected: str) -> PatchSyntaxError:
        if self.i < len(self.body):
            number, line = self.body[self.i]
            return PatchSyntaxError(number, line, expected)
        if self.end is not None:
            return PatchSyntaxError(self.end[0], self.end[1], expected)
        return PatchSyntaxError(self.after_last, None, expected)

    def _skip_blank(self) -> None:
        while (line := self._peek()) is not None and not line.strip():
            self.i += 1

    def _path(self, value: str, header: str) -> str:
        path = value.strip()
        if not path:
            raise self._error(f"a file path after {header!r}")
        return path

    # -- operations ----------------------------------------------------------

    def operations(self) -> tuple[Operation, ...]:
        operations: list[Operation] = []
        while True:
            self._skip_blank()
            line = self._peek()
            if line is None:
                break
            operations.append(self._operation(line.strip()))
        if not operations:
            raise self._error(_EXPECTED_OPERATION + " (the patch changes nothing)")
        return tuple(operations)

    def _operation(self, header: str) -> Operation:
        match = _OPERATION_HEADER.fullmatch(header)
        if match is None:
            raise self._error(_misplaced(header))
        kind = match.group(1)
        number = self.body[self.i][0]
        path = self._path(match.group(2), f"*** {kind}: ")
        self.i += 1
        if kind == "Add File":
            return AddFile(path, self._add_body(), line_number=number)
        if kind == "Delete File":
            return DeleteFile(path, line_number=number)
        move_to = self._move_to()
        hunks = self._hunks(path)
        return UpdateFile(path, move_to, hunks, line_number=number)

    def _add_body(self) -> tuple[str, ...]:
        lines: list[str] = []
        while (line := self._peek()) is not None and line.startswith("+"):
            lines.append(line[1:])
            self.i += 1
        # Blank lines followed by the next operation (or the end) only separate.
        after = self.i
        while after < len(self.body) and not self.body[after][1].strip():
            after += 1
        if after < len(self.body) and not self.body[after][1].strip().startswith("***"):
            raise self._error(
                "a line of the new file starting with '+' (write an empty line as a lone "
                "'+') or the next file operation"
            )
        return tuple(lines)

    def _move_to(self) -> str | None:
        line = self._peek()
        match = _MOVE_TO.fullmatch(line.strip()) if line is not None else None
        if match is None:
            return None
        path = self._path(match.group(1), "*** Move to: ")
        self.i += 1
        return path

    # -- hunks ---------------------------------------------------------------

    def _hunks(self, path: str) -> tuple[Hunk, ...]:
        hunks: list[Hunk] = []
        while True:
            self._skip_blank()
            line = self._peek()
            if line is None:
                break
            if line.startswith("@@"):
                hunks.append(self._hunk_with_header(line))
            elif not hunks and line[0] in " -+":
                hunks.append(self._hunk_body(None, self.body[self.i][0]))
            elif line.lstrip().startswith("***"):
                break  # the next operation, or a misplaced marker it reports
            else:
                expected = (
                    f"'@@' starting a hunk, or {_EXPECTED_HUNK_LINE}"
                    if not hunks
                    else f"{_EXPECTED_HUNK_LINE}, or '@@'"
                )
                raise self._error(expected)
        if not hunks:
            raise self._error(
                f"a hunk for {path!r} ('@@', then lines starting with ' ', '-' or '+'; "
                "an Update needs one even for a pure rename)"
            )
        return tuple(hunks)

    def _hunk_with_header(self, line: str) -> Hunk:
        number = self.body[self.i][0]
        header = line.rstrip()
        if header == "@@":
            anchor = None
        elif header.startswith("@@ "):
            anchor = header[3:]  # trailing whitespace dropped, leading kept
        else:
            raise self._error("'@@' alone or '@@ ' followed by anchor text")
        self.i += 1
        return self._hunk_body(anchor, number)

    def _hunk_body(self, anchor: str | None, number: int) -> Hunk:
        lines: list[HunkLine] = []
        end_of_file = False
        while (line := self._peek()) is not None:
            kind = _HUNK_KINDS.get(line[:1])
            if kind is not None:
                lines.append(HunkLine(kind, line[1:]))
            elif not line.strip():
                lines.append(HunkLine(" ", ""))
            elif line.strip() == END_OF_FILE and lines:
                end_of_file = True
                self.i += 1
                break
            else:
                break
            self.i += 1
        if not lines:
            raise self._error(f"{_EXPECTED_HUNK_LINE} after '@@' (a hunk cannot be empty)")
        return Hunk(anchor, tuple(lines), end_of_file, line_number=number)


def _misplaced(header: str) -> str:
    """What to expect where an operation was due but ``header`` came."""
    if header == BEGIN_PATCH:
        return _EXPECTED_OPERATION + " ('*** Begin Patch' may only open the patch)"
    if header == END_PATCH:
        return _EXPECTED_OPERATION + " ('*** End Patch' must be the last line)"
    if _MOVE_TO.fullmatch(header):
        return _EXPECTED_OPERATION + " ('*** Move to:' must directly follow its Update line)"
    if header == END_OF_FILE:
        return _EXPECTED_OPERATION + " ('*** End of File' must directly follow hunk lines)"
    if header.startswith(("@@", "-", "+")):
        return _EXPECTED_OPERATION + " (hunks belong to an '*** Update File:' section)"
    return _EXPECTED_OPERATION
