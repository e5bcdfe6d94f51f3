"""The apply_patch tool: plan a patch against a snapshot and describe the outcome."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

from redline.engine import invisible
from redline.engine.decode import decode
from redline.engine.diff import unified
from redline.engine.errors import FileFormatError, RequestError
from redline.engine.hunks import HunkEvidence
from redline.engine.patch_plan import FileChange, GroupPlan, PatchPlan, Snapshot, plan_patch
from redline.engine.plan import PatchOutcome
from redline.engine.result import GroupReport, HunkReport, Result, Tolerance

CHANGED_AFTER_PLANNING = "changed after planning"
# What becomes of the file groups that apply: a commit each (git mode), or written to the
# files (embedded mode). The result lists them under this name.
Landing = Literal["committed", "written"]


@dataclass(frozen=True)
class PatchRequest:
    patch: str
    validate: bool = False  # every changed file must still parse (engine.validate)
    tool: ClassVar[str] = "apply_patch"


def apply_patch(
    text: str,
    snapshot: Snapshot,
    validate: Callable[[str], bool] | None = None,
    landing: Landing = "committed",
) -> PatchOutcome:
    """Plan ``text`` against ``snapshot``; the caller writes ``changes``.

    ``validate`` says which paths must still parse once changed: a group that
    leaves one unparseable is not applied (engine.validate). ``landing`` is what
    the caller does with the groups that apply (see :func:`summarise`).
    """
    try:
        plan = plan_patch(text, snapshot)
    except RequestError as exc:
        return PatchOutcome(Result("invalid", error=str(exc)), [])
    if validate is not None:
        validate_groups(plan, validate)
    return PatchOutcome(
        summarise(plan, landing), [c for g in plan.applied for c in g.changes], plan
    )


def validate_groups(plan: PatchPlan, wanted: Callable[[str], bool]) -> None:
    """Parse the files each planned group changes (those ``wanted``); a group that
    leaves one unparseable fails, with the parser's word as its error."""
    from redline.engine.validate import validate

    for group in plan.groups:
        if not group.ok:
            continue
        for change in group.changes:
            if change.after is None or not wanted(change.path):
                continue
            # Judged against what the path held before: nothing for a moved or copied file
            # that is new there, so an error carried over from its source (a ``.txt`` that
            # never had to parse) counts as introduced.
            group.validation.append(validate(change.path, change.before, change.after))
        failed = next((v for v in group.validation if v.failed), None)
        if failed is not None:
            group.error = failed.describe("patch")


def _tolerated(evidence: HunkEvidence) -> list[Tolerance]:
    """What placing a hunk accepted (engine.tolerated): its lines as the file has them
    otherwise than the patch quotes them, and an ``@@`` anchor not found."""
    if evidence.match_type == "exact" and evidence.anchor_found is not False:
        return []
    from redline.engine import tolerated

    lines = tuple(range(evidence.start_line, evidence.end_line + 1))
    out = []
    if evidence.anchor_found is False:
        out.append(tolerated.anchor_missing(lines or (evidence.start_line,)))
    if evidence.match_type != "exact":
        out += tolerated.lines_of(evidence.sent_text, evidence.matched_text, evidence.start_line)
    return out


def summarise(plan: PatchPlan, landing: Landing = "committed") -> Result:
    """The result of a planned patch. ``landing`` names what becomes of the groups that
    apply, in the result's field and its words: ``committed`` (git mode: a commit each)
    or ``written`` (embedded mode: written to the files, nothing committed)."""
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
            _tolerated(h.evidence),
        )
        for g in applied
        for h in g.hunks
    ]
    result = Result(
        "applied",
        not_applied=[_report(g) for g in failed],
        hunks=hunks,
        cleaned=invisible.describe(removed),
        diff="".join(diff(c) for c in changes) or None,
    )
    setattr(result, landing, [_report(g) for g in applied])
    if hunks:
        weakest = min(hunks, key=lambda h: h.confidence)
        result.match_type = weakest.match_type
        result.confidence = weakest.confidence
    paths = [p for g in plan.groups for p in g.paths]
    result.path = paths[0] if len(paths) == 1 else None
    _validation(plan, result)
    if not failed:
        result.status = "applied" if changes else "no_change"
        return result
    reasons = "; ".join(f"{', '.join(g.operations)}: {g.error}" for g in failed)
    groups = _count(len(failed), "file group", "file groups")
    if not applied:
        result.status = "failed"
        if all(g.unparseable for g in failed):
            _unparseable(failed, result)
        result.error = (
            f"apply_patch failed: {groups} not applied: {reasons}"
            if len(failed) > 1
            else f"apply_patch failed: {reasons}"
        )
        return result
    landed = _count(sum(len(g.operations) for g in applied), "change", "changes")
    result.status = "partially_applied"
    result.error = (
        f"apply_patch partially applied: {landed} {landing}, {groups} not applied: "
        f"{reasons}. The {landing} changes are in place; do not redo them."
    )
    return result


def _validation(plan: PatchPlan, result: Result) -> None:
    """The result's ``validation``: the first file that failed, else the one file checked."""
    reports = [v for g in plan.groups for v in g.validation]
    failing = next((v for v in reports if v.failed), None)
    if failing is not None:
        result.validation = failing.to_json()
        result.hint = failing.hint()
    elif len(reports) == 1:
        result.validation = reports[0].to_json()


def _unparseable(failed: list[GroupPlan], result: Result) -> None:
    """Nothing applied, every group for want of parsing: ``validation_failed``, with the
    evidence of how the hunks matched."""
    result.status = "validation_failed"
    matched = [h.evidence for g in failed for h in g.hunks]
    if matched:
        weakest = min(matched, key=lambda e: e.confidence)
        result.match_type, result.confidence = weakest.match_type, weakest.confidence


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
    validation = [v.to_json() for v in group.validation]
    if group.ok:
        return GroupReport(list(group.paths), list(group.operations), None, validation)
    status = (
        "rejected" if group.rejected else "validation_failed" if group.unparseable else "failed"
    )
    matched = [h.evidence for h in group.hunks]
    weakest = min(matched, key=lambda e: e.confidence) if matched else None
    return GroupReport(
        list(group.paths),
        list(group.operations),
        group.error,
        validation,
        status,
        weakest.match_type if weakest is not None else None,
        weakest.confidence if weakest is not None else None,
    )


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
