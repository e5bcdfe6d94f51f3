"""The edits the corpus asks for, and the ways an agent's old_string drifts from the file.

An edit (:class:`Mod`) is positional over the lines of a block, so the same edit
can be applied to the agent's view of the block (giving new_string) and to the
file's own lines (giving the lines the file should end up with). Perturbations
return the agent's (wrong) view of one line.
"""

from __future__ import annotations

import builtins
import keyword
import random
import re
from dataclasses import dataclass
from typing import Protocol

from textmodel import indent_of

NOT_NAMES = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))
NOT_NAMES |= {"self", "cls"}
_BARE_NAME = re.compile(r"(?<![\w.'\"])[A-Za-z_][A-Za-z0-9_]{2,}\b")
_ANY_NAME = re.compile(r"(?<![\w])[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"(?<![\w.'\"])\d+(?![\w.])")
_CALL = re.compile(r"\b[A-Za-z_][\w.]*\([^()'\"\n\0]*\)")
_OPENERS = ("else", "elif", "except", "finally", ")", "]", "}", "case")
_SYNONYMS = {
    "value": "val",
    "result": "res",
    "name": "label",
    "data": "payload",
    "text": "content",
    "msg": "message",
    "path": "filepath",
    "key": "k",
    "line": "row",
    "lines": "rows",
    "item": "entry",
    "items": "entries",
    "index": "idx",
    "parts": "pieces",
    "args": "arguments",
    "kwargs": "options",
    "action": "act",
    "parser": "prs",
    "header": "hdr",
    "string": "s",
    "filename": "fname",
    "size": "nbytes",
    "count": "total",
    "prefix": "head",
    "level": "lvl",
}
_KEYWORD_ARGS = ("strict=True", "default=None", "timeout=None")


class Mod(Protocol):
    def apply(self, lines: list[str]) -> list[str]: ...

    def describe(self) -> str: ...


# String literals (straight or curly quotes) and comments: a rename leaves them alone.
_NOT_CODE = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|‘[^’\n]*’|“[^”\n]*”|#.*")


def in_code(line: str, pattern: re.Pattern[str], repl: str) -> str:
    """``pattern.sub(repl, ...)`` applied to the code parts of ``line`` only."""
    out: list[str] = []
    pos = 0
    for m in _NOT_CODE.finditer(line):
        out.append(pattern.sub(repl, line[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(pattern.sub(repl, line[pos:]))
    return "".join(out)


def code_mask(line: str) -> str:
    """``line`` with strings and comments blanked out (NULs), positions unchanged."""
    return _NOT_CODE.sub(lambda m: "\0" * len(m.group(0)), line)


@dataclass(frozen=True)
class Rename:
    """Rename a bare name on every line of the block: code only, not attributes,
    not keyword-argument names (``name=`` with no space), not strings or comments."""

    old: str
    new: str

    def apply(self, lines: list[str]) -> list[str]:
        pattern = re.compile(rf"(?<![\w.]){re.escape(self.old)}\b(?!=[^=])")
        return [in_code(line, pattern, self.new) for line in lines]

    def describe(self) -> str:
        return f"rename {self.old}->{self.new}"


@dataclass(frozen=True)
class Insert:
    """A new line before line ``before``, indented like that line in each view."""

    before: int
    body: str

    def apply(self, lines: list[str]) -> list[str]:
        line = indent_of(lines[self.before]) + self.body
        return [*lines[: self.before], line, *lines[self.before :]]

    def describe(self) -> str:
        return f"insert@{self.before}"


@dataclass(frozen=True)
class Retext:
    """Replace the first occurrence of ``old`` on one line (a call argument, a number)."""

    line: int
    old: str
    new: str

    def apply(self, lines: list[str]) -> list[str]:
        if self.old not in lines[self.line]:
            raise ValueError("retext target missing in this view")
        out = list(lines)
        out[self.line] = out[self.line].replace(self.old, self.new, 1)
        return out

    def describe(self) -> str:
        return f"retext@{self.line}"


@dataclass(frozen=True)
class Delete:
    line: int

    def apply(self, lines: list[str]) -> list[str]:
        return [*lines[: self.line], *lines[self.line + 1 :]]

    def describe(self) -> str:
        return f"delete@{self.line}"


def touched(mod: Mod, lines: list[str]) -> set[int]:
    """Indices of the block's lines the edit rewrites or removes."""
    if isinstance(mod, Insert):
        return set()
    if isinstance(mod, Retext | Delete):
        return {mod.line}
    after = mod.apply(lines)
    return {k for k, (a, b) in enumerate(zip(lines, after, strict=True)) if a != b}


def _depths(lines: list[str]) -> list[int]:
    """Bracket depth after each line (string contents ignored only roughly)."""
    depth = 0
    out: list[int] = []
    for line in lines:
        code = _NOT_CODE.sub("", line)
        depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
        out.append(depth)
    return out


def _in_docstring(lines: list[str], k: int) -> bool:
    before = "\n".join(lines[:k])
    return (before.count('"""') + before.count("'''")) % 2 == 1 or any(
        q in lines[k] for q in ('"""', "'''")
    )


def statement_starts(lines: list[str]) -> list[int]:
    """Indices b ≥ 1 where a new statement line can be inserted before line b."""
    depths = _depths(lines)
    out: list[int] = []
    for b in range(1, len(lines)):
        prev, line = lines[b - 1].rstrip(), lines[b].strip()
        if not line or not prev or depths[b - 1] != 0 or min(depths[:b]) < 0:
            continue
        if line.startswith(_OPENERS) or prev.endswith(("\\", ",")) or prev.lstrip()[:1] == "@":
            continue
        if _in_docstring(lines, b) or _in_docstring(lines, b - 1):
            continue
        out.append(b)
    return out


def bare_names(lines: list[str]) -> list[str]:
    found: dict[str, None] = {}
    for line in lines:
        code = _NOT_CODE.sub("", line)
        for m in _BARE_NAME.finditer(code):
            name = m.group(0)
            if name not in NOT_NAMES and not name.isupper() and not name.startswith("__"):
                found[name] = None
    return list(found)


def new_name(rng: random.Random, name: str) -> str:
    if name in _SYNONYMS:
        return _SYNONYMS[name]
    return name.rstrip("_") + rng.choice(("_obj", "_new", "_value", "_tmp"))


def choose_mod(
    rng: random.Random, lines: list[str], kinds: tuple[str, ...], *, quotes_ok: bool = True
) -> Mod | None:
    """A realistic edit of ``lines`` of one of ``kinds`` (rename/insert/retext/delete)."""
    order = list(kinds)
    rng.shuffle(order)
    for kind in order:
        mod = _make(rng, kind, lines, quotes_ok)
        if mod is not None and mod.apply(lines) != lines:
            return mod
    return None


def _make(rng: random.Random, kind: str, lines: list[str], quotes_ok: bool) -> Mod | None:
    if kind == "rename":
        names = bare_names(lines)
        if not names:
            return None
        old = rng.choice(names)
        return Rename(old, new_name(rng, old))
    if kind == "insert":
        spots = statement_starts(lines)
        if not spots:
            return None
        return Insert(rng.choice(spots), insert_body(rng, lines, quotes_ok))
    if kind == "retext":
        return _retext(rng, lines)
    if kind == "delete":
        return _delete(rng, lines)
    raise ValueError(kind)


def insert_body(rng: random.Random, lines: list[str], quotes_ok: bool) -> str:
    names = bare_names(lines)
    if names:
        v = rng.choice(names)
        options = [f"assert {v} is not None", f"print({v})", f"_seen.add({v})"]
        if quotes_ok:
            options += [f'log.debug("{v}=%r", {v})', f'trace("{v}", {v})']
    else:
        options = ["_calls += 1", "_checkpoint()"]
        if quotes_ok:
            options.append('log.debug("reached")')
    return rng.choice(options)


def _retext(rng: random.Random, lines: list[str]) -> Retext | None:
    spots: list[Retext] = []
    for k, line in enumerate(lines):
        if line.lstrip().startswith("#") or _in_docstring(lines, k):
            continue
        code = code_mask(line)
        for m in _INT.finditer(code):
            n = int(m.group(0))
            spots.append(Retext(k, _first_with(line, m), _bump(line, m, n + 1 if n else 1)))
        for m in _CALL.finditer(code):
            call = line[m.start() : m.end()]
            kw = rng.choice(_KEYWORD_ARGS)
            inner = call[call.index("(") + 1 : -1]
            new = call[:-1] + (f", {kw})" if inner.strip() else f"{kw})")
            if line.count(call) == 1:
                spots.append(Retext(k, call, new))
    return rng.choice(spots) if spots else None


def _first_with(line: str, m: re.Match[str]) -> str:
    """The number with enough left context that it is the first such substring."""
    start = m.start()
    while start > 0 and line.find(line[start : m.end()]) != start:
        start -= 1
    return line[start : m.end()]


def _bump(line: str, m: re.Match[str], value: int) -> str:
    old = _first_with(line, m)
    return old[: len(old) - len(m.group(0))] + str(value)


def _delete(rng: random.Random, lines: list[str]) -> Delete | None:
    depths = _depths(lines)
    spots: list[int] = []
    for d in range(1, len(lines) - 1):
        line = lines[d].rstrip()
        if not line.strip() or line.endswith((":", "\\", ",")) or depths[d] != 0:
            continue
        if depths[d - 1] != 0 or line.strip().startswith(_OPENERS):
            continue
        if _in_docstring(lines, d):
            continue
        prev, nxt = lines[d - 1].rstrip(), lines[d + 1]
        if prev.endswith(":") and len(indent_of(nxt)) < len(indent_of(line)):
            continue
        spots.append(d)
    return Delete(rng.choice(spots)) if spots else None


# ---- perturbations of one line: what the agent believes the file says ----


def identifiers(line: str, min_len: int) -> list[tuple[int, int]]:
    code_spans = [(m.start(), m.end()) for m in _ANY_NAME.finditer(line)]
    return [(a, b) for a, b in code_spans if b - a >= min_len and line[a:b] not in NOT_NAMES]


def typo(rng: random.Random, line: str) -> tuple[str, str] | None:
    """(identifier, misspelt identifier): one character missing or doubled."""
    spans = [(a, b) for a, b in identifiers(line, 5) if line.count(line[a:b]) == 1]
    if not spans:
        return None
    a, b = rng.choice(spans)
    word = line[a:b]
    p = rng.randrange(1, len(word) - 1)
    wrong = word[:p] + word[p + 1 :] if rng.random() < 0.5 else word[:p] + word[p] + word[p:]
    return word, wrong


def drift(rng: random.Random, line: str, numbers_only: bool = False) -> tuple[str, str] | None:
    """(file text, stale text): a number or a name on the line someone else changed.

    A drifted number shares no digit with the file's number, so the two spellings
    differ in every character of the number; a drifted name differs by a whole
    affix (``_old``, ``raw_`` ...), never by one character as a typo would."""
    if line.lstrip().startswith("#"):
        return None
    numbers = list(_INT.finditer(line))
    if numbers:
        m = rng.choice(numbers)
        old = _first_with(line, m)
        return old, old[: len(old) - len(m.group(0))] + other_number(rng, m.group(0))
    if numbers_only:
        return None
    spans = [(a, b) for a, b in identifiers(line, 4) if line.count(line[a:b]) == 1]
    if not spans:
        return None
    a, b = rng.choice(spans)
    word = line[a:b]
    return word, rng.choice((word + "_old", "old_" + word, word + "_orig", "raw_" + word))


def other_number(rng: random.Random, digits: str, avoid: str = "") -> str:
    """A number of the same length whose digits all differ from those of ``digits``
    (and, while enough digits remain, from those of ``avoid``)."""
    allowed = [d for d in "0123456789" if d not in digits]
    if len([d for d in allowed if d not in avoid]) >= 2:
        allowed = [d for d in allowed if d not in avoid]
    lead = [d for d in allowed if d != "0"] if len(digits) > 1 else allowed
    return rng.choice(lead) + "".join(rng.choice(allowed) for _ in digits[1:])


def curly(line: str) -> str:
    """Straight quotes typeset as curly ones (what a smart-quoting channel does)."""
    out: list[str] = []
    open_double = open_single = True
    for k, ch in enumerate(line):
        if ch == '"':
            out.append("“" if open_double else "”")
            open_double = not open_double
        elif ch == "'":
            prev = line[k - 1] if k else " "
            nxt = line[k + 1] if k + 1 < len(line) else " "
            if prev.isalnum() and nxt.isalnum():
                out.append("’")
            else:
                out.append("‘" if open_single else "’")
                open_single = not open_single
        else:
            out.append(ch)
    return "".join(out)


INVISIBLES = ("\u200b", "\u2060", "\u00ad", "\ufeff", "\u200c")


def sprinkle(rng: random.Random, text: str, count: int, chars: tuple[str, ...]) -> str:
    """``count`` invisible characters at random places (never next to a newline)."""
    places = [k for k in range(1, len(text)) if text[k - 1] != "\n" and text[k] != "\n"]
    chosen = sorted(rng.sample(places, min(count, len(places))), reverse=True)
    for k in chosen:
        text = text[:k] + rng.choice(chars) + text[k:]
    return text
