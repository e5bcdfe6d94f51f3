"""The apply_patch benchmark corpus: multi-file Codex patches cut from the stdlib.

Deterministic for a given Python installation (fixed seed, fixed file list).
Each :class:`PatchCase` carries the input files, the patch text as a model
writes it (``*** Begin Patch``, ``@@`` hunks with three lines of context, ...),
the expected status and the expected tree. Expectations are computed by line
index on the original bytes — the intended lines replaced at the intended
position, added lines given the endings the format prescribes — never from a
tool's output.

    python bench/patch_corpus.py               # categories and case counts
    python bench/patch_corpus.py --show NAME   # print one case's patch
"""

from __future__ import annotations

import argparse
import keyword
import random
import re
import sysconfig
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

SEED = 20250611
PER_CATEGORY = 12
CONTEXT = 3  # lines of context a model writes on each side of a change
ANCHOR_RATE = 0.3  # share of ordinary hunks given an '@@ def ...' header

_STDLIB_NAMES = """
    argparse.py ast.py calendar.py configparser.py csv.py dataclasses.py difflib.py
    email/feedparser.py email/message.py email/utils.py enum.py fractions.py ftplib.py
    functools.py gettext.py gzip.py heapq.py http/client.py http/cookies.py imaplib.py
    inspect.py ipaddress.py json/decoder.py json/encoder.py logging/__init__.py
    logging/handlers.py mailbox.py netrc.py optparse.py pathlib.py pprint.py queue.py
    shlex.py shutil.py smtplib.py statistics.py string.py tarfile.py tempfile.py
    textwrap.py threading.py tokenize.py urllib/parse.py uuid.py zipfile.py
"""
STDLIB_FILES = tuple(_STDLIB_NAMES.split())
NOTES = (
    "checked",
    "see issue 4021",
    "keep in sync with the docs",
    "TODO: revisit",
    "validated above",
    "cheap path first",
    "may be None here",
)
SUFFIXES = ("new", "checked", "v2", "local", "safe")
HALLUCINATED = ("cached", "legacy", "impl", "old")
KINDS = (("replace", 5), ("expand", 2), ("insert", 2), ("delete", 2))
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{3,}\b")
_NUMBER = re.compile(r"\b\d+\b")
_SKIP_NAMES = frozenset(keyword.kwlist) | {"self", "None", "True", "False"}
_DEF = re.compile(r"^(\s*)def (\w+)\(.*\)(\s*->.*)?:\s*$")
_HEADER = re.compile(r"^\s*(?:async def|def|class) \w")
_BAD_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_FULL_WIDTH = {", ": "，", ",": "，", ": ": "：", ":": "：", "(": "（", ")": "）"}
_FULL_WIDTH_RE = re.compile(r", |,|: |:|\(|\)")


# --------------------------------------------------------------------------- text model


@dataclass
class Doc:
    """A file as lines and their endings (the last ending may be '')."""

    lines: list[str]
    endings: list[str]

    @classmethod
    def of(cls, lines: Sequence[str], ending: str = "\n") -> Doc:
        return cls(list(lines), [ending] * len(lines))

    def copy(self) -> Doc:
        return Doc(list(self.lines), list(self.endings))

    def data(self) -> bytes:
        return "".join(t + e for t, e in zip(self.lines, self.endings, strict=True)).encode()

    @property
    def mixed(self) -> bool:
        return len({e for e in self.endings if e}) > 1

    def style(self) -> str:
        counts = Counter(e for e in self.endings if e)
        return counts.most_common(1)[0][0] if counts else "\n"


def loose(line: str) -> str:
    """A key looser than any tolerant pass: letters and digits only, NFKC, casefolded."""
    return "".join(c for c in unicodedata.normalize("NFKC", line) if c.isalnum()).casefold()


