"""Metamorphic properties of the edit tool and apply_patch over real source files.

Each property draws a real file (standard-library modules of the running
Python, some re-indented with tabs or two spaces, a few with CJK comments), a
block of it and an edit of that block, and applies the edit exactly: that is
the expected text. Then the request is changed the way a model changes what it
quotes — a format perturbation, a line that drifted in the file since it was
read, a slip of the pen, a target that is gone — and the result must be the
exact request's bytes or a refusal (nothing written), never a third text.

The example budget is small so the file runs in CI on every change;
``REDLINE_INVARIANT_EXAMPLES`` overrides it (``bench/invariants.py`` runs a
longer budget). ``REDLINE_INVARIANT_CORPUS`` (folders or files, separated by
``os.pathsep``) draws the files from there instead: any text file of a
repository — Markdown, RST, YAML, TOML, Rust, Go, JavaScript as well as Python. With ``REDLINE_INVARIANT_LOG`` set, every outcome is appended
to that file as a JSON line; with ``REDLINE_INVARIANT_COLLECT`` set, a wrong
result is logged instead of failing the test, so a long run sees them all.
"""

from __future__ import annotations

import codecs
import difflib
import functools
import json
import keyword
import os
import random
import re
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from perturbations import (
    FORMAT_PERTURBATIONS,
    Perturbation,
    ambiguous_marks,
    combinations,
    erases_trailing_whitespace,
    flatten,
    indent_step,
    name_of,
    perturb_chain,
    perturb_pair,
    reindent,
    rewrites_added_text,
    typo_variants,
    typographic,
)
from redline.engine.edit import EditItem, EditOutcome, EditRequest, apply_edit
from redline.engine.fold import translate_punctuation
from redline.engine.match import find_all, inside_indentation
from redline.engine.patch import apply_patch
from redline.engine.patch_plan import MemorySnapshot
from redline.engine.plan import PatchOutcome

# --------------------------------------------------------------------------- budget and log


def _examples(default: int) -> int:
    override = os.environ.get("REDLINE_INVARIANT_EXAMPLES")
    return int(override) if override else default


