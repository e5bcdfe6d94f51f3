"""Benchmark redline's apply_patch on the corpus of ``patch_corpus.py``.

    python bench/patch_bench.py [--json FILE]

Every case runs through ``redline.engine.patch.apply_patch`` against an in-memory
snapshot; the outcome's changes are applied to a copy of the input files and the
tree and status compared with the expectation. Then the timing target: a 50-hunk
patch over a 10,000-line file (median of 20 runs; target <= 100 ms), and the same
patch once through ``redline apply`` in a subprocess for reference.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from patch_corpus import CATEGORIES, PatchCase, TimingCase, build_cases, timing_case
from redline.engine.patch import apply_patch
from redline.engine.patch_plan import MemorySnapshot
from redline.engine.plan import PatchOutcome

TIMING_RUNS = 20
TARGET_MS = 100.0
VERDICTS = ("correct", "wrong-tree", "wrong-status")


@dataclass
class Verdict:
    name: str
    category: str
    verdict: str  # correct | wrong-tree | wrong-status
    status: str
    expected_status: str
    evidence_ok: bool  # every applied hunk reported the expected match_type
    seconds: float
    wrong_paths: list[str]
    error: str | None
    match_types: list[tuple[str, int, str]]


def tree_after(files: Mapping[str, bytes], outcome: PatchOutcome) -> dict[str, bytes]:
    tree = dict(files)
    for change in outcome.changes:
        if change.after is None:
            tree.pop(change.path, None)
        else:
            tree[change.path] = change.after
    return tree


def differing(got: Mapping[str, bytes], want: Mapping[str, bytes]) -> list[str]:
    return sorted(p for p in set(got) | set(want) if got.get(p) != want.get(p))


def run_case(case: PatchCase) -> Verdict:
    started = time.perf_counter()
    outcome = apply_patch(case.patch, MemorySnapshot(case.files))
    seconds = time.perf_counter() - started
    result = outcome.result
    wrong = differing(tree_after(case.files, outcome), case.expected)
    if wrong:
        verdict = "wrong-tree"
    elif result.status != case.status:
        verdict = "wrong-status"
    else:
        verdict = "correct"
    got_types = sorted((h.path, h.hunk, h.match_type) for h in result.hunks)
    return Verdict(
        case.name,
        case.category,
        verdict,
        result.status,
        case.status,
        got_types == sorted(case.match_types),
        seconds,
        wrong,
        result.error,
        got_types,
    )


def summarise(verdicts: list[Verdict]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for category in [*CATEGORIES, "total"]:
        rows = [v for v in verdicts if category in ("total", v.category)]
        counts: dict[str, float] = {"cases": len(rows)}
        counts |= {name: sum(v.verdict == name for v in rows) for name in VERDICTS}
        counts["match-type"] = sum(not v.evidence_ok for v in rows if v.verdict == "correct")
        counts["ms"] = round(sum(v.seconds for v in rows) * 1000, 1)
        table[category] = counts
    return table


def print_table(table: dict[str, dict[str, float]]) -> None:
    columns = ["cases", *VERDICTS, "match-type", "ms"]
    print(f"{'category':20}" + "".join(f"{c:>13}" for c in columns))
    for category, counts in table.items():
        cells = "".join(
            f"{counts[c]:>13.1f}" if c == "ms" else f"{counts[c]:>13.0f}" for c in columns
        )
        print(f"{category:20}{cells}")


def print_problems(verdicts: list[Verdict]) -> None:
    for v in verdicts:
        if v.verdict != "correct":
            print(f"  {v.name}: {v.verdict}, status {v.status} (expected {v.expected_status})")
            if v.wrong_paths:
                print(f"    files differing: {', '.join(v.wrong_paths)}")
            if v.error:
                print(f"    error: {v.error[:300]}")
        elif not v.evidence_ok:
            print(f"  {v.name}: correct tree, unexpected match types {v.match_types}")


def time_engine(case: TimingCase, runs: int = TIMING_RUNS) -> dict[str, float | bool]:
    snapshot = MemorySnapshot(case.files)
    samples = []
    outcome = None
    for _ in range(runs):
        started = time.perf_counter()
        outcome = apply_patch(case.patch, snapshot)
        samples.append((time.perf_counter() - started) * 1000)
    assert outcome is not None
    correct = tree_after(case.files, outcome) == case.expected
    return {
        "median_ms": round(statistics.median(samples), 2),
        "min_ms": round(min(samples), 2),
        "max_ms": round(max(samples), 2),
        "correct": correct and outcome.result.status == "applied",
    }


def redline_command() -> list[str]:
    exe = shutil.which("redline")
    if exe is not None:
        return [exe]
    return [sys.executable, "-c", "from redline.cli.main import main; main()"]


def time_cli(case: TimingCase) -> dict[str, float | bool | str]:
    with tempfile.TemporaryDirectory(prefix="redline-patch-bench-") as tmp:
        root = Path(tmp)
        for path, data in case.files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
        request = json.dumps({"tool": "apply_patch", "patch": case.patch}).encode()
        started = time.perf_counter()
        proc = subprocess.run(
            [*redline_command(), "apply", "--root", str(root)],
            input=request,
            capture_output=True,
            check=False,
        )
        seconds = time.perf_counter() - started
        tree = {p: (root / p).read_bytes() for p in case.expected if (root / p).is_file()}
    try:
        status = json.loads(proc.stdout)["status"]
    except (json.JSONDecodeError, KeyError):
        status = f"unreadable output (exit {proc.returncode})"
    return {
        "total_ms": round(seconds * 1000, 1),
        "exit_code": proc.returncode,
        "status": status,
        "correct": tree == case.expected and status == "applied",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", type=Path, help="write the figures here")
    args = parser.parse_args()

    started = time.perf_counter()
    cases = build_cases()
    corpus_s = time.perf_counter() - started
    started = time.perf_counter()
    verdicts = [run_case(case) for case in cases]
    cases_s = time.perf_counter() - started
    table = summarise(verdicts)
    print_table(table)
    print(f"corpus built in {corpus_s:.2f} s; {len(cases)} cases run in {cases_s:.2f} s")
    print_problems(verdicts)

    big = timing_case()
    engine = time_engine(big)
    cli = time_cli(big)
    verdict = "met" if float(engine["median_ms"]) <= TARGET_MS else "MISSED"
    print(
        f"timing: {big.hunks} hunks over a {big.lines}-line file: apply_patch median "
        f"{engine['median_ms']} ms (min {engine['min_ms']}, max {engine['max_ms']}) over "
        f"{TIMING_RUNS} runs; target <= {TARGET_MS:g} ms {verdict}; "
        f"result {'correct' if engine['correct'] else 'WRONG'}"
    )
    print(
        f"        redline apply (subprocess, once): {cli['total_ms']} ms total, "
        f"exit {cli['exit_code']}, status {cli['status']}, "
        f"result {'correct' if cli['correct'] else 'WRONG'}"
    )
    if args.json:
        figures = {
            "categories": table,
            "problems": [
                asdict(v) for v in verdicts if v.verdict != "correct" or not v.evidence_ok
            ],
            "corpus_seconds": round(corpus_s, 3),
            "cases_seconds": round(cases_s, 3),
            "timing": {
                "lines": big.lines,
                "hunks": big.hunks,
                "runs": TIMING_RUNS,
                "target_ms": TARGET_MS,
                "engine": engine,
                "cli": cli,
            },
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
