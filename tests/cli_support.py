"""The installed ``redline`` console script, for tests that run it as users do."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path


def redline_script() -> str:
    """The script of this interpreter's environment (not some other one on PATH)."""
    candidate = Path(sysconfig.get_path("scripts")) / "redline"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("redline")
    assert found, "the redline console script is not installed (pip install -e .)"
    return found
