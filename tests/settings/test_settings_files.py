"""settings.files: which file holds redline's settings, and the one reading of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engine.errors import SettingsError
from redline.settings import files
from redline.settings.policy import PolicyError
from redline.settings.tools import ConfigError

OWN = ".redline.toml"


def test_the_redline_file_wins_over_pyproject() -> None:
    read = {OWN: b"[guard]\n", "pyproject.toml": b"[tool.redline]\n"}.get
    found = files.find(read)
    assert found is not None and found.name == OWN and found.whole


def test_a_pyproject_is_read_only_when_it_mentions_redline() -> None:
    assert files.find({"pyproject.toml": b'[project]\nname = "x"\n'}.get) is None
    found = files.find({"pyproject.toml": b"[tool.redline]\n"}.get)
    assert found is not None and found.name == "pyproject.toml" and not found.whole
    # The guard reads a commit's pyproject.toml whatever it says (a broken one is refused).
    assert files.find({"pyproject.toml": b"[project\n"}.get, mentioning=False) is not None


@pytest.mark.parametrize("error", [PolicyError, ConfigError])
def test_toml_that_does_not_parse_names_the_file_line_and_column(
    error: type[SettingsError],
) -> None:
    with pytest.raises(error) as caught:
        files.parse('[guard]\naction = "review\n', "x.toml", error)
    assert (caught.value.source, caught.value.line, caught.value.column) == ("x.toml", 2, 17)
    assert str(caught.value).startswith("invalid ")


@pytest.mark.parametrize(
    ("found", "table"),
    [
        ({}, None),
        ({OWN: b'[guard]\naction = "reject"\n'}, (OWN, {"guard": {"action": "reject"}})),
        (
            {"pyproject.toml": b'[tool.redline.guard]\naction = "reject"\n'},
            ("pyproject.toml", {"guard": {"action": "reject"}}),
        ),
        ({"pyproject.toml": b'[project]\nname = "x"\n'}, None),
        ({"pyproject.toml": b"[project\n"}, None),  # broken, and not redline's
    ],
)
def test_the_settings_table_is_what_the_file_says(found: dict[str, bytes], table: object) -> None:
    assert files.settings_table(found.get) == table


def test_a_settings_file_that_does_not_parse_is_a_table_of_its_own() -> None:
    name, said = files.settings_table({OWN: b"[guard\n"}.get) or ("", "")
    assert name == OWN and isinstance(said, str) and said.startswith("not TOML: ")


def test_the_folder_reader_reads_what_is_there(tmp_path: Path) -> None:
    (tmp_path / OWN).write_bytes(b"[guard]\n")
    read = files.folder_reader(tmp_path)
    assert read(OWN) == b"[guard]\n"
    assert read("pyproject.toml") is None
    assert files.folder_reader(tmp_path / OWN)(OWN) is None  # not a folder: nothing there
