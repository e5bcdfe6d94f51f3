"""Changes to redline's own settings files in embedded mode (``.redline.toml``, the
``[tool.redline]`` table of ``pyproject.toml``): the guard policy and the permissions
that govern the agent. The caller (pipeline.runners) says whether a change may be made;
this module finds the planned writes that reach those files, symbolic links
included, and asks it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from redline.engine.policy import SETTINGS_FILES

# Given how to read redline's settings files as they are and their planned bytes (by
# name: .redline.toml, pyproject.toml), why the change may not be made, or None.
SettingsGuard = Callable[
    [Callable[[str], "bytes | None"], Mapping[str, "bytes | None"]], "str | None"
]


def settings_refusal(
    root: Path, guard: SettingsGuard, planned: Iterable[tuple[Path, bytes | None]]
) -> tuple[str, str] | None:
    """(the settings file, why) when ``guard`` refuses the ``planned`` writes (a file and its
    new bytes, None: deleted) for what they do to redline's settings files under ``root``
    — also through a symbolic link that leads to one."""
    names = {os.path.realpath(root / name): name for name in SETTINGS_FILES}
    changed = {}
    for target, data in planned:
        name = names.get(os.path.realpath(target))
        if name is not None:
            changed[name] = data
    if not changed:
        return None

    def read(name: str) -> bytes | None:
        try:
            return (root / name).read_bytes()
        except OSError:
            return None

    why = guard(read, changed)
    return None if why is None else (sorted(changed)[0], why)
