"""Benchmark ``redline stats --all`` on a repository with 2,000 agent edits.

    python bench/stats_bench.py [--edits N] [--later N] [--runs N] [--keep] [--json FILE]

Builds a repository under a short ``/tmp`` directory: 200 modules of 120 lines
in 10 directories on ``main``. A session branch ``redline/bench`` then gets
2,000 one-file edit commits made in-process with pygit2 (each rewrites one line
as two: two inserted lines), every one with a redline note written in batches
with ``notes.prepare`` + ``notes.publish``: 80 % exact, 8 % whitespace, 7 %
fuzzy, 3 % punctuation, 2 % line_fuzzy, confidences as the tiers give them; a
tenth of the tolerant ones flagged, half of those approved. One edit in five
rewrites a line an earlier edit inserted. ``main`` is fast-forwarded to the
session and gets 200 more commits, and the outcome log gets 300 refused
requests.

Measured: ``redline stats --all --json`` as a subprocess of this checkout
(``python -m redline`` with this tree's ``src`` first on ``PYTHONPATH``),
median of ``--runs`` (default 5) with the reference ``python -c 'import
pygit2'`` beside it; then ``gitops.stats.compute`` in-process, split into its
note reading and line following. The repository is removed unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

import pygit2  # noqa: E402

from redline.gitops import notes, outcomes  # noqa: E402
from redline.gitops.repo import Layout  # noqa: E402
from redline.gitops.trees import FILE, Entry, with_entries  # noqa: E402

DIRS = 10
FILES_PER_DIR = 20
LINES = 120
LATER_COMMITS = 200
OUTCOMES = 300
BATCH = 500
SEED = 20261201
TIERS = [  # match_type, share, confidence range
    ("exact", 0.80, (1.0, 1.0)),
    ("whitespace", 0.08, (0.95, 0.95)),
    ("fuzzy", 0.07, (0.82, 0.99)),
    ("punctuation", 0.03, (0.97, 0.97)),
    ("line_fuzzy", 0.02, (0.80, 0.95)),
]


def git(cwd: Path, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout


def build(root: Path, edits: int, env: dict[str, str]) -> None:
    rng = random.Random(SEED)
    git(root.parent, "init", "-q", "-b", "main", str(root), env=env)
    git(root, "config", "user.name", "Bench", env=env)
    git(root, "config", "user.email", "bench@example.com", env=env)
    files: dict[str, list[str]] = {}
    for d in range(DIRS):
        for f in range(FILES_PER_DIR):
            path = f"pkg{d:02}/mod{f:02}.py"
            files[path] = [f"value_{d}_{f}_{i} = {i}  # line {i}\n" for i in range(LINES)]
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text("".join(files[path]))
    git(root, "add", "-A", env=env)
    git(root, "commit", "-q", "-m", "initial", env=env)
    repo = pygit2.Repository(str(root))
    sig = pygit2.Signature("Bench", "bench@example.com")
    tip = repo.head.target
    tree = repo[tip].peel(pygit2.Tree)
    inserted: list[tuple[str, int]] = []  # (path, line index) of lines edits inserted
    pending: dict[pygit2.Oid, dict[str, Any]] = {}
    paths = sorted(files)

    def flush() -> None:
        if pending:
            batch = dict(pending)
            notes.publish(repo, lambda parent: batch, sig)
            pending.clear()

    for n in range(edits):
        if inserted and rng.random() < 0.2:
            # a line one of the last few edits inserted (index shifts aside)
            path, index = inserted.pop(rng.randrange(max(0, len(inserted) - 20), len(inserted)))
            if index >= len(files[path]):
                path, index = rng.choice(paths), rng.randrange(LINES)
        else:
            path, index = rng.choice(paths), rng.randrange(LINES)
        lines = files[path]
        lines[index : index + 1] = [f"edited_{n} = {n}\n", f"edited_{n}_b = {n + 1}\n"]
        inserted += [(path, index), (path, index + 1)]
        blob = repo.create_blob("".join(lines).encode())
        new_tree = with_entries(repo, tree, {path: Entry(blob, FILE)})
        edit = f"{n:012x}"
        tip = repo.create_commit(
            None, sig, sig, f"redline: edit {path}\n\nRedline-Edit: {edit}\n", new_tree, [tip]
        )
        tree = repo[new_tree].peel(pygit2.Tree)
        pending[tip] = _note(rng, n, edit, path, index)
        if len(pending) >= BATCH:
            flush()
    flush()
    repo.references.create("refs/heads/redline/bench", tip)
    git(root, "merge", "-q", "--ff-only", "redline/bench", env=env)
    for k in range(LATER_COMMITS):
        path = rng.choice(paths)
        target = root / path
        text = target.read_text().splitlines(keepends=True)
        text[rng.randrange(len(text))] = f"later_{k} = {k}\n"
        target.write_text("".join(text))
        git(root, "commit", "-q", "-am", f"later {k}", env=env)
    layout = Layout(Path(repo.path).resolve())
    for _ in range(OUTCOMES):
        status = rng.choice(outcomes.RECORDED)
        line = {"session": "bench", "status": status, "match_type": rng.choice(["exact", "fuzzy"])}
        outcomes.record(layout, line)


def _tier(rng: random.Random) -> tuple[str, float]:
    """A match_type drawn by the shares of TIERS, and a confidence in its range."""
    pick = rng.random()
    for match_type, share, (low, high) in TIERS[:-1]:
        if pick < share:
            return match_type, round(rng.uniform(low, high), 4)
        pick -= share
    match_type, _, (low, high) = TIERS[-1]
    return match_type, round(rng.uniform(low, high), 4)


def _note(rng: random.Random, n: int, edit: str, path: str, index: int) -> dict[str, Any]:
    match_type, confidence = _tier(rng)
    op = notes.NoteOperation.matched(
        path, "edit", match_type, confidence, index + 1, index + 1, f"line {index}\n"
    )
    note = notes.Note(edit, f"r{n}", "bench", "edit", None, "agent", [op])
    tolerant = match_type != "exact"
    if tolerant and rng.random() < 0.1:
        rule = {"rule": "guard.protect[1] (pkg00/**)", "path": path, "reason": "not exact"}
        note.policy = notes.Verdict("flagged", ".redline.toml", [rule])
        if rng.random() < 0.5:
            note.approvals.append(notes.Approval("Bench <bench@example.com>", notes.utc_now()))
    else:
        note.policy = notes.Verdict("pass", ".redline.toml")
    return note.to_json()


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=2000)
    parser.add_argument("--later", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="rl-stats-", dir="/tmp"))
    home = folder / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", PYTHONPATH=str(SRC), LC_ALL="C.UTF-8")
    root = folder / "repo"
    try:
        started = time.perf_counter()
        build(root, args.edits, env)
        print(f"built {args.edits} edits in {time.perf_counter() - started:.1f} s: {root}")
        command = [sys.executable, "-m", "redline", "stats", "--all", "--json"]
        command += ["--later", str(args.later)]
        stats_ms, baseline_ms = [], []
        output = ""
        for _ in range(args.runs):
            ms, output = timed(command, env, root)
            stats_ms.append(ms)
            baseline_ms.append(timed([sys.executable, "-c", "import pygit2"], env, root)[0])
        data = json.loads(output)
        assert data["edits"] == args.edits, data["edits"]

        from redline.gitops.repo import main_repository
        from redline.gitops.stats import compute

        repo, layout = main_repository(root)
        t0 = time.perf_counter()
        compute(repo, layout, later=args.later)
        compute_ms = (time.perf_counter() - t0) * 1000
        figures = {
            "edits": args.edits,
            "later": args.later,
            "stats_ms_median": round(statistics.median(stats_ms), 1),
            "stats_ms_runs": [round(ms, 1) for ms in stats_ms],
            "python_import_pygit2_ms_median": round(statistics.median(baseline_ms), 1),
            "compute_in_process_ms": round(compute_ms, 1),
            "later_changed_rate": data["later_changed_rate"],
            "rows": {r["match_type"]: r["edits"] for r in data["match_types"]},
        }
        print(json.dumps(figures, indent=1))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1) + "\n")
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
