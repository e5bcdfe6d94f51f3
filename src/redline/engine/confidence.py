"""Confidences as people read them. Pure, and light: the guard hook imports it."""

from __future__ import annotations

import math


def shown_confidence(value: object, places: int = 4) -> str:
    """A confidence for people to read: at most ``places`` decimals, rounded down, so a
    match below 1 never reads as 1 (0.99996 shows as 0.9999)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return str(value)
    scale = 10**places
    units = math.floor(value * scale)
    # value * scale is rounded: step to the largest decimal that is not above the value
    while (units + 1) / scale <= value:
        units += 1
    while units / scale > value:
        units -= 1
    text = f"{units / scale:.{places}f}".rstrip("0")
    return text + "0" if text.endswith(".") else text
