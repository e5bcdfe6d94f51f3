"""settings.folder: a folder's settings for embedded mode, each file read once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from redline.settings.folder import read_folder
from support.settings_reads import count_reads

POLICY = '[[validate]]\npaths = ["*.py"]\n[permission]\nedit = { "secret/**" = "deny" }\n'


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each settings file is read from disk."""
    return count_reads(monkeypatch)


def test_the_policy_and_the_permissions_come_from_one_read(
    tmp_path: Path, reads: Counter[str]
) -> None:
    (tmp_path / ".redline.toml").write_text(POLICY)
    folder = read_folder(tmp_path, user_file=tmp_path / "no-user.toml")
    assert folder.policy is not None and folder.policy.validate == ("*.py",)
    assert folder.config is not None
    assert folder.config.permissions.decide("edit", "secret/key.py").action == "deny"
    assert (folder.policy_error, folder.config_error, folder.policy_files) == (None, None, False)
    assert reads == {".redline.toml": 1}


def test_pyproject_is_read_once_too(tmp_path: Path, reads: Counter[str]) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[[tool.redline.validate]]\npaths = ["*.py"]\n'
        '[tool.redline.permission]\nedit = { "secret/**" = "deny" }\n'
    )
    folder = read_folder(tmp_path, user_file=tmp_path / "no-user.toml")
    assert folder.policy is not None and folder.policy.validate == ("*.py",)
    assert reads == {".redline.toml": 1, "pyproject.toml": 1}


def test_no_settings_file_means_no_policy_and_no_rules(tmp_path: Path) -> None:
    folder = read_folder(tmp_path, user_file=tmp_path / "no-user.toml")
    assert folder.policy is None and folder.config is not None
    assert not folder.config.permissions.rules


def test_a_broken_file_keeps_each_part_with_its_own_error(tmp_path: Path) -> None:
    (tmp_path / ".redline.toml").write_text('[guard]\naction = "maybe"\n')
    folder = read_folder(tmp_path, user_file=tmp_path / "no-user.toml")
    assert folder.policy is None and folder.config is not None
    assert str(folder.policy_error).startswith(
        "invalid guard policy in .redline.toml: guard.action"
    )
    (tmp_path / ".redline.toml").write_text("[guard\n")
    folder = read_folder(tmp_path, user_file=tmp_path / "no-user.toml")
    assert folder.policy is None and folder.config is None
    assert "line 1" in str(folder.policy_error) and "line 1" in str(folder.config_error)


@pytest.mark.parametrize(("said", "leave"), [("allow", True), ("deny", False)])
def test_the_users_leave_to_change_the_settings_files(
    said: str, leave: bool, tmp_path: Path
) -> None:
    user = tmp_path / "user.toml"
    user.write_text(f'[permission]\npolicy_files = "{said}"\n')
    assert read_folder(tmp_path / "work", user_file=user).policy_files is leave
    # A repository file that cannot be used does not take the user's leave away.
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / ".redline.toml").write_text("[permission\n")
    assert read_folder(tmp_path / "work", user_file=user).policy_files is leave
