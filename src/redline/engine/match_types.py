"""Every ``match_type`` a result can report, in one table ordered strictest first.

The edit tool's chain (engine.match, with the recoveries of engine.edit), the
patch's hunk passes (engine.hunks), the guard policy's ``require`` names
(engine.policy), the JSON Schema's enum of ``match_type`` (tools.schema) and
the README's tables are all read from :data:`TIERS`. A tier names the tools
that report it and the confidence it reports there (None: the similarity the
tier computed); tools that share a tier share its confidence.
"""

from __future__ import annotations

from typing import Literal

from redline.engine.records import record

MatchType = Literal[
    "exact",
    "trailing_newline",
    "rstrip",
    "strip",
    "punctuation",
    "whitespace",
    "prefixed",
    "fragment",
    "escaped",
    "fuzzy",
    "line_fuzzy",
]
Tool = Literal["edit", "apply_patch"]


@record(frozen=True)
class Tier:
    """One match type of the ladder: the tools that use it, the confidence it reports and
    what it tolerates."""

    name: MatchType
    tools: tuple[Tool, ...]
    # the confidence it reports; words for a tier that reports the similarity it computed
    confidence: float | str
    tolerates: str  # in the README's words (Markdown)
    # found by a recovery of engine.edit beside the chain (engine.match), not by the chain
    recovery: bool = False


TIERS: tuple[Tier, ...] = (
    Tier("exact", ("edit", "apply_patch"), 1.0, "nothing"),
    Tier(
        "trailing_newline",
        ("edit",),
        0.99,
        "a final `\\n` on old_string that the file lacks",
    ),
    Tier("rstrip", ("apply_patch",), 0.99, "trailing whitespace of a hunk's lines"),
    Tier(
        "strip",
        ("apply_patch",),
        0.98,
        "whitespace around a hunk's lines (leading indentation too)",
    ),
    Tier(
        "punctuation",
        ("edit", "apply_patch"),
        0.97,
        "curly/straight quotes, dashes, full-width and CJK punctuation "
        "(`，。、「」『』【】` ↔ `,.,\"\"''[]`), one optional space",
    ),
    Tier(
        "whitespace",
        ("edit",),
        0.95,
        "any difference in whitespace (a blank line must be a blank line of the file)",
    ),
    Tier(
        "prefixed",
        ("edit",),
        0.9,
        "line numbers (`12: `, `  12→`, `cat -n`'s `    12<tab>`, `12 │ `), box glyphs "
        "(`│ `, `█ `) or diff markers (` `/`-` on old_string, ` `/`+` on new_string) on "
        "every line of both, copied from a view: removed, when old_string without them is "
        "in the file exactly once (diff markers are removed in any case, and the rest is "
        "matched by the chain)",
        recovery=True,
    ),
    Tier(
        "fragment",
        ("edit",),
        0.9,
        "a one-line old_string (indented, with a newline) whose text is in the middle of "
        "exactly one longer line: replaced inside that line by new_string's text, framed "
        "the same way",
        recovery=True,
    ),
    Tier(
        "escaped",
        ("edit",),
        0.9,
        "`\\n`, `\\t`, `\\'`, `\\\"`, `\\\\` written for the characters the file has, when "
        "old_string read so is in the file exactly once; new_string is read in the same "
        "escaping (an escape of a character old_string writes plain, such as `\\n` after a "
        "real newline, stays text) and refused when it is not written in it",
        recovery=True,
    ),
    Tier("fuzzy", ("edit",), "the similarity", "character similarity of a window ≥ threshold"),
    Tier(
        "line_fuzzy",
        ("edit",),
        "the mean",
        "mean per-line similarity of a same-sized block ≥ threshold",
    ),
)

MATCH_TYPES: tuple[MatchType, ...] = tuple(tier.name for tier in TIERS)
# The tiers that report the similarity they computed (no fixed confidence).
SIMILARITY: tuple[MatchType, ...] = tuple(t.name for t in TIERS if isinstance(t.confidence, str))


def chain(tool: Tool) -> tuple[MatchType, ...]:
    """The tiers of ``tool``'s match chain, strictest first (not the recoveries beside it)."""
    return tuple(tier.name for tier in of_tool(tool) if not tier.recovery)


def of_tool(tool: Tool) -> tuple[Tier, ...]:
    """The tiers ``tool`` reports, strictest first."""
    return tuple(tier for tier in TIERS if tool in tier.tools)


def confidences(tool: Tool) -> dict[str, float]:
    """The fixed confidence of each tier ``tool`` reports, strictest first."""
    return {t.name: t.confidence for t in of_tool(tool) if isinstance(t.confidence, float)}


def readme_rows(tool: Tool) -> list[str]:
    """The README's table rows of ``tool``'s tiers: ``| `name` | tolerates | confidence |``."""
    rows = []
    for tier in of_tool(tool):
        shown = tier.confidence
        if isinstance(shown, float):
            shown = "1.0" if shown == 1 else f"{shown:g}"
        rows.append(f"| `{tier.name}` | {tier.tolerates} | {shown} |")
    return rows
