"""apply_patch on a plain directory: snapshot, verify, write, roll back on failure."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from redline.engine.patch import PatchOutcome, apply_patch, changed_after_planning
from redline.engine.patch_plan import FileChange
from redline.engine.paths import checked_path
from redline.engine.result import Result
from redline.fsops.atomic import NotRegular, read_regular
from redline.fsops.confine import confine, not_regular, relative_to_root
from redline.fsops.files import write_atomic
from redline.fsops.settings import SettingsGuard, settings_refusal


class DirectorySnapshot:
    """The files under ``root`` as first read; each path is read once.

    Symbolic links are refused, not followed: adding, deleting or moving
    "through" a link would change its target instead of the link.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._seen: dict[str, bytes | None] = {}

    def relative(self, path: str) -> str:
        return relative_to_root(self.root, path)

    def path_of(self, path: str) -> Path:
        return Path(confine(self.root, checked_path(path), follow_links=False))

    def read(self, path: str) -> bytes | None:
        if path not in self._seen:
            self._seen[path] = self.read_now(path)
        return self._seen[path]

    def read_now(self, path: str) -> bytes | None:
        target = self.path_of(path)
        try:
            return read_regular(target, follow_links=False)
        except NotRegular:  # swapped for a FIFO or a device since it was checked
            raise not_regular(path) from None
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def is_dir(self, path: str) -> bool:
        return self.path_of(path).is_dir()


def apply_patch_in_directory(
    root: Path,
    text: str,
    *,
    dry_run: bool = False,
    before_write: Callable[[], None] | None = None,
    validate: Callable[[str], bool] | None = None,
    settings: SettingsGuard | None = None,
) -> Result:
    """Plan ``text`` against ``root`` and write the groups that apply.

    ``before_write`` runs between planning and writing (a seam for tests of the
    changed-after-planning check); ``validate`` names the paths that must still
    parse (engine.patch.apply_patch); ``settings`` may refuse a change of redline's
    own settings files (see :func:`land`).
    """
    snapshot = DirectorySnapshot(root)
    outcome = apply_patch(text, snapshot, validate)
    return land(snapshot, outcome, dry_run=dry_run, before_write=before_write, settings=settings)


def land(
    snapshot: DirectorySnapshot,
    outcome: PatchOutcome,
    *,
    dry_run: bool = False,
    before_write: Callable[[], None] | None = None,
    settings: SettingsGuard | None = None,
) -> Result:
    """Write the planned ``outcome`` (a patch's groups, or a write's or delete's one):
    nothing if any of its files changed since planning; all or, on an error, nothing.
    Nothing either, ``rejected``, when ``settings`` refuses what it would do to
    redline's own settings files (a dry run is refused alike)."""
    if settings is not None and outcome.changes:
        planned = [(snapshot.path_of(c.path), c.after) for c in outcome.changes]
        refused = settings_refusal(snapshot.root, settings, planned)
        if refused is not None:
            return Result("rejected", path=refused[0], error=refused[1])
    if dry_run or not outcome.changes:
        return outcome.result
    if before_write is not None:
        before_write()
    for change in outcome.changes:
        if snapshot.read_now(change.path) != change.before:
            return changed_after_planning(change.path)
    # File modes as they are now: a moved file keeps its source's, a restored one its own.
    modes: dict[str | None, int | None] = {
        p: _mode(snapshot.path_of(p)) for c in outcome.changes for p in (c.path, c.origin) if p
    }
    written: list[FileChange] = []
    made: list[Path] = []  # directories created for new files, parents first
    try:
        for change in outcome.changes:
            mode = modes.get(change.origin) if change.origin else None
            _write(snapshot.path_of(change.path), change.after, made, mode)
            written.append(change)
    except BaseException as exc:
        _roll_back(snapshot, written, made, modes)
        if not isinstance(exc, OSError):
            raise  # after undoing this request's writes: the caller reports nothing written
        failed_path = outcome.changes[len(written)].path
        return Result(
            "failed",
            path=failed_path,
            error=(
                f"cannot write {failed_path}: {exc.strerror}; this request's writes were rolled "
                "back and nothing changed. Fix the file's permissions or free space, then retry."
            ),
        )
    return outcome.result


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None


def _write(target: Path, data: bytes | None, made: list[Path], mode: int | None) -> None:
    if data is None:
        os.unlink(target)
        return
    missing: list[Path] = []
    parent = target.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    made.extend(reversed(missing))
    target.parent.mkdir(parents=True, exist_ok=True)
    existed = target.exists()
    write_atomic(target, data)
    if not existed and mode is not None:
        os.chmod(target, mode)


def _roll_back(
    snapshot: DirectorySnapshot,
    written: list[FileChange],
    made: list[Path],
    modes: dict[str | None, int | None],
) -> None:
    for change in reversed(written):
        target = snapshot.path_of(change.path)
        if change.before is None:
            target.unlink(missing_ok=True)
        else:
            existed = target.exists()
            write_atomic(target, change.before)
            mode = modes.get(change.path)
            if not existed and mode is not None:
                os.chmod(target, mode)
    for directory in reversed(made):  # deepest first; one that is not empty stays
        with contextlib.suppress(OSError):
            directory.rmdir()
