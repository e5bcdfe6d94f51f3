"""Apply a request to files under a root directory."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from redline.engine.edit import EditRequest
from redline.engine.edit_plan import plan_edit
from redline.engine.errors import RequestError
from redline.engine.paths import checked_path
from redline.engine.read import ReadRequest, plan_read, unreadable
from redline.engine.records import replace
from redline.engine.result import Result
from redline.fsops import interrupts
from redline.fsops.atomic import NotRegular, read_regular
from redline.fsops.confine import confine, locate, not_regular, relative_to_root
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

    Every tool that changes files is planned by the engine against a snapshot of
    ``root`` and its plan landed here. With ``behind``, an edit reads and holds its
    file there instead (a stream that writes the held files before it answers);
    other requests need it flushed. A file is validated (engine.validate) when the
    request asks for it or ``policy`` (the root's, read by the caller) names its
    path. ``settings`` may refuse a change of redline's own settings files
    (fsops.patch.land).
    """
    if isinstance(request, EditRequest):
        result = _edit(root, request, dry_run, behind, _validated(request, policy), settings)
    elif isinstance(request, ReadRequest):
        result = read_in_directory(root, request)
    else:  # the patch machinery loads only for the tools that need it: edits start faster
        from redline.engine.patch import PatchRequest
        from redline.engine.write import WriteRequest, plan_file
        from redline.fsops.patch import DirectorySnapshot, apply_patch_in_directory, land

        validate = _validated(request, policy)
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


def _validated(request: Request, policy: Policy | None) -> Callable[[str], bool] | None:
    """Which paths must still parse (Policy.validated; without a policy, those the
    request asks for)."""
    asked = bool(getattr(request, "validate", False))
    if policy is not None:
        return policy.validated(asked)
    return _always if asked else None


def _always(path: str) -> bool:
    return True


class _EditTarget:
    """The file an edit plans against, read as an edit reads it: through symbolic links
    that stay inside ``root``, and from the write-behind ``behind`` when there is one."""

    def __init__(self, root: Path, behind: WriteBehind | None) -> None:
        self.root = root
        self.behind = behind
        self.target = root

    def relative(self, path: str) -> str:
        return relative_to_root(self.root, path)

    def read(self, path: str) -> bytes:
        try:
            self.target = resolve(self.root, path)
            if self.behind is not None:
                return self.behind.read(self.target)
            return read_regular(self.target)
        except NotRegular:  # swapped for a FIFO or a device since it was checked
            raise not_regular(path) from None
        except OSError as exc:
            raise RequestError(unreadable(path, exc), "path") from None

    def is_dir(self, path: str) -> bool:
        return False  # never asked: ``read`` refuses a folder or a missing file


def _edit(
    root: Path,
    given: EditRequest,
    dry_run: bool,
    behind: WriteBehind | None,
    validate: Callable[[str], bool] | None,
    settings: SettingsGuard | None = None,
) -> Result:
    # An absolute path inside the root is used, and reported, relative to it; any
    # accepted spelling is reported as the policy normalises it.
    request = replace(given, path=relative_to_root(root, given.path))
    with contextlib.suppress(RequestError):  # refused when planned, with the path as sent
        request = replace(request, path=checked_path(request.path))
    file = _EditTarget(root, behind)
    outcome = plan_edit(request, file, validate)
    if not outcome.changes:
        return outcome.result
    after = outcome.changes[0].after
    assert after is not None
    target = file.target
    if settings is not None:
        from redline.fsops.settings import settings_refusal

        refused = settings_refusal(root, settings, [(target, after)])
        if refused is not None:
            return Result("rejected", path=request.path, error=refused[1])
    if not dry_run and behind is not None:
        # Held is as good as written: a stream stopped by a signal writes what it holds
        # (cli.apply_stream), so the signal waits for this edit's answer too.
        with interrupts.writing():
            behind.hold(target, request.path, after)
    elif not dry_run:
        try:
            with interrupts.writing():
                write_atomic(target, after)
        except OSError as exc:
            return Result(
                "failed",
                path=request.path,
                error=f"cannot write {request.path!r}: {explain(exc, target)}. "
                "The file is unchanged",
            )
    return outcome.result


def read_in_directory(root: Path, request: ReadRequest) -> Result:
    """The ``read`` result for ``request``, planned by the engine (engine.read.plan_read)
    against the files under ``root``; nothing is written."""
    return plan_read(request, _ReadFiles(root))


class _ReadFiles:
    """The files under ``root`` as a read sees them: through symbolic links that stay inside
    it, as an edit reads them."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def relative(self, path: str) -> str:
        return relative_to_root(self.root, path)

    def read(self, path: str) -> bytes | None:
        try:
            _, target = locate(self.root, path, follow_links=True)
            return read_regular(target)
        except NotRegular:  # swapped for a FIFO or a device since it was checked
            raise not_regular(path) from None
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            raise RequestError(unreadable(path, exc), "path") from None

    def is_dir(self, path: str) -> bool:
        try:
            return Path(confine(self.root, path, follow_links=True)).is_dir()
        except (RequestError, OSError):
            return False
