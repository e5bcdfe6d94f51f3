"""The evidence ledger: JSON notes under ``refs/notes/redline``.

Notes are stored with a two-level fan-out (``ab/cdef…``), as git itself does for
large notes trees, so writing one rewrites two small trees whatever the number
of notes. Readers accept flat and fanned-out notes alike.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any, Literal

import pygit2

from redline.engine.records import field, names, record
from redline.gitops import refs, sent
from redline.gitops.errors import CorruptNotes, GitModeError, RefMoved
from redline.gitops.objects import write_blob, write_commit
from redline.gitops.repo import NOTES_REF, common_dir
from redline.gitops.trees import FILE, TREE, Entry, child_named, entry_at, with_entries
from redline.gitops.writer import PLAIN, Writer

SCHEMA = "redline.note/1"
_Tip = Literal["tip"]
PREVIEW_LIMIT = 240
# The patterns of likely secrets, compiled when a preview is first redacted (the guard,
# which reads notes in every commit's hook, never redacts one).
_SECRET_PATTERNS = (
    (r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
    (
        r"(?i)((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth[_-]?token"
        r"|client[_-]?secret|private[_-]?key)[\"']?\s*[:=]\s*)([\"']?)[^\s\"',;]+",
        0,
    ),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 0),
    (r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}\b", 0),
    (r"\bsk-[A-Za-z0-9_-]{20,}\b|\bxox[abprs]-[A-Za-z0-9-]{10,}\b", 0),
    (r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b", 0),
)
# Long tokens mixing digits, upper and lower case look like keys; hex hashes do not.
_TOKEN = r"[A-Za-z0-9+/_-]{32,}={0,2}"


@cache
def _secrets() -> tuple[list[re.Pattern[str]], re.Pattern[str]]:
    return [re.compile(text, flags) for text, flags in _SECRET_PATTERNS], re.compile(_TOKEN)


REDACTED = "[REDACTED]"


def redact(text: str) -> str:
    """``text`` with likely secrets replaced by ``[REDACTED]``."""
    secrets, token = _secrets()
    for pattern in secrets:
        if pattern.groups >= 2:
            text = pattern.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return token.sub(lambda m: REDACTED if _looks_random(m.group(0)) else m.group(0), text)


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


# --- the note model ---------------------------------------------------------------------


@record
class NoteOperation:
    """One operation of an edit and, for a replacement, its match evidence."""

    path: str
    op: str  # edit | update | add | delete | create | overwrite (write) | write (external)
    match_type: str | None = None
    confidence: float | None = None
    start_line: int | None = None
    end_line: int | None = None
    matched_sha256: str | None = None
    matched_preview: str | None = None
    other_candidates: int | None = None  # apply_patch: other places the hunk fit
    anchor_found: bool | None = None  # apply_patch: the @@ anchor was there
    # What the match accepted, in words, with its lines (engine.tolerated; [] when exact)
    tolerated: list[dict[str, Any]] | None = None

    @classmethod
    def matched(
        cls, path: str, op: str, match_type: str, confidence: float, start: int, end: int,
        text: str, **extra: Any,
    ) -> NoteOperation:  # fmt: skip
        """An operation that replaced ``text`` (kept as a hash and a redacted preview)."""
        return cls(path, op, match_type, confidence, start, end, sha256(text), preview(text),
                   **extra)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None or k in ("path", "op")}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NoteOperation:
        known = set(names(cls))
        return cls(**{k: v for k, v in data.items() if k in known})


@record(frozen=True)
class NoteFile:
    """One file an edit commit changed: its blob in the commit's parent and in the
    commit (hex ids; None: no file there). The guard checks them against the commit."""

    path: str
    before: str | None
    after: str | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "before": self.before, "after": self.after}


def files_at(
    before: pygit2.Tree | None, after: pygit2.Tree, paths: Iterable[str]
) -> list[NoteFile]:
    """The files among ``paths`` that differ between two trees, with their blobs."""
    out = []
    for path in sorted(set(paths)):
        old, new = _blob_hex(before, path), _blob_hex(after, path)
        if old != new:
            out.append(NoteFile(path, old, new))
    return out


def files_between(before: pygit2.Tree | None, after: pygit2.Tree) -> list[NoteFile]:
    """Every file that differs between two trees, with its blobs."""
    diff = before.diff_to_tree(after) if before is not None else after.diff_to_tree(swap=True)
    paths = {p for d in diff.deltas for p in (d.old_file.path, d.new_file.path)}
    return files_at(before, after, paths)


def _blob_hex(tree: pygit2.Tree | None, path: str) -> str | None:
    if tree is None:
        return None
    try:
        entry = tree[path]
    except KeyError:
        return None
    return str(entry.id) if entry.type_str == "blob" else None


@record
class Verdict:
    """What the policy said about an edit when it was made."""

    verdict: str  # pass | flagged
    source: str  # where the policy was read from
    violations: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        if self.verdict == "pass":
            return {"verdict": "pass", "source": self.source}
        return {"verdict": self.verdict, "action": "review", "source": self.source,
                "violations": [dict(v) for v in self.violations]}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        return cls(str(data.get("verdict", "pass")), str(data.get("source", "")),
                   [dict(v) for v in data.get("violations", [])])  # fmt: skip


@record(frozen=True)
class Approval:
    """A person's approval of an edit. A signed one also names what it signed — the
    edit, the commit whose note holds it, the digest of that note's evidence
    (:func:`evidence_digest`) — and carries the signature of :func:`approval_payload`
    over them (``format``: ssh | openpgp). Who may sign is the gate's question
    (hooks.signed); the fields here only say what the signer claimed."""

    by: str  # "Name <email>"
    at: str  # UTC, ISO 8601
    edit: str | None = None
    commit: str | None = None
    evidence: str | None = None
    format: str | None = None
    signature: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Approval:
        extra = {k: str(data[k]) for k in _SIGNED_KEYS if data.get(k) is not None}
        return cls(str(data.get("by", "")), str(data.get("at", "")), **extra)


_SIGNED_KEYS = ("edit", "commit", "evidence", "format", "signature")
APPROVAL_HEADER = "redline approval 1"


def approval_payload(edit: str, commit: str, by: str, at: str, evidence: str) -> bytes:
    """The bytes an approval's signature covers: which edit, in which commit's note, with
    which evidence, approved by whom and when."""
    lines = [APPROVAL_HEADER, f"edit {edit}", f"commit {commit}", f"by {by}", f"at {at}",
             f"evidence {evidence}"]  # fmt: skip
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def evidence_of(data: Mapping[str, Any], edit: str) -> Mapping[str, Any] | None:
    """The evidence of ``edit`` in the note ``data``: the note itself, or in a squash
    commit's note, the entry of ``edit`` (None: the note does not hold it)."""
    if "squashed" in data and data.get("edit") != edit:
        found = [e for e in squashed(data) if e.get("edit") == edit]
        return found[0] if found else None
    return data


