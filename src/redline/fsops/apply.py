"""Apply a request to files under a root directory."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from redline.engine.edit import EditRequest, apply_edit
from redline.engine.errors import RequestError
from redline.engine.paths import checked_path
from redline.engine.read import (
    ReadRequest,
    is_a_directory,
    no_such_file,
    read_text,
    unreadable,
)
from redline.engine.result import Result
from redline.fsops import interrupts
from redline.fsops.atomic import NotRegular, read_regular
from redline.fsops.confine import locate, not_regular, relative_to_root
from redline.fsops.files import resolve, write_atomic
from redline.fsops.resources import explain

if TYPE_CHECKING:
    from redline.engine.policy import Policy
    from redline.engine.requests import Request
    from redline.fsops.behind import WriteBehind
    from redline.fsops.settings import SettingsGuard


def apply_in_directory(
    root: Path,
    request: Request,
    *,
    dry_run: bool = False,
    behind: WriteBehind | None = None,
    policy: Policy | None = None,
    settings: SettingsGuard | None = None,
) -> Result:
    """Run ``request`` against the files under ``root``; write unless ``dry_run``.

    With ``behind``, an edit reads and holds its file there instead (a stream
    that writes the held files before it answers); other requests need it flushed.
    A file is validated (engine.validate) when the request asks for it or
    ``policy`` (the root's, read by the caller) names its path. ``settings`` may
    refuse a change of redline's own settings files (fsops.patch.land).
    """
    if isinstance(request, EditRequest):
        result = _edit(root, request, dry_run, behind, policy, settings)
    elif isinstance(request, ReadRequest):
        result = read_in_directory(root, request)
    else:  # the patch machinery loads only for the tools that need it: edits start faster
        from redline.engine.patch import PatchRequest
        from redline.engine.write import WriteRequest, plan_file
        from redline.fsops.patch import DirectorySnapshot, apply_patch_in_directory, land

        validate = policy.validates if policy is not None and policy.validate else None
        if getattr(request, "validate", False):
            validate = _always
        if isinstance(request, PatchRequest):
            result = apply_patch_in_directory(
                root, request.patch, dry_run=dry_run, validate=validate, settings=settings
            )
        else:
            snapshot = DirectorySnapshot(root)
            wanted = validate if isinstance(request, WriteRequest) else None
            planned = plan_file(request, snapshot, wanted)
            result = land(snapshot, planned, dry_run=dry_run, settings=settings)
    result.dry_run = dry_run
    return result


def _always(path: str) -> bool:
    return True


def _edit(
    root: Path,
    given: EditRequest,
    dry_run: bool,
    behind: WriteBehind | None,
    policy: Policy | None,
    settings: SettingsGuard | None = None,
) -> Result:
    # An absolute path inside the root is used, and reported, relative to it; any
    # accepted spelling is reported as the policy normalises it.
    request = replace(given, path=relative_to_root(root, given.path))
    try:
        request = replace(request, path=checked_path(request.path))
        target = resolve(root, request.path)
        data = behind.read(target) if behind is not None else read_regular(target)
    except NotRegular:  # swapped for a FIFO or a device since it was checked
        return Result("invalid", path=request.path, error=str(not_regular(request.path)))
    except RequestError as exc:
        return Result("invalid", path=request.path, error=str(exc))
    except OSError as exc:
        return Result("invalid", path=request.path, error=unreadable(request.path, exc))
    if not request.validate and policy is not None and policy.validates(request.path):
        request = replace(request, validate=True)
    outcome = apply_edit(data, request)
    if outcome.data is not None and settings is not None:
        from redline.fsops.settings import settings_refusal

        refused = settings_refusal(root, settings, [(target, outcome.data)])
        if refused is not None:
            return Result("rejected", path=request.path, error=refused[1])
    if outcome.data is not None and not dry_run and behind is not None:
        behind.hold(target, request.path, outcome.data)
    elif outcome.data is not None and not dry_run:
        try:
            with interrupts.writing():
                write_atomic(target, outcome.data)
        except OSError as exc:
            return Result(
                "failed",
                path=request.path,
                error=f"cannot write {request.path!r}: {explain(exc, target)}. "
                "The file is unchanged",
            )
    return outcome.result


def read_in_directory(root: Path, request: ReadRequest) -> Result:
    """The ``read`` result for ``request``: the file under ``root``, through symbolic links
    that stay inside it (as an edit reads it); nothing is written."""
    path = relative_to_root(root, request.path)
    try:
        path, target = locate(root, path, follow_links=True)
        data = read_regular(target)
    except RequestError as exc:
        return Result("invalid", path=path, error=str(exc))
    except NotRegular:  # swapped for a FIFO or a device since it was checked
        return Result("invalid", path=path, error=str(not_regular(path)))
    except IsADirectoryError:
        return Result("invalid", path=path, error=is_a_directory(path, "read"))
    except (FileNotFoundError, NotADirectoryError):
        return Result("invalid", path=path, error=no_such_file(path, "read"))
    except OSError as exc:
        return Result("invalid", path=path, error=unreadable(path, exc))
    return read_text(data, request, path)
