"""Files as the main line has them committed, read with the ``git`` binary (no pygit2:
``redline apply --session`` and ``redline mcp`` read them on their fast path).

In git mode the settings that govern an agent — ``[permission]`` and the rest of
``.redline.toml`` or ``[tool.redline]`` — come from the branch its session was
opened from, as committed there (:func:`mainline_rev`), never from the session's
worktree: the agent can change those files where it works, and a change it made
must not govern it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from redline.gitops.errors import GitModeError
from redline.gitops.gitenv import without_git_redirects
from redline.gitops.names import STATE_DIR

_TIMEOUT = 30  # seconds for one ``git cat-file``
_CACHE = "settings"  # in redline's state folder: the files read, by commit id
_KEPT = 64  # cached commits
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def mainline_rev(common: Path, session: str | None) -> tuple[str, str]:
    """The revision whose committed settings govern ``session`` and how to name it: the
    branch the session was opened from; else the commit it started from; and, for a
    session not (yet) recorded, the main worktree's HEAD, which a new session starts
    from."""
    record: dict[str, object] = {}
    if session is not None:
        try:
            path = common / STATE_DIR / "sessions" / f"{session}.json"
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = {}
    return governing_rev(record.get("origin"), record.get("base"))


def governing_rev(origin: object, base: object) -> tuple[str, str]:
    """:func:`mainline_rev` of a session opened from ``origin`` at ``base`` (as its record
    holds them; the daemon has them in memory)."""
    if isinstance(origin, str) and origin.startswith("refs/heads/"):
        return origin, f"on {origin.removeprefix('refs/heads/')}"
    if isinstance(base, str) and base:
        return base, f"at commit {base[:12]}"
    return "HEAD", "in HEAD"


def committed_files(common: Path, rev: str, paths: Sequence[str]) -> dict[str, bytes | None]:
    """``paths`` as ``rev`` holds them (None: not there, or ``rev`` names no commit yet).

    Kept in redline's state folder by commit id, so that the next process (an agent's
    ``redline apply`` starts one per request) need not start git while the branch stays.
    """
    commit = resolve(common, rev)
    cache = common / "redline" / _CACHE / f"{commit}.json" if commit else None
    if cache is not None:
        cached = _cached(cache, paths)
        if cached is not None:
            return cached
    found = _cat_files(common, commit or rev, paths)
    if cache is not None:
        _keep(cache, found)
    return found


def resolve(common: Path, rev: str) -> str | None:
    """The commit id ``rev`` (``HEAD``, a full ref name, a commit id) points at, read from
    the ref files; None when it cannot be told that way (git then reads ``rev`` itself)."""
    name = rev
    for _ in range(5):  # symbolic refs, followed a few deep
        if _SHA.fullmatch(name):
            return name
        try:
            text = (common / name).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return _packed(common, name)
        if not text.startswith("ref: "):
            return text if _SHA.fullmatch(text) else None
        name = text.removeprefix("ref: ").strip()
    return None


def _packed(common: Path, name: str) -> str | None:
    try:
        lines = (common / "packed-refs").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        sha, _, ref = line.partition(" ")
        if ref == name and _SHA.fullmatch(sha):
            return sha
    return None


def _cached(cache: Path, paths: Sequence[str]) -> dict[str, bytes | None] | None:
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        return {p: None if data[p] is None else base64.b64decode(data[p]) for p in paths}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep(cache: Path, found: dict[str, bytes | None]) -> None:
    """Write the cache entry (atomically; a failure only costs the next process a git run)."""
    data = {p: None if v is None else base64.b64encode(v).decode() for p, v in found.items()}
    with contextlib.suppress(OSError):
        cache.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, cache)
        entries = sorted(cache.parent.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in entries[:-_KEPT]:
            old.unlink(missing_ok=True)


def _cat_files(common: Path, rev: str, paths: Sequence[str]) -> dict[str, bytes | None]:
    request = "".join(f"{rev}:{path}\n" for path in paths)
    try:
        proc = subprocess.run(
            ["git", "--git-dir", str(common), "cat-file", "--batch"],
            input=request.encode(),
            capture_output=True,
            timeout=_TIMEOUT,
            env=without_git_redirects(os.environ),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitModeError(
            f"cannot read the committed settings of {rev} with git ({exc}); is git installed "
            "and on the PATH? Nothing is applied while the permissions are unknown"
        ) from None
    if proc.returncode != 0:
        said = proc.stderr.decode(errors="replace").strip()
        raise GitModeError(
            f"git cat-file could not read the committed settings of {rev}: {said}; nothing is "
            "applied while the permissions are unknown"
        )
    return dict(zip(paths, _objects(proc.stdout, len(paths)), strict=True))


def _objects(out: bytes, count: int) -> list[bytes | None]:
    """The contents ``git cat-file --batch`` printed, in order (None: missing)."""
    found: list[bytes | None] = []
    at = 0
    for _ in range(count):
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            found.append(out[at : at + size])
            at += size + 1
        else:  # "<rev:path> missing", or a tree, or an ambiguous name: no file there
            if len(header) == 3:
                at += int(header[2]) + 1
            found.append(None)
    return found
