"""The folders redline keeps per user are where they were on Linux by default: crash logs
in ``$XDG_CACHE_HOME/redline`` (else ``~/.cache/redline``, platformdirs), the daemon's
socket for a long path in ``$XDG_RUNTIME_DIR/redline`` (else ``/tmp/redline-<uid>``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from redline.cli._connect import runtime_dir
from redline.crashlog import crash_dir
from redline.daemon.paths import MAX_SOCKET_PATH, DaemonFiles

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the Linux defaults")


def test_crash_logs_go_to_the_xdg_cache_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert crash_dir() == tmp_path / "cache" / "redline"


@pytest.mark.parametrize("value", [None, "", "relative/cache"])
def test_without_a_usable_xdg_cache_home_crash_logs_go_under_home(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert crash_dir() == Path(os.environ["HOME"]) / ".cache" / "redline"


def test_a_long_socket_path_goes_to_the_runtime_folder_or_a_private_tmp_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    common = tmp_path / ("x" * MAX_SOCKET_PATH) / ".git"
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    assert runtime_dir() == tmp_path / "run"
    assert DaemonFiles(common, runtime_dir()).socket.parent == tmp_path / "run" / "redline"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert runtime_dir() is None
    folder = DaemonFiles(common, runtime_dir()).socket.parent
    assert folder == Path("/tmp") / f"redline-{os.getuid()}"
