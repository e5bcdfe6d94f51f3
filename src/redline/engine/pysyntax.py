"""Does a Python file still compile once changed? The compiler, and the ways to ask it less.

:func:`python_errors` compiles a file (``compile``: errors of the compiler's own
stage, such as ``'return' outside function``, count too). Two shortcuts keep an
edit's check cheap, each falling back to compiling the whole file when it
cannot prove its case: :func:`adds_no_error` compiles only the top-level parts
a change touched, as they were and as they are, and scans the text before them;
the parts of a file known to compile are remembered, so a later edit compiles
the part it changed. Used by engine.validate.
"""

from __future__ import annotations
import __future__

import hashlib
import re
import sys
import threading
import warnings

from redline.engine.errors import FileFormatError
from redline.engine.syntax import SyntaxProblem, line_text, source_text

# compile() reports some problems as warnings (an invalid escape sequence); they are not
# errors, and the warnings filters are process-wide: one compile at a time changes them.
_COMPILING = threading.Lock()


def python_errors(data: bytes) -> list[SyntaxProblem]:
    text = source_text(data)
    try:
        with _COMPILING, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if _compiles_in_parts(text):
                return []
            compile(text, "<edit>", "exec", dont_inherit=True)
    except SyntaxError as exc:  # IndentationError and TabError too
        line = exc.lineno or 1
        column = exc.offset or 1
        return [SyntaxProblem(line, max(column, 1), exc.msg, line_text(text, line))]
    except ValueError as exc:  # NUL bytes in the source
        return [SyntaxProblem(1, 1, str(exc), line_text(text, 1))]
    except (RecursionError, MemoryError):
        return [SyntaxProblem(1, 1, "too deeply nested to compile", line_text(text, 1))]
    return []


# A file compiles when each of its top-level parts compiles alone, and the parts known to
# compile are remembered: an edit of a file validated before compiles one part, not all.
#
# The parts begin at column-0 ``def``, ``async def``, ``class`` and decorator lines (a
# decorated definition stays whole). A part that compiles alone ends with every bracket,
# string and block closed, so the whole file reads as its parts do; a boundary that falls
# inside a string or a bracket leaves a part that does not compile, and then the whole
# file is compiled as one. The first part's ``from __future__`` imports apply to every
# part, and one in a later part (an error in the file, not in the part) means the whole
# file is compiled. The compiler's checks are each within one top-level statement but for
# one: a ``global`` statement at module level is checked against the module's other
# statements, so a file with a ``global`` statement is compiled whole.
_PART = re.compile(r"^(?:def|class|async[ \t]+def)[ \t]|^@", re.M)
_FUTURE = re.compile(r"^from[ \t]+__future__[ \t]+import[ \t]+\(?([\w \t,\\\n]+)", re.M)
_GLOBAL = re.compile(r"\bglobal\b")
_KNOWN_PARTS = 50_000
_known: dict[bytes, None] = {}  # digests of parts that compiled, oldest first


def _compiles_in_parts(text: str) -> bool:
    """Every top-level part of ``text`` compiles alone (see above); False when one does not,
    or the file is not made of parts (then the caller compiles it whole)."""
    parts = _parts(text)
    if len(parts) < 2 or any("__future__" in part for part in parts[1:]):
        return False
    if _has_global(text):
        return False
    flags = _future_flags(parts[0])
    return all(_part_compiles(part, flags) for part in parts)


def _has_global(text: str) -> bool:
    """Might ``text`` hold a ``global`` statement? The word where a statement can begin: at
    the start of a line, or after a ``;`` or a ``:`` (in comments and strings too)."""
    if "global" not in text:
        return False
    for found in _GLOBAL.finditer(text):
        before = text[text.rfind("\n", 0, found.start()) + 1 : found.start()].rstrip(" \t\f")
        if not before or before.endswith((";", ":")):
            return True
    return False


