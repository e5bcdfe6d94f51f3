"""The user's own folders: where redline reads the user's config file, and its cache
(crash logs, state kept between calls).

The places ``platformdirs.user_config_path("redline")`` and ``user_cache_path`` name,
worked out here on Linux the way platformdirs does it (``$XDG_CONFIG_HOME`` /
``$XDG_CACHE_HOME`` when it is an absolute path, else under ``$HOME``): every
``redline apply`` reads the user's rules and may keep a turn's retry count, and
importing platformdirs costs a good part of a short call. Elsewhere, and when
neither variable is an absolute path, platformdirs says (for the cache, ``~/.cache``
when it names a relative one). Tests hold the two ways equal.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = "redline"
CONFIG_FILE = "config.toml"


def user_config_file() -> Path:
    """The user's config file (it need not exist)."""
    return user_config_dir() / CONFIG_FILE


def user_config_dir() -> Path:
    """The user's config folder for redline (see the module)."""
    if sys.platform == "linux" and "ANDROID_DATA" not in os.environ:
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        if os.path.isabs(xdg):
            return Path(xdg) / APP
        if os.path.isabs(os.environ.get("HOME", "")):
            return Path(os.path.expanduser("~/.config")) / APP
    from platformdirs import user_config_path

    return user_config_path(APP)


def user_cache_dir() -> Path:
    """redline's folder in the user's cache (not created here; see the module)."""
    if sys.platform in ("darwin", "win32"):
        from platformdirs import user_cache_path

        folder = user_cache_path(APP)
        return folder if folder.is_absolute() else Path.home() / ".cache" / APP
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        return Path.home() / ".cache" / APP
    return Path(base) / APP
