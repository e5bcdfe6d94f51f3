"""One table of match types: the chain, the patch passes, the policy, the schema's enum
and the README's tables all come from ``engine.match_types``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from redline.engine import hunks, match, policy
from redline.engine.match_types import (
    MATCH_TYPES,
    SIMILARITY,
    TIERS,
    MatchType,
    confidences,
    readme_rows,
)

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
    assert match.TIERS == (
        "exact",
        "trailing_newline",
        "punctuation",
        "whitespace",
        "fuzzy",
        "line_fuzzy",
    )
    assert list(hunks.CONFIDENCE) == ["exact", "rstrip", "strip", "punctuation"]
    assert confidences("apply_patch") == hunks.CONFIDENCE
    assert hunks.TOLERANT == ("rstrip", "strip", "punctuation")
    assert policy.MATCH_TYPES == MATCH_TYPES
    # tools that share a tier share its confidence
    shared = confidences("edit").keys() & confidences("apply_patch").keys()
    assert shared == {"exact", "punctuation"}


def test_the_chain_runs_the_tables_tiers_in_its_order() -> None:
    """Every tier of the edit's chain has a finder, and the chain tries them in the
    table's order: a file where several tiers would match reports the strictest."""
    assert set(match._FIND) | set(SIMILARITY) == set(match.TIERS)
    assert (*match._UNBUDGETED, *match._BUDGETED) == tuple(
        name for name in match.TIERS if name not in SIMILARITY
    )
    # old_string found exactly and also with a folded quote: exact wins
    text = "a = 'x'\na = ‘x’\n"
    assert match.match_chain(match.FileView(text), "a = 'x'", 0.8).match_type == "exact"
    # without the exact text, the punctuation tier finds it
    chained = match.match_chain(match.FileView("a = ‘x’\n"), "a = 'x'", 0.8)
    assert chained.match_type == "punctuation"


def test_the_similarity_tiers_follow_the_table() -> None:
    assert SIMILARITY == ("fuzzy", "line_fuzzy")
    assert all(isinstance(t.confidence, str) == (t.name in SIMILARITY) for t in TIERS)


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
