"""The repeated-failure hint counts misses of the text, not the machine's refusals."""

from __future__ import annotations

from redline.engine.hints import FailureHints
from redline.engine.result import Result


def test_the_second_miss_on_a_file_in_a_turn_gets_the_hint() -> None:
    hints = FailureHints()
    first, second = Result("no_match", path="a.py"), Result("no_match", path="a.py")
    hints.observe("a.py", 1, first)
    hints.observe("a.py", 1, second)
    assert first.hint is None
    assert second.hint is not None and "re-read the target range" in second.hint


def test_a_write_the_machine_refused_is_no_miss() -> None:
    """A full disk answers `failed`: re-reading the file would not help, and it does not count."""
    hints = FailureHints()
    results = [Result("failed", path="a.py") for _ in range(3)] + [Result("no_match", path="a.py")]
    for result in results:
        hints.observe("a.py", 1, result)
    assert [r.hint for r in results] == [None, None, None, None]
