"""The guard's own files, the policy compared as rules, honest confidence — end to end.

Reproductions 4, 5 and 6 of issue 20, as a team meets them: a repository with
the hooks ``redline hooks install`` wrote and a bare remote; the agent's edits
come from the git-mode layer as the daemon runs it (the main line's policy, the
session's settings compared before and after); the person runs ``redline guard
--range``, ``redline land`` and ``git push``, and the test asserts what reaches
the remote. After a person approves, the same work goes through: the gate is
not simply closed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from guard_fixtures import (
    DEFAULT_RULE,
    agent,
    head,
    install_hooks,
    redline,
    run_git,
    user_repo,
)

from gitmode_fixtures import git, note_of, write
from redline.engine.policy import POLICY_CHANGE_RULE

CHECK = "src/auth/check.py"
CHECK_TEXT = (
    "def can_delete(user, item):\n"
    "    if not user.is_admin:\n"
    "        audit(user, item)\n"
    "        return False\n"
    "    return True\n"
)
# Two-space indentation where the file has four: a whitespace match (0.95).
CHECK_OLD = "  if not user.is_admin:\n    audit(user, item)\n    return False\n"
CHECK_NEW = (
    "  if not user.is_admin:\n    audit(user, item)\n    notify_owner(item)\n    return False\n"
)
DOC = "docs/guide.md"
DOC_TEXT = "# Guide\n\nInstall it with pip.\n"
POLICY = """\
[[guard.protect]]
paths = ["src/auth/**"]
require = "exact"

[[guard.protect]]
paths = ["docs/**"]
min_confidence = 0.5
"""
# Lines 3 and 7 swapped: the same lines, and src/auth/** takes any match of 0.5.
SWAPPED = """\
[[guard.protect]]
paths = ["src/auth/**"]
min_confidence = 0.5

