"""The outcome log: one JSON line per refused request, appended, bounded, never fatal."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from redline.gitops import outcomes
from redline.gitops.repo import Layout


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(tmp_path / "common")


def test_an_entry_names_the_request_and_its_match() -> None:
    request = {"tool": "edit", "path": "a.py", "old_string": "x", "new_string": "y"}
    result = {"status": "rejected", "path": "a.py", "match_type": "fuzzy", "confidence": 0.91}
    line = outcomes.entry("s", request, result, time="2026-01-02T03:04:05Z")
    assert line == {
        "time": "2026-01-02T03:04:05Z",
        "session": "s",
        "tool": "edit",
        "status": "rejected",
        "match_type": "fuzzy",
        "confidence": 0.91,
        "path": "a.py",
        "request": line["request"],
    }
    assert line["request"] == outcomes.entry("s", dict(request), result)["request"]
    assert line["request"] != outcomes.entry("s", {**request, "new_string": "z"}, result)["request"]


def test_an_entry_without_a_match_of_its_own_takes_its_weakest_hunk() -> None:
    result = {
        "status": "validation_failed",
        "path": None,
        "match_type": None,
        "confidence": None,
        "hunks": [
            {"match_type": "exact", "confidence": 1.0},
            {"match_type": "punctuation", "confidence": 0.97},
        ],
    }
    line = outcomes.entry("s", {"tool": "apply_patch", "patch": "..."}, result)
    assert (line["tool"], line["match_type"], line["confidence"]) == (
        "apply_patch",
        "punctuation",
        0.97,
    )
    nothing = outcomes.entry("s", "not even an object", {"status": "no_match"})
    assert (nothing["tool"], nothing["match_type"], nothing["confidence"]) == (None, None, None)


def test_record_appends_one_line_per_call_and_reads_back(layout: Layout) -> None:
    for status in ("rejected", "no_match"):
        assert outcomes.record(layout, {"session": "s", "status": status}) is None
    assert outcomes.record(layout, {"session": "t", "status": "ambiguous"}) is None
    path = outcomes.log_path(layout, "s")
    assert path == layout.common / "redline" / "outcomes" / "s.jsonl"
    assert [json.loads(x)["status"] for x in path.read_text().splitlines()] == [
        "rejected",
        "no_match",
    ]
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert [x["status"] for x in outcomes.read(layout, "s")] == ["rejected", "no_match"]
    assert sorted(x["status"] for x in outcomes.read(layout)) == [
        "ambiguous",
        "no_match",
        "rejected",
    ]
    assert list(outcomes.read(layout, "nobody")) == []


def test_lines_from_many_threads_never_interleave(layout: Layout) -> None:
    def write(n: int) -> None:
        for i in range(50):
            outcomes.record(
                layout, {"session": "s", "status": "no_match", "path": f"{n}/{i}" * 200}
            )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = outcomes.log_path(layout, "s").read_text().splitlines()
    assert len(lines) == 200
    assert all(json.loads(line)["status"] == "no_match" for line in lines)


def test_past_the_limit_the_log_is_moved_aside(layout: Layout) -> None:
    line = {"session": "s", "status": "no_match", "path": "p" * 100}
    for _ in range(5):
        assert outcomes.record(layout, line, limit=300) is None
    current = outcomes.log_path(layout, "s")
    older = current.with_name("s.jsonl.1")
    assert older.exists()
    assert current.stat().st_size <= 300 + len(json.dumps(line)) + 20
    assert older.stat().st_size <= 300 + len(json.dumps(line)) + 20
    # Both files are read, the older first; the oldest lines went with the rotation.
    read = list(outcomes.read(layout, "s"))
    assert 2 <= len(read) < 5
    assert list(outcomes.read(layout)) == read


def test_a_log_that_cannot_be_written_says_why_and_raises_nothing(layout: Layout) -> None:
    layout.state.mkdir(parents=True)
    (layout.state / "outcomes").write_text("a file where the folder goes")
    problem = outcomes.record(layout, {"session": "s", "status": "rejected"})
    assert problem is not None and "cannot write" in problem
    assert outcomes.record(layout, {"session": "../x", "status": "rejected"}) is not None
    assert outcomes.record(layout, {"session": "s", "path": "x" * 100_000}) is not None
    assert list(outcomes.read(layout)) == []


def test_torn_or_foreign_lines_are_skipped(layout: Layout) -> None:
    assert outcomes.record(layout, {"session": "s", "status": "rejected"}) is None
    path = outcomes.log_path(layout, "s")
    with path.open("ab") as handle:
        handle.write(b'[1, 2]\n{"session": "s", "sta')
    assert [x["status"] for x in outcomes.read(layout, "s")] == ["rejected"]