def _budget(default: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return settings(
        max_examples=_examples(default),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


_LOG = os.environ.get("REDLINE_INVARIANT_LOG")
_COLLECT = bool(os.environ.get("REDLINE_INVARIANT_COLLECT"))


def _record(prop: str, perturbation: str, outcome: str, detail: str | None = None) -> None:
    """One outcome (right / refused / wrong / skipped) for the bench's summary."""
    if not _LOG:
        return
    entry = {"property": prop, "perturbation": perturbation, "outcome": outcome}
    if detail is not None:
        entry["detail"] = detail
    with open(_LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _check(prop: str, failures: list[str]) -> None:
    if failures and not _COLLECT:
        raise AssertionError(f"{len(failures)} wrong result(s):\n\n" + "\n\n".join(failures))


# --------------------------------------------------------------------------- the corpus

_MODULES = (
    "textwrap.py",
    "shlex.py",
    "fnmatch.py",
    "heapq.py",
    "colorsys.py",
    "graphlib.py",
    "sched.py",
    "queue.py",
    "netrc.py",
    "getopt.py",
    "glob.py",
    "reprlib.py",
    "numbers.py",
    "abc.py",
    "calendar.py",
    "csv.py",
    "copy.py",
    "fractions.py",
    "string.py",
    "bisect.py",
    "json/encoder.py",
    "json/decoder.py",
    "email/quoprimime.py",
    "http/cookies.py",
    "tomllib/_parser.py",
    "wsgiref/headers.py",
    "html/parser.py",
    "asyncio/locks.py",
    "concurrent/futures/_base.py",
    "zoneinfo/_tzpath.py",
    "unittest/util.py",
    "lib2to3/Grammar.txt",
)
_TABBED = ("config-3.11-x86_64-linux-gnu/Makefile",)  # real tab-indented text, where installed
_TAB_VARIANTS = ("textwrap.py", "queue.py", "json/decoder.py", "graphlib.py")
_TWO_SPACE_VARIANTS = ("shlex.py", "sched.py", "wsgiref/headers.py", "html/parser.py")
_CJK_VARIANTS = ("heapq.py", "getopt.py")
_MAX_LINES = 400  # keeps the tolerant tiers' work per example small

_CJK_COMMENTS = (
    "计算结果，并返回（如果需要）。",
    "注意：这里的顺序很重要，不要修改。",
    "处理边界情况（空输入、负数）。",
    "“缓存”在第一次调用时建立。",
    "参数：宽度（整数），默认为七十。",
)


class Source:
    """A corpus file: its name, its text (LF, ends with a newline), one indentation level."""

    def __init__(self, name: str, text: str, unit: str) -> None:
        self.name, self.text, self.unit = name, text, unit

    def __repr__(self) -> str:  # the text is long: a failing example names the file
        return f"Source({self.name!r})"


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _spelled(source: Source, indent: str) -> str:
    """``indent`` as a file indented with tabs spells its width: tabs, then the spaces
    short of a tab (the [tabs] variants are written so). Two spellings of one width,
    "\t  \t" and "\t\t  ", would be the same request to a tolerant match, which writes
    the file's way; the exact request must write it too."""
    if source.unit != "\t":
        return indent
    columns = indent.count("\t") * 4 + indent.count(" ")
    return "\t" * (columns // 4) + " " * (columns % 4)


def _convert_indent(text: str, change: Callable[[int], str]) -> str:
    out = []
    for line in text.split("\n"):
        width = len(_indent(line))
        out.append(change(width) + line[width:] if line.strip() else line)
    return "\n".join(out)


def _with_cjk_comments(text: str) -> str:
    out = []
    count = 0
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith(("def ", "class ")) or re.fullmatch(r"\s*return \w+", line):
            comment = _CJK_COMMENTS[count % len(_CJK_COMMENTS)]
            count += 1
            if stripped.startswith("return"):
                line = f"{line}  # {comment}"
            else:
                out.append(f"{_indent(line)}# {comment}")
        out.append(line)
    return "\n".join(out)


_CORPUS_ENV = "REDLINE_INVARIANT_CORPUS"
_TEXT_FILES = frozenset(
    {
        *(".py", ".pyi", ".md", ".rst", ".txt", ".yaml", ".yml", ".toml", ".cfg", ".ini"),
        *(".rs", ".go", ".js", ".jsx", ".ts", ".tsx", ".html", ".css", ".c", ".h", ".sh"),
    }
)
_MAX_CORPUS_FILES = 400
_MAX_CORPUS_BYTES = 300_000


def _unit_of(text: str) -> str:
    """The file's indentation unit: a tab, or its most common step of spaces."""
    tabbed = spaced = 0
    steps: dict[int, int] = {}
    previous = 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        indent = _indent(line)
        tabbed += indent.startswith("\t")
        spaced += indent.startswith(" ")
        width = len(indent.expandtabs(4))
        if width > previous:
            steps[width - previous] = steps.get(width - previous, 0) + 1
        previous = width
    if tabbed > spaced:
        return "\t"
    step = max((2, 4, 8), key=lambda k: steps.get(k, 0))
    return " " * step


def _files_of(paths: str) -> list[Path]:
    found: list[Path] = []
    for entry in paths.split(os.pathsep):
        root = Path(entry)
        if root.is_file():
            found.append(root)
            continue
        for path in sorted(root.rglob("*")):
            if ".git" in path.parts or not path.is_file():
                continue
            if path.suffix.lower() in _TEXT_FILES and path.stat().st_size <= _MAX_CORPUS_BYTES:
                found.append(path)
    if len(found) > _MAX_CORPUS_FILES:
        found = sorted(random.Random(0).sample(found, _MAX_CORPUS_FILES))
    return found


def _outside_corpus(paths: str) -> tuple[Source, ...]:
    """Text files from ``paths`` (the bench's ``--corpus``), each cut to its first lines."""
    sources = []
    for path in _files_of(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "\r" in text or text.startswith("\ufeff") or "\x00" in text:
            continue
        lines = text.split("\n")[:_MAX_LINES]
        text = "\n".join(lines).rstrip("\n") + "\n"
        if sum(1 for line in lines if line.strip()) >= 10:
            sources.append(Source(str(path), text, _unit_of(text)))
    assert sources, f"{_CORPUS_ENV}={paths!r} holds no text file of 10 lines or more"
    return tuple(sources)


@functools.cache
def _corpus() -> tuple[Source, ...]:
    outside = os.environ.get(_CORPUS_ENV)
    if outside:
        return _outside_corpus(outside)
    root = Path(sysconfig.get_paths()["stdlib"])
    sources = []

    def read(name: str) -> str | None:
        try:
            text = (root / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        lines = text.replace("\r\n", "\n").split("\n")[:_MAX_LINES]
        return "\n".join(lines).rstrip("\n") + "\n"

    for name in _MODULES + _TABBED:
        text = read(name)
        if text is not None:
            sources.append(Source(name, text, "\t" if name in _TABBED else "    "))
    for name in _TAB_VARIANTS:
        text = read(name)
        if text is not None:
            tabbed = _convert_indent(text, lambda w: "\t" * (w // 4) + " " * (w % 4))
            sources.append(Source(f"{name}[tabs]", tabbed, "\t"))
    for name in _TWO_SPACE_VARIANTS:
        text = read(name)
        if text is not None:
            two = _convert_indent(text, lambda w: " " * ((w // 4) * 2 + w % 4))
            sources.append(Source(f"{name}[2sp]", two, "  "))
    for name in _CJK_VARIANTS:
        text = read(name)
        if text is not None:
            sources.append(Source(f"{name}[cjk]", _with_cjk_comments(text), "    "))
    assert len(sources) >= 25, "the standard library is missing most of the corpus files"
    return tuple(sources)


@pytest.mark.skipif(bool(os.environ.get(_CORPUS_ENV)), reason="another corpus")
def test_corpus_has_every_shape() -> None:
    names = [s.name for s in _corpus()]
    assert any(n.endswith("[tabs]") for n in names)
    assert any(n.endswith("[2sp]") for n in names)
    assert any("，" in s.text and "（" in s.text for s in _corpus())


# --------------------------------------------------------------------------- drawing edits

_STATEMENTS = (
    'log.debug("step - %d done", step)',
    "result = compute(value, 'fallback')",
    "count += 1",
    "# TODO: keep in sync with the caller's check",
    "return None",
    "raise ValueError(f'bad input: {name!r}')",
    "items.append((key, value))",
    "pass",
)
_KINDS = ("replace", "insert", "delete", "join", "reindent", "blank", "token")
_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_NUMBER = re.compile(r"\b[0-9]+\b")
_STRING = re.compile(r"""(['"])([^'"\n]{1,40})\1""")


@dataclass(frozen=True)
class Edit:
    source: Source
    start: int  # index of the block's first line in the file
    old_lines: tuple[str, ...]  # empty for a fragment edit
    new_lines: tuple[tuple[str, int | None], ...]  # (text, index of the same old line or None)
    kind: str
    old: str  # old_string
    new: str  # new_string
    token_line: int | None = None  # the old line whose token the edit changed
    token_span: tuple[int, int] | None = None

    @property
    def text(self) -> str:
        return self.source.text

    @property
    def kept(self) -> set[int]:
        """Old lines that new_string keeps byte for byte."""
        return {origin for _, origin in self.new_lines if origin is not None}

    @property
    def changed(self) -> list[int]:
        """Non-blank old lines that the edit changes or removes."""
        return [i for i, line in enumerate(self.old_lines) if line.strip() and i not in self.kept]

    def where(self) -> str:
        if not self.old_lines:
            return f"{self.source.name} line {self.start + 1} (fragment, {self.kind})"
        end = self.start + len(self.old_lines)
        return f"{self.source.name} lines {self.start + 1}-{end} ({self.kind})"


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _change_token(line: str, draw: st.DrawFn) -> tuple[str, tuple[int, int]] | None:
    """One identifier renamed, one number changed or one string's text changed."""
    choices: list[tuple[int, int, str]] = []
    for m in _WORD.finditer(line):
        if len(m.group()) >= 2 and not keyword.iskeyword(m.group()):
            choices.append((m.start(), m.end(), m.group() + "_v2"))
    for m in _NUMBER.finditer(line):
        choices.append((m.start(), m.end(), str(int(m.group()) + 1)))
    for m in _STRING.finditer(line):
        choices.append((m.start(2), m.end(2), "new " + m.group(2)))
    if not choices:
        return None
    start, end, text = draw(st.sampled_from(choices))
    return line[:start] + text + line[end:], (start, start + len(text))


@st.composite
def edits(
    draw: st.DrawFn,
    *,
    fragments: bool = True,
    min_nonblank: int = 1,
    kinds: tuple[str, ...] = _KINDS,
) -> Edit:
    source = draw(st.sampled_from(_corpus()))
    lines = source.text.split("\n")[:-1]
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    start = nonblank[draw(st.integers(0, len(nonblank) - 1))]
    if fragments and draw(st.integers(0, 5)) == 0:
        return _fragment_edit(draw, source, start)
    size = draw(st.integers(1, 12))
    end = min(len(lines), start + size)
    # Grow the block until it is unique, ends on a non-blank line and has enough content.
    while end < len(lines) and end - start < 12:
        block = lines[start:end]
        unique = source.text.count(_join(block)) == 1
        enough = sum(1 for line in block if line.strip()) >= min_nonblank
        if unique and enough and block[-1].strip():
            break
        end += 1
    block = lines[start:end]
    assume(block[-1].strip() and source.text.count(_join(block)) == 1)
    assume(sum(1 for line in block if line.strip()) >= min_nonblank)
    kind = draw(st.sampled_from(kinds))
    edit = _line_edit(draw, source, start, block, kind)
    assume(edit is not None)
    assert edit is not None
    assume(edit.old != edit.new)
    return edit


def _line_edit(
    draw: st.DrawFn, source: Source, start: int, block: list[str], kind: str
) -> Edit | None:
    n = len(block)
    new: list[tuple[str, int | None]] = [(line, i) for i, line in enumerate(block)]
    filled = [i for i, line in enumerate(block) if line.strip()]
    token_line = token_span = None
    if kind == "replace":
        i = draw(st.sampled_from(filled))
        new[i] = (_indent(block[i]) + draw(st.sampled_from(_STATEMENTS)), None)
    elif kind == "insert":
        at = draw(st.integers(0, n))
        near = [i for i in filled if i < at] or [i for i in filled if i >= at]
        indent = _indent(block[near[-1] if near[-1] < at else near[0]])
        if draw(st.booleans()):
            indent = _spelled(source, indent + source.unit)
        new.insert(at, (indent + draw(st.sampled_from(_STATEMENTS)), None))
    elif kind == "delete":
        del new[draw(st.sampled_from(filled))]
    elif kind == "join":
        pairs = [
            i
            for i in range(n - 1)
            if block[i].strip() and block[i + 1].strip() and not block[i].endswith("\\")
        ]
        if not pairs:
            return None
        i = draw(st.sampled_from(pairs))
        new[i : i + 2] = [(block[i].rstrip() + " " + block[i + 1].strip(), None)]
    elif kind == "reindent":
        i = draw(st.sampled_from(filled))
        indent = _indent(block[i])
        body = block[i][len(indent) :]
        if indent.startswith(source.unit):
            new[i] = (indent[len(source.unit) :] + body, None)  # a nested line dedented
        else:
            new[i] = (_spelled(source, indent + source.unit) + body, None)
    elif kind == "blank":
        blanks = [i for i, line in enumerate(block) if not line.strip()]
        if blanks and draw(st.booleans()):
            del new[draw(st.sampled_from(blanks))]
        else:
            new.insert(draw(st.integers(1, n)), ("", None))
    elif kind == "token":
        i = draw(st.sampled_from(filled))
        changed = _change_token(block[i], draw)
        if changed is None:
            return None
        new[i] = (changed[0], None)
        token_line, token_span = i, changed[1]
    old = _join(block)
    new_string = _join([text for text, _ in new])
    return Edit(
        source, start, tuple(block), tuple(new), kind, old, new_string, token_line, token_span
    )


def _fragment_edit(draw: st.DrawFn, source: Source, index: int) -> Edit:
    line = source.text.split("\n")[index]
    words = list(re.finditer(r"\S+", line))
    a = draw(st.integers(0, len(words) - 1))
    b = draw(st.integers(a, min(len(words) - 1, a + 4)))
    lo, hi = words[a].start(), words[b].end()
    while source.text.count(line[lo:hi]) > 1 and (a > 0 or b < len(words) - 1):
        a, b = max(0, a - 1), min(len(words) - 1, b + 1)
        lo, hi = words[a].start(), words[b].end()
    fragment = line[lo:hi]
    assume(source.text.count(fragment) == 1)
    changed = _change_token(fragment, draw)
    assume(changed is not None)
    assert changed is not None
    return Edit(source, index, (), (), "fragment", fragment, changed[0])


# --------------------------------------------------------------------------- applying


def _edit(data: bytes, old: str, new: str) -> EditOutcome:
    return apply_edit(data, EditRequest("f.py", (EditItem(old, new),)))


def _exact(edit: Edit, text: str | None = None) -> str:
    """The exact request's result, which must be a plain replacement of the one occurrence."""
    text = edit.text if text is None else text
    out = _edit(text.encode(), edit.old, edit.new)
    expected = text.replace(edit.old, edit.new, 1)
    assert out.result.status == "applied" and out.data == expected.encode(), (
        f"the exact edit itself went wrong at {edit.where()}: {out.result.status} "
        f"{out.result.error}\n{_diff(expected, (out.data or b'').decode())}"
    )
    return expected


def _diff(expected: str, got: str) -> str:
    lines = difflib.unified_diff(
        expected.splitlines(True), got.splitlines(True), "expected", "got", n=1
    )
    out = []
    for line in lines:
        if line.startswith(("---", "+++", "@@")):
            out.append(line.rstrip("\n"))
        else:
            out.append(line[0] + repr(line[1:]))
    return "\n".join(out) or "(no difference in lines)"


def _verdict(
    prop: str,
    label: str,
    where: str,
    run: Callable[[], EditOutcome],
    expected: str | None,
    old: str,
    new: str,
    failures: list[str],
    *,
    before: str = "",
) -> None:
    """Record one outcome: the expected text (None: none) or a refusal; anything else is wrong.

    When no text is expected, the diff shown is from the file ``before`` to what was written.
    """
    try:
        out = run()
    except Exception as exc:  # an input must never crash the engine
        failures.append(f"[{label}] {where}: raised {exc!r}\nold'={old!r}\nnew'={new!r}")
        _record(prop, label, "wrong", failures[-1])
        return
    r = out.result
    if out.data is None and r.status != "applied":
        _record(prop, label, "refused")
        return
    got = out.data.decode() if out.data is not None else "(data None)"
    if expected is not None and out.data == expected.encode() and r.status == "applied":
        _record(prop, label, "right")
        return
    why = "must be refused" if expected is None else "expected bytes or a refusal"
    failures.append(
        f"[{label}] {where}: {r.status} via {r.match_type} ({r.confidence}); {why}\n"
        f"old'={old!r}\nnew'={new!r}\n{_diff(before if expected is None else expected, got)}"
    )
    _record(prop, label, "wrong", failures[-1])


def _really_there(old: str, text: str) -> bool:
    """``old`` is text of the file: found, and not only after part of a line's
    indentation (a line-starting text found there is a whitespace match)."""
    return any(not inside_indentation(text, p, old) for p in find_all(text, old))


def _unsayable(f: Perturbation, old: str, new: str) -> bool:
    """Perturbed by ``f``, the request cannot say what the exact one does, as bench/
    replay.py skips it too: ``f`` writes marks the edit already has (no engine can tell
    them apart), or it strips trailing whitespace from a line the edit changes (whether
    the edit keeps it: the merge keeps it on a line rewritten in place, as opencode's
    published case has it, where the exact request may drop it)."""
    return ambiguous_marks(f, old + new) or erases_trailing_whitespace((f,), old, new)


def _perturbed_pairs(old: str, new: str) -> Iterator[tuple[Perturbation, str, str]]:
    """(f, old', new') for every perturbation f that applies to old and, if at all, to new."""
    for f in FORMAT_PERTURBATIONS:
        old_p = f(old)
        if old_p is None:
            continue
        if f(old + "\n" + new) is None:
            continue  # new_string cannot be perturbed the same way (e.g. a negative indent)
        new_p = f(new)
        yield f, old_p, new if new_p is None else new_p


# --------------------------------------------------------------------------- 1. edit tool


@_budget(300)
@given(edit=edits())
def test_format_perturbed_edit_gives_exact_bytes_or_refusal(edit: Edit) -> None:
    expected = _exact(edit)
    data = edit.text.encode()
    failures: list[str] = []
    for f, old_p, new_p in _perturbed_pairs(edit.old, edit.new):
        name = f.__name__
        if _really_there(old_p, edit.text) or _unsayable(f, edit.old, edit.new):
            _record("format_edit", name, "skipped")  # e.g. the perturbed text is really there
            continue
        _verdict(
            "format_edit",
            name,
            edit.where(),
            functools.partial(_edit, data, old_p, new_p),
            expected,
            old_p,
            new_p,
            failures,
        )
    _check("format_edit", failures)


# --------------------------------------------------------------------------- 1b. combined


def _lf(text: str) -> str:
    """A request's text as the engine reads it (old and new arrive with LF)."""
    return text.replace("\r\n", "\n")


def _other_text(old: str, exact: str, text: str) -> bool:
    """The perturbed old_string is another block of the file, or one up to its quotes and
    dashes (then the punctuation tier rightly takes it). CRLF alone is not."""
    if old != exact and old in text:
        return True
    folded = translate_punctuation(old)
    return folded != translate_punctuation(exact) and folded in translate_punctuation(text)


def _chains(
    seed: int, old: str, new: str, sizes: tuple[int, ...], marks: bool = True
) -> list[tuple[Perturbation, ...]]:
    """Combinations of perturbations that apply to this request, one per size."""
    applicable = tuple(
        f
        for f in FORMAT_PERTURBATIONS
        if perturb_pair(f, old, new) is not None and (marks or f.__name__ not in _MARKS)
    )
    rng = random.Random(seed)
    chains = [combinations(rng, size, applicable) for size in sizes]
    return [chain for chain, size in zip(chains, sizes, strict=True) if len(chain) == size]


_MARKS = ("curly_quotes", "straight_quotes", "dashes", "straight_dashes", "cjk_to_ascii")


@_budget(200)
@given(edit=edits(), seed=st.integers(0, 2**32 - 1))
def test_combined_format_perturbations_give_exact_bytes_or_refusal(edit: Edit, seed: int) -> None:
    """Two or three format perturbations at once (a re-indent, trailing spaces and
    curly quotes, say): still the exact request's bytes, or a refusal."""
    expected = _exact(edit)
    data = edit.text.encode()
    failures: list[str] = []
    for chain in _chains(seed, edit.old, edit.new, (2, 3)):
        label = f"{len(chain)} at once"
        pair = perturb_chain(chain, edit.old, edit.new)
        assert pair is not None
        old_p, new_p = pair
        in_file = _other_text(_lf(old_p), edit.old, edit.text)
        erased = erases_trailing_whitespace(chain, edit.old, edit.new)
        if in_file or erased or old_p == new_p or rewrites_added_text(chain, edit.old, edit.new):
            _record("combined_edit", label, "skipped")
            continue
        _verdict(
            "combined_edit",
            label,
            f"{edit.where()} [{name_of(chain)}]",
            functools.partial(_edit, data, old_p, new_p),
            expected,
            old_p,
            new_p,
            failures,
        )
    _check("combined_edit", failures)


# --------------------------------------------------------------------------- 1c. reverse marks


def _typographic(edit: Edit) -> Edit | None:
    """The edit in a copy of its file written with typographic marks (“quotes”, ’, – and
    —) on every line but those the edit changes, which keep their ASCII: the exact
    request quotes the file's marks on the lines it keeps and adds ASCII text. None
    when no line the edit keeps has a mark to change."""
    lines = edit.text.split("\n")
    n = len(edit.old_lines)
    kept = edit.kept
    ascii_lines = {edit.start + i for i in range(n) if i not in kept}
    lines = [
        line if k in ascii_lines else typographic(line) or line for k, line in enumerate(lines)
    ]
    block = lines[edit.start : edit.start + n]
    if block == list(edit.old_lines):
        return None
    new_lines = tuple(
        (block[origin] if origin is not None else text, origin) for text, origin in edit.new_lines
    )
    text = "\n".join(lines)
    old, new = _join(block), _join([line for line, _ in new_lines])
    if text.count(old) != 1:
        return None
    source = Source(f"{edit.source.name}[typographic]", text, edit.source.unit)
    return replace(
        edit, source=source, old_lines=tuple(block), new_lines=new_lines, old=old, new=new
    )


@_budget(200)
@given(edit=edits(fragments=False), seed=st.integers(0, 2**32 - 1))
def test_reverse_marks_give_exact_bytes_or_refusal(edit: Edit, seed: int) -> None:
    """The file has typographic marks, the agent types ASCII — alone, or with one or two
    other perturbations: the exact request's bytes (the file's marks on the lines the
    edit keeps, the agent's ASCII where it adds or changes text), or a refusal. The
    same for the edit as an apply_patch hunk."""
    typo = _typographic(edit)
    assume(typo is not None)
    assert typo is not None
    expected = _exact(typo)
    data = typo.text.encode()
    failures: list[str] = []
    for chain in [(), *_chains(seed, edit.old, edit.new, (1, 2), marks=False)]:
        label = "edit" if not chain else f"edit + {len(chain)} more"
        pair = perturb_chain(chain, edit.old, edit.new)
        assert pair is not None
        old_p, new_p = pair
        erased = erases_trailing_whitespace(chain, edit.old, edit.new)
        if _other_text(_lf(old_p), typo.old, typo.text) or old_p == new_p or erased:
            _record("reverse_marks", label, "skipped")
            continue
        _verdict(
            "reverse_marks",
            label,
            f"{typo.where()} [{name_of(chain) or 'ASCII'}]",
            functools.partial(_edit, data, old_p, new_p),
            expected,
            old_p,
            new_p,
            failures,
        )
    # The same as a patch: the hunk with ASCII context against the typographic file.
    exact_patch = _run_patch(_patch(_hunk_lines(typo, expected)), data)
    if exact_patch.result.status == "applied" and len(exact_patch.changes) == 1:
        result = exact_patch.changes[0].after
        lines = _hunk_lines(edit, _exact(edit))
        patch = _patch(lines)
        out = _run_patch(patch, data)
        got = out.changes[0].after if len(out.changes) == 1 else None
        if not out.changes and out.result.status != "applied":
            _record("reverse_marks", "patch", "refused")
        elif got == result and out.result.status == "applied":
            _record("reverse_marks", "patch", "right")
        else:
            failures.append(
                f"[patch] {typo.where()}: {out.result.status} via {out.result.match_type}; "
                f"expected bytes or a refusal\npatch={patch!r}\n"
                f"{_diff((result or b'').decode(), (got or b'').decode())}"
            )
            _record("reverse_marks", "patch", "wrong", failures[-1])
    _check("reverse_marks", failures)


# --------------------------------------------------------------------------- 2. apply_patch


def _hunk_lines(edit: Edit, expected: str) -> list[str]:
    """The edit as one Codex hunk of whole lines with 3 lines of context (prefix + text)."""
    before = edit.text.split("\n")[:-1]
    after = expected.split("\n")[:-1]
    first = edit.start
    last = edit.start + max(1, len(edit.old_lines))  # exclusive, in ``before``
    tail = len(before) - last
    new_last = len(after) - tail
    old_region, new_region = before[first:last], after[first:new_last]
    lines = [" " + line for line in before[max(0, first - 3) : first]]
    matcher = difflib.SequenceMatcher(None, old_region, new_region, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            lines += [" " + line for line in old_region[i1:i2]]
        else:
            lines += ["-" + line for line in old_region[i1:i2]]
            lines += ["+" + line for line in new_region[j1:j2]]
    lines += [" " + line for line in before[last : last + 3]]
    return lines


def _patch(lines: list[str]) -> str:
    body = "".join(line + "\n" for line in lines)
    return f"*** Begin Patch\n*** Update File: f.py\n@@\n{body}*** End Patch\n"


def _run_patch(text: str, data: bytes) -> PatchOutcome:
    return apply_patch(text, MemorySnapshot({"f.py": data}))


@_budget(200)
@given(edit=edits())
def test_format_perturbed_patch_gives_exact_bytes_or_refusal(edit: Edit) -> None:
    expected = _exact(edit)
    data = edit.text.encode()
    lines = _hunk_lines(edit, expected)
    exact = _run_patch(_patch(lines), data)
    assume(exact.result.status == "applied" and len(exact.changes) == 1)
    result = exact.changes[0].after
    assert result is not None
    assert result == expected.encode(), (
        f"the exact patch went wrong\n{_diff(expected, result.decode())}"
    )
    joined = "".join(line[1:] + "\n" for line in lines)
    old_side = "".join(line[1:] + "\n" for line in lines if line[0] != "+")
    failures: list[str] = []
    for f in FORMAT_PERTURBATIONS:
        perturbed = f(joined)
        if perturbed is None or f(old_side) is None:
            continue  # only added lines would change: that is what the agent asked to write
        if _unsayable(f, edit.old, edit.new):
            _record("format_patch", f.__name__, "skipped")
            continue
        texts = perturbed.split("\n")[:-1]
        patch = _patch([prefix[0] + text for prefix, text in zip(lines, texts, strict=True)])
        try:
            out = _run_patch(patch, data)
        except Exception as exc:
            failures.append(f"[{f.__name__}] {edit.where()}: raised {exc!r}\n{patch}")
            _record("format_patch", f.__name__, "wrong", failures[-1])
            continue
        if not out.changes and out.result.status != "applied":
            _record("format_patch", f.__name__, "refused")
            continue
        got = out.changes[0].after if len(out.changes) == 1 else None
        if got == result and out.result.status == "applied":
            _record("format_patch", f.__name__, "right")
            continue
        failures.append(
            f"[{f.__name__}] {edit.where()}: {out.result.status} via {out.result.match_type}; "
            f"expected bytes or a refusal\npatch={patch!r}\n"
            f"{_diff(expected, (got or b'').decode())}"
        )
        _record("format_patch", f.__name__, "wrong", failures[-1])
    _check("format_patch", failures)


# --------------------------------------------------------------------------- 3. drift


def _renamed(line: str, draw: st.DrawFn, suffix: str, span: tuple[int, int] | None = None) -> str:
    """``line`` with one identifier renamed (the one in ``span`` when given)."""
    words = [
        m for m in _WORD.finditer(line) if len(m.group()) >= 3 and not keyword.iskeyword(m.group())
    ]
    if span is not None:
        words = [m for m in words if m.start() < span[1] and span[0] < m.end()]
    assume(words)
    m = draw(st.sampled_from(words))
    return line[: m.start()] + m.group() + suffix + line[m.end() :]


def _whitespace_copy(old: str, text: str) -> bool:
    """Some block of ``text`` is ``old`` up to whitespace (whole lines): the engine may take it."""
    want = ["".join(line.split()) for line in old.split("\n") if line.strip()]
    have = ["".join(line.split()) for line in text.split("\n") if line.strip()]
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


def _replace_line(text: str, index: int, line: str) -> str:
    lines = text.split("\n")
    lines[index] = line
    return "\n".join(lines)


@_budget(200)
@given(edit=edits(fragments=False, min_nonblank=3), data=st.data())
def test_drift_on_a_line_the_edit_keeps_survives_or_refuses(
    edit: Edit, data: st.DataObject
) -> None:
    """The file changed a line the edit keeps: the file's line stays, the edit lands, or refuse.
    The block's first or last line is never the drifted one: there a window may have
    slid onto a neighbour, so such a request is refused."""
    kept = [i for i in sorted(edit.kept) if edit.old_lines[i].strip()]
    assume(kept)
    j = data.draw(st.sampled_from(kept))
    drifted = _renamed(edit.old_lines[j], data.draw, "_rev")
    text = _replace_line(edit.text, edit.start + j, drifted)
    old_d = _join([drifted if i == j else line for i, line in enumerate(edit.old_lines)])
    new_d = _join([drifted if origin == j else line for line, origin in edit.new_lines])
    assume(text.count(old_d) == 1 and not _whitespace_copy(edit.old, text))
    filled = [i for i, line in enumerate(edit.old_lines) if line.strip()]
    edge = j in (filled[0], filled[-1])
    expected = None if edge else text.replace(old_d, new_d, 1)
    failures: list[str] = []
    where = f"{edit.where()}, file line {edit.start + j + 1} drifted to {drifted!r}"
    _verdict(
        "drift_kept",
        "edge drift" if edge else "drift",
        where,
        lambda: _edit(text.encode(), edit.old, edit.new),
        expected,
        edit.old,
        edit.new,
        failures,
        before=text,
    )
    _check("drift_kept", failures)


@_budget(200)
@given(
    edit=edits(fragments=False, min_nonblank=3, kinds=("replace", "delete", "token")),
    data=st.data(),
)
def test_drift_on_a_line_the_edit_changes_is_refused(edit: Edit, data: st.DataObject) -> None:
    """The file changed a line the edit changes: a stale edit must never be applied."""
    j = data.draw(st.sampled_from(edit.changed))
    span = edit.token_span if j == edit.token_line else None
    drifted = _renamed(edit.old_lines[j], data.draw, "_rev", span)
    text = _replace_line(edit.text, edit.start + j, drifted)
    assume(not _whitespace_copy(edit.old, text))
    failures: list[str] = []
    where = f"{edit.where()}, file line {edit.start + j + 1} drifted to {drifted!r}"
    _verdict(
        "drift_changed",
        "drift",
        where,
        lambda: _edit(text.encode(), edit.old, edit.new),
        None,
        edit.old,
        edit.new,
        failures,
        before=text,
    )
    _check("drift_changed", failures)


# --------------------------------------------------------------------------- 4. typos


@_budget(200)
@given(edit=edits(fragments=False, min_nonblank=2), data=st.data())
def test_typo_on_a_line_the_edit_keeps_gives_exact_bytes_or_refusal(
    edit: Edit, data: st.DataObject
) -> None:
    """old_string and new_string both carry the same slip on a kept line: the file's line stays."""
    kept = [i for i in sorted(edit.kept) if typo_variants(edit.old_lines[i])]
    assume(kept)
    j = data.draw(st.sampled_from(kept))
    slip = data.draw(st.sampled_from(typo_variants(edit.old_lines[j])))
    old_t = _join([slip if i == j else line for i, line in enumerate(edit.old_lines)])
    new_t = _join([slip if origin == j else line for line, origin in edit.new_lines])
    assume(not _whitespace_copy(old_t, edit.text) and old_t not in edit.text)
    expected = _exact(edit)
    failures: list[str] = []
    _verdict(
        "typo_kept",
        "typo",
        f"{edit.where()}, slip on line {edit.start + j + 1}",
        lambda: _edit(edit.text.encode(), old_t, new_t),
        expected,
        old_t,
        new_t,
        failures,
    )
    _check("typo_kept", failures)


@_budget(200)
@given(
    edit=edits(fragments=False, kinds=("replace", "delete", "join", "reindent", "token")),
    data=st.data(),
)
def test_typo_on_a_line_the_edit_changes_gives_exact_bytes_or_refusal(
    edit: Edit, data: st.DataObject
) -> None:
    """old_string carries a slip on a line the edit changes; new_string is the intended line."""
    changed = [i for i in edit.changed if typo_variants(edit.old_lines[i])]
    assume(changed)
    j = data.draw(st.sampled_from(changed))
    slip = data.draw(st.sampled_from(typo_variants(edit.old_lines[j])))
    old_t = _join([slip if i == j else line for i, line in enumerate(edit.old_lines)])
    # (A slip can make old_string other text of the file: "on:" slipped to "on" ends
    # "setup-python". Then the request quotes that text.)
    assume(not _whitespace_copy(old_t, edit.text) and old_t != edit.new)
    assume(old_t not in edit.text)
    expected = _exact(edit)
    failures: list[str] = []
    _verdict(
        "typo_changed",
        "typo",
        f"{edit.where()}, slip on line {edit.start + j + 1}",
        lambda: _edit(edit.text.encode(), old_t, edit.new),
        expected,
        old_t,
        edit.new,
        failures,
    )
    _check("typo_changed", failures)


# --------------------------------------------------------------------------- 5. deleted target


def _normal(line: str) -> str:
    return " ".join(line.split())


def _has_near_copy(block: list[str], text: str) -> bool:
    """Some window of ``text`` is ``block`` up to whitespace, slips and one other line."""
    want = [_normal(line) for line in block if line.strip()]
    have = [_normal(line) for line in text.split("\n") if line.strip()]
    for start in range(len(have) - len(want) + 1):
        differing = 0
        for a, b in zip(want, have[start : start + len(want)], strict=True):
            differing += _differs(a, b)
            if differing > 1:
                break
        else:
            return True
    return False


def _differs(a: str, b: str) -> bool:
    """More than a slip apart (the cheap upper bounds first)."""
    if a == b:
        return False
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return m.real_quick_ratio() < 0.9 or m.quick_ratio() < 0.9 or m.ratio() < 0.9


@_budget(200)
@given(edit=edits(fragments=False, min_nonblank=3))
def test_deleted_target_is_never_applied(edit: Edit) -> None:
    """The block is gone from the file and nothing like it remains: nothing may be written."""
    lines = edit.text.split("\n")
    text = "\n".join(lines[: edit.start] + lines[edit.start + len(edit.old_lines) :])
    assume(not _has_near_copy(list(edit.old_lines), text))
    failures: list[str] = []
    _verdict(
        "deleted_target",
        "deleted",
        f"{edit.where()}, block removed from the file",
        lambda: _edit(text.encode(), edit.old, edit.new),
        None,
        edit.old,
        edit.new,
        failures,
        before=text,
    )
    _check("deleted_target", failures)


# --------------------------------------------------------------------------- 6. retry


@_budget(100)
@given(edit=edits())
def test_retry_of_an_applied_edit_is_no_change(edit: Edit) -> None:
    """Re-sending an edit that already landed writes nothing: no_change, or a refusal
    where old_string still matches tolerantly somewhere else (it would go there)."""
    applied = _exact(edit)
    assume(edit.new.strip() and edit.old not in applied and applied.count(edit.new) == 1)
    out = _edit(applied.encode(), edit.old, edit.new)
    ok = out.data is None and out.result.status in ("no_change", "no_match", "ambiguous")
    written = "nothing written" if out.data is None else _diff(applied, out.data.decode())
    detail = (
        f"{edit.where()}: retry gave {out.result.status} via {out.result.match_type} "
        f"({out.result.error})\nold={edit.old!r}\nnew={edit.new!r}\n{written}"
    )
    verdict = "wrong" if not ok else "right" if out.result.status == "no_change" else "refused"
    _record("retry", "retry", verdict, None if ok else detail)
    if not ok and not _COLLECT:
        raise AssertionError(detail)


# --------------------------------------------------------------------------- 7. evidence, endings


_ENCODINGS = (
    ("crlf", "utf-8", "\r\n"),
    ("utf-8-bom", "utf-8-sig", "\n"),
    ("utf-16", "utf-16", "\n"),
    ("utf-16-crlf", "utf-16", "\r\n"),
    ("utf-8-bom-crlf", "utf-8-sig", "\r\n"),
)


def _encode(text: str, encoding: str, newline: str) -> bytes:
    return text.replace("\n", newline).encode(encoding)


def _replaced_span_problem(before: str, after: str, matched: str, start_line: int) -> str | None:
    """Why ``matched`` is not the span of ``before`` that ``after`` replaced (None: it is)."""
    offset = 0
    for _ in range(start_line - 1):
        offset = before.index("\n", offset) + 1
    line_end = before.find("\n", offset)
    at = before.find(matched, offset)
    if at == -1 or (line_end != -1 and at > line_end):
        return f"matched_text {matched!r} does not start on line {start_line}"
    head, tail = before[:at], before[at + len(matched) :]
    if not (after.startswith(head) and after.endswith(tail) and len(after) >= len(head + tail)):
        return f"the file changed outside matched_text {matched!r}"
    return None


@_budget(150)
@given(
    edit=edits(),
    variant=st.sampled_from(_ENCODINGS),
    perturbation=st.sampled_from((None, *FORMAT_PERTURBATIONS)),
)
def test_matched_text_is_the_replaced_span_and_endings_and_encoding_survive(
    edit: Edit,
    variant: tuple[str, str, str],
    perturbation: Callable[[str], str | None] | None,
) -> None:
    label, encoding, newline = variant
    expected = _exact(edit)
    data = _encode(edit.text, encoding, newline)
    old, new = edit.old, edit.new
    name = "exact"
    if perturbation is not None:
        pairs = {f.__name__: (o, w) for f, o, w in _perturbed_pairs(old, new)}
        assume(perturbation.__name__ in pairs)
        name = perturbation.__name__
        old, new = pairs[name]
        assume(old not in edit.text)
    out = _edit(data, old, new)
    r = out.result
    where = f"{edit.where()} as {label}, {name}\nold={old!r}\nnew={new!r}"
    if perturbation is None:
        assert r.status == "applied", f"{where}: {r.status} {r.error}"
        assert out.data == _encode(expected, encoding, newline), where
        assert r.matched_text == edit.old.replace("\n", newline), where
    if out.data is None:
        _record("evidence", f"{label}/{name}", "refused")
        return
    before = codecs.decode(data, encoding)
    after = codecs.decode(out.data, encoding)
    problems = []
    if out.data.startswith(codecs.BOM_UTF8) != data.startswith(codecs.BOM_UTF8):
        problems.append("the UTF-8 BOM was not kept")
    if newline == "\r\n" and re.search(r"(?<!\r)\n", after):
        problems.append("a bare LF was written into a CRLF file")
    if newline == "\n" and "\r" in after:
        problems.append("a CR was written into an LF file")
    assert r.matched_text is not None and r.matches, where
    span = _replaced_span_problem(before, after, r.matched_text, r.matches[0].start_line)
    if span is not None:
        problems.append(span)
    if after.replace(newline, "\n") != expected:
        problems.append(
            "not the exact edit's text\n" + _diff(expected, after.replace(newline, "\n"))
        )
    detail = f"{where}: {r.status} via {r.match_type}\n" + "\n".join(problems)
    _record("evidence", f"{label}/{name}", "wrong" if problems else "right", detail)
    if problems and not _COLLECT:
        raise AssertionError(detail)


@pytest.mark.skipif(bool(os.environ.get(_CORPUS_ENV)), reason="another corpus")
@pytest.mark.parametrize("variant", _ENCODINGS, ids=[v[0] for v in _ENCODINGS])
def test_exact_edit_keeps_encoding_and_newlines_of_a_real_file(
    variant: tuple[str, str, str],
) -> None:
    _, encoding, newline = variant
    text = next(s.text for s in _corpus() if s.name.endswith("[cjk]"))
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if "，" in line)
    old = _join(lines[at : at + 2])  # the comment and the definition it describes
    assert text.count(old) == 1
    new = old.replace("，", "、", 1)
    out = _edit(_encode(text, encoding, newline), old, new)
    assert out.result.status == "applied", out.result.error
    assert out.data == _encode(text.replace(old, new, 1), encoding, newline)
    assert out.result.matched_text == old.replace("\n", newline)


# --------------------------------------------------------------------------- 8. depth


def _flat_misplaces(old_side: list[str], new_side: list[tuple[str, bool]]) -> bool:
    """Flattened, a line the edit adds reads as a line at the quote's depth when all
    the quoted lines sit at one, and otherwise as one at the depth of the kept lines
    right before and after it when they agree: True when the edit put it at another
    (the flat request says something else, which no engine can tell).
    ``new_side``: (line, kept)."""
    depths = {_indent(line) for line in old_side if line.strip()}
    for k, (line, kept) in enumerate(new_side):
        if kept or not line.strip():
            continue
        if len(depths) == 1:
            if _indent(line) not in depths:
                return True
            continue
        before = next((e for e in reversed(new_side[:k]) if e[0].strip()), None)
        after = next((e for e in new_side[k + 1 :] if e[0].strip()), None)
        if before and after and before[1] and after[1]:
            depth = _indent(before[0])
            if _indent(after[0]) == depth and _indent(line) != depth:
                return True
    return False


_FLATTENED_KINDS = ("replace", "insert", "delete", "join", "blank", "token")


@_budget(200)
@given(edit=edits(fragments=False, min_nonblank=2, kinds=_FLATTENED_KINDS))
def test_flattened_edit_gives_exact_bytes_or_refusal(edit: Edit) -> None:
    """old_string and new_string quoted without their indentation, the block's lines
    at one depth or several: the exact request's bytes or a refusal."""
    expected = _exact(edit)
    old_f = flatten(edit.old)
    assume(old_f is not None)
    assert old_f is not None
    new_f = flatten(edit.new) or edit.new
    assume(old_f != new_f and not _really_there(old_f, edit.text))
    new_side = [(text, origin is not None) for text, origin in edit.new_lines]
    if _flat_misplaces(list(edit.old_lines), new_side):
        _record("flat_edit", "flatten", "skipped")
        return
    failures: list[str] = []
    _verdict(
        "flat_edit",
        "flatten",
        edit.where(),
        lambda: _edit(edit.text.encode(), old_f, new_f),
        expected,
        old_f,
        new_f,
        failures,
    )
    _check("flat_edit", failures)


@_budget(150)
@given(edit=edits(fragments=False, min_nonblank=2, kinds=_FLATTENED_KINDS))
def test_flattened_patch_gives_exact_bytes_or_refusal(edit: Edit) -> None:
    """A Codex hunk whose every line lost its indentation: the exact bytes or a refusal."""
    expected = _exact(edit)
    lines = _hunk_lines(edit, expected)
    texts = [line[1:] for line in lines]
    flat = [text.lstrip(" \t") for text in texts]
    assume(flat != texts)
    old_side = [line[1:] for line in lines if line[0] != "+"]
    new_side = [(line[1:], line[0] == " ") for line in lines if line[0] != "-"]
    if _flat_misplaces(old_side, new_side):
        _record("flat_patch", "flatten", "skipped")
        return
    patch = _patch([line[0] + text for line, text in zip(lines, flat, strict=True)])
    out = _run_patch(patch, edit.text.encode())
    if not out.changes and out.result.status != "applied":
        _record("flat_patch", "flatten", "refused")
        return
    got = out.changes[0].after if len(out.changes) == 1 else None
    if got == expected.encode() and out.result.status == "applied":
        _record("flat_patch", "flatten", "right")
        return
    detail = (
        f"[flatten] {edit.where()}: {out.result.status} via {out.result.match_type}; "
        f"expected bytes or a refusal\npatch={patch!r}\n{_diff(expected, (got or b'').decode())}"
    )
    _record("flat_patch", "flatten", "wrong", detail)
    _check("flat_patch", [detail])


@st.composite
def one_depth_edits(draw: st.DrawFn) -> Edit:
    """An edit of a block whose lines all sit at one depth: the pairs show no step of
    the block's own. A line it inserts may go deeper: by the file's step — what tells
    a re-stepped quote from a shifted one at a depth other than 0 — or, for a block at
    column 0, which no re-stepping moves, by any step (an aligned continuation)."""
    source = draw(st.sampled_from(_corpus()))
    lines = source.text.split("\n")[:-1]
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    start = nonblank[draw(st.integers(0, len(nonblank) - 1))]
    depth = _indent(lines[start])
    end = start + 1
    while end < len(lines) and end - start < 8:
        if lines[end].strip() and _indent(lines[end]) != depth:
            break
        end += 1
    end = start + draw(st.integers(1, end - start))
    while not lines[end - 1].strip():
        end -= 1
    block = lines[start:end]
    assume(source.text.count(_join(block)) == 1)
    kind = draw(st.sampled_from(("insert", "insert", "replace", "token", "delete", "blank")))
    if kind != "insert":
        edit = _line_edit(draw, source, start, block, kind)
        assume(edit is not None and edit.old != edit.new)
        assert edit is not None
        return edit
    deeper = (source.unit,) if depth else ("  ", "    ", source.unit)
    indent = _spelled(source, depth + draw(st.sampled_from(("", *deeper))))
    line = indent + draw(st.sampled_from(_STATEMENTS))
    new: list[tuple[str, int | None]] = [(text, i) for i, text in enumerate(block)]
    new.insert(draw(st.integers(0, len(block))), (line, None))
    return Edit(
        source, start, tuple(block), tuple(new), kind, _join(block), _join([t for t, _ in new])
    )


_DEPTH_PERTURBATIONS = (reindent(4), reindent(-4), reindent(2), indent_step(2.0), indent_step(0.5))


@_budget(200)
@given(edit=one_depth_edits())
def test_one_depth_block_shifted_or_restepped_gives_exact_bytes_or_refusal(edit: Edit) -> None:
    """A block at one depth, re-indented or re-stepped: the lines the edit adds keep the
    exact request's relative indentation, or the request is refused."""
    expected = _exact(edit)
    failures: list[str] = []
    for f in _DEPTH_PERTURBATIONS:
        old_p = f(edit.old)
        if old_p is None or f(edit.old + "\n" + edit.new) is None:
            continue
        new_p = f(edit.new) or edit.new
        if _really_there(old_p, edit.text):
            _record("one_depth", f.__name__, "skipped")
            continue
        _verdict(
            "one_depth",
            f.__name__,
            edit.where(),
            functools.partial(_edit, edit.text.encode(), old_p, new_p),
            expected,
            old_p,
            new_p,
            failures,
        )
    _check("one_depth", failures)


@_budget(100)
@given(edit=edits(fragments=False, min_nonblank=2))
def test_patch_fitting_two_places_only_with_whitespace_ignored_is_refused(edit: Edit) -> None:
    """A copy of the block deeper in the file, and the hunk (the block's lines, no
    context) re-indented to match neither exactly: several places, so never the first."""
    copy = [f"    {line}" if line.strip() else line for line in edit.old_lines]
    text = edit.text + "\n" + _join(copy)
    new_lines = [line for line, _ in edit.new_lines]
    body: list[str] = []
    matcher = difflib.SequenceMatcher(None, list(edit.old_lines), new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            body += [" " + line for line in edit.old_lines[i1:i2]]
        else:
            body += ["-" + line for line in edit.old_lines[i1:i2]]
            body += ["+" + line for line in new_lines[j1:j2]]
    shifted = reindent(2)("\n".join(line[1:] for line in body))
    assume(shifted is not None)
    assert shifted is not None
    body = [line[0] + text for line, text in zip(body, shifted.split("\n"), strict=True)]
    old_side = [line[1:] for line in body if line[0] != "+"]
    assume(not _occurs_rstripped(old_side, text))  # no exact or rstrip place first
    out = _run_patch(_patch(body), text.encode())
    where = f"{edit.where()}, copied 4 columns deeper at the end"
    if not out.changes and out.result.status != "applied":
        _record("two_places", "reindent+2", "refused")
        return
    detail = f"[reindent+2] {where}: {out.result.status} via {out.result.match_type}; must refuse"
    _record("two_places", "reindent+2", "wrong", detail)
    _check("two_places", [detail])


def _occurs_rstripped(lines: list[str], text: str) -> bool:
    """``lines`` are consecutive lines of ``text`` up to trailing whitespace."""
    want = [line.rstrip() for line in lines]
    have = [line.rstrip() for line in text.split("\n")]
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))
