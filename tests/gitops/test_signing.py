"""Signing with the person's git setup and verifying against allowed signers (gitops.signing).

Keys are made in the test with ``ssh-keygen -t ed25519 -N ''``; repositories are real.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import git, make_repo
from redline.gitops.signing import Signer, SigningError, allowed_signers, signer, verify

pytestmark = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) is not installed"
)


def make_key(folder: Path, name: str) -> tuple[Path, str]:
    path = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path, path.with_suffix(".pub").read_text().strip()


def test_a_signature_verifies_for_its_principal_and_its_bytes_only(tmp_path: Path) -> None:
    key, public = make_key(tmp_path, "bob")
    _, other = make_key(tmp_path, "eve")
    allowed = f"bob@example.com {public}\n".encode()
    sig = Signer("ssh", str(key), "ssh-keygen").sign(b"approve e1\n")
    assert sig.startswith("-----BEGIN SSH SIGNATURE-----")

    found = verify(b"approve e1\n", sig, allowed)
    assert found.principal == "bob@example.com"
    assert found.key is not None and found.key.startswith("SHA256:")
    changed = verify(b"approve e2\n", sig, allowed)
    assert changed.principal is None
    assert changed.problem == "its signature does not match what it approves"
    unlisted = verify(b"approve e1\n", sig, f"eve@example.com {other}\n".encode())
    assert unlisted.principal is None
    assert unlisted.problem == f"it is signed by a key ({found.key}) not in the allowed signers"


def test_a_signature_made_for_git_does_not_count_as_an_approval(tmp_path: Path) -> None:
    key, public = make_key(tmp_path, "bob")
    (tmp_path / "data").write_bytes(b"approve e1\n")
    subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-n", "git", "-f", str(key), str(tmp_path / "data")],
        check=True,
        capture_output=True,
    )
    sig = (tmp_path / "data.sig").read_text()
    assert verify(b"approve e1\n", sig, f"bob@example.com {public}\n".encode()).principal is None


def test_the_setup_is_read_from_git_config_and_a_missing_key_is_said(tmp_path: Path) -> None:
    repo_path = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    repo = pygit2.Repository(str(repo_path))
    assert signer(repo) is None
    git(repo_path, "config", "gpg.format", "ssh")
    git(repo_path, "config", "user.signingkey", str(tmp_path / "nowhere"))
    found = signer(pygit2.Repository(str(repo_path)))
    assert found == Signer("ssh", str(tmp_path / "nowhere"), "ssh-keygen")
    with pytest.raises(SigningError, match="which is not a file; point it at your SSH key"):
        found.sign(b"x")
    git(repo_path, "config", "gpg.format", "x509")
    with pytest.raises(SigningError, match=r"gpg\.format is 'x509'"):
        signer(pygit2.Repository(str(repo_path)))


def test_allowed_signers_count_only_lines_every_tree_holds(tmp_path: Path) -> None:
    bob, eve = "bob@example.com ssh-ed25519 AAAAbob", "eve@example.com ssh-ed25519 AAAAeve"
    path = make_repo(tmp_path / "repo", {".redline/allowed_signers": f"# team\n{bob}\n"})
    git(path, "commit", "-q", "--allow-empty", "-m", "empty")
    (path / ".redline" / "allowed_signers").write_text(f"{bob}\n{eve}\n")
    git(path, "commit", "-q", "-am", "add eve")
    repo = pygit2.Repository(str(path))
    before = repo.revparse_single("HEAD~1").peel(pygit2.Commit).tree
    after = repo.revparse_single("HEAD").peel(pygit2.Commit).tree
    assert allowed_signers(repo, [after]) == f"{bob}\n{eve}\n".encode()
    assert allowed_signers(repo, [before, after]) == f"{bob}\n".encode()
    assert allowed_signers(repo, [after, None]) == b""
