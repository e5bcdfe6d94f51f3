"""Rolling the daemon's small packs together, without taking anything another git reads.

Each request writes its objects as one pack (gitops.packs). Beside the
requests, :func:`roll_up` rolls small packs together the way ``git repack
--geometric=2`` picks them (the smallest packs, until the rest form a
geometric progression by object count), with ``git pack-objects
--stdin-packs``. Unlike ``git repack -d`` it never touches a loose object
(``repack -d`` removes every loose object it packed — the user's too — while
a ``git clone`` may be copying them), and it writes the new pack in a folder
of redline's own, then renames it in: nothing appears in ``objects/pack``
half-written, and nothing disappears from it as the roll-up runs.

The packs rolled together are only listed as redundant; :func:`remove_packs`
deletes them later (daemon.housekeeping: once requests pause, or at the next
roll-up), as git's own ``gc`` deletes the packs it replaced — those
:func:`still_redundant` vouches for: git may have changed the folder
meanwhile. A pack with a ``.keep`` of another program, a promisor or cruft pack
is never rolled; redline's own held packs only once :class:`~redline.gitops.
packs.Holds` lets them go.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPACK_TIMEOUT = 120.0  # seconds a roll-up may take before it is killed
_POLL = 0.05  # seconds between looks at a cancelled or late roll-up
FACTOR = 2  # as `git repack --geometric=2`
_SIDE_FILES = (".idx", ".rev", ".bitmap", ".pack", ".keep")  # deleted in this order


@dataclass
class RollUp:
    """The outcome of one roll-up: why it could not be done (None: done or not needed),
    the packs it made redundant, and the new pack."""

    problem: str | None = None
    redundant: set[str] = field(default_factory=set)
    made: str | None = None
    # the packs whose objects were left out of ``made`` (they hold them): ``redundant`` may
    # go only while ``made`` and these are all still there (see :func:`still_redundant`)
    excluded: set[str] = field(default_factory=set)


def roll_up(
    git_dir: Path,
    state_dir: Path,
    *,
    env: Mapping[str, str],
    ours: Collection[str] = (),
    held: Collection[str] = (),
    skip: Collection[str] = (),
    timeout: float = REPACK_TIMEOUT,
    cancel: threading.Event | None = None,
) -> RollUp:
    """Roll the smallest packs of ``git_dir`` together into one.

    ``ours``: packs whose ``.keep`` is redline's and may be let go (they are
    rolled like any pack); ``held``: redline's packs still held (never
    rolled); ``skip``: packs already rolled and waiting to be removed. The
    new pack is written under ``state_dir`` and renamed into ``objects/pack``;
    the rolled packs stay until :func:`remove_packs` removes them.
    """
    pack_dir = git_dir / "objects" / "pack"
    candidates = []
    others = []
    for name, count in _packs(pack_dir):
        if name in skip:
            continue
        kept = (pack_dir / f"{name}.keep").exists() and name not in ours
        special = any((pack_dir / f"{name}{s}").exists() for s in (".promisor", ".mtimes"))
        if kept or special or name in held:
            others.append(name)
        else:
            candidates.append((name, count))
    candidates.sort(key=lambda item: (item[1], item[0]))
    split = geometric_split([count for _, count in candidates])
    if split < 2:
        return RollUp()
    rolled = [name for name, _ in candidates[:split]]
    excluded = [name for name, _ in candidates[split:]] + others
    workdir = state_dir / "rollup"
    shutil.rmtree(workdir, ignore_errors=True)  # a roll-up killed half-way
    try:
        (workdir / "pack").mkdir(parents=True, mode=0o700)
    except OSError as exc:
        return RollUp(f"cannot make {workdir} ({exc.strerror or exc}); the packs are as before")
    try:
        outcome = _pack_objects(git_dir, workdir, rolled, excluded, env, timeout, cancel)
        if outcome.problem is None and outcome.made is not None:
            _move_in(workdir / "pack", pack_dir, outcome.made)
            outcome.redundant = set(rolled) - {outcome.made}
            outcome.excluded = set(excluded)
        return outcome
    except OSError as exc:
        return RollUp(f"cannot put the rolled pack in place ({exc}); the packs are as before")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def geometric_split(counts: list[int], factor: int = FACTOR) -> int:
    """How many of the packs with these object ``counts`` (smallest first) to roll into
    one so that, with the rest, they form a geometric progression (git's own rule)."""
    if not counts:
        return 0
    split = 0
    for i in range(len(counts) - 1, 0, -1):
        if counts[i] < factor * counts[i - 1]:
            split = i + 1  # the pair breaks the progression: both sides of it roll
            break
    total = sum(counts[:split])
    for count in counts[split:]:
        if count < factor * total:
            split += 1
            total += count
        else:
            break
    return split


def still_redundant(pack_dir: Path, rolls: list[RollUp]) -> set[str]:
    """The packs the roll-ups ``rolls`` made redundant that may be removed now: those of
    each roll-up whose new pack and every pack it left objects to are still there.

    Other programs work in the same folder: ``git repack -a -d`` may have removed the
    new pack since (its objects are then in git's pack, or unreachable), or written a
    pack with the name of one rolled (names are content hashes): then nothing of that
    roll-up is removed, and git's own next repack tidies up.
    """
    present = {p.stem for p in pack_dir.glob("pack-*.idx")}
    removable: set[str] = set()
    for roll in rolls:
        if roll.made in present and roll.excluded <= present:
            removable |= roll.redundant
    return removable


def remove_packs(pack_dir: Path, names: Collection[str]) -> set[str]:
    """Delete the packs ``names`` (index first: no reader finds a pack without it); the
    names removed. A multi-pack-index is removed first, as ``git repack -d`` does: it may
    name them (git writes a new one when asked to)."""
    if not names:
        return set()
    for leftover in pack_dir.glob("multi-pack-index*"):
        with contextlib.suppress(OSError):
            leftover.unlink()
    removed = set()
    for name in names:
        try:
            for suffix in _SIDE_FILES:
                (pack_dir / f"{name}{suffix}").unlink(missing_ok=True)
        except OSError:
            continue  # tried again at the next pause
        removed.add(name)
    return removed


def _packs(pack_dir: Path) -> list[tuple[str, int]]:
    """Every pack with an index, and how many objects it holds."""
    found = []
    try:
        indexes = list(pack_dir.glob("pack-*.idx"))
    except OSError:
        return []
    for index in indexes:
        if not (pack_dir / f"{index.stem}.pack").exists():
            continue
        count = _object_count(index)
        if count is not None:
            found.append((index.stem, count))
    return found


def _object_count(index: Path) -> int | None:
    """The number of objects a version 2 pack index lists (its last fan-out entry)."""
    try:
        with open(index, "rb") as handle:
            head = handle.read(8 + 256 * 4)
    except OSError:
        return None
    if len(head) < 8 + 256 * 4 or head[:8] != b"\xfftOc\x00\x00\x00\x02":
        return None
    count: int = struct.unpack_from(">I", head, 8 + 255 * 4)[0]
    return count


def _pack_objects(
    git_dir: Path,
    workdir: Path,
    rolled: list[str],
    excluded: list[str],
    env: Mapping[str, str],
    timeout: float,
    cancel: threading.Event | None,
) -> RollUp:
    """``git pack-objects --stdin-packs`` over ``rolled``, written under ``workdir``: git
    sees that folder as its object store and the repository's as an alternate, so even
    its temporary files are written there."""
    objects = git_dir / "objects"
    environment = dict(env)
    environment["GIT_OBJECT_DIRECTORY"] = str(workdir)
    environment["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(objects)
    command = [
        "git",
        "-C",
        str(git_dir),
        "pack-objects",
        "--stdin-packs",
        "--delta-base-offset",
        "-q",
        str(workdir / "pack" / "pack"),
    ]
    listing = "".join(f"{n}.pack\n" for n in rolled) + "".join(f"^{n}.pack\n" for n in excluded)
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            start_new_session=True,  # its own process group: a kill reaches every child
        )
    except OSError as exc:
        return RollUp(f"cannot run git ({exc}); install git, or run `git gc` now and then")
    deadline = time.monotonic() + timeout
    data: bytes | None = listing.encode()
    while True:
        try:
            stdout, stderr = process.communicate(data, timeout=_POLL)
            break
        except subprocess.TimeoutExpired:
            data = None  # handed over already
            stopped = cancel is not None and cancel.is_set()
            if stopped or time.monotonic() >= deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                if stopped:
                    return RollUp(
                        "git pack-objects was stopped as the daemon stops; the packs are as before"
                    )
                return RollUp(
                    f"git pack-objects did not finish within {timeout:g} s and was stopped; the "
                    f"packs are as before — run `git gc` in {git_dir} when the machine is quiet"
                )
    if process.returncode != 0:
        said = stderr.decode(errors="replace").strip()
        return RollUp(
            f"git pack-objects failed ({process.returncode}: {said}); the packs are as before — "
            f"run `git gc` in {git_dir}"
        )
    made = stdout.decode(errors="replace").strip()
    return RollUp(made=f"pack-{made}" if made else None)


def _move_in(source: Path, pack_dir: Path, name: str) -> None:
    """Rename the new pack's files into ``pack_dir``, its index last."""
    for suffix in (".pack", ".rev", ".bitmap", ".idx"):
        path = source / f"{name}{suffix}"
        if path.exists():
            os.replace(path, pack_dir / path.name)
