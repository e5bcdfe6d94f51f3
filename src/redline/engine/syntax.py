"""A parser's error as validation compares it, and the text it is read from.

Shared by the syntax validation (engine.validate) and its Python compiler check
(engine.pysyntax). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

TEXT_LIMIT = 200  # characters of an offending line a report shows


@dataclass(frozen=True)
class SyntaxProblem:
    """One parse error: 1-based line and column (in characters), the parser's message,
    and the offending line's text."""

    line: int
    column: int
    message: str
    text: str
    kind: str = field(default="", compare=False)  # what the comparison keys on (module doc)

    def key(self) -> tuple[str, str]:
        return (self.kind or normalised(self.message), self.text.strip())

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "message": self.message,
                "text": self.text}  # fmt: skip


def source_text(data: bytes) -> str:
    """The file's text (UTF-8 first; other encodings as the engine reads them)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        from redline.engine.decode import decode

        return decode(data).text  # FileFormatError when it is not text


def line_text(text: str, number: int) -> str:
    """Line ``number`` (1-based) of ``text`` without its ending, clipped; '' past the end."""
    lines = text.split("\n")
    if not 1 <= number <= len(lines):
        return ""
    line = lines[number - 1].rstrip("\r")
    return line if len(line) <= TEXT_LIMIT else line[:TEXT_LIMIT] + "…"


_LINE_NUMBER = re.compile(r"\bline \d+")


def normalised(message: str) -> str:
    return _LINE_NUMBER.sub("line N", message)
