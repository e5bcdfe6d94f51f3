"""Which of the daemon's writes are fsynced: what git's ``core.fsync`` asks of git's own.

An edit writes what ``git commit`` writes — objects, then a ref — plus the
journal and the worktree files. Git fsyncs none of a commit's writes unless
``core.fsync`` names them (``loose-object``, ``reference``; ``committed`` names
both, and ``core.fsyncObjectFiles=true`` the first), and redline follows the
same setting, so an edit is as durable as a commit in the same repository and
costs what it costs there (an fsync is 1-10 ms on common disks, several times
an edit):

- ``loose-object``: the pack and index of each request's objects are fsynced
  before they are renamed into place, and the pack folder after;
- ``reference``: the journal is fsynced once written (before any ref moves),
  each ref's new value before it is renamed over the ref and its folder after,
  the worktree files before the journal is cleared, and the cleared journal.

Whatever is fsynced, the order of the writes is the same: objects, then the
journal, then the branch, then the notes, then the worktree files, then the
journal cleared (see gitops.publish).
"""

from __future__ import annotations

from typing import Any

from redline.engine.records import record

# core.fsync components and aggregates, as git spells them, reduced to the two redline
# uses (a request's objects are what `git commit` writes as loose objects).
_COMPONENTS: dict[str, frozenset[str]] = {
    "loose-object": frozenset({"objects"}),
    "reference": frozenset({"refs"}),
    "objects": frozenset({"objects"}),
    "committed": frozenset({"objects", "refs"}),
    "added": frozenset({"objects", "refs"}),
    "all": frozenset({"objects", "refs"}),
}


@record(frozen=True)
class Durability:
    objects: bool = False  # fsync each request's pack and index (core.fsync: loose-object)
    refs: bool = False  # fsync the journal, refs and worktree files (core.fsync: reference)

    @classmethod
    def from_config(cls, config: Any) -> Durability:
        """The durability git's configuration (a pygit2 Config) asks for."""
        wanted: set[str] = set()
        if _boolean(config, "core.fsyncObjectFiles"):
            wanted.add("objects")
        value = _value(config, "core.fsync")
        for token in (value or "").split(","):
            name = token.strip().lower()
            if name == "none":
                wanted.clear()
            elif name.startswith("-"):
                wanted -= _COMPONENTS.get(name[1:], frozenset())
            else:
                wanted |= _COMPONENTS.get(name, frozenset())
        return cls(objects="objects" in wanted, refs="refs" in wanted)


NONE = Durability()


def _value(config: Any, key: str) -> str | None:
    try:
        return str(config[key])
    except Exception:  # unset (KeyError), or a value libgit2 cannot read
        return None


def _boolean(config: Any, key: str) -> bool:
    try:
        return bool(config.get_bool(key))
    except Exception:  # unset (KeyError), or not a boolean
        return False
