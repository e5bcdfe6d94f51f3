"""Planning an ``apply_patch`` request: one snapshot, file groups, all in memory.

Operations touching the same file form one group (consecutive Update sections
of a path apply in order; a Move binds its source and destination), and a
group commits or rolls back as a unit. Planning reads the snapshot and never
writes; the caller writes the changes of the groups that succeeded.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from redline.engine import invisible
from redline.engine.decode import decode, encode_text
from redline.engine.errors import FileFormatError, RedlineError, RequestError
from redline.engine.hunks import HunkError, apply_hunks
from redline.engine.patch_parse import AddFile, DeleteFile, Operation, UpdateFile, parse_patch
from redline.engine.paths import checked_path
from redline.engine.plan import (
    FileChange,
    GroupPlan,
    MemorySnapshot,
    PatchPlan,
    PathEvidence,
    Snapshot,
)

__all__ = [
    "FileChange",
    "GroupPlan",
    "MemorySnapshot",
    "PatchPlan",
    "PathEvidence",
    "Snapshot",
    "file_in_the_way",
    "plan_patch",
]

OVERLAPPING = "apply_patch contains overlapping operations"


def plan_patch(text: str, snapshot: Snapshot) -> PatchPlan:
    """Parse and plan; raise PatchSyntaxError or RequestError when nothing may change.

    Every path goes through ``snapshot.relative`` (an absolute path inside the
    root becomes relative) and then the path policy
    (:func:`redline.engine.paths.checked_path`); the plan and its reports use
    the normalised paths.
    """
    patch = parse_patch(text)
    if not patch.operations:
        raise RequestError("apply_patch contains no operations; add at least one file operation")
    given = [_mapped(op, snapshot.relative) for op in patch.operations]
    ops = [_checked(op) for op in given]
    _check_overlaps(given, ops)
    return PatchPlan([_plan_group(group, snapshot) for group in _groups(ops)])


def _mapped(op: Operation, relative: _PathMap) -> Operation:
    if isinstance(op, UpdateFile) and op.move_to is not None:
        return replace(op, path=relative(op.path), move_to=relative(op.move_to))
    return replace(op, path=relative(op.path))


def _op_paths(op: Operation) -> list[str]:
    if isinstance(op, UpdateFile) and op.move_to is not None:
        return [op.path, op.move_to]
    return [op.path]


def _checked(op: Operation) -> Operation:
    try:
        if isinstance(op, UpdateFile):
            move = checked_path(op.move_to) if op.move_to is not None else None
            return UpdateFile(checked_path(op.path), move, op.hunks, line_number=op.line_number)
        if isinstance(op, AddFile):
            return AddFile(checked_path(op.path), op.lines, line_number=op.line_number)
        return DeleteFile(checked_path(op.path), line_number=op.line_number)
    except RequestError as exc:
        raise RequestError(f"apply_patch: {exc}", "patch") from None


def _check_overlaps(given: list[Operation], checked: list[Operation]) -> None:
    spellings: dict[str, str] = {}
    for op, norm_op in zip(given, checked, strict=True):
        for raw, norm in zip(_op_paths(op), _op_paths(norm_op), strict=True):
            seen = spellings.setdefault(norm, raw)
            if seen != raw:
                raise RequestError(
                    f"{OVERLAPPING}: {seen!r} and {raw!r} name the same file; "
                    "spell each path one way",
                    "patch",
                )
    names = sorted(spellings)
    for a in names:
        for b in names:
            if b.startswith(a + "/"):
                raise RequestError(
                    f"{OVERLAPPING}: {a!r} is a file in one operation and a directory of "
                    f"{b!r} in another; split the patch",
                    "patch",
                )


def _groups(ops: list[Operation]) -> list[list[Operation]]:
    """Operations joined by the files they touch, in patch order."""
    parent: dict[str, str] = {}

    def find(p: str) -> str:
        while parent.setdefault(p, p) != p:
            p = parent[p]
        return p

    for op in ops:
        first, *rest = _op_paths(op)
        for other in rest:
            parent[find(other)] = find(first)
    order: dict[str, list[Operation]] = {}
    for op in ops:
        order.setdefault(find(_op_paths(op)[0]), []).append(op)
    return list(order.values())


def describe(op: Operation) -> str:
    if isinstance(op, AddFile):
        return f"add {op.path}"
    if isinstance(op, DeleteFile):
        return f"delete {op.path}"
    if op.move_to is not None:
        return f"update {op.path} and move it to {op.move_to}"
    return f"update {op.path}"


class _GroupFailure(RedlineError):
    pass


def _plan_group(ops: list[Operation], snapshot: Snapshot) -> GroupPlan:
    paths = tuple(dict.fromkeys(p for op in ops for p in _op_paths(op)))
    group = GroupPlan(paths, tuple(describe(op) for op in ops))
    state: dict[str, bytes | None] = {}
    origins: dict[str, str] = {}

    def current(path: str) -> bytes | None:
        if path not in state:
            state[path] = snapshot.read(path)
        return state[path]

    try:
        for op in ops:
            if snapshot.is_dir(op.path):
                raise _GroupFailure(
                    f"cannot {describe(op).split()[0]} {op.path}: it is a directory "
                    "(apply_patch works on files)"
                )
            if isinstance(op, UpdateFile) and op.move_to and snapshot.is_dir(op.move_to):
                raise _GroupFailure(
                    f"cannot move {op.path} to {op.move_to}: it is a directory "
                    "(apply_patch works on files; name the file inside it)"
                )
            for target in (op.path, op.move_to if isinstance(op, UpdateFile) else None):
                blocker = file_in_the_way(target, current) if target else None
                if blocker is not None:
                    raise _GroupFailure(
                        f"cannot {describe(op).split()[0]} {op.path}: {blocker} is a file, "
                        f"so {target} cannot be created inside it"
                    )
            if isinstance(op, AddFile):
                if current(op.path) is not None:
                    raise _GroupFailure(f"cannot add file that already exists: {op.path}")
                body, gone = invisible.clean("".join(line + "\n" for line in op.lines))
                group.cleaned += gone
                state[op.path] = body.encode("utf-8")
            elif isinstance(op, DeleteFile):
                if current(op.path) is None:
                    raise _GroupFailure(f"cannot delete missing file: {op.path}")
                state[op.path] = None
            else:
                state.update(_update(op, current, group))
                if op.move_to is not None and op.move_to != op.path:
                    origins[op.move_to] = origins.get(op.path, op.path)
    except (_GroupFailure, HunkError, FileFormatError) as exc:
        group.error = str(exc)
        return group
    group.changes = tuple(
        FileChange(p, snapshot.read(p), state[p], origins.get(p, p))
        for p in paths
        if p in state and state[p] != snapshot.read(p)
    )
    return group


def file_in_the_way(path: str, current: _Reader) -> str | None:
    """The first parent directory of ``path`` that is a file, if any."""
    parts = path.split("/")
    for i in range(1, len(parts)):
        parent = "/".join(parts[:i])
        if current(parent) is not None:
            return parent
    return None


def _update(op: UpdateFile, current: _Reader, group: GroupPlan) -> dict[str, bytes | None]:
    data = current(op.path)
    if data is None:
        raise _GroupFailure(f"cannot update missing file: {op.path}")
    decoded = decode(data)
    text, evidence, gone = apply_hunks(decoded.text, op.hunks, op.path)
    group.cleaned += gone
    group.hunks.extend(PathEvidence(op.path, e) for e in evidence)
    new = decoded.bom + encode_text(text, decoded.encoding)
    if op.move_to is None or op.move_to == op.path:
        return {op.path: new}
    if current(op.move_to) is not None:
        raise _GroupFailure(
            f"cannot move {op.path} to {op.move_to}: a file already exists there "
            "(apply_patch does not overwrite; delete it first or pick another name)"
        )
    return {op.path: None, op.move_to: new}


class _Reader(Protocol):
    def __call__(self, path: str) -> bytes | None: ...


class _PathMap(Protocol):
    def __call__(self, path: str) -> str: ...