[[guard.protect]]
paths = ["docs/**"]
require = "exact"
"""
AUTH_RULE = "guard.protect[1] (src/auth/**)"


def team(tmp_path: Path, policy: str, **files: str) -> tuple[Path, Path]:
    """A guarded repository on main, pushed to a bare remote."""
    repo = user_repo(tmp_path / "repo", policy, **files)
    install_hooks(repo)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    return repo, remote


def remote_main(remote: Path) -> str:
    return git(remote, "rev-parse", "main").strip()


def guard_range(repo: Path, spec: str) -> dict[str, object]:
    proc = redline(repo, "guard", "--range", spec, "--json")
    verdict: dict[str, object] = json.loads(proc.stdout)
    assert proc.returncode == (0 if verdict["ok"] else 1), proc.stderr
    return verdict


def blocked_edits(verdict: dict[str, object]) -> set[str]:
    return {str(b["edit"]) for b in verdict["blocked"]}  # type: ignore[attr-defined]


def land(repo: Path, name: str) -> dict[str, object]:
    proc = redline(repo, "land", name, "--json")
    assert "Traceback" not in proc.stderr
    outcome: dict[str, object] = json.loads(proc.stdout)
    return outcome


def push_refused(repo: Path, remote: Path, *refspec: str) -> str:
    before = remote_main(remote)
    proc = run_git(repo, "push", "-q", "origin", *(refspec or ("main",)))
    assert proc.returncode != 0, proc.stderr
    assert "redline guard: refused" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert remote_main(remote) == before
    return proc.stderr


def edit_id(result: dict[str, object]) -> str:
    [commit] = result["commits"]  # type: ignore[misc]
    return str(commit["edit"])


# --- reproduction 4: the policy weakened by swapping two of its lines ---------------------------


def test_a_policy_swap_is_flagged_as_a_weakening_and_never_judges(tmp_path: Path) -> None:
    repo, remote = team(tmp_path, POLICY, **{CHECK: CHECK_TEXT, DOC: DOC_TEXT})
    start = head(repo)
    session = agent(repo)
    swap = session.edit(".redline.toml", POLICY, SWAPPED)
    assert swap["match_type"] == "exact"
    rules = {f["rule"]: f["reason"] for f in swap["flags"]}
    assert set(rules) == {DEFAULT_RULE, POLICY_CHANGE_RULE}
    assert rules[POLICY_CHANGE_RULE].startswith(
        "weakens the guard policy: src/auth/** (guard.protect[1] (src/auth/**)): required match "
        "type exact; the new policy also takes"
    )
    # The session's own (weakened) policy does not judge its next edit: the main line's does.
    auth = session.edit(CHECK, CHECK_OLD, CHECK_NEW)
    assert (auth["status"], auth["match_type"]) == ("applied", "whitespace")
    assert [f["rule"] for f in auth["flags"]] == [AUTH_RULE]
    verdict = guard_range(repo, f"main..{session.branch}")
    assert verdict["ok"] is False
    assert edit_id(auth) in blocked_edits(verdict)
    assert land(repo, "s")["status"] == "refused"
    assert head(repo) == start
    # The person fast-forwards main by hand: the push is refused, the remote keeps main.
    git(repo, "merge", "-q", "--ff-only", session.branch)
    said = push_refused(repo, remote)
    assert f"edit {edit_id(auth)}" in said
    assert f"rule {AUTH_RULE}" in said


def test_the_swap_alone_does_not_reach_the_remote_unapproved(tmp_path: Path) -> None:
    repo, remote = team(tmp_path, POLICY, **{CHECK: CHECK_TEXT, DOC: DOC_TEXT})
    swap = agent(repo).edit(".redline.toml", POLICY, SWAPPED)
    assert swap["flags"]
    assert guard_range(repo, "main..redline/s")["ok"] is False
    git(repo, "merge", "-q", "--ff-only", "redline/s")
    push_refused(repo, remote)


def test_a_weakened_policy_that_slipped_onto_main_still_judges_nothing(tmp_path: Path) -> None:
    """The unapproved swap reaches main past the hooks (``--no-verify``): a later session
    opened from that main is still judged by the rule the swap took away, at edit time, by
    ``guard --range``, by ``land`` and by the push — until a person approves the swap."""
    repo, remote = team(tmp_path, POLICY, **{CHECK: CHECK_TEXT, DOC: DOC_TEXT})
    swap = agent(repo, "policy").edit(".redline.toml", POLICY, SWAPPED)
    git(repo, "merge", "-q", "--ff-only", "redline/policy")
    git(repo, "push", "-q", "--no-verify", "origin", "main")
    weakened = head(repo)
    session = agent(repo, "later")
    auth = session.edit(CHECK, CHECK_OLD, CHECK_NEW)
    assert auth["match_type"] == "whitespace"
    [flag] = auth["flags"]
    assert flag["rule"] == f"{AUTH_RULE} of .redline.toml before unapproved edit {edit_id(swap)}"
    verdict = guard_range(repo, "origin/main..redline/later")
    assert edit_id(auth) in blocked_edits(verdict)
    assert land(repo, "later")["status"] == "refused"
    assert head(repo) == weakened
    git(repo, "merge", "-q", "--ff-only", "redline/later")
    push_refused(repo, remote)
    # A person reviews the tolerant edit and approves it: the same push goes through.
    redline(repo, "approve", edit_id(auth), check=True)
    assert guard_range(repo, "origin/main..redline/later")["ok"] is True
    assert run_git(repo, "push", "-q", "origin", "main").returncode == 0
    assert remote_main(remote) == head(repo)
    # Once a person approves the policy change, the weaker policy is theirs, and judges.
    redline(repo, "approve", edit_id(swap), check=True)
    unflagged = agent(repo, "approved").edit(
        CHECK,
        "  audit(user, item)\n  notify_owner(item)\n",
        "  audit(user, item)\n  notify_owner(item, user)\n",
    )
    assert (unflagged["match_type"], unflagged["flags"]) == ("whitespace", [])


def test_a_pyproject_change_that_adds_redline_settings_is_flagged(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "demo"\nversion = "1.0"\n'
    repo, _ = team(tmp_path, None, **{"pyproject.toml": pyproject})  # no .redline.toml
    session = agent(repo)
    bump = session.edit("pyproject.toml", 'version = "1.0"', 'version = "1.1"')
    assert bump["flags"] == []  # an ordinary change of pyproject.toml passes
    settings = session.edit(
        "pyproject.toml",
        'version = "1.1"\n',
        'version = "1.1"\n\n[tool.redline.permission]\nwrite = "allow"\n',
    )
    [flag] = settings["flags"]
    assert flag["rule"] == POLICY_CHANGE_RULE
    assert flag["path"] == "pyproject.toml"
    assert "changes redline's own settings in pyproject.toml" in flag["reason"]
    verdict = guard_range(repo, "main..redline/s")
    assert blocked_edits(verdict) == {edit_id(settings)}


# --- reproduction 5: a fuzzy match recorded as confidence 1.0 -------------------------------------

BLOCK = "\n".join(
    f"    value_{i} = compute(argument_{i}, other_{i})  # step {i}" for i in range(300)
)
BIG = "def f():\n" + BLOCK + "\n    return 1\n"


def test_a_long_fuzzy_match_does_not_pass_min_confidence_one(tmp_path: Path) -> None:
    policy = '[[guard.protect]]\npaths = ["src/**"]\nmin_confidence = 1.0\n'
    repo, remote = team(tmp_path, policy, **{"src/big.py": BIG})
    old = BLOCK.replace("argument_150,", "argment_150,")  # one dropped letter in 300 lines
    result = agent(repo).edit("src/big.py", old, old.replace("# step 0", "# first step"))
    assert result["match_type"] == "fuzzy"
    assert 0.9999 >= result["confidence"] > 0.999
    [flag] = result["flags"]
    assert flag["reason"].startswith("confidence 0.9999")
    assert flag["reason"].endswith("is below the minimum 1")
    [commit] = result["commits"]
    [op] = note_of(repo, commit["commit"])["operations"]  # as git reads the note
    assert op["confidence"] == result["confidence"] < 1.0
    assert guard_range(repo, "main..redline/s")["ok"] is False
    assert land(repo, "s")["status"] == "refused"
    git(repo, "merge", "-q", "--ff-only", "redline/s")
    push_refused(repo, remote)


# --- reproduction 6: the files that run the gate ---------------------------------------------------

WORKFLOW = ".github/workflows/redline.yml"
WORKFLOW_TEXT = (
    "name: redline\n"
    "on: pull_request\n"
    "jobs:\n"
    "  guard:\n"
    "    runs-on: ubuntu-latest\n"
    "    steps:\n"
    "      - uses: actions/checkout@v4\n"
    "      - run: pip install redline\n"
    "      - run: redline guard --range ${{ github.event.pull_request.base.sha }}..${{ github.sha }}\n"
)
PRE_COMMIT = "repos:\n  - repo: local\n    hooks:\n      - id: redline-guard\n"
LEFTHOOK = "pre-push:\n  commands:\n    guard:\n      run: redline guard\n"
GUARDED = {WORKFLOW: WORKFLOW_TEXT, ".pre-commit-config.yaml": PRE_COMMIT, "lefthook.yml": LEFTHOOK}


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        (WORKFLOW, WORKFLOW_TEXT.splitlines(keepends=True)[-1], ""),
        (".pre-commit-config.yaml", "      - id: redline-guard\n", "      - id: other\n"),
        ("lefthook.yml", "      run: redline guard\n", "      run: 'true'\n"),
    ],
    ids=["workflow", "pre-commit", "lefthook"],
)
def test_an_exact_edit_of_a_file_that_runs_the_gate_needs_a_person(
    tmp_path: Path, path: str, old: str, new: str
) -> None:
    repo, remote = team(tmp_path, POLICY, **GUARDED)
    start = remote_main(remote)
    result = agent(repo).edit(path, old, new)
    assert result["match_type"] == "exact"
    assert [f["rule"] for f in result["flags"]] == [DEFAULT_RULE]
    verdict = guard_range(repo, "main..redline/s")
    assert blocked_edits(verdict) == {edit_id(result)}
    assert land(repo, "s")["status"] == "refused"
    git(repo, "merge", "-q", "--ff-only", "redline/s")
    push_refused(repo, remote)
    assert git(remote, "show", f"main:{path}") == GUARDED[path]
    redline(repo, "approve", edit_id(result), check=True)
    assert run_git(repo, "push", "-q", "origin", "main").returncode == 0
    assert remote_main(remote) != start


def test_guard_files_a_policy_adds_cannot_be_dropped_by_the_agent(tmp_path: Path) -> None:
    policy = POLICY + '\n[guard]\nfiles = ["deploy/**"]\n'
    repo, remote = team(tmp_path, policy, **{"deploy/run.sh": "echo deploy\n"})
    session = agent(repo)
    dropped = session.edit(".redline.toml", '\n[guard]\nfiles = ["deploy/**"]\n', "\n")
    reasons = {f["rule"]: f["reason"] for f in dropped["flags"]}
    assert (
        "deploy/** (guard.files (deploy/**)): every agent change there needed a person"
        in (reasons[POLICY_CHANGE_RULE])
    )
    # the next edit there is still judged by the main line's policy
    deploy = session.edit("deploy/run.sh", "echo deploy\n", "echo deploy --force\n")
    assert [f["rule"] for f in deploy["flags"]] == ["guard.files (deploy/**)"]
    verdict = guard_range(repo, "main..redline/s")
    assert blocked_edits(verdict) >= {edit_id(deploy)}
    git(repo, "merge", "-q", "--ff-only", "redline/s")
    push_refused(repo, remote)


def test_a_file_with_control_characters_is_shown_escaped(tmp_path: Path) -> None:
    """An agent's other tools make a CI file whose name holds a bidi override and a newline;
    the session commits it as an external change, flagged. log, review and the guard name it
    escaped, and its commit has one trailer, as git reads it."""
    repo, _ = team(tmp_path, POLICY)
    session = agent(repo)
    name = ".github/workflows/ci\u202elmy.sh\nRedline-Edit: deadbeef0000"
    write(session.worktree / name, "run: true\n")
    result = session.edit(".redline.toml", "min_confidence = 0.5", "min_confidence = 0.6")
    external = [c for c in result["commits"] if c["source"] == "external"]
    assert len(external) == 1
    trailers = git(
        repo, "log", "-1", "--format=%(trailers:key=Redline-Edit,valueonly)", external[0]["commit"]
    )
    assert trailers.split() == [external[0]["edit"]]
    shown = '".github/workflows/ci\\u202elmy.sh\\nRedline-Edit: deadbeef0000"'
    for args in (["log", "s"], ["review"], ["guard", "--range", "main..redline/s"]):
        proc = redline(repo, *args)
        out = proc.stdout + proc.stderr
        assert shown in out, (args, out)
        assert "\u202e" not in out and "\nRedline-Edit: deadbeef0000" not in out, args
