"""A session's scratch worktree on disk: reading entries, writing files, its index."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

import pygit2

from redline.engine.errors import RequestError
from redline.engine.paths import checked_path
from redline.fsops.atomic import (
    TEMP_SUFFIX,
    NotRegular,
    fsync_dir,
    read_regular,
    remove_temporaries,
    replace_file,
)
from redline.fsops.confine import locate, relative_to_root
from redline.gitops.objects import write_blob
from redline.gitops.trees import EXECUTABLE, FILE, LINK, Entry
from redline.gitops.writer import PLAIN, Writer


def check_path(root: Path, relative: str) -> str:
    """The relative path a git-mode request path names in the worktree ``root``.

    The one path policy and confinement of every mode
    (:func:`redline.fsops.confine.locate`): an absolute path inside the
    worktree is made relative; '..', anything in a .git directory or a git
    directory a .git file points to, and any symbolic link on the way (a
    commit records a link as a link, not as the file it points to) are refused.
    """
    path, _target = locate(root, relative, follow_links=False)
    return path


def request_path(root: Path, path: str) -> str:
    """How a result names the request path ``path``: relative to the worktree ``root`` and
    normalised when the policy accepts it; else as given, for :func:`check_path` to refuse."""
    try:
        return checked_path(relative_to_root(root, path))
    except RequestError:
        return path


def entry_on_disk(
    repo: pygit2.Repository, root: Path, path: str, committed: Entry | None = None
) -> Entry | None:
    """The blob entry the file at ``path`` would have if committed now.

    Its blob is written to ``repo`` unless the entry is ``committed`` (the
    blob is there already): hashing alone creates no object file.
    """
    full = root / path
    try:
        info = full.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(info.st_mode):
        data, mode = os.readlink(full).encode(), LINK
    elif stat.S_ISREG(info.st_mode):
        try:
            data = read_regular(full, follow_links=False)
        except (NotRegular, FileNotFoundError):  # replaced since the lstat: look next time
            return None
        mode = EXECUTABLE if info.st_mode & stat.S_IXUSR else FILE
    else:
        return None
    entry = Entry(pygit2.hash(data), mode)
    if entry != committed:
        write_blob(repo, data)
    return entry


def read_bytes(root: Path, path: str) -> bytes | None:
    """The regular file's bytes; None when there is none (missing, a folder, a FIFO...)."""
    try:
        return read_regular(root / path, follow_links=False)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, NotRegular):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symbolic link: not the file that was planned
            return None
        raise


class WorktreeFiles:
    """The files of the worktree ``root`` as they are on disk now, for a read (engine.read):
    what the agent sees there, changes not yet committed included — not the committed
    tree. The same path policy as every other request (:func:`check_path`: no symbolic
    links, nothing in git's data)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def relative(self, path: str) -> str:
        return relative_to_root(self.root, path)

    def read(self, path: str) -> bytes | None:
        from redline.engine.read import unreadable

        checked = check_path(self.root, path)
        try:
            return read_bytes(self.root, checked)
        except OSError as exc:
            raise RequestError(unreadable(checked, exc), "path") from None

    def is_dir(self, path: str) -> bool:
        return (self.root / path).is_dir()


def write_files(
    repo: pygit2.Repository,
    root: Path,
    files: Mapping[str, Entry | None],
    writer: Writer = PLAIN,
) -> None:
    """Make the worktree hold ``files`` (None deletes), each replaced atomically.

    Modes are what git's checkout gives: 0o666 or 0o777 less the umask. With
    ``writer.durability.refs`` each file is fsynced before it replaces the old
    one and its folder after (the journal is cleared only then: gitops.publish).
    """
    durable = writer.durability.refs
    folders: set[Path] = set()
    for path, entry in files.items():
        target = root / path
        if entry is None:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            _prune_empty_dirs(root, target.parent)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        blob = repo[entry.oid]
        assert isinstance(blob, pygit2.Blob)
        if entry.mode == LINK:
            tmp = target.parent / f".{target.name}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
            os.symlink(blob.data.decode(), tmp)
            try:
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
            folders.add(target.parent)
            continue
        mode = 0o777 if entry.mode == EXECUTABLE else 0o666
        replace_file(target, blob.data, mode, open_new=writer.open_new, durable=durable)
        folders.add(target.parent)
    if durable:
        for folder in folders:
            fsync_dir(folder)


def remove_temp_files(root: Path, paths: Iterable[str]) -> None:
    """Remove the temporary files an interrupted :func:`write_files` left beside ``paths``."""
    for path in paths:
        remove_temporaries(root / path)


def _prune_empty_dirs(root: Path, folder: Path) -> None:
    while folder != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def update_index(worktree_repo: pygit2.Repository, paths: list[str]) -> None:
    """Stage ``paths`` as they are on disk now, so ``git status`` shows them clean."""
    index = worktree_repo.index
    index.read(force=False)
    root = Path(worktree_repo.workdir)
    for path in paths:
        try:
            kind = stat.S_IFMT(os.lstat(root / path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            kind = None
        # Only what git can track: a FIFO or a device would block or never end a read,
        # and is committed as the deletion of the file that was there (entry_on_disk).
        if kind in (stat.S_IFREG, stat.S_IFLNK):
            index.add(path)
        else:
            with contextlib.suppress(OSError, KeyError, pygit2.GitError):
                index.remove(path)
    index.write()