class KeyIndex:
    """Where windows of lines occur under :func:`loose`."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.keys = [loose(line) for line in lines]
        self.present = set(self.keys)
        self._starts: dict[str, list[int]] = {}
        for i, key in enumerate(self.keys):
            self._starts.setdefault(key, []).append(i)

    def where(self, start: int, length: int) -> list[int]:
        window = self.keys[start : start + length]
        return [i for i in self._starts.get(window[0], []) if self.keys[i : i + length] == window]


def clean(line: str) -> bool:
    """A line a patch can carry unambiguously (no invisible or control characters)."""
    if line and not line.strip():
        return False
    if line.strip().startswith(("***", "@@")):
        return False
    return all(
        c == "\t" or (c.isprintable() and unicodedata.category(c) not in ("Mn", "Me", "Cf"))
        for c in line
    )


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True, eq=False)
class Source:
    path: str  # as the patch names it, e.g. "Lib/argparse.py"
    lines: tuple[str, ...]
    index: KeyIndex


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def load_sources(min_lines: int = 150, max_lines: int = 3500) -> list[Source]:
    out = []
    for rel in STDLIB_FILES:
        path = stdlib_dir() / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if "\r" in text or _BAD_CONTROL.search(text) or not text.endswith("\n"):
            continue
        lines = text[:-1].split("\n")
        if min_lines <= len(lines) <= max_lines and lines[-1].strip():
            out.append(Source("Lib/" + rel, tuple(lines), KeyIndex(lines)))
    return out


# --------------------------------------------------------------------------- hunks


@dataclass(frozen=True)
class HunkSpec:
    """One hunk by index: context, lines removed at ``at``, lines added there, context."""

    start: int  # first line of the window (its first context line)
    before: int
    removed: int
    added: tuple[str, ...]
    after: int
    anchor: str | None = None
    eof: bool = False
    match_type: str = "exact"

    @property
    def at(self) -> int:
        return self.start + self.before

    @property
    def end(self) -> int:
        return self.at + self.removed + self.after

    @property
    def old_len(self) -> int:
        return self.end - self.start

    def context(self) -> list[int]:
        return [*range(self.start, self.at), *range(self.at + self.removed, self.end)]


def _rename(rng: random.Random, line: str, suffixes: Sequence[str] = SUFFIXES) -> str | None:
    names = [m for m in _IDENT.finditer(line) if m.group() not in _SKIP_NAMES]
    if not names:
        return None
    m = rng.choice(names)
    return f"{line[: m.end()]}_{rng.choice(suffixes)}{line[m.end() :]}"


def _bump(rng: random.Random, line: str) -> str | None:
    m = _NUMBER.search(line)
    if m is None:
        return None
    return f"{line[: m.start()]}{int(m.group()) + rng.randint(1, 9)}{line[m.end() :]}"


def _comment(rng: random.Random, line: str) -> str | None:
    if "#" in line or line.rstrip().endswith("\\"):
        return None
    return f"{line}  # {rng.choice(NOTES)}"


def mutate(rng: random.Random, line: str) -> str:
    """The line as a model would change it: a renamed name, a new number, a comment."""
    options: list[Callable[[random.Random, str], str | None]] = [_rename, _bump, _comment]
    rng.shuffle(options)
    for option in options:
        new = option(rng, line)
        if new is not None and new != line:
            return new
    return f"{line}  # changed"


def note_line(rng: random.Random, indent: str) -> str:
    return f"{indent}# {rng.choice(NOTES)}"


def make_hunk(rng: random.Random, lines: Sequence[str], start: int, kind: str) -> HunkSpec | None:
    at = start + CONTEXT
    if at + CONTEXT >= len(lines) or start < 0:
        return None
    if kind == "insert":
        follow = lines[at] if lines[at].strip() else lines[at - 1]
        return HunkSpec(start, CONTEXT, 0, (note_line(rng, indent_of(follow)),), CONTEXT)
    line = lines[at]
    if not line.strip():
        return None
    if kind == "delete":
        return HunkSpec(start, CONTEXT, 1, (), CONTEXT)
    added: tuple[str, ...] = (mutate(rng, line),)
    if kind == "expand":
        added += (note_line(rng, indent_of(line)),)
    return HunkSpec(start, CONTEXT, 1, added, CONTEXT)


Accept = Callable[[HunkSpec], bool]


def unique_in(index: KeyIndex) -> Accept:
    return lambda spec: index.where(spec.start, spec.old_len) == [spec.start]


def clean_window(lines: Sequence[str]) -> Accept:
    return lambda spec: all(clean(lines[i]) for i in range(spec.start, spec.end))


def both(*tests: Accept) -> Accept:
    return lambda spec: all(test(spec) for test in tests)


def _overlaps(a: HunkSpec, b: HunkSpec, gap: int = 2) -> bool:
    return a.start < b.end + gap and b.start < a.end + gap


def pick_kind(rng: random.Random) -> str:
    return rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]


def plan_hunks(
    rng: random.Random,
    lines: Sequence[str],
    count: int,
    accept: Accept,
    lo: int = 0,
    hi: int | None = None,
) -> list[HunkSpec] | None:
    """``count`` non-overlapping hunks inside ``lines[lo:hi]``, in file order."""
    hi = len(lines) if hi is None else hi
    last_start = hi - 2 * CONTEXT - 1
    if last_start <= lo:
        return None
    chosen: list[HunkSpec] = []
    for _ in range(count * 80):
        if len(chosen) == count:
            break
        spec = make_hunk(rng, lines, rng.randrange(lo, last_start), pick_kind(rng))
        if spec is None or spec.end > hi or any(_overlaps(spec, c) for c in chosen):
            continue
        if clean_window(lines)(spec) and accept(spec):
            chosen.append(spec)
    return sorted(chosen, key=lambda s: s.start) if len(chosen) == count else None


def with_anchors(rng: random.Random, lines: Sequence[str], hunks: list[HunkSpec]) -> None:
    """Give some hunks the '@@ def ...' header a model writes, when it is unambiguous."""
    previous_end = 0
    for n, spec in enumerate(hunks):
        header = _nearest_header(lines, spec.start, previous_end)
        if header is not None and rng.random() < ANCHOR_RATE:
            hunks[n] = replace(spec, anchor=header)
        previous_end = spec.end


def _nearest_header(lines: Sequence[str], start: int, floor: int) -> str | None:
    for i in range(start - 1, floor - 1, -1):
        if _HEADER.match(lines[i]):
            text = lines[i].strip()
            ok = clean(lines[i]) and sum(1 for x in lines if x.strip() == text) == 1
            return text if ok else None
    return None


def eof_append(rng: random.Random, lines: Sequence[str]) -> HunkSpec | None:
    """A hunk adding a small function after the file's last three lines."""
    start = len(lines) - CONTEXT
    if not all(clean(x) for x in lines[start:]) or not lines[-1].strip():
        return None
    name = f"_{rng.choice(('bench', 'probe', 'debug'))}_{rng.choice(SUFFIXES)}"
    added = ("", "", f"def {name}():", f"    return {rng.randint(0, 99)}")
    return HunkSpec(start, CONTEXT, 0, added, 0, eof=True)


