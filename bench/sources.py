"""Real source text for the corpus: files of this machine's Python standard library.

Also the checks that keep a case fair: a block must be the only place its text
occurs under every tolerant view, and (for fuzzy cases) no other window of the
file may come close to the agent's old_string.
"""

from __future__ import annotations

import io
import random
import sysconfig
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.process import cdist

from textmodel import Doc, loose_key

STDLIB_FILES = (
    "argparse.py",
    "json/decoder.py",
    "json/encoder.py",
    "json/__init__.py",
    "email/message.py",
    "email/feedparser.py",
    "email/header.py",
    "email/utils.py",
    "email/generator.py",
    "email/_parseaddr.py",
    "email/headerregistry.py",
    "email/charset.py",
    "http/client.py",
    "http/server.py",
    "http/cookies.py",
    "http/cookiejar.py",
    "textwrap.py",
    "shutil.py",
    "configparser.py",
    "logging/__init__.py",
    "logging/handlers.py",
    "csv.py",
    "difflib.py",
    "pathlib.py",
    "calendar.py",
    "gzip.py",
    "pprint.py",
    "fractions.py",
    "ftplib.py",
    "smtplib.py",
    "urllib/parse.py",
    "tempfile.py",
    "functools.py",
    "dataclasses.py",
    "subprocess.py",
    "zipfile.py",
    "ipaddress.py",
    "enum.py",
    "imaplib.py",
)
# Non-ASCII punctuation the tolerant categories plant themselves; blocks start without it.
_PLANTED = set("“”‘’，；：（）！？\u00a0\u3000")


@dataclass(frozen=True)
class Source:
    path: str  # as the request names it, e.g. "Lib/argparse.py"
    doc: Doc


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def load_sources(max_lines: int = 2700) -> list[Source]:
    root = stdlib_dir()
    out: list[Source] = []
    for rel in STDLIB_FILES:
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if "\r" in text:
            continue
        doc = Doc.from_text(text)
        if 200 <= len(doc.lines) <= max_lines:
            out.append(Source("Lib/" + rel, doc))
    if len(out) < 10:
        raise RuntimeError(f"too few standard-library files found under {root}")
    return out


def string_rows(doc: Doc) -> frozenset[int]:
    """Rows (0-based) covered by a multi-line string token, e.g. a docstring (cached)."""
    if doc.string_rows is None:
        rows: set[int] = set()
        try:
            for tok in tokenize.generate_tokens(io.StringIO(doc.text()).readline):
                if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                    rows.update(range(tok.start[0] - 1, tok.end[0]))
        except (tokenize.TokenError, SyntaxError):
            pass
        doc.string_rows = frozenset(rows)
    return doc.string_rows


def plain_block(lines: list[str], min_chars: int = 60) -> bool:
    """Clean, distinctive lines: non-blank ends, no tabs, no trailing whitespace."""
    if not lines or not lines[0].strip() or not lines[-1].strip():
        return False
    for line in lines:
        if "\t" in line or line != line.rstrip() or _PLANTED.intersection(line):
            return False
    return sum(len(line.strip()) for line in lines) >= min_chars


def blocks(
    rng: random.Random,
    doc: Doc,
    k_min: int,
    k_max: int,
    tries: int = 30,
    check: Callable[[list[str]], bool] = plain_block,
) -> Iterator[tuple[int, int]]:
    """Random blocks ``[i, j)`` of ``k_min..k_max`` lines passing ``check``, unique under
    folding, outside docstrings and other multi-line strings (the first and last line
    of the file are never used, so every block has a neighbour)."""
    if len(doc.lines) <= k_max + 2:
        return
    key = loose_key(doc.text())
    strings = string_rows(doc)
    for _ in range(tries):
        size = rng.randint(k_min, k_max)
        i = rng.randrange(1, len(doc.lines) - size - 1)
        j = i + size
        lines = doc.lines[i:j]
        if strings.intersection(range(i, j)):
            continue
        if check(lines) and key.count(loose_key("\n".join(lines))) == 1:
            yield i, j


def unique_in(doc: Doc, old: str) -> bool:
    """``old`` matches exactly one place under whitespace/punctuation folding."""
    return loose_key(doc.text()).count(loose_key(old)) == 1


def absent_from(doc: Doc, old: str) -> bool:
    """``old`` matches nowhere, even with whitespace and punctuation folded."""
    return loose_key(old) not in loose_key(doc.text())


def window_scores(doc_lines: list[str], probe: list[str]) -> np.ndarray:
    """Mean per-line similarity (0..1, stripped lines) of every window of len(probe) lines."""
    k = len(probe)
    n = len(doc_lines)
    if n < k:
        return np.zeros(0)
    sims = cdist(
        [p.strip() for p in probe],
        [d.strip() for d in doc_lines],
        scorer=fuzz.ratio,
        dtype=np.float32,
        workers=1,
    )
    total = np.zeros(n - k + 1, dtype=np.float64)
    for row in range(k):
        total += sims[row, row : n - k + 1 + row]
    return total / (100.0 * k)


def nearest_other(doc: Doc, probe: list[str], exclude: tuple[int, int] | None) -> float:
    """Best window score of ``probe`` among windows not overlapping ``exclude``.

    Character similarity of the joined text is checked too for the five best
    line windows, so that a window close in characters but not per line counts.
    """
    scores = window_scores(doc.lines, probe)
    if exclude is not None:
        i, j = exclude
        lo = max(0, i - len(probe) + 1)
        scores[lo:j] = -1.0
    if scores.size == 0:
        return 0.0
    best = float(scores.max())
    joined = "\n".join(probe)
    k = len(probe)
    for s in np.argsort(scores)[-5:]:
        if scores[s] < 0:
            continue
        window = "\n".join(doc.lines[int(s) : int(s) + k])
        best = max(best, fuzz.ratio(window, joined) / 100.0)
    return best
