"""Whole-file analyses of a text, made once per content and reused.

A tolerant edit learns the file's indentation style and folds the whole text for
the punctuation and whitespace tiers: in a 100,000-line file that is most of a
fuzzy edit's time, and none of it depends on the request. Kept here, keyed by
the text itself (its content, as a blob id is), a retry, a dry run or another
attempt on the same content reuses them. Bounded: texts under :data:`SMALLEST`
characters are analysed each time (cheaper than keeping them), and at most
:data:`KEPT_CHARS` characters of text are kept analysed, the least recently
used dropped first. Only immutable values are kept (a fold is kept as its
strings; each caller builds its own ``Folded`` around them), so threads share
them safely. Memory only: no I/O.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
SMALLEST = 1 << 16  # characters
KEPT_CHARS = 1 << 23  # 8 Mi characters of text (with their analyses, a few times that)


class Analyses:
    """Analyses by text and kind (``"style"``, ``"fold:whitespace"``...), bounded."""

    def __init__(self, kept_chars: int = KEPT_CHARS, smallest: int = SMALLEST) -> None:
        self.kept_chars = kept_chars
        self.smallest = smallest
        self._by_text: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.made = 0  # analyses computed (kept or not): what tests and benches read

    def of(self, text: str, kind: str, make: Callable[[], T]) -> T:
        """The ``kind`` analysis of ``text``: kept from before, or ``make()`` now."""
        if len(text) < self.smallest or len(text) > self.kept_chars:
            self.made += 1
            return make()
        with self._lock:
            found = self._by_text.get(text)
            if found is not None and kind in found:
                self._by_text.move_to_end(text)
                value: T = found[kind]
                return value
        value = make()  # outside the lock: other threads' lookups go on meanwhile
        with self._lock:
            self.made += 1
            entry = self._by_text.get(text)
            if entry is None:
                entry = self._by_text[text] = {}
                self._chars += len(text)
            self._by_text.move_to_end(text)
            value = entry.setdefault(kind, value)
            while self._chars > self.kept_chars:
                dropped, _ = self._by_text.popitem(last=False)
                self._chars -= len(dropped)
        return value

    def kinds(self, text: str) -> frozenset[str]:
        """The kinds of analysis kept for ``text`` (none once it is dropped)."""
        with self._lock:
            return frozenset(self._by_text.get(text, ()))

    def clear(self) -> None:
        with self._lock:
            self._by_text.clear()
            self._chars = 0


ANALYSES = Analyses()


class Characters:
    """The characters ``text`` contains, asked one at a time: ``c in Characters(text)``
    is ``c in frozenset(text)`` (a single character that occurs in the text), without
    a pass over the whole text to build the set. A merge asks only about the
    typographic marks it meets, mostly none; each answer is kept."""

    __slots__ = ("_seen", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._seen: dict[str, bool] = {}

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, str) or len(item) != 1:
            return False
        found = self._seen.get(item)
        if found is None:
            found = self._seen[item] = item in self._text
        return found