def eof_replace(rng: random.Random, lines: Sequence[str]) -> HunkSpec | None:
    """A hunk changing the file's last line, pinned with ``*** End of File``."""
    start = len(lines) - CONTEXT - 1
    if not all(clean(x) for x in lines[start:]) or not lines[-1].strip():
        return None
    return HunkSpec(start, CONTEXT, 1, (mutate(rng, lines[-1]),), 0, eof=True)


# --------------------------------------------------------------------------- expectations


def expected_doc(doc: Doc, hunks: Sequence[HunkSpec]) -> Doc:
    """Apply ``hunks`` by index. Added lines take the file's newline style; in a mixed
    file a line that replaces another keeps that line's ending, and the others take
    the ending of the line that follows them (at the end, of the one before them)."""
    out = Doc([], [])
    pos = 0
    for spec in sorted(hunks, key=lambda h: h.at):
        out.lines += doc.lines[pos : spec.at]
        out.endings += doc.endings[pos : spec.at]
        follow = spec.at + spec.removed
        for k, text in enumerate(spec.added):
            replaced = doc.endings[spec.at + k] if k < spec.removed else None
            out.endings.append(
                _replacement_ending(doc, replaced) or _added_ending(doc, out, follow)
            )
            out.lines.append(text)
        pos = follow
    out.lines += doc.lines[pos:]
    out.endings += doc.endings[pos:]
    if out.endings and not out.endings[-1]:
        out.endings[-1] = doc.style()
    return out


def _replacement_ending(doc: Doc, replaced: str | None) -> str | None:
    """A line that replaces another keeps its ending in a mixed file, unless that ending
    is the file's only one of its kind (a stray, as in Codex's scenario 024)."""
    if not doc.mixed or not replaced or doc.endings.count(replaced) < 2:
        return None
    return replaced


def _added_ending(doc: Doc, out: Doc, follow: int) -> str:
    if not doc.mixed:
        return doc.style()
    if follow < len(doc.lines) and doc.endings[follow]:
        return doc.endings[follow]
    return out.endings[-1] if out.endings else doc.style()


# --------------------------------------------------------------------------- cases


