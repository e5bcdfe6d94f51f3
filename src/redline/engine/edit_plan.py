"""The edit tool planned against a snapshot: one file group, as a write or a delete is
(engine.write), so whoever lands a plan — on disk (fsops) or as commits (gitops) — lands
an edit the same way, with the same checks.

The file is read from the snapshot (a path it refuses is ``invalid``, with its reason);
the matching and the new bytes are engine.edit's. ``validate`` names the paths whose
edits must leave them parseable (Policy.validated): the edit asks for validation there.
"""

from __future__ import annotations

from collections.abc import Callable

from redline.engine.edit import EditRequest, apply_edit
from redline.engine.errors import RequestError
from redline.engine.paths import checked_path
from redline.engine.plan import FileChange, GroupPlan, PatchOutcome, PatchPlan, Snapshot
from redline.engine.read import is_a_directory, no_such_file
from redline.engine.records import replace
from redline.engine.result import Result

Missing = Callable[[str, bool], str]  # the refusal of a path with no file (True: a folder)


def plan_edit(
    request: EditRequest,
    snapshot: Snapshot,
    validate: Callable[[str], bool] | None = None,
    missing: Missing | None = None,
) -> PatchOutcome:
    """Plan ``request`` against ``snapshot``: a plan of one group (none when refused or
    when nothing changes). ``missing`` words the refusal of a path that names no file."""
    try:
        path = checked_path(snapshot.relative(request.path))
        data = snapshot.read(path)
    except RequestError as exc:
        return PatchOutcome(Result("invalid", path=request.path, error=str(exc)), [])
    if data is None:
        folder = snapshot.is_dir(path)
        error = (missing or _missing)(request.path, folder)
        return PatchOutcome(Result("invalid", path=request.path, error=error), [])
    if not request.validate and validate is not None and validate(path):
        request = replace(request, validate=True)
    outcome = apply_edit(data, request)
    if outcome.data is None:
        return PatchOutcome(outcome.result, [])
    change = FileChange(path, data, outcome.data)
    group = GroupPlan((path,), (f"edit {path}",), (change,))
    if outcome.validation is not None:
        group.validation.append(outcome.validation)
    return PatchOutcome(outcome.result, [change], PatchPlan([group]))


def _missing(path: str, folder: bool) -> str:
    return is_a_directory(path, "edit") if folder else no_such_file(path, "edit")
