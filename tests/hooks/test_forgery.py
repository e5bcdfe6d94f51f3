"""Evidence nobody can forge: a bare remote, two clones, a CI clone, real keys.

The repository takes only signed approvals (``[guard] approvals = "signed"``) and
lists Bob's SSH key in ``.redline/allowed_signers``. Alice's agent makes flagged
edits in clone A and shares them; Bob reviews and approves in clone B with his
key. Each forgery — made with git alone, as a teammate with push access or a
leaked CI token would — must fail ``redline guard --range`` on a fresh CI clone
and ``redline land`` where it was made, naming what was forged; the genuine flow
passes both. Keys are made here with ``ssh-keygen -t ed25519 -N ''``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from guard_fixtures import (
    APP,
    APP_FUZZY_NEW,
    APP_FUZZY_OLD,
    FUZZY_NEW,
    FUZZY_OLD,
    MIGRATION,
    POLICY,
    Flagged,
    agent,
    flagged_edit,
    head,
    install_hooks,
    redline,
    user_repo,
)

from gitmode_fixtures import git
from redline.gitops import notes

pytestmark = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) is not installed"
)

SIGNED_POLICY = POLICY.replace('action = "review"\n', 'action = "review"\napprovals = "signed"\n')
SIGNERS = ".redline/allowed_signers"
BOB = "Bob <bob@example.com>"
MALLORY = "Mallory <mallory@example.com>"


@dataclass(frozen=True)
class Key:
    private: Path
    public: str  # "ssh-ed25519 AAAA… comment"


def make_key(folder: Path, name: str) -> Key:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return Key(path, path.with_suffix(".pub").read_text().strip())


@dataclass(frozen=True)
class Team:
    origin: Path
    a: Path  # Alice's clone, where the agent works (and a forger pushes from)
    b: Path  # Bob's clone: Bob's key is an allowed signer
    bob: Key
    mallory: Key
    root: Path


def clone(origin: Path, path: Path, name: str, email: str, key: Key | None = None) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(path))
    git(path, "config", "user.name", name)
    git(path, "config", "user.email", email)
    if key is not None:
        sign_with(path, key)
    return path


def sign_with(repo: Path, key: Key) -> None:
    git(repo, "config", "gpg.format", "ssh")
    git(repo, "config", "user.signingkey", str(key.private))


@pytest.fixture
def team(tmp_path: Path) -> Team:
    keys = tmp_path / "keys"
    bob, mallory = make_key(keys, "bob"), make_key(keys, "mallory")
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = user_repo(
        tmp_path / "seed", SIGNED_POLICY, **{SIGNERS: f"bob@example.com {bob.public}\n"}
    )
    git(seed, "push", "-q", str(origin), "main")
    a = clone(origin, tmp_path / "a", "Alice", "alice@example.com")
    b = clone(origin, tmp_path / "b", "Bob", "bob@example.com", bob)
    for repo in (a, b):
        install_hooks(repo)
    return Team(origin, a, b, bob, mallory, tmp_path)


def share(f: Flagged) -> None:
    """A shares the agent's session branch (past the hook) and its evidence."""
    git(f.repo, "push", "-q", "--no-verify", "origin", f.branch)
    redline(f.repo, "notes", "sync", "--repo", str(f.repo), check=True)


def bob_approves(team: Team, *edits: str) -> str:
    git(team.b, "fetch", "-q")
    out = redline(team.b, "approve", *edits, "--repo", str(team.b), check=True).stdout
    redline(team.b, "notes", "sync", "--repo", str(team.b), check=True)
    redline(team.a, "notes", "sync", "--repo", str(team.a), check=True)  # A sees it
    return out


def check_range(repo: Path, spec: str) -> subprocess.CompletedProcess[str]:
    return redline(repo, "guard", "--range", spec, "--verify")


def ci_check(team: Team, base: str, name: str = "ci") -> subprocess.CompletedProcess[str]:
    repo = team.root / name
    git(team.root, "clone", "-q", str(team.origin), str(repo))
    git(repo, "fetch", "-q", "origin", "+refs/notes/*:refs/notes/*")
    return check_range(repo, f"{base}..origin/redline/s")


