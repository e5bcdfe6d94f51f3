"""Where redline's settings are, and the one reading of them.

The repository's settings are ``.redline.toml``, or — when there is none — the
``[tool.redline]`` table of ``pyproject.toml``. They are read through a
:data:`Reader` (a file's bytes by name; None: not there) from wherever they are:
a folder (embedded mode, :func:`folder_reader`), the files a commit holds (git
mode, the main line's: :class:`Committed`), a tree (the guard). The user's own
file is ``config.toml`` in the user's config folder (``redline.userdirs``).
:func:`repository_file` finds which file holds them and parses it (TOML that does
not parse is the caller's :class:`~redline.engine.errors.SettingsError`, naming
the file, line and column); the policy and the tool settings are read from what
it found.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from redline.engine.errors import SettingsError
from redline.engine.policy import POLICY_FILE, PYPROJECT
from redline.engine.records import record

Reader = Callable[[str], "bytes | None"]  # a file's bytes by name (None: no such file)


@record(frozen=True)
class Committed:
    """The repository's settings files as a commit holds them (None: not there), and where
    that is, for messages (``"on main"``)."""

    files: Mapping[str, bytes | None]
    where: str

    def read(self, name: str) -> bytes | None:
        return self.files.get(name)


@record(frozen=True)
class Found:
    """The file that holds the repository's settings: its name (``.redline.toml`` or
    ``pyproject.toml``), its bytes, and whether redline's table is the whole file
    (``whole``) or ``[tool.redline]`` in it."""

    name: str
    data: bytes

    @property
    def whole(self) -> bool:
        return self.name == POLICY_FILE

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def find(read: Reader, mentioning: bool = True) -> Found | None:
    """The file that holds the repository's settings, if any: ``.redline.toml``, else
    ``pyproject.toml`` — with ``mentioning``, only when it mentions redline (a project's
    broken pyproject.toml is not redline's to refuse)."""
    own = read(POLICY_FILE)
    if own is not None:
        return Found(POLICY_FILE, own)
    pyproject = read(PYPROJECT)
    if pyproject is None or (mentioning and b"redline" not in pyproject):
        return None
    return Found(PYPROJECT, pyproject)


def parse(text: str, source: str, error: type[SettingsError]) -> dict[str, Any]:
    """``text`` as TOML; ``error`` naming ``source``, line and column when it is not."""
    import tomllib  # only when there is a file to read

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error.not_toml(exc, text, source) from None


def section(whole: Mapping[str, Any]) -> Any:
    """``[tool.redline]`` of a parsed ``pyproject.toml`` (None: it has none)."""
    tool = whole.get("tool")
    return tool.get("redline") if isinstance(tool, dict) else None


def folder_reader(root: Path) -> Reader:
    """The settings files under ``root`` as they are on disk (None: not there). Any other
    failure to read one is the OSError, for the caller to word."""

    def read(name: str) -> bytes | None:
        try:
            return (root / name).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    return read


def cached(read: Reader) -> Reader:
    """``read``, each file read once (a failure is not kept: it is raised again)."""
    seen: dict[str, bytes | None] = {}

    def once(name: str) -> bytes | None:
        if name not in seen:
            seen[name] = read(name)
        return seen[name]

    return once


def settings_table(read: Reader) -> tuple[str, object] | None:
    """Which file holds redline's settings and what it says, as parsed TOML (the whole
    ``.redline.toml``, or ``[tool.redline]``): what an agent's change of the policy or the
    permissions is compared by. ``(file, "not TOML: …")`` when it does not parse; None
    when no file holds any."""
    import tomllib

    found = find(read, mentioning=False)
    if found is None:
        return None
    try:
        data = tomllib.loads(found.text())
    except tomllib.TOMLDecodeError as exc:
        if found.whole or b"redline" in found.data:
            return found.name, f"not TOML: {exc}"
        return None
    if found.whole:
        return found.name, data
    table = section(data)
    return None if table is None else (found.name, table)
