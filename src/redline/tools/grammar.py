"""The Lark grammar of the freeform ``apply_patch`` tool, shipped as package data."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

GRAMMAR_RESOURCE = "apply_patch.lark"


@cache
def grammar_text() -> str:
    """The grammar (Lark syntax) that constrains a model's ``apply_patch`` input."""
    return files("redline.tools").joinpath(GRAMMAR_RESOURCE).read_text(encoding="utf-8")
