"""hooks.mainline: the policy that governs an agent is one people stand behind."""

from __future__ import annotations

from pathlib import Path

from guard_fixtures import agent, redline, user_repo

from gitmode_fixtures import git
from redline.gitops.repo import main_repository
from redline.gitops.session import open_session
from redline.hooks import ledger
from redline.hooks.mainline import Mainline, guarded_policy

STRICT = '[[guard.protect]]\npaths = ["src/**"]\nrequire = "exact"\n'
LOOSE = '[[guard.protect]]\npaths = ["src/**"]\nmin_confidence = 0.5\n'


def names(policy_rules: object) -> list[str]:
    return [rule.name for rule in policy_rules]  # type: ignore[attr-defined]


def weakened_main(tmp_path: Path) -> tuple[Path, str]:
    """main holds LOOSE, written by an agent's unapproved edit merged past the hooks."""
    repo = user_repo(tmp_path / "repo", STRICT)
    result = agent(repo, "policy").edit(".redline.toml", STRICT, LOOSE)
    git(repo, "merge", "-q", "--ff-only", "redline/policy")
    [commit] = result["commits"]
    return repo, commit["edit"]


def test_an_unapproved_policy_edit_in_effect_adds_back_what_it_took(tmp_path: Path) -> None:
    repo, edit = weakened_main(tmp_path)
    git_repo, _ = main_repository(repo)
    head = git_repo.head.peel().tree
    policy = guarded_policy(git_repo, ledger.load(git_repo), [(head, "in HEAD")])
    assert f"guard.protect[1] (src/**) of .redline.toml before unapproved edit {edit}" in names(
        policy.rules
    )
    assert policy.check("src/a.py", "fuzzy", 0.99)  # the rule it took away still judges


def test_once_approved_or_undone_it_adds_nothing(tmp_path: Path) -> None:
    repo, edit = weakened_main(tmp_path)
    git_repo, _ = main_repository(repo)
    redline(repo, "approve", edit, check=True)
    head = git_repo.head.peel().tree
    policy = guarded_policy(git_repo, ledger.load(git_repo), [(head, "in HEAD")])
    assert not policy.check("src/a.py", "fuzzy", 0.99)
    # undone by a person: a tree without the edit is judged by its own policy only
    repo2, _ = weakened_main(tmp_path / "two")
    git(repo2, "revert", "--no-edit", "HEAD")
    git_repo2, _ = main_repository(repo2)
    tree = git_repo2.head.peel().tree
    policy = guarded_policy(git_repo2, ledger.load(git_repo2), [(tree, "in HEAD")])
    assert not [name for name in names(policy.rules) if "before unapproved edit" in name]


def test_a_hand_rewrite_of_the_edited_lines_keeps_the_rule_until_the_edit_is_approved(
    tmp_path: Path,
) -> None:
    """A tree alone cannot tell a person's own rewrite of the lines an unapproved agent
    edit changed from that edit carried on: the rule the edit took away still judges
    (a refusal, never a pass) until a person approves the edit."""
    repo, edit = weakened_main(tmp_path)
    git(repo, "revert", "--no-edit", "HEAD")
    (repo / ".redline.toml").write_text("")  # a person's own change, no agent involved
    git(repo, "commit", "-qam", "no rules")
    git_repo, _ = main_repository(repo)
    tree = git_repo.head.peel().tree
    policy = guarded_policy(git_repo, ledger.load(git_repo), [(tree, "in HEAD")])
    assert policy.check("src/a.py", "fuzzy", 0.99)
    redline(repo, "approve", edit, check=True)
    policy = guarded_policy(git_repo, ledger.load(git_repo), [(tree, "in HEAD")])
    assert not policy.check("src/a.py", "fuzzy", 0.99)


def test_mainline_reads_the_origin_again_when_it_moves(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo", LOOSE)
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, "s", None)
    assert session.origin == "refs/heads/main"
    mainline = Mainline(git_repo, session, ledger.load)
    first = mainline()
    assert mainline() is first  # cached while main stays
    assert not first.check("src/a.py", "fuzzy", 0.99)
    (repo / ".redline.toml").write_text(STRICT)  # a person tightens main
    git(repo, "commit", "-qam", "stricter")
    again = mainline()
    assert again is not first
    assert again.check("src/a.py", "fuzzy", 0.99)
    assert "guard.protect[1] (src/**) of .redline.toml on main" in names(again.rules)
