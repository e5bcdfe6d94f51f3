"""Where a request path points on disk, confined to the root: one walk for every mode.

:func:`locate` is what callers use: an absolute path inside the root made
relative (:func:`relative_to_root`), then the pure policy
(:func:`redline.engine.paths.checked_path`), then :func:`confine`, which walks
the path under the root one component at a time with ``lstat`` and refuses

- a symbolic link that resolves outside the root;
- a symbolic link that resolves into a ``.git`` directory (any spelling the
  policy refuses), so ``link -> .git`` cannot reach ``.git/config``;
- any git directory on the way, whatever its name: a folder holding a
  repository's data (``HEAD`` with ``objects/`` and ``refs/``, or a linked
  worktree's ``HEAD`` and ``commondir``). That is what a ``.git`` *file*
  (``gitdir: …``) of a nested repository, a submodule or a worktree points to,
  and what ``git init --separate-git-dir`` creates;
- an existing target that is neither a regular file nor a directory (a FIFO,
  a socket, a device);
- with ``follow_links=False``, any symbolic link at all.

Symbolic links inside the root: an embedded edit follows them (the edit lands
in the link's target, as an editor would write it); embedded apply_patch and git
mode refuse them, because they add, delete and move files — through a link
those would act on its target, not on the link — and git mode commits the path
as a blob where a link is a different kind of entry. Both are the same walk;
``follow_links`` is the only difference.

The walk works on strings with ``os.lstat`` (no ``pathlib.resolve``): an edit
stream runs it for every request.
"""

from __future__ import annotations

import os
import stat

from redline.engine.errors import RequestError
from redline.engine.paths import GIT_REFUSAL, checked_path, is_git_name, strip_root


def locate(root: str | os.PathLike[str], path: str, *, follow_links: bool) -> tuple[str, str]:
    """The relative path a request's ``path`` names under ``root``, and its absolute target.

    Raises RequestError (field ``"path"``) when the policy or the confinement refuses it.
    """
    relative = checked_path(relative_to_root(root, path))
    return relative, confine(root, relative, follow_links=follow_links)


def relative_to_root(root: str | os.PathLike[str], path: str) -> str:
    """``path`` relative to ``root`` when it is an absolute path inside it; else ``path``.

    Agents such as Claude Code send absolute paths. The root may have been given
    as a relative path or through a symbolic link, and the path may spell it
    either way: it is compared with the root as given (made absolute) and as
    resolved, and then by its resolved directory. Anything else is returned as
    it is, for the policy to refuse.
    """
    if not path.startswith("/"):
        return path
    try:
        given = os.path.abspath(root)
        for base in (given, os.path.realpath(given)):
            inside = strip_root(path, base)
            if inside is not None:
                return inside
        if ".." in path.split("/"):
            return path  # not resolved: '..' is refused however it is spelt
        # The path may reach the root through a link of its own: compare its folder, resolved.
        folder, name = os.path.split(path.rstrip("/"))
        inside = strip_root(os.path.join(os.path.realpath(folder), name), os.path.realpath(given))
    except (OSError, ValueError):  # a NUL byte, a lone surrogate: the policy says which
        return path
    if inside is None:
        return path
    return inside + "/" if path.endswith("/") and inside != "." else inside


def confine(root: str | os.PathLike[str], relative: str, *, follow_links: bool) -> str:
    """The absolute path ``relative`` names under ``root``; it need not exist.

    ``relative`` has passed :func:`~redline.engine.paths.checked_path`. The
    result lies under the root's resolved path; with ``follow_links`` it is the
    target of any symbolic link on the way.
    """
    base = os.path.realpath(root)
    parts = relative.split("/")
    _refuse_git_dir(base, base, relative)
    current = base
    for i, part in enumerate(parts):
        here = os.path.join(current, part)
        try:
            info = os.lstat(here)
        except OSError:  # missing (or unreadable): nothing below it can be a link
            return os.path.join(here, *parts[i + 1 :])
        last = i == len(parts) - 1
        if stat.S_ISLNK(info.st_mode):
            here = _through_link(base, here, relative, last, follow_links)
            try:
                info = os.lstat(here)
            except OSError:  # a dangling link: the file it names may be created
                return os.path.join(here, *parts[i + 1 :])
            if stat.S_ISLNK(info.st_mode):  # realpath stops where links go round in a loop
                raise RequestError(
                    f"path {relative!r} goes through symbolic links that point at each other "
                    "in a loop; name the file by its own path",
                    "path",
                )
        if stat.S_ISDIR(info.st_mode):
            _refuse_git_dir(base, here, relative)
        elif last and not stat.S_ISREG(info.st_mode):
            raise not_regular(relative)
        current = here
    return current


def _through_link(base: str, link: str, relative: str, last: bool, follow: bool) -> str:
    """Where the symbolic link ``link`` leads; refuse a link out of the root or into git's data."""
    name = _inside(base, link)
    what = "is" if last else "goes through"
    target = os.path.realpath(link)
    inside = _inside(base, target)
    if inside is None:
        raise RequestError(
            f"path {relative!r} resolves outside the root through a symbolic link "
            f"({name!r}); redline edits only files inside the root — name a file inside it",
            "path",
        )
    parts = inside.split("/") if inside else []
    if any(is_git_name(part) for part in parts):
        raise RequestError(
            f"path {relative!r} {what} a symbolic link ({name!r}) that leads into .git "
            f"({inside!r}), {GIT_REFUSAL}",
            "path",
        )
    current = base
    for part in parts:  # the folders down to the target, and the target
        current = os.path.join(current, part)
        _refuse_git_dir(base, current, relative)
    if not follow:
        raise RequestError(
            f"path {relative!r} {what} a symbolic link ({name!r}); only regular files are "
            "changed here — name the file the link points to by its own path",
            "path",
        )
    return target


def _refuse_git_dir(base: str, directory: str, relative: str) -> None:
    if _is_git_dir(directory):
        where = _inside(base, directory) or "the root"
        raise RequestError(
            f"path {relative!r} is inside a git directory ({where!r} holds a repository's "
            "own data, which a .git file points to), which redline never edits. Change that "
            "repository with git commands, and edit only files in its worktree",
            "path",
        )


def _is_git_dir(directory: str) -> bool:
    """Whether ``directory`` holds a repository's data, as git's is_git_directory tells."""
    if not os.path.lexists(os.path.join(directory, "HEAD")):
        return False  # the common case: one failed lstat per folder
    if os.path.isfile(os.path.join(directory, "commondir")):
        return True  # a linked worktree's private git directory
    return os.path.isdir(os.path.join(directory, "objects")) and os.path.isdir(
        os.path.join(directory, "refs")
    )


def _inside(base: str, path: str) -> str | None:
    """``path`` (resolved) relative to ``base`` ('' for the root itself); None when outside."""
    if path == base:
        return ""
    prefix = base if base.endswith("/") else base + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def not_regular(relative: str) -> RequestError:
    """The refusal of a path that names a FIFO, a socket or a device (never read)."""
    return RequestError(
        f"path {relative!r} is not a regular file (a FIFO, socket or device); redline edits "
        "regular files only — name a regular file, or remove that one first",
        "path",
    )
