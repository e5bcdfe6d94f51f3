"""Line endings: an LF view of a file and the endings to restore on write.

Matching always happens on the LF view. :class:`Endings` remembers the ending
of every newline in the original text (one style for a uniform file, one per
newline for a mixed one) and moves along when a span of the view is replaced:
new lines inside a replaced span take the endings of the lines they replace.
"""

from __future__ import annotations

import re

from redline.engine.records import record

_NEWLINE = re.compile(r"\r\n|\r|\n")

LF, CRLF, CR = "\n", "\r\n", "\r"
_STYLE_NAMES = {LF: "LF", CRLF: "CRLF", CR: "CR"}


def to_lf(text: str) -> str:
    """Normalise any newline convention to ``\\n`` (used for old/new strings)."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


@record
class Endings:
    """The original newline of each ``\\n`` in an LF view.

    ``uniform`` holds the single style of a uniform file (LF when the file has no
    newline at all); ``per_line`` is set instead for a mixed file.
    """

    uniform: str | None
    per_line: list[str] | None = None

    @property
    def style(self) -> str:
        if self.per_line is None:
            assert self.uniform is not None
            return _STYLE_NAMES[self.uniform]
        return "mixed"

    def original_offset(self, lf_text: str, pos: int) -> int:
        """The offset in the original text of offset ``pos`` of the LF view."""
        if self.uniform == CRLF:
            return pos + lf_text.count(LF, 0, pos)
        if self.per_line is None:
            return pos
        before = lf_text.count(LF, 0, pos)
        return pos + sum(1 for ending in self.per_line[:before] if ending == CRLF)

    def restore(self, lf_text: str) -> str:
        """Turn an LF view back into text with the original endings."""
        if self.per_line is None:
            return lf_text if self.uniform == LF else lf_text.replace(LF, self.uniform or LF)
        parts = lf_text.split(LF)
        if len(parts) - 1 != len(self.per_line):
            raise ValueError("LF view and endings disagree on the number of lines")
        out: list[str] = []
        previous = ""
        for part, ending in zip(parts, self.per_line, strict=False):
            if ending == LF and previous == CR and not part:
                # CR then LF would read back as one CRLF newline: after an edit
                # emptied this line, end it like the line before it.
                ending = CR
            out.append(part)
            out.append(ending)
            previous = ending
        out.append(parts[-1])
        return "".join(out)

    def replace(self, lf_text: str, start: int, end: int, new: str) -> Endings:
        """The endings after ``lf_text[start:end]`` is replaced by ``new``.

        Lines of ``new`` take the endings of the lines they replace, in order;
        extra lines take the last replaced ending, or (when the span held no
        newline) the ending of the line the span sits in.
        """
        if self.per_line is None:
            return self
        first = lf_text.count(LF, 0, start)
        old_count = lf_text.count(LF, start, end)
        new_count = new.count(LF)
        replaced = self.per_line[first : first + old_count]
        if replaced:
            fill = replaced[-1]
        elif first < len(self.per_line):
            fill = self.per_line[first]
        else:
            fill = self.per_line[-1] if self.per_line else LF
        taken = replaced[:new_count] + [fill] * max(0, new_count - len(replaced))
        per_line = self.per_line[:first] + taken + self.per_line[first + old_count :]
        return Endings(None, per_line)


def split(text: str) -> tuple[str, Endings]:
    """Return the LF view of ``text`` and its :class:`Endings`."""
    if "\r" not in text:
        return text, Endings(LF)
    found = _NEWLINE.findall(text)
    styles = set(found)
    lf_text = to_lf(text)
    if len(styles) == 1:
        return lf_text, Endings(found[0])
    return lf_text, Endings(None, found)