def evidence_digest(evidence: Mapping[str, Any]) -> str:
    """sha256 of one edit's evidence as stored, approvals left out: what a signed approval
    vouches for, so that evidence changed after it was signed no longer carries it."""
    rest = {k: v for k, v in evidence.items() if k != "approvals"}
    if isinstance(rest.get("squashed"), list):  # a squash's own: its edits' approvals too
        rest["squashed"] = [
            {k: v for k, v in e.items() if k != "approvals"} if isinstance(e, dict) else e
            for e in rest["squashed"]
        ]
    return hashlib.sha256(encode(rest)).hexdigest()


@record
class Note:
    """The evidence of one edit commit, stored as JSON under ``refs/notes/redline``."""

    edit: str
    request: str
    session: str
    tool: str  # edit | apply_patch | write | delete | external
    model: str | None
    source: str  # agent | external
    operations: list[NoteOperation]
    created: str = field(default_factory=lambda: utc_now())
    policy: Verdict | None = None
    approvals: list[Approval] = field(default_factory=list)
    cleaned: list[str] | None = None  # invisible characters taken out of the request
    tolerances: list[str] | None = None  # match types other than exact the edit used
    # The syntax validation the edit passed, per file: {path, language, parser}, or
    # {path, skipped} for a file no parser reads (engine.validate). None: not asked for.
    validation: list[dict[str, Any]] | None = None
    undoes: dict[str, str] | None = None  # an undo's note: the edit and commit it reverts
    # The files the commit changed, blob ids before and after (older notes lack them).
    files: list[NoteFile] | None = None
    # The request as the agent sent it (gitops.sent): {blob, bytes, sha256, cap}, or
    # {over_cap, bytes, sha256, cap} when it was too large to keep.
    sent: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema": SCHEMA,
            "edit": self.edit,
            "request": self.request,
            "session": self.session,
            "tool": self.tool,
            "model": self.model,
            "source": self.source,
            "created": self.created,
            "operations": [op.to_json() for op in self.operations],
            "policy": self.policy.to_json() if self.policy else None,
            "approvals": [a.to_json() for a in self.approvals],
        }
        if self.cleaned is not None:
            data["cleaned"] = list(self.cleaned)
        if self.tolerances is not None:
            data["tolerances"] = list(self.tolerances)
        if self.validation is not None:
            data["validation"] = [dict(v) for v in self.validation]
        if self.undoes is not None:
            data["undoes"] = dict(self.undoes)
        if self.files is not None:
            data["files"] = [f.to_json() for f in self.files]
        if self.sent is not None:
            data["sent"] = dict(self.sent)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Note:
        policy = data.get("policy")
        return cls(
            edit=str(data.get("edit", "")),
            request=str(data.get("request", "")),
            session=str(data.get("session", "")),
            tool=str(data.get("tool", "")),
            model=data.get("model"),
            source=str(data.get("source", "")),
            operations=[NoteOperation.from_json(op) for op in data.get("operations", [])],
            created=str(data.get("created", "")),
            policy=Verdict.from_json(policy) if isinstance(policy, Mapping) else None,
            approvals=[Approval.from_json(a) for a in data.get("approvals", [])],
            cleaned=data.get("cleaned"),
            tolerances=data.get("tolerances"),
            validation=_records(data.get("validation")),
            undoes=data.get("undoes"),
            files=_files(data.get("files")),
            sent=dict(data["sent"]) if isinstance(data.get("sent"), Mapping) else None,
        )