@dataclass
class Update:
    """An ``*** Update File`` section: the file on disk, what the model writes, its hunks."""

    path: str
    doc: Doc
    view: list[str]  # each line as the model writes it in context and '-' lines
    hunks: list[HunkSpec]
    move_to: str | None = None
    # How the model writes the lines it adds: the same way as the lines it quotes.
    write: Callable[[str], str] = str

    def render(self, blank: str) -> str:
        out = [f"*** Update File: {self.path}"]
        if self.move_to is not None:
            out.append(f"*** Move to: {self.move_to}")
        for spec in self.hunks:
            out += self._hunk(spec, blank)
        return "".join(line + "\n" for line in out)

    def _hunk(self, spec: HunkSpec, blank: str) -> list[str]:
        def ctx(i: int) -> str:
            return " " + self.view[i] if self.view[i] else blank

        out = ["@@" if spec.anchor is None else f"@@ {spec.anchor}"]
        out += [ctx(i) for i in range(spec.start, spec.at)]
        out += ["-" + self.view[i] for i in range(spec.at, spec.at + spec.removed)]
        out += ["+" + self.write(text) for text in spec.added]
        out += [ctx(i) for i in range(spec.at + spec.removed, spec.end)]
        if spec.eof:
            out.append("*** End of File")
        return out

    def expected(self) -> Doc:
        return expected_doc(self.doc, self.hunks)


@dataclass(frozen=True)
class PatchCase:
    name: str
    category: str
    files: dict[str, bytes]
    patch: str
    status: str  # the expected result status
    expected: dict[str, bytes]  # the expected tree; a path absent from it is deleted
    match_types: tuple[tuple[str, int, str], ...]  # (path, hunk, match_type), applied hunks


@dataclass
class CaseBuilder:
    category: str
    blank: str  # how this model writes an empty context line: " " or ""
    files: dict[str, bytes] = field(default_factory=dict)
    expected: dict[str, bytes] = field(default_factory=dict)
    sections: list[str] = field(default_factory=list)
    match_types: list[tuple[str, int, str]] = field(default_factory=list)

    def file(self, path: str, data: bytes) -> None:
        self.files[path] = data
        self.expected[path] = data

    def update(self, op: Update, applies: bool = True) -> None:
        self.sections.append(op.render(self.blank))
        if not applies:
            return
        after = op.expected().data()
        if op.move_to is None:
            self.expected[op.path] = after
        else:
            del self.expected[op.path]
            self.expected[op.move_to] = after
        self.match_types += [(op.path, n, h.match_type) for n, h in enumerate(op.hunks, 1)]

    def add(self, path: str, lines: Sequence[str]) -> None:
        self.sections.append(f"*** Add File: {path}\n" + "".join(f"+{x}\n" for x in lines))
        self.expected[path] = "".join(x + "\n" for x in lines).encode()

    def delete(self, path: str) -> None:
        self.sections.append(f"*** Delete File: {path}\n")
        del self.expected[path]

    def finish(self, name: str, status: str) -> PatchCase:
        patch = "*** Begin Patch\n" + "".join(self.sections) + "*** End Patch\n"
        return PatchCase(
            name,
            self.category,
            dict(self.files),
            patch,
            status,
            dict(self.expected),
            tuple(self.match_types),
        )


def plan_update(
    rng: random.Random,
    src: Source,
    count: int,
    accept: Accept | None = None,
    match_type: str = "exact",
    anchors: bool = True,
) -> Update | None:
    """An Update of ``src`` with ``count`` hunks, unique in the file; None when none fit."""
    test = unique_in(src.index) if accept is None else both(unique_in(src.index), accept)
    hunks = plan_hunks(rng, src.lines, count, test)
    if hunks is None:
        return None
    if anchors:
        with_anchors(rng, src.lines, hunks)
    hunks = [replace(h, match_type=match_type) for h in hunks]
    return Update(src.path, Doc.of(src.lines), list(src.lines), hunks)


def hallucinate(rng: random.Random, op: Update, spec: HunkSpec, index: KeyIndex) -> bool:
    """Change one context line of ``spec`` (as the model writes it) to a line the file
    does not have, so that the hunk cannot be placed anywhere."""
    candidates = [i for i in spec.context() if op.view[i].strip()]
    rng.shuffle(candidates)
    for i in candidates:
        new = _rename(rng, op.view[i], HALLUCINATED)
        if new is not None and loose(new) not in index.present:
            op.view[i] = new
            return True
    return False


def move_target(rng: random.Random, path: str) -> str:
    head, _, name = path.rpartition("/")
    stem = name.removesuffix(".py")
    return rng.choice((f"{head}/{stem}_old.py", f"Lib/compat/{name}", f"Lib/legacy/{stem}.py"))


