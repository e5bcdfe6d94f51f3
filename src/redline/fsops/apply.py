"""Apply an edit request to files under a root directory."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from redline.engine.edit import EditRequest, apply_edit
from redline.engine.errors import RequestError
from redline.engine.paths import checked_path
from redline.engine.result import Result
from redline.fsops.atomic import NotRegular, read_regular
from redline.fsops.confine import not_regular, relative_to_root
from redline.fsops.files import resolve, write_atomic

if TYPE_CHECKING:
    from redline.engine.patch import PatchRequest
    from redline.engine.policy import Policy


def apply_in_directory(
    root: Path,
    request: EditRequest | PatchRequest,
    *,
    dry_run: bool = False,
    policy: Policy | None = None,
) -> Result:
    """Run ``request`` against the files under ``root``; write unless ``dry_run``.

    A file is validated (engine.validate) when the request asks for it or
    ``policy`` (the root's, read by the caller) names its path.
    """
    if isinstance(request, EditRequest):
        result = _edit(root, request, dry_run, policy)
    else:  # the patch machinery loads only for patches: a stream of edits starts faster
        from redline.fsops.patch import apply_patch_in_directory

        validate = policy.validates if policy is not None and policy.validate else None
        if request.validate:
            validate = _always
        result = apply_patch_in_directory(root, request.patch, dry_run=dry_run, validate=validate)
    result.dry_run = dry_run
    return result


def _always(path: str) -> bool:
    return True


def _edit(root: Path, given: EditRequest, dry_run: bool, policy: Policy | None) -> Result:
    # An absolute path inside the root is used, and reported, relative to it; any
    # accepted spelling is reported as the policy normalises it.
    request = replace(given, path=relative_to_root(root, given.path))
    try:
        request = replace(request, path=checked_path(request.path))
        target = resolve(root, request.path)
        data = read_regular(target)
    except NotRegular:  # swapped for a FIFO or a device since it was checked
        return Result("invalid", path=request.path, error=str(not_regular(request.path)))
    except RequestError as exc:
        return Result("invalid", path=request.path, error=str(exc))
    except OSError as exc:
        return Result(
            "invalid",
            path=request.path,
            error=f"cannot read {request.path!r}: {exc.strerror}; check its permissions",
        )
    if not request.validate and policy is not None and policy.validates(request.path):
        request = replace(request, validate=True)
    outcome = apply_edit(data, request)
    if outcome.data is not None and not dry_run:
        try:
            write_atomic(target, outcome.data)
        except OSError as exc:
            return Result(
                "failed",
                path=request.path,
                error=f"cannot write {request.path!r}: {exc.strerror}; the file is unchanged",
            )
    return outcome.result