def land(repo: Path) -> subprocess.CompletedProcess[str]:
    return redline(repo, "land", "--repo", str(repo), "s", "--merge")


def note(repo: Path, commit: str) -> dict[str, Any]:
    data = json.loads(git(repo, "notes", "--ref=redline", "show", commit))
    assert isinstance(data, dict)
    return data


def forge(repo: Path, commit: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Rewrite ``commit``'s note with git alone and force it onto the remote."""
    text = json.dumps(change(note(repo, commit)), indent=1)
    path = repo / ".git" / "forged-note.json"
    path.write_text(text)
    git(repo, "notes", "--ref=redline", "add", "-f", "-F", str(path), commit)
    git(repo, "push", "-q", "-f", "--no-verify", "origin", "refs/notes/redline")


def refused(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


# --- the genuine flow -----------------------------------------------------------------------


def test_a_signed_approval_by_an_allowed_signer_passes_ci_and_land(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)
    said = refused(ci_check(team, f.base, "ci-before"))
    assert f"edit {f.edit} (commit {f.commit[:12]})" in said

    out = bob_approves(team, f.edit)
    assert out.startswith(f"approved edit {f.edit} (1 note(s)) as {BOB}, signed with ssh key ")
    [approval] = note(team.b, f.commit)["approvals"]
    assert approval["by"] == BOB and approval["signature"].startswith("-----BEGIN SSH SIGNATURE")
    assert (approval["edit"], approval["commit"]) == (f.edit, f.commit)

    shown = redline(team.a, "review", "--repo", str(team.a), check=True).stdout
    assert f"edit {f.edit}: approved, signed by bob@example.com\n" in shown
    proc = ci_check(team, f.base)
    assert proc.returncode == 0, proc.stdout
    assert "redline guard --range" in proc.stdout and "passed" in proc.stdout
    proc = land(team.a)
    assert proc.returncode == 0, proc.stderr


def test_unsigned_approvals_do_not_count_where_the_policy_says_signed(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)
    git(team.b, "config", "--unset", "user.signingkey")
    git(team.b, "fetch", "-q")
    proc = redline(team.b, "approve", f.edit, "--repo", str(team.b))
    assert proc.returncode != 0
    assert "takes only signed approvals" in proc.stderr
    assert "git config user.signingkey" in proc.stderr
    assert not note(team.b, f.commit).get("approvals")


# --- the forgery table ------------------------------------------------------------------------


def test_an_approval_added_by_hand_is_named_and_ignored(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)
    forge(
        team.a, f.commit, lambda n: {**n, "approvals": [{"by": BOB, "at": "2026-01-02T00:00:00Z"}]}
    )
    for said in (refused(ci_check(team, f.base)), refused(land(team.a))):
        assert f"edit {f.edit} (commit {f.commit[:12]})" in said
        assert (
            f"approval of edit {f.edit} by {BOB} (note of commit {f.commit[:12]}) ignored: it is not signed"
            in said
        )


def test_an_approval_signed_by_a_key_not_allowed_is_named_and_ignored(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)
    sign_with(team.a, team.mallory)
    git(team.a, "config", "user.name", "Mallory")
    git(team.a, "config", "user.email", "mallory@example.com")
    redline(team.a, "approve", f.edit, "--repo", str(team.a), check=True)
    git(team.a, "push", "-q", "-f", "--no-verify", "origin", "refs/notes/redline")
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(team.mallory.private)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[1]
    shown = redline(team.a, "review", "--repo", str(team.a), check=True).stdout
    assert f"  approval by {MALLORY} ignored: it is signed by a key ({fingerprint}) not in" in shown
    for said in (refused(ci_check(team, f.base)), refused(land(team.a))):
        assert (
            f"approval of edit {f.edit} by {MALLORY} (note of commit {f.commit[:12]}) ignored: "
            f"it is signed by a key ({fingerprint}) not in the allowed signers"
        ) in said


def session_edits(team: Team, *edits: tuple[str, str, str]) -> tuple[str, list[tuple[str, str]]]:
    """One agent session in A making ``edits`` (path, old, new), each applied and flagged:
    main before them, and each one's (edit, commit)."""
    base = head(team.a)
    session = agent(team.a)
    made = []
    for path, old, new in edits:
        result = session.edit(path, old, new)
        assert result["status"] == "applied" and result["flags"], result
        [commit] = result["commits"]
        made.append((commit["edit"], commit["commit"]))
    return base, made


def share_session(team: Team) -> None:
    git(team.a, "push", "-q", "--no-verify", "origin", "redline/s")
    redline(team.a, "notes", "sync", "--repo", str(team.a), check=True)


def protect_src(team: Team) -> None:
    policy = SIGNED_POLICY + '\n[[guard.protect]]\npaths = ["src/**"]\nrequire = "exact"\n'
    (team.a / ".redline.toml").write_text(policy)
    git(team.a, "commit", "-q", "-am", "protect src")
    git(team.a, "push", "-q", "--no-verify", "origin", "main")


def test_an_allowed_signers_approval_copied_onto_another_edit_is_named(team: Team) -> None:
    protect_src(team)
    base, [(edit, commit), (other, other_commit)] = session_edits(
        team, (MIGRATION, FUZZY_OLD, FUZZY_NEW), (APP, APP_FUZZY_OLD, APP_FUZZY_NEW)
    )
    share_session(team)
    bob_approves(team, edit)
    [genuine] = note(team.a, commit)["approvals"]
    forge(team.a, other_commit, lambda n: {**n, "approvals": [genuine]})
    for said in (refused(ci_check(team, base)), refused(land(team.a))):
        assert f"edit {other} (commit {other_commit[:12]})" in said
        assert (
            f"approval of edit {other} by {BOB} (note of commit {other_commit[:12]}) ignored: it "
            f"was signed for edit {edit} in commit {commit[:12]} and copied onto edit "
            f"{other} in commit {other_commit[:12]}"
        ) in said
        assert f"edit {edit} (commit" not in said  # the genuine approval still counts


def test_a_note_rewritten_to_exact_is_named(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)

    def exact(n: dict[str, Any]) -> dict[str, Any]:
        ops = [{**op, "match_type": "exact", "confidence": 1.0} for op in n["operations"]]
        return {**n, "operations": ops, "policy": {"verdict": "pass", "source": ".redline.toml"},
                "tolerances": []}  # fmt: skip

    forge(team.a, f.commit, exact)
    for said in (refused(ci_check(team, f.base)), refused(land(team.a))):
        assert (
            f"commit {f.commit[:12]}: it says the edit matched exact; the commit's message says fuzzy"
            in said
        )


def test_matched_text_changed_after_the_approval_voids_it(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)
    bob_approves(team, f.edit)

    def other_text(n: dict[str, Any]) -> dict[str, Any]:
        text = "    id INTEGER PRIMARY KEY,\n"
        ops = [
            {**op, "matched_preview": text, "matched_sha256": notes.sha256(text)}
            for op in n["operations"]
        ]
        return {**n, "operations": ops}

    forge(team.a, f.commit, other_text)
    in_ci = refused(ci_check(team, f.base))
    # run again from the kept request, or (without one) looked for where the note says
    assert (
        f"  edit {f.edit} (commit {f.commit[:12]}): the note's matched text of {MIGRATION}" in in_ci
    )
    for said in (in_ci, refused(land(team.a))):
        assert f"edit {f.edit} (commit {f.commit[:12]})" in said
        assert (
            f"approval of edit {f.edit} by {BOB} (note of commit {f.commit[:12]}) ignored: the "
            "note's evidence changed after it was signed"
        ) in said


def test_a_note_moved_onto_another_commit_is_named(team: Team) -> None:
    protect_src(team)
    base, [(edit, commit), (_, other_commit)] = session_edits(
        team, (MIGRATION, FUZZY_OLD, FUZZY_NEW), (APP, APP_FUZZY_OLD, APP_FUZZY_NEW)
    )
    share_session(team)
    bob_approves(team, edit)
    forge(team.a, other_commit, lambda n: note(team.a, commit))
    for said in (refused(ci_check(team, base)), refused(land(team.a))):
        assert (
            f"commit {other_commit[:12]}: it says {MIGRATION} changed; the commit leaves {MIGRATION} as it was"
            in said
        )


def test_the_allowed_signers_changed_by_an_agent_in_the_range_signs_nothing(team: Team) -> None:
    bob_line = f"bob@example.com {team.bob.public}\n"
    mallory_line = f"mallory@example.com {team.mallory.public}\n"
    base, made = session_edits(
        team, (MIGRATION, FUZZY_OLD, FUZZY_NEW), (SIGNERS, bob_line, bob_line + mallory_line)
    )
    share_session(team)
    sign_with(team.a, team.mallory)
    git(team.a, "config", "user.name", "Mallory")
    git(team.a, "config", "user.email", "mallory@example.com")
    redline(team.a, "approve", *(e for e, _ in made), "--repo", str(team.a), check=True)
    git(team.a, "push", "-q", "-f", "--no-verify", "origin", "refs/notes/redline")
    for said in (refused(ci_check(team, base)), refused(land(team.a))):
        for edit, commit in made:
            assert f"edit {edit} (commit {commit[:12]})" in said
            assert (
                f"by {MALLORY} (note of commit {commit[:12]}) ignored: it is signed by a key"
                in said
            )
        assert f"{SIGNERS} " in said


def test_a_fetched_unsigned_rewrite_never_replaces_evidence_a_signer_approved(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)
    git(team.b, "fetch", "-q")
    redline(team.b, "approve", f.edit, "--repo", str(team.b), check=True)
    redline(team.b, "notes", "sync", "--repo", str(team.b), check=True)
    genuine = note(team.b, f.commit)
    [signed] = genuine["approvals"]

    # A, not having fetched the approval, rewrites the evidence (Bob's signed approval
    # copied in) and forces it onto the remote over Bob's notes
    def exact(n: dict[str, Any]) -> dict[str, Any]:
        ops = [{**op, "match_type": "exact", "confidence": 1.0} for op in n["operations"]]
        # "_" sorts first: without a verified signer, the stable order would pick this side
        return {**n, "_": "", "operations": ops, "approvals": [signed],
                "policy": {"verdict": "pass", "source": ".redline.toml"}}  # fmt: skip

    forge(team.a, f.commit, exact)
    git(team.b, "fetch", "-q")
    redline(team.b, "notes", "sync", "--repo", str(team.b), check=True)  # merged by union
    merged = note(team.b, f.commit)
    assert merged["operations"] == genuine["operations"]
    assert merged["policy"] == genuine["policy"]
    assert merged["approvals"] == [signed]
    proc = check_range(team.b, f"{f.base}..origin/redline/s")
    assert proc.returncode == 0, proc.stdout


def test_an_approval_by_hand_of_the_policy_edit_that_drops_signing_lifts_nothing(
    tmp_path: Path,
) -> None:
    repo = user_repo(
        tmp_path / "repo", SIGNED_POLICY, **{SIGNERS: "bob@example.com ssh-ed25519 AAAA\n"}
    )
    by_hand = [{"by": BOB, "at": "2026-01-02T00:00:00Z"}]
    session = agent(repo)
    dropped = session.edit(".redline.toml", 'approvals = "signed"\n', "")
    assert dropped["status"] == "applied" and dropped["flags"], dropped
    [commit] = dropped["commits"]
    forge_local(repo, commit["commit"], lambda n: {**n, "approvals": by_hand})
    git(repo, "merge", "-q", "--ff-only", "redline/s")  # onto main past the hooks
    assert "signed" not in (repo / ".redline.toml").read_text()
    base = head(repo)
    fuzzy = session.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW)
    assert fuzzy["status"] == "applied" and fuzzy["flags"], fuzzy
    [commit] = fuzzy["commits"]
    forge_local(repo, commit["commit"], lambda n: {**n, "approvals": by_hand})
    git(repo, "merge", "-q", "--ff-only", "redline/s")
    said = refused(check_range(repo, f"{base}..main"))
    assert (
        f"approval of edit {commit['edit']} by {BOB} (note of commit {commit['commit'][:12]}) "
        "ignored: it is not signed"
    ) in said


def forge_local(
    repo: Path, commit: str, change: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    path = repo / ".git" / "forged-note.json"
    path.write_text(json.dumps(change(note(repo, commit)), indent=1))
    git(repo, "notes", "--ref=redline", "add", "-f", "-F", str(path), commit)
