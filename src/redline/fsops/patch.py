"""apply_patch on a plain directory: snapshot, verify, write, roll back on failure."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from redline.engine.patch import apply_patch, changed_after_planning
from redline.engine.patch_plan import FileChange
from redline.engine.paths import checked_path
from redline.engine.plan import PatchOutcome
from redline.engine.result import Result
from redline.fsops import interrupts
from redline.fsops.atomic import TEMP_SUFFIX, NotRegular, read_regular
from redline.fsops.confine import confine, not_regular, relative_to_root
from redline.fsops.files import write_atomic
from redline.fsops.resources import explain, is_resource
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
    outcome = apply_patch(text, snapshot, validate, landing="written")
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
    undo = _Undo()
    with interrupts.writing():  # a signal waits: every group is written or rolled back
        try:
            for change in outcome.changes:
                mode = modes.get(change.origin) if change.origin else None
                _write(snapshot.path_of(change.path), change.after, undo, mode)
                written.append(change)
        except OSError as exc:
            undo.roll_back(snapshot, written, modes)
            failed_path = outcome.changes[len(written)].path
            return Result(
                "failed",
                path=failed_path,
                error=(
                    f"cannot write {failed_path}: {explain(exc, snapshot.path_of(failed_path))}. "
                    "This request's writes were rolled back and nothing changed"
                ),
            )
        except BaseException:
            undo.roll_back(snapshot, written, modes)
            raise  # after undoing this request's writes: the caller reports nothing written
        undo.done()
    return outcome.result


class _Undo:
    """What a request wrote, and how to take it back without writing a byte.

    Before a file is replaced or deleted, its inode gets a second name beside
    it (a hard link, ``.<name>.<random>.redline-tmp``): rolling back renames
    that name over the file, which needs no free space, so a disk that filled
    up half-way through a patch cannot keep it from being taken back. On a
    file system without hard links the old bytes are written back instead.
    """

    def __init__(self) -> None:
        self.kept: dict[Path, Path | None] = {}  # file -> its old inode's other name
        self.created: list[Path] = []  # files that did not exist
        self.made: list[Path] = []  # directories created for new files, parents first

    def keep(self, target: Path) -> None:
        if target in self.kept or target in self.created:
            return
        if not os.path.lexists(target):
            self.created.append(target)
            return
        for _ in range(100):
            backup = target.parent / f".{target.name}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
            try:
                os.link(target, backup, follow_symlinks=False)
            except FileExistsError:
                continue
            except OSError as exc:
                if is_resource(exc):
                    raise
                break  # no hard links here: the old bytes are written back
            self.kept[target] = backup
            return
        self.kept[target] = None

    def roll_back(
        self,
        snapshot: DirectorySnapshot,
        written: list[FileChange],
        modes: dict[str | None, int | None],
    ) -> None:
        befores = {snapshot.path_of(c.path): (c.path, c.before) for c in written}
        for target in reversed(self.created):
            target.unlink(missing_ok=True)
        for target, backup in self.kept.items():
            if backup is not None:
                _put_back(backup, target)
                continue
            path, before = befores.get(target, (None, None))
            if before is None:
                continue  # not written yet when the request stopped
            existed = target.exists()
            write_atomic(target, before)
            mode = modes.get(path)
            if not existed and mode is not None:
                os.chmod(target, mode)
        for directory in reversed(self.made):  # deepest first; one that is not empty stays
            with contextlib.suppress(OSError):
                directory.rmdir()

    def done(self) -> None:
        for backup in self.kept.values():
            if backup is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(backup)


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None


def _put_back(backup: Path, target: Path) -> None:
    """Give ``target`` its old inode again (the one ``backup`` also names)."""
    try:
        same = os.path.samefile(backup, target)
    except FileNotFoundError:
        same = False
    if same:  # never replaced (rename(2) would keep both names): only the backup goes
        os.unlink(backup)
    else:
        os.replace(backup, target)


def _write(target: Path, data: bytes | None, undo: _Undo, mode: int | None) -> None:
    undo.keep(target)
    if data is None:
        os.unlink(target)
        return
    missing: list[Path] = []
    parent = target.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    undo.made.extend(reversed(missing))
    target.parent.mkdir(parents=True, exist_ok=True)
    existed = target.exists()
    write_atomic(target, data)
    if not existed and mode is not None:
        os.chmod(target, mode)
