"""The user's cache folder for redline: crash logs, and state kept between calls.

On Linux (and other XDG systems) it is found from the environment alone —
``$XDG_CACHE_HOME/redline``, or ``~/.cache/redline`` when that variable is unset
or not an absolute path (the XDG spec) — without importing platformdirs, so that
``redline apply`` can keep state there on its fast path. On macOS and Windows
platformdirs names it (``~/Library/Caches/redline``, ``%LOCALAPPDATA%``…).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

NAME = "redline"


def cache_dir() -> Path:
    """redline's folder in the user's cache (not created here)."""
    if sys.platform in ("darwin", "win32"):
        from platformdirs import user_cache_path

        folder = user_cache_path(NAME)
        return folder if folder.is_absolute() else Path.home() / ".cache" / NAME
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        return Path.home() / ".cache" / NAME
    return Path(base) / NAME
