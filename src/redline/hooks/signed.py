"""Which approvals count where the policy says ``[guard] approvals = "signed"``.

An approval counts when its SSH signature (gitops.signing) verifies, in the
``redline`` namespace, against the allowed signers the repository keeps
(``.redline/allowed_signers``, git's ``gpg.ssh.allowedSignersFile`` format), over
what the approval stands for *where it is found*: the edit of the entry that
holds it, the commit whose note holds it, the evidence of that note now
(notes.evidence_digest), and the reviewer and time it names. So an approval
written by hand (no signature), signed by a key the file does not list, copied
onto another edit or commit, or left on evidence changed since it was signed,
does not count: it is named with the reason and ignored.

The allowed signers are read from trees a person stands behind, never from the
change being judged alone: a key line counts only when every one of the trees
the caller names holds it (the tree the change starts from and the tree it
brings) — so a signer an agent (or anyone) adds in the change itself signs
nothing in that change, and a key removed there counts no more.

A signature checked once is remembered (``<git-common-dir>/redline/signed-approvals``,
by a digest of the allowed signers, the payload and the signature): CI on a
fresh clone verifies each approval once; a hook run again reads the record.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

import pygit2

from redline.engine.policy import ALLOWED_SIGNERS
from redline.engine.records import record, replace
from redline.gitops import notes
from redline.gitops.repo import common_dir
from redline.gitops.signing import SSH, Verified, allowed_signers, verify
from redline.hooks.ledger import EVIDENCE_KEY, NOTE_KEY, EditRecord, Ledger

NOT_SIGNED = "it is not signed"
SIGNER_KEY = "_signer"  # the principal a counted approval verified as


@record(frozen=True)
class Ignored:
    """An approval that does not count, and why."""

    edit: str
    commit: str  # the commit whose note holds it
    by: str
    reason: str


class Checker:
    """Verifies approvals against one set of allowed signers, remembering the answers."""

    def __init__(self, repo: pygit2.Repository, allowed: bytes) -> None:
        self.repo = repo
        self.allowed = allowed
        self.ignored: list[Ignored] = []
        self._path = common_dir(repo) / "redline" / "signed-approvals"
        self._known: dict[str, str] | None = None
        self._added: list[str] = []

    def counted(self, edit: str, approvals: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The approvals of ``edit`` (as the ledger keeps them) that verify, each with the
        principal it verified as; the others go to ``ignored``."""
        out = []
        for approval in approvals:
            principal, reason = self.check(edit, approval)
            if principal is not None:
                out.append({**approval, SIGNER_KEY: principal})
                continue
            note, by = str(approval.get(NOTE_KEY, "")), str(approval.get("by", ""))
            self.ignored.append(Ignored(edit, note, by, reason or NOT_SIGNED))
        return out

    def check(self, edit: str, approval: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """(principal, None) when ``approval`` verifies where it is; (None, why) otherwise."""
        signature = approval.get("signature")
        if not isinstance(signature, str) or not signature:
            return None, NOT_SIGNED
        if approval.get("format", SSH) != SSH:
            return None, (
                f"it is signed with {approval.get('format')}, and only SSH signatures are "
                "checked against the allowed signers"
            )
        if not self.allowed:
            return None, f"no allowed signer is listed in {ALLOWED_SIGNERS} on both sides"
        commit = str(approval.get(NOTE_KEY, ""))
        by, at = str(approval.get("by", "")), str(approval.get("at", ""))
        payload = notes.approval_payload(edit, commit, by, at, str(approval.get(EVIDENCE_KEY)))
        record = self.allowed + b"\0" + payload + b"\0" + signature.encode()
        key = hashlib.sha256(record).hexdigest()
        known = self._remembered()
        if key in known:
            return known[key], None
        found = verify(payload, signature, self.allowed)
        if found.principal is not None:
            known[key] = found.principal
            self._added.append(f"{key} {found.principal}\n")
            return found.principal, None
        return None, self._why(edit, commit, approval, signature, found)

    def _why(
        self,
        edit: str,
        commit: str,
        approval: Mapping[str, Any],
        signature: str,
        found: Verified,
    ) -> str:
        """Why a signature from an allowed key does not verify here: it was made for
        another edit or commit (copied), or for evidence that changed since."""
        if found.principal is None and "not in the allowed signers" in (found.problem or ""):
            return found.problem or NOT_SIGNED
        claimed = (str(approval.get("edit")), str(approval.get("commit")))
        evidence = str(approval.get("evidence"))
        payload = notes.approval_payload(
            *claimed, str(approval.get("by", "")), str(approval.get("at", "")), evidence
        )
        if verify(payload, signature, self.allowed).principal is None:
            return found.problem or "its signature does not verify"
        if claimed != (edit, commit):
            return (
                f"it was signed for edit {claimed[0]} in commit {claimed[1][:12]} and copied "
                f"onto edit {edit} in commit {commit[:12]}"
            )
        return "the note's evidence changed after it was signed"

    def _remembered(self) -> dict[str, str]:
        if self._known is None:
            self._known = {}
            try:
                text = self._path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            for line in text.splitlines():
                key, _, principal = line.partition(" ")
                if len(key) == 64 and principal:
                    self._known[key] = principal
        return self._known

    def save(self) -> None:
        """Append what was verified (lost silently when it cannot be written: checked again)."""
        if not self._added:
            return
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, "".join(self._added).encode("utf-8"))
            finally:
                os.close(fd)
        except OSError:
            pass
        self._added = []


class _Signed(EditRecord):
    """An edit whose approvals count only once verified (checked when first asked)."""

    checker: Checker
    _counted: list[dict[str, Any]] | None = None

    @property
    def approved(self) -> bool:
        if self._counted is None:
            self._counted = self.checker.counted(self.edit, self.approvals)
        return bool(self._counted)

    @property
    def signers(self) -> list[str]:
        """Who signed the approvals that count."""
        self.approved  # noqa: B018 - computes _counted
        return [str(a[SIGNER_KEY]) for a in self._counted or []]


def signed_ledger(ledger: Ledger, checker: Checker) -> Ledger:
    """``ledger`` in which an edit is approved only by the approvals ``checker`` verifies."""
    entries: dict[str, EditRecord] = {}
    for edit, entry in ledger.entries.items():
        if not entry.approvals:
            entries[edit] = entry
            continue
        signed = _Signed(entry.edit, entry.commits, entry.operations, entry.flagged,
                         entry.approvals)  # fmt: skip
        signed.checker = checker
        entries[edit] = signed
    return replace(ledger, entries=entries)


def signers_of(entry: EditRecord) -> list[str]:
    """Who signed the approvals of ``entry`` that count (empty outside a signed ledger)."""
    return entry.signers if isinstance(entry, _Signed) else []


@record(frozen=True)
class Signatures:
    """What ``redline review`` says about approvals where only signed ones count: who
    signed each approved edit (edit -> principals), and the approvals ignored."""

    signed: dict[str, list[str]]
    ignored: list[Ignored]


def for_review(repo: pygit2.Repository, ledger: Ledger) -> tuple[Ledger, Signatures]:
    """``ledger`` with only verified approvals counted, against the allowed signers of
    HEAD's tree, and who signed what."""
    head = None if repo.head_is_unborn else repo.head.peel(pygit2.Commit).tree
    checker = Checker(repo, allowed_signers(repo, [head]))
    signed = signed_ledger(ledger, checker)
    who = {edit: signers_of(entry) for edit, entry in signed.entries.items() if entry.approvals}
    checker.save()
    return signed, Signatures({e: p for e, p in who.items() if p}, checker.ignored)
