"""The evidence ledger: JSON notes under ``refs/notes/redline``.

Notes are stored with a two-level fan-out (``ab/cdef…``), as git itself does for
large notes trees, so writing one rewrites two small trees whatever the number
of notes. Readers accept flat and fanned-out notes alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import pygit2

from redline.gitops import refs
from redline.gitops.errors import CorruptNotes
from redline.gitops.objects import write_blob, write_commit
from redline.gitops.repo import NOTES_REF, common_dir
from redline.gitops.trees import FILE, TREE, Entry, update

SCHEMA = "redline.note/1"
PREVIEW_LIMIT = 240
_SECRETS = [
    re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S
    ),
    re.compile(
        r"(?i)((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth[_-]?token"
        r"|client[_-]?secret|private[_-]?key)[\"']?\s*[:=]\s*)([\"']?)[^\s\"',;]+"
    ),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}\b"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b|\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"),
]
# Long tokens mixing digits, upper and lower case look like keys; hex hashes do not.
_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")
REDACTED = "[REDACTED]"


def redact(text: str) -> str:
    """``text`` with likely secrets replaced by ``[REDACTED]``."""
    for pattern in _SECRETS:
        if pattern.groups >= 2:
            text = pattern.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return _TOKEN.sub(lambda m: REDACTED if _looks_random(m.group(0)) else m.group(0), text)


def _looks_random(token: str) -> bool:
    return (
        any(c.isdigit() for c in token)
        and any(c.isupper() for c in token)
        and any(c.islower() for c in token)
    )


def preview(text: str) -> str:
    """A bounded, secret-redacted preview of matched text."""
    shown = redact(text)
    if len(shown) > PREVIEW_LIMIT:
        shown = shown[:PREVIEW_LIMIT] + f"… ({len(text)} characters)"
    return shown


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _paths(oid: pygit2.Oid) -> tuple[str, str]:
    hex_id = str(oid)
    return f"{hex_id[:2]}/{hex_id[2:]}", hex_id


def read_note(repo: pygit2.Repository, commit: pygit2.Oid) -> dict[str, Any] | None:
    """The redline note attached to ``commit``, or None."""
    tree = notes_tree(repo)
    if tree is None:
        return None
    for path in _paths(commit):
        try:
            blob = repo[tree[path].id]
        except KeyError:
            continue
        if not isinstance(blob, pygit2.Blob):
            continue
        try:
            note = json.loads(blob.data)
        except ValueError:
            return None
        return note if isinstance(note, dict) else None
    return None


def notes_tree(repo: pygit2.Repository) -> pygit2.Tree | None:
    commit = notes_commit(repo)
    return commit.tree if commit is not None else None


def notes_commit(repo: pygit2.Repository) -> pygit2.Commit | None:
    """The commit ``refs/notes/redline`` points at; None when there are no notes.

    Raises :class:`CorruptNotes` when the ref cannot be read, or points at a
    missing object or at anything but a commit whose tree is present.
    """
    try:
        ref = repo.references.get(NOTES_REF)
    except pygit2.GitError as exc:
        path = common_dir(repo) / NOTES_REF
        raise CorruptNotes(
            NOTES_REF,
            f"cannot be read as a reference ({exc})",
            f"Remove the broken file {path}, then restore the ref with `git update-ref "
            f"{NOTES_REF} <good commit>` or fetch it again with "
            f"`git fetch <remote> +{NOTES_REF}:{NOTES_REF}`",
        ) from None
    if ref is None:
        return None
    target = ref.target
    if not isinstance(target, pygit2.Oid):
        raise CorruptNotes(
            NOTES_REF, f"is a symbolic reference (to {target}), not a pointer to a notes commit"
        )
    return _checked_commit(repo, target)


def _checked_commit(repo: pygit2.Repository, target: pygit2.Oid) -> pygit2.Commit:
    """The notes commit the notes ref points at, ``target`` (CorruptNotes when it is not one)."""
    obj = repo.get(target)
    if obj is None:
        raise CorruptNotes(NOTES_REF, f"points at {target}, an object missing from the repository")
    if not isinstance(obj, pygit2.Commit):
        raise CorruptNotes(
            NOTES_REF,
            f"does not point at a notes commit (it points at a {obj.type_str}, {str(target)[:12]})",
        )
    if repo.get(obj.tree_id) is None:
        raise CorruptNotes(
            NOTES_REF,
            f"points at commit {str(target)[:12]}, whose tree {obj.tree_id} is missing "
            "from the repository",
        )
    return obj


def prepare(
    repo: pygit2.Repository,
    notes: Mapping[pygit2.Oid, Mapping[str, Any]],
    signature: pygit2.Signature,
    parent: pygit2.Oid | None,
) -> pygit2.Oid:
    """Write (not yet publish) a notes commit adding ``notes`` on top of ``parent``
    (CorruptNotes when ``parent`` is not a notes commit whose tree is present)."""
    tree = _checked_commit(repo, parent).tree if parent is not None else None
    changes: dict[str, Entry | None] = {}
    for commit, note in notes.items():
        fanned, flat = _paths(commit)
        data = json.dumps(note, ensure_ascii=False, sort_keys=True, indent=1).encode() + b"\n"
        changes[fanned] = Entry(write_blob(repo, data), FILE)
        if tree is not None and flat in tree and tree[flat].filemode != TREE:
            changes[flat] = None
    new_tree = update(repo, tree, changes)
    message = "Notes added by redline\n"
    parents = [parent] if parent is not None else []
    return write_commit(repo, new_tree, parents, signature, signature, message)


def current(repo: pygit2.Repository) -> pygit2.Oid | None:
    return ref_target(repo, NOTES_REF)


def ref_target(repo: pygit2.Repository, name: str) -> pygit2.Oid | None:
    """The commit a direct reference points at, or None when it does not exist."""
    try:
        target = repo.references[name].target
    except KeyError:
        return None
    return target if isinstance(target, pygit2.Oid) else None


def publish(repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid) -> None:
    """Move the notes ref from ``old`` to ``new`` (compare and swap)."""
    refs.update(repo, NOTES_REF, old, new, "redline: notes")
