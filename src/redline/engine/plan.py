"""A plan: the file groups a request changes, each a unit that lands whole or not at all.

Every tool that changes files is planned into one (engine.patch for apply_patch,
engine.write for write and delete, engine.edit_plan for edit) against a
:class:`Snapshot` of the files, and whoever lands a plan — on disk (fsops) or as
commits (gitops) — lands every tool the same way. Only data here: this module is
imported on the edit's way, which must start fast.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from redline.engine.records import field, record

if TYPE_CHECKING:
    from redline.engine.hunks import HunkEvidence
    from redline.engine.result import Result
    from redline.engine.validate import Validation


class Snapshot(Protocol):
    """Read-only view of the files a patch applies to (paths are normalised, '/'-separated)."""

    def relative(self, path: str) -> str:
        """``path`` as the patch spells it, made relative when it is absolute inside the
        snapshot's root; any other path as it is (the path policy judges it next)."""

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None when no file is there."""

    def is_dir(self, path: str) -> bool: ...


class MemorySnapshot:
    """A snapshot held in memory: files by path; a path is a folder when files lie below it."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.files = dict(files)

    def relative(self, path: str) -> str:
        return path  # no root: an absolute path stays absolute, and is refused

    def read(self, path: str) -> bytes | None:
        return self.files.get(path)

    def is_dir(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self.files)


@record(frozen=True)
class FileChange:
    """One file's bytes before and after a planned change."""

    path: str
    before: bytes | None  # None: the file did not exist
    after: bytes | None  # None: the file is deleted
    origin: str | None = None  # the path whose file mode a new file inherits (a Move's source)


@record(frozen=True)
class PathEvidence:
    """A hunk's evidence and the file it was placed in."""

    path: str
    evidence: HunkEvidence


@record
class GroupPlan:
    """One group of a patch's operations (applied together or not at all), as planned."""

    paths: tuple[str, ...]
    operations: tuple[str, ...]  # "update a.py", "move a.py -> b.py", "add x", "delete y"
    changes: tuple[FileChange, ...] = ()
    error: str | None = None
    hunks: list[PathEvidence] = field(default_factory=list)
    cleaned: Counter[str] = field(default_factory=Counter)
    validation: list[Validation] = field(default_factory=list)  # its files', when asked for
    rejected: bool = False  # not applied because the guard's policy refuses it (git mode)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def unparseable(self) -> bool:
        """Not applied because a file would no longer parse (engine.validate)."""
        return any(v.failed for v in self.validation)


@record
class PatchPlan:
    """The groups of a patch, as planned."""

    groups: list[GroupPlan]

    @property
    def applied(self) -> list[GroupPlan]:
        """Groups that succeeded and change something."""
        return [g for g in self.groups if g.ok and g.changes]

    @property
    def failed(self) -> list[GroupPlan]:
        return [g for g in self.groups if not g.ok]


@record
class PatchOutcome:
    """A planned request: its result, and the plan to land (None when nothing may change)."""

    result: Result
    changes: list[FileChange]  # of the groups that apply, in order; empty when nothing does
    plan: PatchPlan | None = None