def function_blocks(lines: Sequence[str]) -> list[tuple[int, int, int]]:
    """(def line, end of body, end of block incl. trailing blanks) of undecorated
    functions with a one-line signature and a body of at least 10 lines."""
    out = []
    for i, line in enumerate(lines):
        m = _DEF.match(line)
        if m is None or not clean(line) or _decorated(lines, i):
            continue
        depth = len(m.group(1))
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or len(indent_of(lines[j])) > depth):
            j += 1
        body_end = j
        while body_end > i + 1 and not lines[body_end - 1].strip():
            body_end -= 1
        if body_end - i > 10 and j > body_end:
            out.append((i, body_end, j))
    return out


def _decorated(lines: Sequence[str], i: int) -> bool:
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    return j >= 0 and lines[j].lstrip().startswith("@")


def snippet(rng: random.Random, src: Source) -> list[str] | None:
    """A whole function of ``src`` (its lines, all clean), for an Add File."""
    blocks = [b for b in function_blocks(src.lines) if b[1] - b[0] <= 30]
    if not blocks:
        return None
    start, body_end, _ = rng.choice(blocks)
    lines = list(src.lines[start:body_end])
    depth = len(indent_of(lines[0]))
    lines = [x[depth:] if x.strip() else x for x in lines]
    return lines if all(clean(x) for x in lines) else None


# --------------------------------------------------------------------------- categories

Builder = Callable[[random.Random, list[Source], CaseBuilder], str | None]  # -> status


