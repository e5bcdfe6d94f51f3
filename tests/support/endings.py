"""What an edit may change outside the span it replaces, in a file of mixed line endings.

Everything outside the span keeps its bytes but this: a line the edit leaves empty
right after a lone CR, and the empty lines right after it, end in CR where they
ended in LF — CR then LF would read back as one CRLF newline, and the edited file
would lose lines (``redline.engine.newlines.Endings.restore``).
"""

from __future__ import annotations


def suffix_after_edit(head: str, suffix: str) -> str:
    """The text after the span as the edited file must hold it, ``head`` being all of
    the edited file before that text and ``suffix`` the original file's text after the
    span."""
    if not head.endswith("\r"):
        return suffix
    run = len(suffix) - len(suffix.lstrip("\n"))
    return "\r" * run + suffix[run:]
