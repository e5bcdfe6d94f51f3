"""Smoke test of the replay bench (bench/replay.py) on a tiny repository built with git."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "replay.py"

A_PY = """\
def first(x):
    total = 0
    for item in x:
        total += item
    return total


def second(x):
    total = 0
    for item in x:
        total += item
    return total


def third(name):
    return "hello, " + name
"""

NOTES = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"


def load_replay() -> ModuleType:
    spec = importlib.util.spec_from_file_location("replay_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", message], check=True)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    commit(repo, {"a.py": A_PY, "notes.txt": NOTES}, "start")
    # Two hunks far apart; the second changes a line that occurs twice (needs context).
    a2 = A_PY.replace("def first(x):", "def first(x, start=0):", 1)
    a2 = a2.replace('    return "hello, " + name', '    return f"hello, {name}!"')
    a2 = a2.replace(
        "        total += item\n    return total\n\n\ndef third",
        "        total -= item\n    return total\n\n\ndef third",
    )
    commit(repo, {"a.py": a2}, "two hunks")
    # Adjacent hunks (merged into one edit), a pure insertion, a new file (skipped).
    notes = NOTES.replace("three\n", "THREE\n").replace("five\n", "five\n5\n")
    commit(repo, {"notes.txt": notes, "new.py": "x = 1\n"}, "adjacent hunks")
    # A deletion, and a line with quotes and a dash.
    a4 = a2.replace("    total = 0\n", "", 1).replace(
        "def second(x):", "def second(x):  # sum - 'items'"
    )
    commit(repo, {"a.py": a4, "notes.txt": notes.replace("nine\n", "")}, "deletions")
    return repo


def test_replay_counts_add_up_and_exact_requests_are_right(history: Path, tmp_path: Path) -> None:
    replay = load_replay()
    out = tmp_path / "replay.json"
    assert replay.main([str(history), "-n", "3", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())

    documented = {
        "repo", "head", "engine", "commits", "files", "hunk_edits", "requests", "seconds",
        "kinds", "perturbations", "match_types", "patch_match_types", "refusals", "skipped",
        "wrong_classes", "baseline", "summary", "wrong", "refused_examples",
    }  # fmt: skip
    assert documented <= set(figures)
    assert figures["commits"] == 3
    assert figures["files"] == 4
    assert figures["skipped"]["added, deleted or type changed"] == 1

    kinds = figures["kinds"]
    assert kinds["edit"]["n"] == kinds["edit"]["right"] == figures["hunk_edits"] >= 6
    assert kinds["batch"]["n"] == kinds["batch"]["right"] == 4
    assert kinds["patch"]["n"] == kinds["patch"]["right"] == 3
    assert kinds["perturbed"]["n"] > 0
    assert kinds["combined"]["n"] > 0
    assert sum(row["n"] for row in figures["filetypes"].values()) == sum(
        kinds[k]["n"] for k in ("perturbed", "combined", "reverse_marks") if k in kinds
    )
    for table in ("kinds", "perturbations", "match_types", "patch_match_types"):
        for name, row in figures[table].items():
            assert row["right"] + row["refused"] + row["wrong"] + row["crash"] == row["n"], name
    assert sum(row["n"] for row in kinds.values()) == figures["requests"]
    single = sum(row["n"] for name, row in kinds.items() if name not in ("batch", "patch"))
    assert sum(row["n"] for row in figures["match_types"].values()) == single + kinds["batch"]["n"]
    assert sum(row["n"] for row in figures["perturbations"].values()) == single - kinds["edit"]["n"]
    wrong = sum(row["wrong"] + row["crash"] for row in kinds.values())
    assert len(figures["wrong"]) == wrong
    for case in figures["wrong"]:
        assert {"commit", "kind", "perturbation", "verdict", "diff"} <= set(case)

    assert (
        figures["summary"][0]
        == f"exact edits: right 100.0% refused 0.0% wrong 0 (n={kinds['edit']['n']})"
    )
    base = figures["baseline"]
    assert base["commits"] == 3
    assert base["git_apply"]["right"] == base["redline_apply_jsonl"]["right"] == 3
    assert base["one_process"]["right"] is True
    assert base["ratio_median"] > 0


def test_hunk_edits_replay_a_file_history_exactly() -> None:
    replay = load_replay()
    parent = "x\ny\nx\ny\nz\n"
    child = "x\nY\nx\ny\nz\nw\n"
    edits = replay.hunk_edits(parent, child)
    text = parent
    for edit in edits:  # bottom to top, each on the previous one's result
        assert edit.before == text and text.count(edit.old) == 1
        text = text.replace(edit.old, edit.new)
        assert text == edit.after
    assert text == child


def test_a_typographic_file_keeps_ascii_on_the_lines_the_edit_changes() -> None:
    replay = load_replay()
    parent = "a = \"x\"  # one - two\nb = 'y'\nc = \"z\"\nb = 'y'\n"
    child = "a = \"x\"  # one - two\nb = f('y')\nc = \"z\"\nb = 'y'\n"
    (hunk,) = replay.hunk_edits(parent, child)
    assert hunk.old == 'a = "x"  # one - two\nb = \'y\'\nc = "z"\n'  # context both sides
    case = replay.typographic_file(hunk)
    # The kept lines take the marks; the changed one keeps the agent's ASCII, in the
    # file and in what the exact request writes.
    assert case.before == "a = “x”  # one — two\nb = 'y'\nc = “z”\nb = ‘y’\n"
    assert case.after == "a = “x”  # one — two\nb = f('y')\nc = “z”\nb = ‘y’\n"
    assert case.before.count(case.old) == 1
    assert case.before.replace(case.old, case.new) == case.after
    assert replay.typographic_file(replay.hunk_edits("a\nb\n", "a\nc\n")[0]) is None