def build_exact(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    for src in rng.sample(pool, rng.randint(2, 3)):
        op = plan_update(rng, src, rng.randint(1, 3))
        if op is None:
            return None
        b.file(src.path, op.doc.data())
        b.update(op)
    return "applied"


def _trail(rng: random.Random, doc: Doc, i: int) -> None:
    doc.lines[i] += rng.choice((" ", "  ", "\t", "    "))


def build_rstrip(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    for src in rng.sample(pool, rng.randint(1, 2)):
        op = plan_update(rng, src, rng.randint(1, 3), match_type="rstrip")
        if op is None:
            return None
        # Only lines the patch keeps: whether a replaced line's trailing whitespace
        # belongs to its replacement is a guess either way, so no case asks it.
        replaced = {i for spec in op.hunks for i in range(spec.at, spec.at + spec.removed)}
        for spec in op.hunks:
            kept = spec.context()
            for i in rng.sample(kept, min(len(kept), rng.randint(1, 3))):
                _trail(rng, op.doc, i)
        others = [i for i in range(len(src.lines)) if i not in replaced]
        for i in rng.sample(others, len(src.lines) // 8):
            _trail(rng, op.doc, i)
        b.file(src.path, op.doc.data())
        b.update(op)
    return "applied"


def reindent(mode: str, line: str) -> str:
    if not line.strip():
        return line
    if mode == "flatten":
        return line.lstrip()
    if mode == "dedent":
        return line[min(4, len(line) - len(line.lstrip(" "))) :]
    if mode == "shift":
        return "    " + line
    return re.sub(r"^(?: {4})+", lambda m: "\t" * (len(m.group()) // 4), line)


def build_strip(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    for src in rng.sample(pool, rng.randint(1, 2)):
        mode = rng.choice(("flatten", "dedent", "shift", "tabs"))
        view = [reindent(mode, x) for x in src.lines]

        def drifted(
            spec: HunkSpec, view: list[str] = view, src: Source = src, mode: str = mode
        ) -> bool:
            lines = [src.lines[i] for i in range(spec.start, spec.end)] + list(spec.added)
            if mode == "dedent" and any(x.strip() and not x.startswith("    ") for x in lines):
                return False  # a line at column 0 too: the model's shift is not one shift
            depths = {len(x) - len(x.lstrip()) for x in lines[: spec.old_len] if x.strip()}
            if mode == "flatten" and len(depths) < 2:
                return False  # one depth flattened reads as a shift: which one is a guess
            return any(view[i] != src.lines[i] for i in range(spec.start, spec.end))

        op = plan_update(rng, src, rng.randint(1, 3), drifted, match_type="strip")
        if op is None:
            return None
        op.view = view
        if mode != "flatten":  # a model that drops the indentation it quotes still
            op.write = partial(reindent, mode)  # indents what it adds
        b.file(src.path, op.doc.data())
        b.update(op)
    return "applied"


def to_typographic(line: str) -> str:
    """A comment line as a CJK editor or a word processor would have it."""
    if line.count('"') >= 2 and line.count('"') % 2 == 0:
        parts = line.split('"')
        return (
            "".join(p + ("“" if n % 2 == 0 else "”") for n, p in enumerate(parts[:-1]))
            + (parts[-1])
        )
    return _FULL_WIDTH_RE.sub(lambda m: _FULL_WIDTH[m.group()], line)


def convertible(line: str) -> bool:
    return line.lstrip().startswith("#") and to_typographic(line) != line


def build_punctuation(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    for src in rng.sample(pool, rng.randint(1, 2)):

        def has_comment(spec: HunkSpec, src: Source = src) -> bool:
            return any(convertible(src.lines[i]) for i in spec.context())

        op = plan_update(rng, src, rng.randint(1, 2), has_comment, match_type="punctuation")
        if op is None:
            return None
        in_hunks = {i for spec in op.hunks for i in range(spec.start, spec.end)}
        for spec in op.hunks:
            for i in spec.context():
                if convertible(op.doc.lines[i]):
                    op.doc.lines[i] = to_typographic(op.doc.lines[i])
        for i, line in enumerate(src.lines):
            if i not in in_hunks and convertible(line) and rng.random() < 0.4:
                op.doc.lines[i] = to_typographic(line)
        b.file(src.path, op.doc.data())
        b.update(op)
    return "applied"


def _duplicate_function(
    rng: random.Random, src: Source
) -> tuple[list[str], int, int, int, str] | None:
    """The file with one function copied right after itself under a new name:
    (lines, first body line of the copy, end of its body, offset of the copy, anchor)."""
    blocks = function_blocks(src.lines)
    if not blocks:
        return None
    start, body_end, block_end = rng.choice(blocks)
    name = _DEF.match(src.lines[start]).group(2)  # type: ignore[union-attr]
    new_name = f"{name}_{rng.choice(('v2', 'legacy', 'compat', 'fast'))}"
    if new_name in "\n".join(src.lines):
        return None
    renamed = src.lines[start].replace(f"def {name}(", f"def {new_name}(", 1)
    copy = [renamed, *src.lines[start + 1 : block_end]]
    lines = [*src.lines[:block_end], *copy, *src.lines[block_end:]]
    offset = block_end - start
    return lines, block_end + 1, body_end + offset, offset, renamed.strip()


def build_anchor(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    src = rng.choice(pool)
    made = _duplicate_function(rng, src)
    if made is None:
        return None
    lines, lo, hi, offset, anchor = made
    index = KeyIndex(lines)

    def twice(spec: HunkSpec) -> bool:
        return index.where(spec.start, spec.old_len) == [spec.start - offset, spec.start]

    hunks = plan_hunks(rng, lines, 1, twice, lo, hi)
    if hunks is None:
        return None
    path = src.path
    b.file(path, Doc.of(lines).data())
    b.update(Update(path, Doc.of(lines), lines, [replace(hunks[0], anchor=anchor)]))
    if rng.random() < 0.5:
        other = plan_update(rng, rng.choice([s for s in pool if s is not src]), 1)
        if other is None:
            return None
        b.file(other.path, other.doc.data())
        b.update(other)
    return "applied"


def _plant_tail(rng: random.Random, lines: Sequence[str], k: int) -> tuple[list[str], int] | None:
    """``lines`` with a copy of its last ``k`` lines planted at a top-level blank line,
    and where the copy starts."""
    n = len(lines)
    spots = [
        i
        for i in range(n // 4, 3 * n // 4)
        if not lines[i] and lines[i + 1] and not lines[i + 1][0].isspace()
    ]
    if not spots:
        return None
    at = rng.choice(spots) + 1
    return [*lines[:at], *lines[n - k :], "", *lines[at:]], at


def build_eof(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    src = rng.choice(pool)
    planted = _plant_tail(rng, src.lines, CONTEXT + 1)
    if planted is None:
        return None
    lines, copy_at = planted
    tail = (eof_replace if rng.random() < 0.5 else eof_append)(rng, lines)
    if tail is None:
        return None
    hunks = [tail]
    if rng.random() < 0.5:
        # before the planted copy, so that only '*** End of File' keeps the tail hunk
        # from matching the copy
        earlier = plan_hunks(rng, lines, 1, unique_in(KeyIndex(lines)), 0, copy_at - 1)
        if earlier is None:
            return None
        hunks = earlier + hunks
    b.file(src.path, Doc.of(lines).data())
    b.update(Update(src.path, Doc.of(lines), lines, hunks))
    if rng.random() < 0.4:
        other = plan_update(rng, rng.choice([s for s in pool if s is not src]), 1)
        if other is None:
            return None
        b.file(other.path, other.doc.data())
        b.update(other)
    return "applied"


def build_add_delete_move(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    mover, victim, donor, other = rng.sample(pool, 4)
    body = snippet(rng, donor)
    op = plan_update(rng, mover, rng.randint(1, 2))
    if body is None or op is None:
        return None
    op.move_to = move_target(rng, mover.path)
    head = donor.path.rpartition("/")[0]
    new_path = f"{head}/_{rng.choice(('helpers', 'compat', 'extras'))}_{len(body)}.py"
    steps: list[Callable[[], None]] = [
        lambda: b.update(op),
        lambda: b.delete(victim.path),
        lambda: b.add(new_path, body),
    ]
    b.file(mover.path, op.doc.data())
    b.file(victim.path, Doc.of(victim.lines).data())
    if rng.random() < 0.5:
        plain = plan_update(rng, other, 1)
        if plain is None:
            return None
        b.file(other.path, plain.doc.data())
        steps.append(lambda: b.update(plain))
    rng.shuffle(steps)
    for step in steps:
        step()
    return "applied"


def _failing_update(rng: random.Random, src: Source) -> Update | None:
    op = plan_update(rng, src, rng.randint(1, 2))
    if op is None:
        return None
    return op if hallucinate(rng, op, rng.choice(op.hunks), src.index) else None


def build_partial(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    sources = rng.sample(pool, rng.randint(2, 4))
    bad = rng.randrange(len(sources))
    for n, src in enumerate(sources):
        b.file(src.path, Doc.of(src.lines).data())
        if n == bad:
            failing = _failing_update(rng, src)
            if failing is None:
                return None
            b.update(failing, applies=False)
        elif rng.random() < 0.2:
            b.delete(src.path)
        else:
            op = plan_update(rng, src, rng.randint(1, 2))
            if op is None:
                return None
            b.update(op)
    if rng.random() < 0.3:
        b.add(f"Lib/notes/_{rng.choice(SUFFIXES)}.py", [f"# {rng.choice(NOTES)}", "VERSION = 2"])
    return "partially_applied"


def build_move_dependants(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    others = 0 if rng.random() < 0.25 else rng.randint(1, 2)
    src, *rest = rng.sample(pool, 1 + others)
    first = plan_update(rng, src, 1)
    if first is None:
        return None
    first.move_to = move_target(rng, src.path)
    moved = first.expected()
    index = KeyIndex(moved.lines)
    hunks = plan_hunks(rng, moved.lines, 1, unique_in(index))
    if hunks is None:
        return None
    second = Update(first.move_to, moved, list(moved.lines), hunks)
    if not hallucinate(rng, second, hunks[0], index):
        return None
    b.file(src.path, first.doc.data())
    ops = [first, second]
    for other in rest:
        op = plan_update(rng, other, rng.randint(1, 2))
        if op is None:
            return None
        b.file(other.path, op.doc.data())
        ops.insert(rng.choice((0, len(ops))), op)
    for op in ops:
        b.update(op, applies=op is not first and op is not second)
    return "partially_applied" if rest else "failed"


def _with_eof(rng: random.Random, op: Update, maker: Callable[..., HunkSpec | None]) -> None:
    tail = maker(rng, op.doc.lines)
    if tail is not None and all(not _overlaps(tail, h) for h in op.hunks):
        op.hunks.append(tail)


def build_crlf(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    for n, src in enumerate(rng.sample(pool, rng.randint(1, 3))):
        op = plan_update(rng, src, rng.randint(1, 3))
        if op is None:
            return None
        if n == 0 or rng.random() < 0.5:
            op.doc = Doc.of(src.lines, "\r\n")
            if rng.random() < 0.4:
                _with_eof(rng, op, eof_append)
        b.file(src.path, op.doc.data())
        b.update(op)
    return "applied"


def mixed_endings(rng: random.Random, n: int) -> list[str]:
    styles = ["\n", "\r\n"] + (["\r"] if rng.random() < 0.3 else [])
    out: list[str] = []
    while len(out) < n:
        out += [rng.choice(styles)] * rng.randint(1, 12)
    out = out[:n]
    if len(set(out)) < 2:
        out[n // 2] = "\r\n" if out[0] == "\n" else "\n"
    return out


def _other(ending: str) -> str:
    return "\r\n" if ending == "\n" else "\n"


def discriminate(doc: Doc, hunks: Sequence[HunkSpec]) -> None:
    """Set endings so that the rule for added lines is visible in every hunk: the line
    after the added lines ends differently from the line they replace (or follow)."""
    n = len(doc.lines)
    for spec in hunks:
        follow = spec.at + spec.removed
        if not spec.added:
            continue
        if follow < n:
            ref = spec.at if spec.removed else spec.at - 1
            if doc.endings[follow] == doc.endings[ref]:
                doc.endings[follow] = _other(doc.endings[ref])
        elif spec.removed:
            if doc.endings[n - 2] == doc.endings[n - 1]:
                doc.endings[n - 2] = _other(doc.endings[n - 1])
        elif doc.endings[n - 1] == doc.style():
            doc.endings[n - 1] = _other(doc.endings[n - 1])


def build_mixed(rng: random.Random, pool: list[Source], b: CaseBuilder) -> str | None:
    for src in rng.sample(pool, rng.randint(1, 2)):
        op = plan_update(rng, src, rng.randint(1, 3))
        if op is None:
            return None
        op.doc.endings = mixed_endings(rng, len(src.lines))
        if rng.random() < 0.5:
            _with_eof(rng, op, rng.choice((eof_append, eof_replace)))
        discriminate(op.doc, op.hunks)
        b.file(src.path, op.doc.data())
        b.update(op)
    return "applied"


CATEGORIES: dict[str, Builder] = {
    "exact": build_exact,
    "rstrip_drift": build_rstrip,
    "strip_drift": build_strip,
    "punctuation_drift": build_punctuation,
    "anchor_duplicates": build_anchor,
    "end_of_file": build_eof,
    "add_delete_move": build_add_delete_move,
    "partial_failure": build_partial,
    "move_dependants": build_move_dependants,
    "crlf": build_crlf,
    "mixed_endings": build_mixed,
}


def build_cases(per_category: int = PER_CATEGORY) -> list[PatchCase]:
    pool = load_sources()
    cases: list[PatchCase] = []
    for category, builder in CATEGORIES.items():
        rng = random.Random(f"{SEED}:{category}")
        made = 0
        for _ in range(per_category * 100):
            if made == per_category:
                break
            b = CaseBuilder(category, rng.choice((" ", "")))
            status = builder(rng, pool, b)
            if status is not None:
                made += 1
                cases.append(b.finish(f"{category}-{made:02d}", status))
        if made < per_category:
            raise RuntimeError(f"{category}: only {made} cases could be built")
    return cases


# --------------------------------------------------------------------------- timing case


@dataclass(frozen=True)
class TimingCase:
    files: dict[str, bytes]
    patch: str
    expected: dict[str, bytes]
    lines: int
    hunks: int


def timing_case(total_lines: int = 10_000, hunk_count: int = 50) -> TimingCase:
    """One file of ``total_lines`` stdlib lines and a patch of ``hunk_count`` one-line
    changes, each with three lines of context, spread evenly through the file."""
    rng = random.Random(f"{SEED}:timing")
    lines: list[str] = []
    for src in load_sources():
        lines += src.lines
        if len(lines) >= total_lines:
            break
    lines = lines[:total_lines]
    index = KeyIndex(lines)
    accept = both(clean_window(lines), unique_in(index))
    stride = total_lines // hunk_count
    hunks = []
    for k in range(hunk_count):
        for start in range(k * stride, (k + 1) * stride - 2 * CONTEXT - 2):
            spec = make_hunk(rng, lines, start, "replace")
            if spec is not None and accept(spec):
                hunks.append(spec)
                break
    op = Update("src/big_module.py", Doc.of(lines), lines, hunks)
    files = {op.path: op.doc.data()}
    patch = "*** Begin Patch\n" + op.render(" ") + "*** End Patch\n"
    return TimingCase(files, patch, {op.path: op.expected().data()}, len(lines), len(hunks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", metavar="NAME", help="print the patch of case NAME")
    args = parser.parse_args()
    cases = build_cases()
    if args.show:
        case = next(c for c in cases if c.name == args.show)
        print(f"{case.name}: expect {case.status}; files {sorted(case.files)}")
        print(case.patch)
        return
    for category, count in Counter(c.category for c in cases).items():
        print(f"{category:20} {count}")
    print(f"{'total':20} {len(cases)}")


if __name__ == "__main__":
    main()