def _part_compiles(part: str, flags: int) -> bool:
    """``part`` compiles alone with ``flags`` (remembered when it does). The caller holds
    ``_COMPILING`` and ignores warnings."""
    digest = hashlib.blake2b(flags.to_bytes(8, "little"), digest_size=16)
    digest.update(part.encode("utf-8", "surrogatepass"))
    key = digest.digest()
    if key in _known:
        return True
    try:
        compile(part, "<edit>", "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    _known[key] = None
    if len(_known) > _KNOWN_PARTS:
        del _known[next(iter(_known))]
    return True


# A change that adds no error, proved without compiling the whole file (a process that has
# not validated the file before, such as each embedded ``redline apply``, would otherwise
# compile all of it). The file before and after is cut into parts (above); the parts the
# change did not touch are the same at the start (P) and the end (S): before = P + M + S,
# after = P + M' + S. When
#   - the parts of M and of M' each compile alone (so each ends with every string, bracket
#     and block closed), with the same ``__future__`` flags before and after, and no
#     ``__future__`` import past the first part;
#   - P ends at the top level: not in a string or brackets, not on a continued line (a
#     scan of P's strings, comments and brackets: ``_ends_at_top_level``);
#   - the file has no ``global`` statement (see above);
#   - M' or S is not empty (a part begins with ``def``, ``class`` or ``@``, which can
#     follow whatever P ends with; the end of the file cannot follow a decorator);
# then S is read after M' as it was after M, so the errors of the file after the change
# are those P and S had before: none is introduced (the report is ``ok``). When a
# condition fails, the file is parsed whole as usual.
_LEXEMES = re.compile(
    r"#[^\r\n]*+"
    r"|'''(?:[^'\\]++|\\.|'(?!''))*+'''"
    r'|"""(?:[^"\\]++|\\.|"(?!""))*+"""'
    r"|'(?:[^'\\\r\n]++|\\.)*+'"
    r'|"(?:[^"\\\r\n]++|\\.)*+"',
    re.S,
)
_NOT_BRACKET = re.compile(r"[^][(){}]++")
_PAIR = re.compile(r"\(\)|\[\]|\{\}")
_NESTING = 200  # bracket depth past which a prefix is not scanned
# Since 3.12 an f-string's replacement fields may hold its own quotes, which the scan
# would take for the string's end: such a string leaves an opening brace unclosed.
_FSTRING = re.compile(r"(?<![\w])(?:[rRbB]?[fF]|[fF][rRbB])(?=['\"])")
_NESTED_QUOTES = sys.version_info >= (3, 12)


def adds_no_error(before: bytes, after: bytes) -> bool:
    """Does the change from ``before`` to ``after`` provably add no error (see above)?"""
    try:
        old, new = source_text(before), source_text(after)
    except FileFormatError:
        return False
    a, b = _parts(new), _parts(old)
    same = min(len(a), len(b))
    start = 0
    while start < same and a[start] == b[start]:
        start += 1
    end = 0
    while end < same - start and a[-1 - end] == b[-1 - end]:
        end += 1
    changed, was = a[start : len(a) - end], b[start : len(b) - end]
    if sum(map(len, changed)) + sum(map(len, was)) > len(new) // 2:
        return False  # most of the file changed: compiling it whole costs less
    if not changed and not end:
        return False  # the file now ends with P, which may end with a decorator
    later = 1 if start == 0 else 0  # the first part, when changed, may import from __future__
    if any("__future__" in part for part in (*changed[later:], *was[later:])):
        return False
    if _has_global(new):
        return False
    flags = _future_flags(a[0])
    if flags != _future_flags(b[0]):
        return False
    with _COMPILING, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not all(_part_compiles(part, flags) for part in (*changed, *was)):
            return False
    return _ends_at_top_level(new[: sum(map(len, a[:start]))])


def _ends_at_top_level(text: str) -> bool:
    """Does Python code ``text`` end outside any string, bracket or continued line? False
    also when the scan cannot tell (a quote it cannot pair, brackets that do not pair)."""
    code = _LEXEMES.sub(" ", text)
    if "'" in code or '"' in code or code.rstrip("\r\n").endswith("\\"):
        return False
    if _NESTED_QUOTES and not _fstrings_close(text):
        return False
    brackets = _NOT_BRACKET.sub("", code)
    for _ in range(_NESTING):
        if not brackets:
            return True
        brackets, paired = _PAIR.subn("", brackets)
        if not paired:
            return False
    return False


def _fstrings_close(text: str) -> bool:
    for found in _FSTRING.finditer(text):
        string = _LEXEMES.match(text, found.end())
        if string is None:
            return False
        body = string.group().replace("{{", "").replace("}}", "")
        if body.count("{") != body.count("}"):
            return False
    return True


def _parts(text: str) -> list[str]:
    starts = [0]
    for found in _PART.finditer(text):
        at = found.start()
        if at == 0:
            continue
        previous = text[text.rfind("\n", 0, at - 1) + 1 : at]
        if not previous.startswith("@"):  # not the definition a decorator stands on
            starts.append(at)
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _future_flags(first: str) -> int:
    flags = 0
    for names in _FUTURE.findall(first):
        for name in re.split(r"[\s,\\()]+", names):
            feature = getattr(__future__, name, None)
            if isinstance(feature, __future__._Feature):
                flags |= feature.compiler_flag
    return flags


def forget_compiled_parts() -> None:
    """Forget which Python parts compiled (a bench measures a first validation with it)."""
    with _COMPILING:
        _known.clear()
