"""The user's own folders: where redline reads the user's config file.

The same place ``platformdirs.user_config_path("redline")`` names, worked out here on
Linux the way platformdirs does it (``$XDG_CONFIG_HOME`` when it is an absolute path,
else ``$HOME/.config``): every ``redline apply`` reads the user's rules, and
importing platformdirs costs a good part of a short call. Elsewhere, and when
neither variable is an absolute path, platformdirs says. A test holds the two
ways equal.
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