def _files(value: Any) -> list[NoteFile] | None:
    if not isinstance(value, list):
        return None
    return [
        NoteFile(str(v.get("path", "")), v.get("before"), v.get("after"))
        for v in value
        if isinstance(v, Mapping)
    ]


def _records(value: Any) -> list[dict[str, Any]] | None:
    if not isinstance(value, list):
        return None
    return [dict(v) for v in value if isinstance(v, Mapping)]


# Each edit commit names its edit in a trailer, so that the evidence can be found
# again from a copy (cherry-pick, rebase). A squash's message quotes its commits'
# messages indented: those count too.
_TRAILER = re.compile(r"^[ \t]*Redline-Edit:[ \t]*(\S+)[ \t]*$", re.M)


def trailer_edits(message: str) -> list[str]:
    """The edit ids a commit message names in ``Redline-Edit:`` lines."""
    return list(dict.fromkeys(_TRAILER.findall(message)))


# A squash commit (``redline land --squash``) carries several edits: its note lists
# each one's evidence under ``squashed`` (the edit's note, and the commit it came from).
SQUASH_TOOL = "squash"


def squashed(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The edits a squash commit's note carries (none for an edit's own note)."""
    found = data.get("squashed")
    if not isinstance(found, list):
        return []
    return [item for item in found if isinstance(item, dict)]


def approvals_of(data: Mapping[str, Any], edit: str) -> list[Approval]:
    """The approvals of ``edit`` in the note ``data``: the note's own, or in a squash
    commit's note, those of the entry of ``edit``."""
    if "squashed" in data and data.get("edit") != edit:
        found = [e for e in squashed(data) if e.get("edit") == edit]
        return Note.from_json(found[0]).approvals if found else []
    return Note.from_json(data).approvals


def with_approval(data: Mapping[str, Any], edit: str, stamp: Approval) -> dict[str, Any]:
    """The note ``data`` with ``stamp`` added to the approvals of ``edit``: the note's own,
    or, in a squash commit's note, those of the entry of ``edit``."""

    def approved(item: Mapping[str, Any]) -> dict[str, Any]:
        known = Note.from_json(item).approvals
        return {**item, "approvals": [a.to_json() for a in (*known, stamp)]}

    if "squashed" in data and data.get("edit") != edit:
        entries = [approved(e) if e.get("edit") == edit else e for e in squashed(data)]
        return {**data, "squashed": entries}
    return approved(data)


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def encode(note: Mapping[str, Any]) -> bytes:
    """A note's bytes as stored (stable key order, one key a line)."""
    return json.dumps(note, ensure_ascii=False, sort_keys=True, indent=1).encode() + b"\n"


# --- reading and writing the notes ref --------------------------------------------------


