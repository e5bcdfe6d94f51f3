"""One table of match types: the chain, the patch passes, the policy, the schema's enum
and the README's tables all come from ``engine.match_types``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from redline.engine import hunks, match, policy
from redline.engine.match_types import MATCH_TYPES, TIERS, MatchType, confidences, readme_rows

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_literal_and_the_table_name_the_same_tiers_in_order() -> None:
    assert get_args(MatchType) == MATCH_TYPES
    assert len(set(MATCH_TYPES)) == len(MATCH_TYPES)


def test_the_table_is_ordered_strictest_first_for_each_tool() -> None:
    for tool in ("edit", "apply_patch"):
        fixed = list(confidences(tool).values())  # type: ignore[arg-type]
        assert fixed == sorted(fixed, reverse=True), tool
    assert all(isinstance(t.confidence, float) or t.name.endswith("fuzzy") for t in TIERS)


def test_the_engine_and_the_policy_read_the_table() -> None:
    assert confidences("edit") == match.CONFIDENCE
    assert match.TIERS == ("exact", "trailing_newline", "punctuation", "whitespace", "fuzzy", "line_fuzzy")
    assert list(hunks.CONFIDENCE) == ["exact", "rstrip", "strip", "punctuation"]
    assert confidences("apply_patch") == hunks.CONFIDENCE
    assert hunks.TOLERANT == ("rstrip", "strip", "punctuation")
    assert policy.MATCH_TYPES == MATCH_TYPES
    # tools that share a tier share its confidence
    shared = confidences("edit").keys() & confidences("apply_patch").keys()
    assert shared == {"exact", "punctuation"}


def _tables(text: str) -> list[list[str]]:
    """The README's match_type tables: the rows under each ``| match_type |`` header."""
    found = []
    for block in re.split(r"\n\n", text):
        lines = block.strip().splitlines()
        if lines and lines[0].startswith("| match_type |"):
            found.append(lines[2:])
    return found


def test_the_readmes_tables_are_the_tables_rows() -> None:
    edit, patch = _tables(README.read_text(encoding="utf-8"))
    assert edit == readme_rows("edit")
    assert patch == readme_rows("apply_patch")
