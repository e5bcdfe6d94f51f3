"""What ``redline approve`` says when there is nothing to approve, or nothing new."""

from __future__ import annotations

from pathlib import Path

import pytest
from guard_fixtures import (
    APP,
    APP_FUZZY_NEW,
    APP_FUZZY_OLD,
    REVIEWER,
    agent,
    flagged_edit,
    redline,
    user_repo,
)

from gitmode_fixtures import git, note_of

NEVER = (
    "nothing to approve — it was never flagged (an exact match the policy passed), "
    "so it needs no approval"
)


def approve(repo: Path, *names: str) -> str:
    return redline(repo, "approve", *names, "--repo", str(repo), check=True).stdout


@pytest.mark.parametrize("by", ["edit", "commit"])
def test_an_exact_edit_was_never_flagged(tmp_path: Path, by: str) -> None:
    repo = user_repo(tmp_path / "repo")
    result = agent(repo).edit(APP, "load_config()", "load_config(strict=True)")
    assert result["status"] == "applied" and not result["flags"]
    [commit] = result["commits"]
    name = commit["edit"] if by == "edit" else commit["commit"][:10]

    out = approve(repo, name)
    assert out.strip() == f"edit {commit['edit']}: {NEVER}"
    assert note_of(repo, commit["commit"])["approvals"] == []


def test_a_tolerant_edit_the_policy_in_head_allows_is_approved_with_a_note(
    tmp_path: Path,
) -> None:
    """A stricter policy (the branch pushed to, a CI check) may flag it: the approval
    is recorded, and the reviewer told that HEAD's policy would not need it."""
    repo = user_repo(tmp_path / "repo")  # the policy protects migrations/ only
    result = agent(repo).edit(APP, APP_FUZZY_OLD, APP_FUZZY_NEW)
    assert result["match_type"] == "fuzzy" and not result["flags"], result
    [commit] = result["commits"]
    assert approve(repo, commit["edit"]).splitlines() == [
        f"approved edit {commit['edit']} (1 note(s)) as {REVIEWER}",
        "  note: the policy in HEAD does not flag it; the approval counts where a stricter "
        "one does (a push or a CI check judged by the policy of the branch it goes to)",
    ]
    assert [a["by"] for a in note_of(repo, commit["commit"])["approvals"]] == [REVIEWER]


def test_a_second_approval_by_the_same_reviewer_is_reported_not_added(tmp_path: Path) -> None:
    f = flagged_edit(user_repo(tmp_path / "repo"))
    assert approve(f.repo, f.edit).strip() == f"approved edit {f.edit} (1 note(s)) as {REVIEWER}"
    [first] = note_of(f.repo, f.commit)["approvals"]

    out = approve(f.repo, f.commit)
    assert out.strip() == (
        f"edit {f.edit} was already approved by {REVIEWER} (at {first['at']}); "
        "a second approval adds nothing"
    )
    assert note_of(f.repo, f.commit)["approvals"] == [first]

    # another person's approval is added
    git(f.repo, "config", "user.name", "Second Reviewer")
    out = approve(f.repo, f.edit)
    assert out.startswith(f"approved edit {f.edit} (1 note(s)) as Second Reviewer")
    assert [a["by"] for a in note_of(f.repo, f.commit)["approvals"]] == [
        REVIEWER,
        "Second Reviewer <repo-user@example.com>",
    ]


def test_mixed_names_each_get_their_answer(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    f = flagged_edit(repo)
    exact = agent(repo, "other").edit(APP, "load_config()", "load_config(strict=True)")
    [commit] = exact["commits"]
    lines = approve(repo, f.edit, commit["edit"]).splitlines()
    assert lines == [
        f"approved edit {f.edit} (1 note(s)) as {REVIEWER}",
        f"edit {commit['edit']}: {NEVER}",
    ]