def _paths(oid: pygit2.Oid | str) -> tuple[str, str]:
    hex_id = str(oid)
    return f"{hex_id[:2]}/{hex_id[2:]}", hex_id


def decode_note(data: bytes) -> Any:
    """A note's JSON (ValueError when it is not JSON).

    When a rebase or an amend carries a note onto a commit that has one already (the
    same commit made twice within a second, an amend that changed nothing, a commit a
    rebase dropped giving its note to the next), git joins the two notes' texts
    (``notes.rewriteMode`` is ``concatenate`` unless set): such a note is read as the
    union of the objects it holds, as a merge of notes would join them
    (gitops.notes_merge.union) — flagged when any part is."""
    parts = note_parts(data)
    if len(parts) == 1:
        return parts[0]
    from redline.gitops.notes_merge import union

    joined = parts[0]
    for part in parts[1:]:
        joined = union(joined, part)
    return joined


def note_parts(data: bytes) -> list[Any]:
    """The JSON values a note's text holds: one, or several objects git joined (see
    :func:`decode_note`); ValueError for anything else."""
    decoder = json.JSONDecoder()
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    value, end = decoder.raw_decode(text, _skip(text, 0))
    end = _skip(text, end)
    parts = [value]
    while end < len(text):
        value, end = decoder.raw_decode(text, end)
        parts.append(value)
        end = _skip(text, end)
    if len(parts) > 1 and not all(isinstance(part, dict) for part in parts):
        raise json.JSONDecodeError("Extra data", text, end)
    return parts


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def note_blob(tree: pygit2.Tree | None, commit: pygit2.Oid | str) -> pygit2.Oid | None:
    """The id of ``commit``'s note in a notes tree (fanned out or flat), or None."""
    entry = _note_entry(tree, commit)
    return entry.id if entry is not None else None


def note_object(repo: pygit2.Repository, blob_id: pygit2.Oid) -> dict[str, Any] | None:
    """The note in blob ``blob_id`` when it is a JSON object; None for anything else."""
    blob = repo.get(blob_id)
    if not isinstance(blob, pygit2.Blob):
        return None
    try:
        note = decode_note(blob.data)
    except ValueError:
        return None
    return note if isinstance(note, dict) else None


def read_note(
    repo: pygit2.Repository, commit: pygit2.Oid, at: pygit2.Oid | _Tip | None = "tip"
) -> dict[str, Any] | None:
    """The redline note attached to ``commit`` (in notes commit ``at``; default the tip)."""
    tree = notes_tree(repo, at)
    if tree is None:
        return None
    blob = note_blob(tree, commit)
    return note_object(repo, blob) if blob is not None else None


def notes_tree(
    repo: pygit2.Repository, target: pygit2.Oid | _Tip | None = "tip"
) -> pygit2.Tree | None:
    """The tree of notes commit ``target`` (default: the one the notes ref points at);
    CorruptNotes when that is not a notes commit whose tree is present."""
    if target == "tip":
        commit = notes_commit(repo)
    else:
        commit = _checked_commit(repo, target) if target is not None else None
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


NoteData = Mapping[str, Any] | pygit2.Oid  # a note's JSON, or the blob already holding it


def prepare(
    repo: pygit2.Repository,
    notes: Mapping[pygit2.Oid, NoteData],
    signature: pygit2.Signature,
    parent: pygit2.Oid | None,
    writer: Writer = PLAIN,
) -> pygit2.Oid:
    """Write (not yet publish) a notes commit adding ``notes`` on top of ``parent``
    (CorruptNotes when ``parent`` is not a notes commit whose tree is present)."""
    tree = _checked_commit(repo, parent).tree if parent is not None else None
    changes: dict[str, Entry | None] = {}
    for commit, note in notes.items():
        fanned, flat = _paths(commit)
        blob = note if isinstance(note, pygit2.Oid) else write_blob(repo, encode(note), writer)
        changes[fanned] = Entry(blob, FILE)
        old = child_named(tree, flat) if tree is not None else None
        if old is not None and old.filemode != TREE:
            changes[flat] = None
        changes.update(_requests_of(repo, note, tree))
    new_tree = with_entries(repo, tree, changes)
    message = "Notes added by redline\n"
    parents = [parent] if parent is not None else []
    return write_commit(repo, new_tree, parents, signature, signature, message, writer)


