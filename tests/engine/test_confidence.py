"""engine.confidence: a confidence as people read it."""

from __future__ import annotations

from redline.engine.confidence import shown_confidence


def test_a_confidence_is_shown_rounded_down() -> None:
    assert shown_confidence(1.0) == "1.0"
    assert shown_confidence(0.99996) == "0.9999"  # below 1 never reads as 1
    assert shown_confidence(0.9952830188679245) == "0.9952"
    assert shown_confidence(0.29) == "0.29"  # 0.29 * 100 is 28.999…: still 0.29
    assert shown_confidence(0.849999, 2) == "0.84"
    assert shown_confidence(0.95, 6) == "0.95"
    assert shown_confidence(None) == "None"
