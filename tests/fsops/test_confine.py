"""fsops.confine: the one walk that keeps a checked path inside the root and out of git's data.

Real directories, real symbolic links, real repositories made with git.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from redline.engine.errors import RequestError
from redline.fsops.confine import confine, locate, relative_to_root


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def separate_git_dir(root: Path) -> None:
    """A nested repository whose `.git` file points at `store/nested.git` inside the root."""
    (root / "store").mkdir()
    git(root, "init", "-q", "--separate-git-dir", str(root / "store" / "nested.git"), "nested")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    git(root, "init", "-q")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    return root


def refused(root: Path, relative: str, *, follow_links: bool) -> str:
    with pytest.raises(RequestError) as info:
        confine(root, relative, follow_links=follow_links)
    assert info.value.field == "path"
    return str(info.value)


BOTH = pytest.mark.parametrize("follow_links", [True, False], ids=["follow", "refuse"])


# --- accepted -----------------------------------------------------------------------------


@BOTH
def test_plain_paths_resolve_under_the_resolved_root(root: Path, follow_links: bool) -> None:
    base = os.path.realpath(root)
    assert confine(root, "a.txt", follow_links=follow_links) == f"{base}/a.txt"
    assert confine(root, "pkg/mod.py", follow_links=follow_links) == f"{base}/pkg/mod.py"
    # Missing files and folders are fine: apply_patch creates them.
    assert confine(root, "new/dir/x.py", follow_links=follow_links) == f"{base}/new/dir/x.py"
    # A file where a folder is expected: the caller finds nothing there.
    assert confine(root, "a.txt/x", follow_links=follow_links) == f"{base}/a.txt/x"


def test_a_link_inside_the_root_is_followed_or_refused(root: Path) -> None:
    (root / "alias.py").symlink_to("pkg/mod.py")
    (root / "dirlink").symlink_to("pkg", target_is_directory=True)
    base = os.path.realpath(root)
    assert confine(root, "alias.py", follow_links=True) == f"{base}/pkg/mod.py"
    assert confine(root, "dirlink/mod.py", follow_links=True) == f"{base}/pkg/mod.py"
    assert refused(root, "alias.py", follow_links=False) == (
        "path 'alias.py' is a symbolic link ('alias.py'); only regular files are changed "
        "here — name the file the link points to by its own path"
    )
    assert "path 'dirlink/mod.py' goes through a symbolic link ('dirlink')" in refused(
        root, "dirlink/mod.py", follow_links=False
    )


def test_a_root_given_through_a_link(root: Path, tmp_path: Path) -> None:
    link = tmp_path / "root-link"
    link.symlink_to(root, target_is_directory=True)
    assert confine(link, "a.txt", follow_links=False) == f"{os.path.realpath(root)}/a.txt"


def test_a_dangling_link_names_a_file_that_may_be_created(root: Path) -> None:
    (root / "later.py").symlink_to("pkg/later.py")
    base = os.path.realpath(root)
    assert confine(root, "later.py", follow_links=True) == f"{base}/pkg/later.py"


# --- refused ------------------------------------------------------------------------------


@BOTH
def test_a_link_out_of_the_root(root: Path, tmp_path: Path, follow_links: bool) -> None:
    (root / "escape.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (root / "escape_dir").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert refused(root, "escape.txt", follow_links=follow_links) == (
        "path 'escape.txt' resolves outside the root through a symbolic link ('escape.txt'); "
        "redline edits only files inside the root — name a file inside it"
    )
    message = refused(root, "escape_dir/secret.txt", follow_links=follow_links)
    assert "through a symbolic link ('escape_dir')" in message


@BOTH
@pytest.mark.parametrize(
    ("link", "target", "path"),
    [
        ("link", ".git", "link/config"),
        ("hooks", ".git/hooks", "hooks/pre-push"),
        ("config-link", ".git/config", "config-link"),
        ("deep", "pkg/../.git", "deep/HEAD"),
    ],
)
def test_a_link_into_git(root: Path, follow_links: bool, link: str, target: str, path: str) -> None:
    (root / link).symlink_to(target)
    message = refused(root, path, follow_links=follow_links)
    assert f"path {path!r}" in message
    assert f"a symbolic link ({link!r}) that leads into .git" in message
    assert "which redline never edits" in message


@BOTH
def test_a_chain_of_links_into_git(root: Path, follow_links: bool) -> None:
    (root / "one").symlink_to("two")
    (root / "two").symlink_to(".git")
    assert "leads into .git" in refused(root, "one/config", follow_links=follow_links)


@BOTH
def test_a_separate_git_directory_is_refused_by_what_it_holds(
    root: Path, follow_links: bool
) -> None:
    # `nested/.git` is a file "gitdir: ../store/nested.git": that folder is git's data.
    separate_git_dir(root)
    assert (root / "nested" / ".git").is_file()
    for path in ("store/nested.git/config", "store/nested.git/hooks/pre-commit"):
        message = refused(root, path, follow_links=follow_links)
        assert message == (
            f"path {path!r} is inside a git directory ('store/nested.git' holds a "
            "repository's own data, which a .git file points to), which redline never edits. "
            "Change that repository with git commands, and edit only files in its worktree"
        )
    # Its worktree is an ordinary folder.
    base = os.path.realpath(root)
    assert confine(root, "nested/x.py", follow_links=follow_links) == f"{base}/nested/x.py"


@BOTH
def test_a_link_to_a_gitfile_target(root: Path, follow_links: bool) -> None:
    separate_git_dir(root)
    (root / "to-store").symlink_to("store/nested.git")
    (root / "to-store-parent").symlink_to("store")
    assert "inside a git directory ('store/nested.git'" in refused(
        root, "to-store/config", follow_links=follow_links
    )
    # Through a link to its parent folder: refused where the walk reaches it, or at the link.
    reason = "inside a git directory ('store/nested.git'" if follow_links else "symbolic link"
    assert reason in refused(root, "to-store-parent/nested.git/config", follow_links=follow_links)


@BOTH
def test_a_linked_worktrees_git_directory(root: Path, tmp_path: Path, follow_links: bool) -> None:
    # A worktree's private git directory holds HEAD and commondir, not objects/refs.
    git(root, "commit", "-q", "--allow-empty", "-m", "init")
    git(root, "worktree", "add", "-q", str(tmp_path / "wt"))
    private = root / ".git" / "worktrees" / "wt"
    assert (private / "commondir").is_file()
    (root / "wtgit").symlink_to(private)
    assert "leads into .git" in refused(root, "wtgit/HEAD", follow_links=follow_links)


def test_a_root_that_is_a_git_directory(root: Path) -> None:
    message = refused(root / ".git", "config", follow_links=True)
    assert "is inside a git directory ('the root'" in message


@BOTH
def test_a_fifo_is_not_a_regular_file(root: Path, follow_links: bool) -> None:
    os.mkfifo(root / "pipe")
    assert refused(root, "pipe", follow_links=follow_links) == (
        "path 'pipe' is not a regular file (a FIFO, socket or device); "
        "redline edits regular files only — name a regular file, or remove that one first"
    )


def test_a_link_loop(root: Path) -> None:
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    assert "in a loop" in refused(root, "loop1", follow_links=True)
    assert "symbolic link" in refused(root, "loop1", follow_links=False)


# --- relative_to_root and locate ----------------------------------------------------------


def test_an_absolute_path_inside_the_root_is_made_relative(root: Path, tmp_path: Path) -> None:
    base = os.path.realpath(root)
    assert relative_to_root(root, f"{base}/pkg/mod.py") == "pkg/mod.py"
    assert relative_to_root(root, f"{root}/pkg/mod.py") == "pkg/mod.py"
    link = tmp_path / "root-link"
    link.symlink_to(root, target_is_directory=True)
    assert relative_to_root(root, f"{link}/pkg/mod.py") == "pkg/mod.py"  # by its folder
    assert relative_to_root(link, f"{base}/a.txt") == "a.txt"
    assert relative_to_root(root, f"{base}/pkg/") == "pkg/"  # the policy reports the slash
    # Anything else is returned as it is, for the policy to refuse.
    for path in ("a.txt", "/etc/passwd", f"{tmp_path}/outside/secret.txt", "/x\x00", "/\udfff"):
        assert relative_to_root(root, path) == path
    assert relative_to_root(root, f"{base}/../outside/x") == "../outside/x"
    assert relative_to_root(root, f"{link}/../outside/x") == f"{link}/../outside/x"


def test_locate_is_policy_then_confinement(root: Path) -> None:
    base = os.path.realpath(root)
    assert locate(root, "./pkg//mod.py", follow_links=False) == (
        "pkg/mod.py",
        f"{base}/pkg/mod.py",
    )
    assert locate(root, f"{base}/a.txt", follow_links=True) == ("a.txt", f"{base}/a.txt")
    with pytest.raises(RequestError, match=r"inside a \.git directory"):
        locate(root, f"{base}/.git/config", follow_links=True)
    with pytest.raises(RequestError, match="is absolute"):
        locate(root, "/etc/passwd", follow_links=True)
