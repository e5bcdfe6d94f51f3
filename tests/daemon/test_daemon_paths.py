"""Where the daemon's files go, and that they are the user's alone.

The socket folder outside the repository (``$XDG_RUNTIME_DIR/redline``, or
``/tmp/redline-<uid>`` without that variable) may have been made by someone
else first: it is used only when it is a real directory, owned by the user,
mode 0700. The log, pid and lock files are 0600 and ``spares/`` 0700 — also
when an older version left them readable by everyone.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmode_fixtures import (
    GitMode,
    Redline,
    git_mode,
    make_repo,
    scrubbed_env,
    short_runtime_dir,
)
from redline.daemon.paths import DaemonFiles, UnsafeDirectory, private_dir, private_opener

LONG = "long-" * 20  # makes <git dir>/redline/daemon.sock too long for a socket
ADVICE = (
    "remove it if it is yours (redline makes it again), or set XDG_RUNTIME_DIR to a private "
    "directory of yours"
)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def refusal(path: Path, problem: str, advice: str = ADVICE) -> str:
    return (
        f"refusing to use {path} for the redline daemon's files: {problem}; it must be a "
        f"directory (not a link) owned by you with mode 0700: {advice}"
    )


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# --- where the socket goes ---------------------------------------------------------------------


def test_the_socket_is_in_the_state_folder_when_its_path_is_short(tmp_path: Path) -> None:
    common = Path("/r/.git")
    assert DaemonFiles(common, tmp_path).socket == common / "redline" / "daemon.sock"


def test_a_long_path_puts_the_socket_in_the_runtime_folder(tmp_path: Path) -> None:
    files = DaemonFiles(tmp_path / LONG / ".git", Path("/run/user/7"))
    assert files.socket.parent == Path("/run/user/7/redline")
    assert files.socket.name.endswith(".sock") and len(files.socket.name) == 21


def test_without_a_runtime_folder_the_socket_goes_to_a_folder_of_the_users_own(
    tmp_path: Path,
) -> None:
    files = DaemonFiles(tmp_path / LONG / ".git")
    assert files.socket.parent == Path(f"/tmp/redline-{os.getuid()}")
    other = DaemonFiles(tmp_path / LONG / ".git", None, tmp_path)
    assert other.socket.parent == tmp_path / f"redline-{os.getuid()}"


# --- private folders ---------------------------------------------------------------------------


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o277])
def test_a_folder_made_for_the_socket_is_0700_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    old = os.umask(mask)
    try:
        private_dir(tmp_path / "sockets", tighten=False)
    finally:
        os.umask(old)
    assert mode_of(tmp_path / "sockets") == 0o700
    private_dir(tmp_path / "sockets", tighten=False)  # found as it should be: used


def test_a_socket_folder_others_can_use_is_refused(tmp_path: Path, umask: None) -> None:
    folder = tmp_path / "sockets"
    folder.mkdir(mode=0o755)
    with pytest.raises(UnsafeDirectory) as caught:
        private_dir(folder, tighten=False)
    assert str(caught.value) == refusal(folder, "its mode is 0755, so others can use it")
    assert mode_of(folder) == 0o755  # left as found


def test_a_link_to_a_private_folder_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    link = tmp_path / "sockets"
    link.symlink_to(target)
    with pytest.raises(UnsafeDirectory) as caught:
        private_dir(link, tighten=False)
    assert str(caught.value) == refusal(link, "it is a symbolic link")


def test_a_file_in_the_folders_place_is_refused(tmp_path: Path) -> None:
    (tmp_path / "sockets").write_text("")
    with pytest.raises(UnsafeDirectory) as caught:
        private_dir(tmp_path / "sockets", tighten=False)
    assert str(caught.value) == refusal(tmp_path / "sockets", "it is not a directory")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder away needs root")
def test_a_folder_another_user_made_first_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "sockets"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    for tighten in (False, True):
        with pytest.raises(UnsafeDirectory) as caught:
            private_dir(folder, tighten=tighten)
        assert "it belongs to user id 65534, not to you (user id 0)" in str(caught.value)


def test_a_runtime_folder_that_does_not_exist_is_a_clear_refusal(tmp_path: Path) -> None:
    files = DaemonFiles(make_common(tmp_path), tmp_path / "no-such-runtime")
    with pytest.raises(UnsafeDirectory) as caught:
        files.ensure()
    assert str(caught.value) == refusal(
        tmp_path / "no-such-runtime" / "redline",
        f"its parent folder {tmp_path / 'no-such-runtime'} does not exist",
    )


def make_common(tmp_path: Path) -> Path:
    common = tmp_path / LONG / ".git"
    common.mkdir(parents=True)
    return common


def test_older_files_and_folders_are_tightened(tmp_path: Path, umask: None) -> None:
    with short_runtime_dir() as runtime:
        files = DaemonFiles(make_common(tmp_path), runtime)
        files.state.mkdir(mode=0o755)
        for path in (files.log, files.pid, files.lock):
            path.write_text("old\n")
            path.chmod(0o644)
        files.ensure()
        assert mode_of(files.state) == 0o700
        assert mode_of(files.socket.parent) == 0o700
        assert [mode_of(p) for p in (files.log, files.pid, files.lock)] == [0o600] * 3
        assert files.log.read_text() == "old\n"


def test_the_private_opener_makes_and_tightens_files(tmp_path: Path, umask: None) -> None:
    with open(tmp_path / "new", "w", opener=private_opener) as handle:
        handle.write("x")
    assert mode_of(tmp_path / "new") == 0o600
    (tmp_path / "old").write_text("y")
    (tmp_path / "old").chmod(0o644)
    with open(tmp_path / "old", "a", opener=private_opener) as handle:
        handle.write("z")
    assert mode_of(tmp_path / "old") == 0o600
    assert (tmp_path / "old").read_text() == "yz"
    (tmp_path / "link").symlink_to(tmp_path / "old")
    with pytest.raises(OSError):
        open(tmp_path / "link", "a", opener=private_opener)  # noqa: SIM115


# --- a live daemon -----------------------------------------------------------------------------


@pytest.fixture
def near(hermetic_environment: Path) -> Iterator[GitMode]:
    """A repository in a short folder, so that its socket lies in its git dir: a test's
    ``tmp_path`` can be too long for a socket (as under pytest-xdist's worker folders),
    and the daemon then puts it in the runtime folder instead."""
    with (
        tempfile.TemporaryDirectory(prefix="rl-", dir="/tmp") as base,
        git_mode(Path(base), hermetic_environment) as mode,
    ):
        yield mode


def test_the_daemons_files_are_private(near: GitMode) -> None:
    gm = near
    state = gm.repo / ".git" / "redline"
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    gm.cli.open_session("s")
    assert mode_of(state) == 0o700
    for name in ("daemon.log", "daemon.pid", "daemon.lock", "daemon.sock"):
        assert mode_of(state / name) == 0o600, name
    for name in ("spares", "spares/a", "spares/b"):
        assert mode_of(state / name) == 0o700, name


def test_files_an_older_version_left_open_are_tightened_on_start(gm: GitMode) -> None:
    state = gm.repo / ".git" / "redline"
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    (state / "spares").chmod(0o755)
    for name in ("daemon.log", "daemon.lock"):
        (state / name).chmod(0o644)
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    for name in ("daemon.log", "daemon.pid", "daemon.lock"):
        assert mode_of(state / name) == 0o600, name
    assert mode_of(state / "spares") == 0o700


def test_without_a_runtime_folder_a_long_path_uses_the_users_tmp_folder(
    tmp_path: Path, hermetic_environment: Path
) -> None:
    with git_mode(tmp_path / LONG, hermetic_environment) as mode:
        env = {k: v for k, v in mode.env.items() if k != "XDG_RUNTIME_DIR"}
        mode.cli.env = env
        mode.cli.ok("daemon", "start", "--repo", str(mode.repo))
        socket_path = Path(mode.cli.status()["socket"])
        assert socket_path.parent == Path(f"/tmp/redline-{os.getuid()}")
        assert mode_of(socket_path.parent) == 0o700
        assert os.lstat(socket_path.parent).st_uid == os.getuid()
        assert mode_of(socket_path) == 0o600


def test_a_runtime_folder_others_can_use_is_refused_with_a_message(
    tmp_path: Path, hermetic_environment: Path
) -> None:
    with short_runtime_dir() as runtime:
        (runtime / "redline").mkdir()
        (runtime / "redline").chmod(0o777)
        env = scrubbed_env(hermetic_environment, runtime)
        cli = Redline(make_repo(tmp_path / LONG / "repo", {"a.txt": "a\n"}, env), env)
        try:
            proc = cli.run("daemon", "start", "--repo", str(cli.repo))
        finally:
            cli.stop()
        assert proc.returncode == 1
        assert proc.stdout == ""
        assert proc.stderr == (
            "redline: "
            + refusal(runtime / "redline", "its mode is 0777, so others can use it")
            + "\n"
        )
        assert list((runtime / "redline").iterdir()) == []
