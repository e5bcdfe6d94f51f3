"""Signing and verifying with the person's git signing setup, as git signs commits.

``user.signingkey`` and ``gpg.format`` say how: with ``gpg.format = ssh`` the key
is a key file (private, or public with the private key in an agent) or a
literal ``key::ssh-…`` public key, and data is signed with ``ssh-keygen -Y sign
-n redline`` (``gpg.ssh.program`` names another ssh-keygen); otherwise with
OpenPGP (``gpg --detach-sign``, ``gpg.program``). The ``redline`` namespace keeps
a signature made here from passing as a commit's or a file's, and the reverse.

An SSH signature is verified against an allowed-signers file (git's
``gpg.ssh.allowedSignersFile`` format), given as bytes: which file counts is
the caller's decision. :func:`verify` says who signed, or why the signature
does not count.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pygit2

from redline.engine.policy import ALLOWED_SIGNERS
from redline.engine.records import record
from redline.gitops import notes
from redline.gitops.errors import GitModeError

NAMESPACE = "redline"
SSH = "ssh"
OPENPGP = "openpgp"
_TIMEOUT = 60  # seconds: a passphrase prompt or an agent asking for confirmation
_FINGERPRINT = re.compile(r"(SHA256:[A-Za-z0-9+/=]+)")


class SigningError(GitModeError):
    """The signing setup could not sign (no key, a key file that is not there, the
    signing program failed); the message says what to set or fix."""


@record(frozen=True)
class Signer:
    """How this person signs: ``format`` (ssh | openpgp), the key, the program."""

    format: str
    key: str
    program: str

    def sign(self, data: bytes) -> str:
        """The armored signature of ``data``."""
        if self.format == SSH:
            return _ssh_sign(self, data)
        return _gpg_sign(self, data)


def signer(repo: pygit2.Repository) -> Signer | None:
    """The person's signing setup from git's config; None when ``user.signingkey`` is unset."""
    key = _config(repo, "user.signingkey")
    if not key:
        return None
    fmt = (_config(repo, "gpg.format") or "openpgp").lower()
    if fmt == SSH:
        return Signer(SSH, key, _config(repo, "gpg.ssh.program") or "ssh-keygen")
    if fmt == OPENPGP:
        return Signer(OPENPGP, key, _config(repo, "gpg.program") or "gpg")
    raise SigningError(
        f"gpg.format is {fmt!r}; redline signs approvals with ssh or openpgp keys. "
        "Set `git config gpg.format ssh` (or openpgp) and try again"
    )


def _config(repo: pygit2.Repository, key: str) -> str | None:
    try:
        return str(repo.config[key]).strip() or None
    except (KeyError, pygit2.GitError):
        return None


def _ssh_sign(who: Signer, data: bytes) -> str:
    import tempfile  # only when signing: the commit hook imports this module for each commit

    key = who.key.removeprefix("key::")
    with tempfile.TemporaryDirectory(prefix="redline-sign-") as tmp:
        if key.startswith(("ssh-", "ecdsa-", "sk-")):  # a literal public key: the agent signs
            path = Path(tmp) / "key.pub"
            path.write_text(key + "\n")
        else:
            path = Path(os.path.expanduser(key))
            if not path.is_file():
                raise SigningError(
                    f"user.signingkey names {key}, which is not a file; point it at your SSH "
                    "key (`git config user.signingkey ~/.ssh/id_ed25519`) and approve again"
                )
        message = Path(tmp) / "approval"
        message.write_bytes(data)
        proc = _run([who.program, "-Y", "sign", "-n", NAMESPACE, "-f", str(path), str(message)])
        signature = Path(tmp) / "approval.sig"
        if proc.returncode != 0 or not signature.is_file():
            raise SigningError(
                f"{who.program} could not sign the approval with {key}: {_said(proc)}. "
                "Check user.signingkey (and that the key is in your ssh-agent when it has a "
                "passphrase), then approve again"
            )
        return signature.read_text()


def _gpg_sign(who: Signer, data: bytes) -> str:
    proc = _run([who.program, "--batch", "--armor", "--detach-sign", "-u", who.key], data)
    if proc.returncode != 0 or not proc.stdout:
        raise SigningError(
            f"{who.program} could not sign the approval with key {who.key}: {_said(proc)}. "
            "Check user.signingkey and gpg.program, then approve again"
        )
    return proc.stdout.decode("ascii", "replace")


@record(frozen=True)
class Verified:
    """A signature checked against an allowed-signers file: ``principal`` is who signed
    (None: it does not count, and ``problem`` says why)."""

    principal: str | None
    problem: str | None = None
    key: str | None = None  # the signing key's fingerprint, when it could be read


def verify(data: bytes, signature: str, allowed: bytes, program: str = "ssh-keygen") -> Verified:
    """Who signed ``data`` with the SSH ``signature``, by ``allowed`` (an allowed-signers
    file's bytes), in the ``redline`` namespace."""
    import tempfile  # only when an approval is signed (see _ssh_sign)

    with tempfile.TemporaryDirectory(prefix="redline-verify-") as tmp:
        signers = Path(tmp) / "allowed_signers"
        signers.write_bytes(allowed)
        sig = Path(tmp) / "approval.sig"
        sig.write_text(signature)
        found = _run([program, "-Y", "find-principals", "-s", str(sig), "-f", str(signers)])
        listed = found.stdout.decode("utf-8", "replace") if found.returncode == 0 else ""
        principals = listed.split()
        for principal in principals:
            proc = _run(
                [program, "-Y", "verify", "-f", str(signers), "-I", principal, "-n", NAMESPACE,
                 "-s", str(sig)],
                data,
            )  # fmt: skip
            if proc.returncode == 0:
                return Verified(principal, key=_fingerprint(proc))
        check = _run([program, "-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], data)
        key = _fingerprint(check)
        if check.returncode != 0:
            return Verified(None, "its signature does not match what it approves", key)
        if not principals:
            shown = f" ({key})" if key else ""
            return Verified(None, f"it is signed by a key{shown} not in the allowed signers", key)
        return Verified(None, "its signer is not allowed to sign redline approvals", key)


def _fingerprint(proc: subprocess.CompletedProcess[bytes]) -> str | None:
    found = _FINGERPRINT.search((proc.stdout + proc.stderr).decode("utf-8", "replace"))
    return found.group(1) if found else None


def _run(argv: list[str], data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            argv, input=data, capture_output=True, timeout=_TIMEOUT, check=False,
            stdin=None if data is not None else subprocess.DEVNULL,
        )  # fmt: skip
    except FileNotFoundError:
        raise SigningError(
            f"{argv[0]} is not installed; redline signs and verifies approvals with it "
            "(install openssh-client, or gnupg for OpenPGP keys) and try again"
        ) from None
    except subprocess.TimeoutExpired:
        raise SigningError(
            f"{argv[0]} did not finish within {_TIMEOUT} seconds (is it waiting for a "
            "passphrase? add the key to your agent) — nothing was signed"
        ) from None


def _said(proc: subprocess.CompletedProcess[bytes]) -> str:
    text = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
    return text.splitlines()[-1] if text else f"exit status {proc.returncode}"


def allowed_signers(
    repo: pygit2.Repository, trees: Iterable[pygit2.Tree | pygit2.Index | None]
) -> bytes:
    """The allowed-signers lines every one of ``trees`` holds (a tree without the file, or
    no tree, holds none)."""
    common: list[bytes] | None = None
    for tree in trees:
        lines = _signer_lines(repo, tree)
        common = lines if common is None else [line for line in common if line in lines]
    return b"".join(line + b"\n" for line in common or [])


def _signer_lines(repo: pygit2.Repository, tree: pygit2.Tree | pygit2.Index | None) -> list[bytes]:
    if tree is None:
        return []
    try:
        blob = repo[tree[ALLOWED_SIGNERS].id]
    except (KeyError, ValueError):
        return []
    if not isinstance(blob, pygit2.Blob):
        return []
    out = []
    for raw in bytes(blob.data).splitlines():
        line = raw.strip()
        if line and not line.startswith(b"#"):
            out.append(line)
    return out


def vouched(note: Mapping[str, Any], commit: str, allowed: bytes) -> bool:
    """Whether a signed approval in ``note`` (an edit's own note, attached to ``commit``)
    verifies against ``allowed`` over that note's evidence as it is."""
    if not allowed:
        return False
    edit, digest = str(note.get("edit", "")), notes.evidence_digest(note)
    for approval in note.get("approvals") or []:
        if not isinstance(approval, Mapping) or not approval.get("signature"):
            continue
        if approval.get("format", SSH) != SSH:
            continue
        by, at = str(approval.get("by", "")), str(approval.get("at", ""))
        payload = notes.approval_payload(edit, commit, by, at, digest)
        if verify(payload, str(approval["signature"]), allowed).principal is not None:
            return True
    return False
