"""pipeline.retries: the repeated-failure hint of a turn across separate processes, kept
in a small state file that is bounded, written atomically and never a reason to fail."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from cli_support import redline_script
from redline.engine.result import Result
from redline.pipeline import retries
from redline.pipeline.retries import KeptHints
from support.env import without_caller_variables


def miss() -> Result:
    return Result("no_match", path="a.py", error="old_string not found in file")


def hint_of(kept: KeptHints, path: str, turn: object, result: Result | None = None) -> str | None:
    answer = result or miss()
    kept.observe(path, turn, answer)
    return answer.hint


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def state_files(state: Path) -> list[Path]:
    return sorted(state.iterdir()) if state.exists() else []


def test_a_later_process_takes_up_the_count_of_the_turn(root: Path, state: Path) -> None:
    assert hint_of(KeptHints(root, state), "a.py", "t") is None
    second = hint_of(KeptHints(root, state), "./a.py", "t")  # the same file, spelt otherwise
    assert second is not None and second.startswith("this is failed attempt 2 on a.py")
    assert hint_of(KeptHints(root, state), "a.py", "other turn") is None


def test_a_success_clears_the_count(root: Path, state: Path) -> None:
    hint_of(KeptHints(root, state), "a.py", 1)
    hint_of(KeptHints(root, state), "a.py", 1, Result("applied", path="a.py"))
    assert hint_of(KeptHints(root, state), "a.py", 1) is None
    [file] = state_files(state)
    assert json.loads(file.read_text())["paths"] == {
        "a.py": [1, 1, pytest.approx(time.time(), abs=60)]
    }


def test_edits_without_a_turn_and_successes_write_nothing(root: Path, state: Path) -> None:
    kept = KeptHints(root, state)
    hint_of(kept, "a.py", None)
    assert hint_of(kept, "a.py", None) is not None  # counted within the process
    hint_of(KeptHints(root, state), "b.py", "t", Result("applied", path="b.py"))
    assert state_files(state) == []


def test_each_root_has_its_own_count(tmp_path: Path, state: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    hint_of(KeptHints(one, state), "a.py", "t")
    assert hint_of(KeptHints(two, state), "a.py", "t") is None
    assert len(state_files(state)) == 2


@pytest.mark.parametrize(
    "content",
    [
        b"not json at all",
        b"\xff\xfe",
        b"[]",
        b'{"root": 3}',
        b'{"root": "ROOT", "paths": []}',
        b'{"root": "ROOT", "paths": {"a.py": "two"}}',
        b'{"root": "ROOT", "paths": {"a.py": [{"t": 1}, 1, 0]}}',
        b'{"root": "ROOT", "paths": {"a.py": ["t", -4, 0]}}',
        b'{"root": "ROOT", "paths": {"a.py": ["t", 1, "yesterday"]}}',
        b'{"root": "/somewhere/else", "paths": {"a.py": ["t", 1, NOW]}}',
        b'{"root": "ROOT", "paths": {"a.py": ["t", 1, OLD]}}',  # too old: the turn is over
        b"[" * 100_000,
    ],
)
def test_a_state_file_that_says_nothing_usable_is_ignored(
    root: Path, state: Path, content: bytes
) -> None:
    kept = KeptHints(root, state)
    file = kept._file()
    file.parent.mkdir(parents=True)
    now = time.time()
    content = content.replace(b"ROOT", str(root.resolve()).encode())
    content = content.replace(b"NOW", str(now).encode())
    content = content.replace(b"OLD", str(now - retries.MAX_AGE - 60).encode())
    file.write_bytes(content)
    assert hint_of(kept, "a.py", "t") is None  # a first failure, as if nothing were kept
    assert json.loads(file.read_text())["paths"]["a.py"][:2] == ["t", 1]


def test_a_state_folder_that_cannot_be_written_is_no_failure(root: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    kept = KeptHints(root, blocked / "state")
    assert hint_of(kept, "a.py", "t") is None
    assert hint_of(kept, "a.py", "t") is not None  # still counted within the process


def test_the_state_is_bounded_and_left_without_temporary_files(
    root: Path, tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retries, "MAX_PATHS", 3)
    monkeypatch.setattr(retries, "MAX_ROOTS", 2)
    for n in range(5):
        hint_of(KeptHints(root, state), f"f{n}.py", "t")
    [file] = state_files(state)
    assert list(json.loads(file.read_text())["paths"]) == ["f2.py", "f3.py", "f4.py"]
    for n in range(3):
        other = tmp_path / f"other{n}"
        other.mkdir()
        hint_of(KeptHints(other, state), "a.py", "t")
        time.sleep(0.01)  # distinct modification times
    names = [p.name for p in state_files(state)]
    assert len(names) == 2 and not [n for n in names if n.endswith(".tmp")]
    assert file.name not in names  # the least recently written went first


def test_the_user_cache_folder_holds_the_state(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    hint_of(KeptHints(root), "a.py", "t")
    assert [p.parent for p in (tmp_path / "cache").rglob("*.json")] == [
        tmp_path / "cache" / "redline" / "retries"
    ]


@pytest.mark.e2e  # two real processes: the count crosses the process boundary
def test_two_redline_apply_processes_of_one_turn_get_the_hint(root: Path, tmp_path: Path) -> None:
    (root / "a.py").write_text("x = 1\n")
    home = tmp_path / "home"
    home.mkdir()
    env = without_caller_variables(os.environ)
    env.update(HOME=str(home), XDG_CACHE_HOME=str(tmp_path / "cache"))
    request = {"tool": "edit", "path": "a.py", "old_string": "y = 1", "new_string": "y = 2"}
    answers = []
    for _ in range(2):
        done = subprocess.run(
            [redline_script(), "apply", "--root", str(root)],
            input=json.dumps({**request, "turn": "t1"}).encode(),
            capture_output=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        answers.append(json.loads(done.stdout))
    assert "hint" not in answers[0]
    assert answers[1]["hint"].startswith("this is failed attempt 2 on a.py in this turn: re-read")
    assert list(home.iterdir()) == []
