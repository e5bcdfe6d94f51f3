"""``redline``: the entry point, and the start of the calls made on every edit and commit.

An agent may start ``redline apply`` for every edit, and git starts ``redline guard``
for every commit: those two start here without click (about a third of the CLI's
start-up), reading their options by hand — ``apply`` with the options
``redline.cli.apply`` declares, ``guard`` as a hook runs it (``--stage`` and git's
arguments). Anything else — another command, ``--help`` anywhere, an option this
module does not read, a value click would refuse, ``guard --range`` — goes to the
click group (:mod:`redline.cli.group`), which reads it in full and says what is
wrong. So the hand-written reading only ever takes the plain cases, and a test runs
each of them both ways. ``cli`` (the click group) can still be imported from here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Call = Callable[[], int]


def main() -> None:
    from redline.fsops import interrupts

    interrupts.install()  # SIGINT, SIGTERM: a clean stop, never half a write
    call = fast_call(sys.argv[1:])
    if call is None:
        from redline.cli.group import cli

        cli()
        return
    from redline.cli.boundary import run

    sys.exit(run(call))


def fast_call(args: list[str]) -> Call | None:
    """The call ``args`` asks for, when it is one read here; None: click reads ``args``."""
    if not args:
        return None
    if args[0] == "apply":
        return _apply(args[1:])
    if args[0] == "guard":
        return _guard(args[1:])
    return None


_APPLY_VALUES = ("--root", "--session", "--repo", "--threshold")
_APPLY_FLAGS = ("--jsonl", "--dry-run", "--full")


def _apply(args: list[str]) -> Call | None:
    given = _options(args, _APPLY_VALUES, _APPLY_FLAGS)
    if given is None or given.positional:
        return None
    values = given.values
    root, repo = (Path(values.get(name, ".")) for name in ("--root", "--repo"))
    if not (_directory(root) and _directory(repo)):
        return None  # click names the option and the problem
    threshold = None
    if "--threshold" in values:
        threshold = _fraction(values["--threshold"])
        if threshold is None:
            return None
    session = values.get("--session")
    jsonl, dry_run = ("--jsonl" in given.flags), ("--dry-run" in given.flags)
    full = "--full" in given.flags

    def apply() -> int:
        from redline.cli.apply_stream import run_apply

        return run_apply(root, session, repo, jsonl, dry_run, threshold, full)

    return apply


def _guard(args: list[str]) -> Call | None:
    from redline.cli.guard_hook import STAGES

    given = _options(args, ("--stage",), ())
    if given is None:
        return None
    stage = given.values.get("--stage", "pre-commit")
    if stage not in STAGES:
        return None
    hook_args = tuple(given.positional)

    def guard() -> int:
        from redline.cli.guard_hook import run_hook

        return run_hook(stage, hook_args)

    return guard


class _Given:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.flags: set[str] = set()
        self.positional: list[str] = []


def _options(args: list[str], valued: tuple[str, ...], flags: tuple[str, ...]) -> _Given | None:
    """``args`` read as options (``--name value``, ``--name=value``, ``--flag``) and
    arguments; None when anything is not plain: an option not named here, one given
    twice, a value that looks like an option or is empty, ``--``, ``-h``."""
    given = _Given()
    rest = iter(args)
    for arg in rest:
        if not arg.startswith("-"):
            given.positional.append(arg)
            continue
        name, equals, value = arg.partition("=")
        if name in flags and not equals and name not in given.flags:
            given.flags.add(name)
            continue
        if name not in valued or name in given.values:
            return None
        if not equals:
            value = next(rest, "")
        if not value or value.startswith("-"):
            return None
        given.values[name] = value
    return given


def _directory(path: Path) -> bool:
    return os.path.isdir(path)


def _fraction(text: str) -> float | None:
    """``text`` as a number in (0, 1], as ``--threshold`` takes it; None otherwise."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0.0 < value <= 1.0 else None


def __getattr__(name: str) -> Any:
    if name == "cli":  # the click group, where it was before the fast start moved in
        from redline.cli.group import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
