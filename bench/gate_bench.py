"""Benchmark the CI gate: ``redline guard --range`` over 500 commits, 5,000 notes.

    python bench/gate_bench.py [--json FILE] [--profile] [--keep]

Builds the repository of ``guard_bench.py`` (500 modules, a policy protecting
three packages, 5,000 one-file redline commits on ``redline/bench``, each with
its note and ``Redline-Edit:`` trailer, 10 % of them tolerant, a quarter of
those on protected paths where the policy flags most; packed with ``git gc``)
and checks the range ``redline/bench~500..redline/bench``: 500 commits, judged
with the 5,000 notes, as a CI job does (``redline guard --range BASE..HEAD
--json`` in a subprocess, the console script next to this interpreter).

Rows: the first run after the clone (no ``.git/redline/ledger.json``: the
ledger reads the 5,000 notes), then warm runs refusing (the range carries the
flagged edits made in it: the verdict must name exactly those), then warm runs
passing once they are approved (``redline approve``, timed too). References in
the same run: ``python -c 'import redline.cli.main'`` (the process start-up)
and ``git log --notes=redline`` over the same range (git reading the same
notes). Target: ≤ 1 s wall time for the gate. Each row gives the CPU time
too (user + system of the process), steadier than wall time on a busy machine.
``--profile`` profiles one warm check in-process (cProfile, top 25 by
cumulative time).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from guard_bench import Fixture, Runner, Timed, build

SRC = Path(__file__).resolve().parents[1] / "src"
TARGET_MS = 1000.0
VERIFY_TARGET_MS = 3000.0
RANGE = 500
WARM_RUNS = 7
SPEC = f"redline/bench~{RANGE}..redline/bench"


def gate(runner: Runner) -> Timed:
    return runner.timed([*runner.redline, "guard", "--range", SPEC, "--json"])


def verdict(done: Timed) -> dict[str, Any]:
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


def expected_blocked(fixture: Fixture) -> set[str]:
    in_range = fixture.edits[-RANGE:]
    return {e.edit for e in in_range if e.flagged}


def row(name: str, runs: list[Timed], note: str = "") -> dict[str, Any]:
    walls = [r.ms for r in runs]
    return {
        "name": name,
        "median_ms": round(statistics.median(walls), 1),
        # user + system time of the process: steadier than wall time on a busy machine
        "cpu_median_ms": round(statistics.median(r.cpu_ms for r in runs), 1),
        "min_ms": round(min(walls), 1),
        "max_ms": round(max(walls), 1),
        "runs": len(runs),
        "note": note,
    }


def run(root: Path, args: argparse.Namespace) -> int:
    fixture, runner = build(root, packed=True, genuine=RANGE)
    runner.env["PYTHONPATH"] = str(SRC)  # this checkout's redline, whatever is installed
    print(f"built in {sum(fixture.build_s.values()):.1f} s: {fixture.build_s}", file=sys.stderr)
    expected = expected_blocked(fixture)
    commits = len(runner.git("rev-list", SPEC).split())
    assert commits == RANGE, commits

    rows = []
    cold = gate(runner)
    data = verdict(cold)
    assert cold.code == 1 and data["commits"] == RANGE, (cold.code, cold.stderr)
    got = {b["edit"] for b in data["blocked"]}
    assert got == expected, (sorted(got ^ expected), data["summary"])
    assert data["missing"] == [] and data["unreadable"] == []
    rows.append(row("first run after a clone (builds the ledger cache)", [cold]))

    refusing = [gate(runner) for _ in range(WARM_RUNS)]
    assert all(r.code == 1 for r in refusing)
    rows.append(row(f"refusing, warm ({len(expected)} unapproved flagged edits)", refusing))

    approve = runner.timed([*runner.redline, "approve", *sorted(expected)])
    assert approve.code == 0, approve.stderr
    rows.append(row(f"redline approve of the {len(expected)} edits", [approve]))

    after = gate(runner)
    assert after.code == 0, after.stdout
    passing = [gate(runner) for _ in range(WARM_RUNS)]
    assert all(r.code == 0 for r in passing)
    summary = verdict(passing[-1])["summary"]
    rows.append(row("passing, first run after the approval", [after]))
    rows.append(row("passing, warm", passing, summary))

    plain: list[Timed] = []
    checked: list[Timed] = []
    for _ in range(WARM_RUNS):  # interleaved: the machine's load falls on both alike
        plain.append(gate(runner))
        checked.append(runner.timed([*runner.redline, "guard", "--range", SPEC, "--json",
                                     "--verify"]))  # fmt: skip
    assert all(r.code == 0 for r in plain + checked), checked[-1].stdout
    cli_ratio = statistics.median(r.ms for r in checked) / statistics.median(r.ms for r in plain)
    verify_rows, verify_summary = verifying(fixture)
    verify_rows.insert(0, row("passing, warm (interleaved with --verify)", plain))
    verify_rows.insert(
        1,
        row(
            "passing, warm, --verify (each note's matched text checked in its parent)",
            checked,
            f"{cli_ratio:.2f}x",
        ),
    )
    rows += verify_rows

    start_up = [
        runner.timed([sys.executable, "-c", "import redline.cli.main"]) for _ in range(WARM_RUNS)
    ]
    rows.append(row("reference: python -c 'import redline.cli.main'", start_up))
    git_log = [
        runner.timed(["git", "log", "--notes=redline", "--format=%H %N", SPEC])
        for _ in range(WARM_RUNS)
    ]
    rows.append(row("reference: git log --notes=redline over the range", git_log))

    worst = max(r["median_ms"] for r in rows[:2] + rows[3:5])
    print(f"{'what':64} {'median ms':>10} {'min':>8} {'max':>8} {'cpu ms':>8}")
    for r in rows:
        print(
            f"{r['name']:64} {r['median_ms']:>10} {r['min_ms']:>8} {r['max_ms']:>8} "
            f"{r['cpu_median_ms']:>8}"
        )
    print(f"summary line: {summary}")
    print(f"summary line with --verify: {verify_summary}")
    met = worst <= TARGET_MS
    print(f"target ≤ {TARGET_MS:.0f} ms for the gate: {'met' if met else 'MISSED'} ({worst} ms)")
    verify_worst = max(verify_rows[1]["median_ms"], verify_rows[3]["median_ms"])
    verify_met = verify_worst <= VERIFY_TARGET_MS
    print(
        f"target ≤ {VERIFY_TARGET_MS:.0f} ms for the gate with --verify (in-process): "
        f"{'met' if verify_met else 'MISSED'} ({verify_worst} ms)"
    )
    if args.json:
        result = {"rows": rows, "target_met": met, "verify_target_met": verify_met}
        Path(args.json).write_text(json.dumps(result, indent=1))
    if args.profile or not met:
        profile(fixture)
    return 0


def verifying(fixture: Fixture) -> tuple[list[dict[str, Any]], str]:
    """``check_range`` in this process over the same range, without and with running each
    agent edit again (``--verify``), interleaved, the ledger warm and the range approved:
    what --verify adds. The requests come from the fixture (the engine made the range's
    500 edits from them); every note must reproduce."""
    import pygit2

    from redline.hooks import ledger
    from redline.hooks.gate import check_range
    from redline.hooks.reproduce import Recorded

    repo = pygit2.Repository(str(fixture.repo))
    by_edit = {e.edit: fixture.requests.get(e.commit) for e in fixture.edits}

    def source(_: pygit2.Repository, note: dict[str, Any]) -> Recorded:
        return Recorded(by_edit.get(str(note.get("edit"))), "bench")

    base, head = SPEC.split("..")
    plain: list[Timed] = []
    verified: list[Timed] = []
    summary = ""
    for _ in range(WARM_RUNS):
        for runs, verify in ((plain, None), (verified, source)):
            started, cpu = time.perf_counter(), time.process_time()
            found = check_range(repo, ledger.load(repo), base, head, verify)
            wall, used = time.perf_counter() - started, time.process_time() - cpu
            assert found.findings.ok, found.summary(SPEC)
            summary = found.summary(SPEC) if verify else summary
            runs.append(Timed(wall * 1000, used * 1000, 0, "", ""))
    assert len(fixture.requests) == RANGE
    ratio = statistics.median(r.ms for r in verified) / statistics.median(r.ms for r in plain)
    return [
        row("in-process check_range, approved range (reference)", plain),
        row(
            f"in-process check_range --verify ({RANGE} edits run again)",
            verified,
            f"{ratio:.2f}x the reference",
        ),
    ], summary


def profile(fixture: Fixture) -> None:
    import pygit2

    from redline.hooks import ledger
    from redline.hooks.gate import check_range

    repo = pygit2.Repository(str(fixture.repo))
    base, head = SPEC.split("..")
    profiler = cProfile.Profile()
    profiler.enable()
    check_range(repo, ledger.load(repo), base, head)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--profile", action="store_true", help="profile one warm check")
    parser.add_argument("--keep", action="store_true", help="keep the repository")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rl-gate-", dir="/tmp"))
    try:
        return run(root, args)
    finally:
        if args.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
