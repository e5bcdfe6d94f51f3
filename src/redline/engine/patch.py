"""The apply_patch tool: plan a patch against a snapshot and describe the outcome."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from redline.engine import invisible
from redline.engine.decode import decode
from redline.engine.diff import unified
from redline.engine.errors import FileFormatError, RequestError
from redline.engine.patch_plan import FileChange, GroupPlan, PatchPlan, Snapshot, plan_patch
from redline.engine.result import GroupReport, HunkReport, Result

CHANGED_AFTER_PLANNING = "changed after planning"


@dataclass(frozen=True)
class PatchRequest:
    patch: str


@dataclass
class PatchOutcome:
    result: Result
    changes: list[FileChange]  # of the groups that apply, in order; empty when nothing does
    plan: PatchPlan | None = None


def apply_patch(text: str, snapshot: Snapshot) -> PatchOutcome:
    """Plan ``text`` against ``snapshot``; the caller writes ``changes``."""
    try:
        plan = plan_patch(text, snapshot)
    except RequestError as exc:
        return PatchOutcome(Result("invalid", error=str(exc)), [])
    return PatchOutcome(summarise(plan), [c for g in plan.applied for c in g.changes], plan)


def summarise(plan: PatchPlan) -> Result:
    applied, failed = plan.applied, plan.failed
    changes = [c for g in applied for c in g.changes]
    removed: Counter[str] = Counter()
    for group in plan.groups:
        removed += group.cleaned
    hunks = [
        HunkReport(
            h.path,
            h.evidence.hunk,
            h.evidence.match_type,
            h.evidence.confidence,
            h.evidence.start_line,
            h.evidence.end_line,
            h.evidence.other_matches,
            h.evidence.anchor_found,
            h.evidence.matched_text,
        )
        for g in applied
        for h in g.hunks
    ]
    result = Result(
        "applied",
        committed=[_report(g) for g in applied],
        not_applied=[_report(g) for g in failed],
        hunks=hunks,
        cleaned=invisible.describe(removed),
        diff="".join(diff(c) for c in changes) or None,
    )
    if hunks:
        weakest = min(hunks, key=lambda h: h.confidence)
        result.match_type = weakest.match_type
        result.confidence = weakest.confidence
    paths = [p for g in plan.groups for p in g.paths]
    result.path = paths[0] if len(paths) == 1 else None
    if not failed:
        result.status = "applied" if changes else "no_change"
        return result
    reasons = "; ".join(f"{', '.join(g.operations)}: {g.error}" for g in failed)
    groups = _count(len(failed), "file group", "file groups")
    if not applied:
        result.status = "failed"
        result.error = (
            f"apply_patch failed: {groups} not applied: {reasons}"
            if len(failed) > 1
            else f"apply_patch failed: {reasons}"
        )
        return result
    committed = _count(sum(len(g.operations) for g in applied), "change", "changes")
    result.status = "partially_applied"
    result.error = (
        f"apply_patch partially applied: {committed} committed, {groups} not applied: "
        f"{reasons}. The committed changes are in place; do not redo them."
    )
    return result


def changed_after_planning(path: str) -> Result:
    return Result(
        "failed",
        path=path,
        error=(
            f"{CHANGED_AFTER_PLANNING}: {path} changed on disk while the patch was being "
            "applied; nothing was written. Re-read the file and send the patch again."
        ),
    )


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _report(group: GroupPlan) -> GroupReport:
    return GroupReport(list(group.paths), list(group.operations), group.error)


def diff(change: FileChange) -> str:
    before = _text(change.before)
    after = _text(change.after)
    if before is None or after is None:
        return ""
    body = unified(change.path, before, after)
    if change.before is None:
        body = body.replace(f"--- a/{change.path}", "--- /dev/null", 1)
    if change.after is None:
        body = body.replace(f"+++ b/{change.path}", "+++ /dev/null", 1)
    return body


def _text(data: bytes | None) -> str | None:
    if data is None:
        return ""
    try:
        return decode(data).text.replace("\r\n", "\n").replace("\r", "\n")
    except FileFormatError:
        return None
