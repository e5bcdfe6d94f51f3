"""fsops.behind and ``redline apply --jsonl``: a stream that is ahead of redline has
each file written once, and an answer is printed only once its edit is on disk."""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import redline.fsops.behind as behind_module
from cli_support import redline_script
from redline.engine.edit import EditItem, EditRequest
from redline.fsops.apply import apply_in_directory
from redline.fsops.behind import WriteBehind


def _edit(path: str, old: str, new: str) -> EditRequest:
    return EditRequest(path, (EditItem(old, new),))


def _run(root: Path, behind: WriteBehind, request: EditRequest) -> dict[str, Any]:
    payload = apply_in_directory(root, request, behind=behind).to_dict()
    behind.answer(payload)
    return payload


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.py").write_text("a = 1\nb = 2\nc = 3\n")
    (root / "b.py").write_text("x = 1\n")
    return root


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the write-behind replaces, in order."""
    seen: list[Path] = []
    real = behind_module.replace_file

    def counting(path: Path, data: bytes, *args: Any, **kwargs: Any) -> None:
        seen.append(path)
        real(path, data, *args, **kwargs)

    monkeypatch.setattr(behind_module, "replace_file", counting)
    return seen


def test_edits_of_one_file_build_on_each_other_and_write_it_once(
    root: Path, writes: list[Path]
) -> None:
    behind = WriteBehind()
    _run(root, behind, _edit("a.py", "a = 1", "a = 10"))
    _run(root, behind, _edit("a.py", "a = 10\nb = 2", "a = 10\nb = 20"))
    _run(root, behind, _edit("b.py", "x = 1", "x = 2"))
    _run(root, behind, _edit("a.py", "c = 3", "c = 30"))
    assert (root / "a.py").read_text() == "a = 1\nb = 2\nc = 3\n"  # nothing written yet
    answers = behind.flush()
    assert [a["status"] for a in answers] == ["applied"] * 4
    assert (root / "a.py").read_text() == "a = 10\nb = 20\nc = 30\n"
    assert (root / "b.py").read_text() == "x = 2\n"
    assert sorted(p.name for p in writes) == ["a.py", "b.py"]
    assert behind.flush() == []


def test_a_file_changed_by_another_program_is_not_overwritten(root: Path) -> None:
    behind = WriteBehind()
    _run(root, behind, _edit("a.py", "a = 1", "a = 10"))
    _run(root, behind, _edit("a.py", "b = 2", "b = 20"))
    _run(root, behind, _edit("b.py", "x = 1", "x = 2"))
    (root / "a.py").write_text("someone else's content, longer than before\n")
    first, second, other = behind.flush()
    assert (root / "a.py").read_text() == "someone else's content, longer than before\n"
    for answer in (first, second):
        assert answer["status"] == "failed"
        assert answer["path"] == "a.py"
        assert "changed by another program while the stream ran" in answer["error"]
        assert "the stream held 2 edits of it; none was written" in answer["error"]
        assert answer["diff"] is None
    assert other["status"] == "applied"
    assert (root / "b.py").read_text() == "x = 2\n"


def test_a_file_that_cannot_be_written_fails_its_answers(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(path: Path, data: bytes) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    behind = WriteBehind()
    _run(root, behind, _edit("a.py", "a = 1", "a = 10"))
    _run(root, behind, _edit("b.py", "x = 1", "x = 2"))
    monkeypatch.setattr(behind_module, "replace_file", refuse)
    first, second = behind.flush()
    for answer, path in ((first, "a.py"), (second, "b.py")):
        assert answer["status"] == "failed"
        error = answer["error"]
        assert error.startswith(f"cannot write {path!r}: permission was denied (Permission denied)")
        assert f"give your user write access to {root / path}" in error
        assert error.endswith("then retry. The file is unchanged")
    assert (root / "a.py").read_text() == "a = 1\nb = 2\nc = 3\n"


def test_a_replaced_file_fails_its_answers(root: Path) -> None:
    """A rename over the file (what editors do) changes its inode: not overwritten."""
    behind = WriteBehind()
    _run(root, behind, _edit("a.py", "a = 1", "a = 10"))
    replacement = root / "new.tmp"
    replacement.write_text("a = 1\nb = 2\nc = 3\n")  # same size, other inode
    replacement.replace(root / "a.py")
    (answer,) = behind.flush()
    assert answer["status"] == "failed"
    assert (root / "a.py").read_text() == "a = 1\nb = 2\nc = 3\n"


def test_an_answer_other_than_applied_takes_its_hold_back(root: Path) -> None:
    """A request that met a bug after its edit was held is answered ``failed``: the
    edit is not written, and an earlier held edit of the file still is."""
    behind = WriteBehind()
    _run(root, behind, _edit("a.py", "a = 1", "a = 10"))
    apply_in_directory(root, _edit("a.py", "b = 2", "b = 20"), behind=behind)
    behind.answer({"status": "failed", "path": "a.py", "error": "internal error"})
    apply_in_directory(root, _edit("b.py", "x = 1", "x = 2"), behind=behind)
    behind.answer({"status": "failed", "path": "b.py", "error": "internal error"})
    statuses = [a["status"] for a in behind.flush()]
    assert statuses == ["applied", "failed", "failed"]
    assert (root / "a.py").read_text() == "a = 10\nb = 2\nc = 3\n"
    assert (root / "b.py").read_text() == "x = 1\n"


def test_full_past_the_bound(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(behind_module, "MAX_ANSWERS", 2)
    behind = WriteBehind()
    _run(root, behind, _edit("a.py", "a = 1", "a = 10"))
    assert not behind.full
    _run(root, behind, _edit("a.py", "a = 10", "a = 11"))
    assert behind.full


def test_full_past_the_bytes_held(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(behind_module, "MAX_BYTES", 30)
    behind = WriteBehind()
    _run(root, behind, _edit("a.py", "a = 1", "a = 10"))  # 19 bytes held
    assert not behind.full
    _run(root, behind, _edit("b.py", "x = 1", "x = 2"))  # 25
    assert not behind.full
    apply_in_directory(root, _edit("a.py", "c = 3", "c = 3000000"), behind=behind)
    behind.answer({"status": "failed", "path": "a.py", "error": "a bug after the hold"})
    assert not behind.full  # the hold taken back: still 25
    _run(root, behind, _edit("a.py", "c = 3", "c = 3000000"))  # 31
    assert behind.full


OPS = st.lists(
    st.tuples(st.sampled_from(["a.py", "b.py"]), st.integers(0, 5), st.integers(0, 5)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(ops=OPS)
def test_a_stream_gives_the_answers_and_bytes_of_one_write_per_request(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int]]
) -> None:
    """Invariant: holding changes when files are written, never what is written or said."""
    trees = []
    answers = []
    for held in (False, True):
        root = tmp_path_factory.mktemp("stream")
        (root / "a.py").write_text("".join(f"v{i} = {i}\n" for i in range(6)))
        (root / "b.py").write_text("w = 0\nw = 0\n")
        behind = WriteBehind() if held else None
        said = []
        for path, old, new in ops:
            request = _edit(path, f"v{old} = " if path == "a.py" else "w = 0\n", f"v{new} = ")
            payload = apply_in_directory(root, request, behind=behind).to_dict()
            if behind is None:
                said.append(payload)
            else:
                behind.answer(payload)
        if behind is not None:
            said = behind.flush()
        trees.append({p.name: p.read_bytes() for p in root.iterdir()})
        answers.append(said)
    assert trees[0] == trees[1]
    assert answers[0] == answers[1]


# --- the stream, end to end -------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    clean["HOME"] = str(home)
    return clean


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def test_a_stream_from_a_file_is_answered_in_order_with_each_file_written(
    root: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Edits that build on each other, a patch that needs them on disk, then more edits."""
    rng = random.Random(7)
    requests = [
        {"tool": "edit", "path": "a.py", "old_string": "a = 1", "new_string": "a = 10"},
        {"tool": "edit", "path": "a.py", "old_string": "a = 10", "new_string": "a = 11"},
        {"tool": "edit", "path": "b.py", "old_string": "nowhere", "new_string": "elsewhere"},
        {
            "tool": "apply_patch",
            "patch": "*** Begin Patch\n*** Update File: a.py\n@@\n a = 11\n-b = 2\n+b = 22\n"
            "*** End Patch",
        },
        {"tool": "edit", "path": "a.py", "old_string": "b = 22", "new_string": "b = 23"},
    ]
    stream = tmp_path / "stream.jsonl"
    stream.write_bytes(b"".join(_line(r) for r in requests) + b"\n" * rng.randint(0, 2))
    with stream.open("rb") as stdin:
        proc = subprocess.run(
            [redline_script(), "apply", "--jsonl", "--root", str(root)],
            stdin=stdin,
            capture_output=True,
            env=env,
            check=False,
        )
    statuses = [json.loads(x)["status"] for x in proc.stdout.splitlines()]
    assert statuses == ["applied", "applied", "no_match", "applied", "applied"]
    assert proc.returncode == 1
    assert (root / "a.py").read_text() == "a = 11\nb = 23\nc = 3\n"
    assert not [p for p in root.iterdir() if p.name.endswith(".redline-tmp")]


def test_an_answer_arrives_with_its_file_written(root: Path, env: dict[str, str]) -> None:
    """An agent that waits for each answer gets it, and finds the file written, before
    it sends the next request (nothing is held while the stream waits)."""
    proc = subprocess.Popen(
        [redline_script(), "apply", "--jsonl", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: queue.Queue[bytes] = queue.Queue()
    reader = threading.Thread(target=lambda: [answers.put(x) for x in proc.stdout], daemon=True)
    reader.start()
    try:
        for n in range(2, 5):
            edit = {"tool": "edit", "path": "a.py", "old_string": f"a = {n - 1}\n"}
            proc.stdin.write(_line(edit | {"new_string": f"a = {n}\n"}))
            proc.stdin.flush()
            assert json.loads(answers.get(timeout=60))["status"] == "applied"
            assert (root / "a.py").read_text().startswith(f"a = {n}\n")
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        proc.stdout.close()
