"""The short text a model reads from a result (the result travels as structured content).

An edit: its status and path, how it matched, what the match tolerated (in
words, with its lines: ``engine.tolerated``), the diff; a refusal: the error
and the hint. A read: the numbered lines, and where the next lines start when
more are left.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redline.engine.confidence import shown_confidence

SUCCESS = frozenset(["applied", "no_change", "read"])  # every other status is a tool error


def is_error(result: Mapping[str, Any]) -> bool:
    return result.get("status") not in SUCCESS


def summary(result: Mapping[str, Any]) -> str:
    if result.get("status") == "read":
        return _read(result)
    lines = [_headline(result), *_tolerated(result)]
    cleaned = result.get("cleaned") or []
    if cleaned:
        lines.append("cleaned (invisible characters removed): " + ", ".join(map(str, cleaned)))
    for report in result.get("not_applied") or []:
        paths = ", ".join(report.get("paths") or [])
        lines.append(f"not applied: {paths}: {report.get('reason')}")
    for failure in result.get("failures") or []:
        lines.append(
            f"edits[{failure.get('index')}]: {failure.get('status')}: {failure.get('error')}"
        )
    for name in ("error", "hint"):
        if result.get(name):
            lines.append(f"{name}: {result[name]}")
    for flag in result.get("flags") or []:
        lines.append("flagged for review: " + "; ".join(f"{k}={v}" for k, v in flag.items()))
    if result.get("diff"):
        lines.append(str(result["diff"]).rstrip("\n"))
    return "\n".join(lines)


def _tolerated(result: Mapping[str, Any]) -> list[str]:
    """``tolerated: <the difference in words>``, one line each; a patch's per hunk."""
    lines = [f"tolerated: {t.get('text')}" for t in _items(result.get("tolerated"))]
    for hunk in _items(result.get("hunks")):
        where = f"hunk {hunk.get('hunk')} of {hunk.get('path')}"
        lines += [f"tolerated ({where}): {t.get('text')}" for t in _items(hunk.get("tolerated"))]
    return lines


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _headline(result: Mapping[str, Any]) -> str:
    """``applied: a.py (exact, confidence 1.00)``; a patch's match types per hunk."""
    head = str(result.get("status"))
    paths = _paths(result)
    if paths:
        head += ": " + ", ".join(paths)
    how = _how(result)
    return f"{head} ({how})" if how else head


def _paths(result: Mapping[str, Any]) -> list[str]:
    if result.get("path"):
        return [str(result["path"])]
    found: list[str] = []
    for report in [*(result.get("committed") or []), *(result.get("written") or [])]:
        found.extend(p for p in report.get("paths") or [] if p not in found)
    return found


def _how(result: Mapping[str, Any]) -> str:
    match_type, confidence = result.get("match_type"), result.get("confidence")
    if match_type is not None:
        return f"{match_type}, confidence {_number(confidence)}"
    hunks = result.get("hunks") or []
    if not hunks:
        return ""
    kinds = sorted({str(h.get("match_type")) for h in hunks})
    low = min(float(h.get("confidence") or 0) for h in hunks)
    count = f"{len(hunks)} hunk{'s' if len(hunks) != 1 else ''}"
    return f"{count}: {', '.join(kinds)}, lowest confidence {_number(low)}"


def _number(value: Any) -> str:
    """Two decimals, rounded down: a match below 1 never reads as 1.00."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{float(shown_confidence(value, 2)):.2f}"


def _read(result: Mapping[str, Any]) -> str:
    content = str(result.get("content") or "").rstrip("\n")
    start, end, total = result.get("start_line"), result.get("end_line"), result.get("total_lines")
    about = [f"{result.get('path')}: lines {start}-{end} of {total}"]
    for name in ("encoding", "line_ending"):
        if result.get(name):
            about.append(f"{name} {result[name]}")
    footer = ", ".join(about)
    if result.get("truncated") and isinstance(end, int):
        footer += f"; more below: read again with offset={end + 1}"
    return f"{content}\n({footer})" if content else f"({footer})"
