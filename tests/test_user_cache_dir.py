"""redline.userdirs.user_cache_dir: the user's cache folder, from the environment on Linux (no platformdirs
import on the way: ``redline apply`` keeps retry state there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from redline.userdirs import user_cache_dir


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the XDG rule")
def test_xdg_cache_home_when_absolute_else_the_home_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path.home()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert user_cache_dir() == tmp_path / "c" / "redline"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # invalid (the XDG spec)
    assert user_cache_dir() == home / ".cache" / "redline"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache_dir() == home / ".cache" / "redline"


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the XDG rule")
def test_finding_it_imports_no_platformdirs() -> None:
    code = "import sys; from redline.userdirs import user_cache_dir; user_cache_dir(); "
    code += "print('platformdirs' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