def _requests_of(
    repo: pygit2.Repository, note: NoteData, tree: pygit2.Tree | None
) -> dict[str, Entry]:
    """The request blobs ``note`` names (gitops.sent), as entries of the notes tree, so
    that they travel with it (those already there, or missing here, left out)."""
    if isinstance(note, pygit2.Oid):
        blob = repo.get(note)
        if not isinstance(blob, pygit2.Blob) or b'"sent"' not in blob.data:
            return {}
        try:
            note = json.loads(blob.data)
        except ValueError:
            return {}
        if not isinstance(note, dict):
            return {}
    out = {}
    for name in sent.blobs_named(note):
        path = sent.path_of(name)
        # Not ``path in tree``: pygit2 would keep the string, a new one per request.
        if tree is not None and entry_at(tree, path) is not None:
            continue
        try:
            oid = pygit2.Oid(hex=name)
        except ValueError:
            continue
        if oid in repo:
            out[path] = Entry(oid, FILE)
    return out


def is_note_path(path: str) -> bool:
    """A path of the notes tree that may be a note: not the requests' folder."""
    return not (path == sent.FOLDER or path.startswith(sent.FOLDER + "/"))


request_of = sent.request_of  # the request as sent for an edit (gitops.sent)


def blob_of(
    repo: pygit2.Repository, commit: pygit2.Oid, at: pygit2.Oid | None
) -> pygit2.Oid | None:
    """The blob of ``commit``'s note in notes commit ``at``, or None."""
    return note_blob(notes_tree(repo, at), commit)


def missing(
    repo: pygit2.Repository, blobs: Mapping[pygit2.Oid, NoteData], at: pygit2.Oid | None
) -> dict[pygit2.Oid, NoteData]:
    """The items of ``blobs`` (commit -> its note) whose commit has no note in notes
    commit ``at`` (whose tree is read once for all of them)."""
    if not blobs:
        return {}
    tree = notes_tree(repo, at)
    return {c: b for c, b in blobs.items() if note_blob(tree, c) is None}


def _note_entry(tree: pygit2.Tree | None, commit: pygit2.Oid | str) -> pygit2.Object | None:
    """``commit``'s note in the notes tree ``tree``: fanned out (``ab/cdef…``) or flat.
    Found by position, not by path: each commit's name is looked up once or twice, and
    pygit2 would keep every name it was given (gitops.trees)."""
    if tree is None:
        return None
    hex_id = str(commit)
    folder = child_named(tree, hex_id[:2])
    if isinstance(folder, pygit2.Tree):
        found = child_named(folder, hex_id[2:])
        if found is not None:
            return found
    return child_named(tree, hex_id)


def current(repo: pygit2.Repository) -> pygit2.Oid | None:
    return ref_target(repo, NOTES_REF)


def ref_target(repo: pygit2.Repository, name: str) -> pygit2.Oid | None:
    """The commit a direct reference points at, or None when it does not exist."""
    try:
        target = repo.references[name].target
    except KeyError:
        return None
    return target if isinstance(target, pygit2.Oid) else None


def publish(
    repo: pygit2.Repository,
    make: Callable[[pygit2.Oid | None], Mapping[pygit2.Oid, NoteData]],
    signature: pygit2.Signature,
    writer: Writer = PLAIN,
    prepared: tuple[pygit2.Oid | None, pygit2.Oid] | None = None,
) -> pygit2.Oid | None:
    """Add notes on top of whatever the notes ref holds now; the new notes commit.

    ``make(tip)`` says which notes to write given the current tip (None: none
    needed, nothing is written). A compare-and-swap loop: when another process
    (``git notes``, ``redline approve``, the daemon) moves the ref in between, the
    notes commit is made again on its new tip, so notes are only ever added —
    never lost. LockHeld when another process keeps the ref's lock. ``prepared``
    is a notes commit made ahead on a given parent, tried first while that parent
    is still the tip (its objects are then written with the request's others).
    """
    for _ in range(_ATTEMPTS):
        parent = current(repo)
        if prepared is not None and prepared[0] == parent:
            new = prepared[1]
        else:
            notes = make(parent)
            if not notes:
                return None
            new = prepare(repo, notes, signature, parent, writer)
        prepared = None
        try:
            refs.update(repo, NOTES_REF, parent, new, "redline: notes", writer=writer)
        except RefMoved:
            continue
        return new
    raise GitModeError(
        f"{NOTES_REF} kept moving while redline was adding to it ({_ATTEMPTS} tries); "
        "another program is writing notes in a loop — stop it, then retry"
    )


_ATTEMPTS = 50
