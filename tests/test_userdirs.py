"""userdirs: the user's config folder, worked out by hand on Linux, is platformdirs' own."""

from __future__ import annotations

from pathlib import Path

import pytest
from platformdirs import user_config_path

from redline.userdirs import user_config_dir, user_config_file


@pytest.mark.parametrize(
    ("xdg", "home"),
    [
        (None, "/home/someone"),
        ("/elsewhere/config", "/home/someone"),
        ("", "/home/someone"),
        ("relative/config", "/home/someone"),
        (None, "/home/someone/"),
        (None, "/"),
        (None, "relative-home"),
        ("relative/config", None),
    ],
)
def test_the_config_folder_is_the_one_platformdirs_names(
    xdg: str | None, home: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in (("XDG_CONFIG_HOME", xdg), ("HOME", home)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert user_config_dir() == user_config_path("redline")
    assert user_config_file() == user_config_path("redline") / "config.toml"


def test_xdg_config_home_wins_over_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "conf"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_config_file() == tmp_path / "conf" / "redline" / "config.toml"
