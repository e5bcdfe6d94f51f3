"""A session's scratch worktree on disk: reading entries, writing files, its index."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

import pygit2

from redline.engine.errors import RequestError
from redline.fsops.atomic import TEMP_SUFFIX, remove_temporaries, replace_file
from redline.gitops.objects import write_blob
from redline.gitops.trees import EXECUTABLE, FILE, LINK, Entry
from redline.gitops.writer import PLAIN, Writer


def check_path(root: Path, relative: str) -> str:
    """The normalised form of a request path; refuse paths that leave the worktree.

    Refused: absolute paths, '..', anything under .git, and paths that pass
    through a symbolic link (a link could point anywhere).
    """
    if not relative or "\x00" in relative or relative.endswith(("/", "\\")):
        raise RequestError(f"path {relative!r} does not name a file; give a relative path", "path")
    pure = PurePosixPath(relative.replace("\\", "/"))
    if pure.is_absolute() or (len(relative) > 1 and relative[1] == ":"):
        raise RequestError(
            f"path {relative!r} is absolute; give it relative to the session worktree", "path"
        )
    parts = [p for p in pure.parts if p != "."]
    if ".." in parts:
        raise RequestError(f"path {relative!r} leaves the worktree; '..' is not allowed", "path")
    if not parts:
        raise RequestError(f"path {relative!r} does not name a file", "path")
    if parts[0].lower() == ".git":
        raise RequestError(f"path {relative!r} is inside .git, which redline never edits", "path")
    current = root
    for i, part in enumerate(parts):
        current = current / part
        if current.is_symlink():
            what = "is" if i == len(parts) - 1 else "goes through"
            raise RequestError(
                f"path {relative!r} {what} a symbolic link; edit the file it points to "
                "by its own path inside the worktree",
                "path",
            )
    return "/".join(parts)


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
        data = full.read_bytes()
        mode = EXECUTABLE if info.st_mode & stat.S_IXUSR else FILE
    else:
        return None
    entry = Entry(pygit2.hash(data), mode)
    if entry != committed:
        write_blob(repo, data)
    return entry


def read_bytes(root: Path, path: str) -> bytes | None:
    try:
        return (root / path).read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def write_files(
    repo: pygit2.Repository,
    root: Path,
    files: Mapping[str, Entry | None],
    writer: Writer = PLAIN,
) -> None:
    """Make the worktree hold ``files`` (None deletes), each replaced atomically.

    Modes are what git's checkout gives: 0o666 or 0o777 less the umask.
    """
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
            continue
        mode = 0o777 if entry.mode == EXECUTABLE else 0o666
        replace_file(target, blob.data, mode, open_new=writer.open_new)


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
        if os.path.lexists(root / path):
            index.add(path)
        else:
            with contextlib.suppress(OSError, KeyError, pygit2.GitError):
                index.remove(path)
    index.write()
