"""Accuracy and speed of redline's edit tool against a HarnessKit-style baseline.

    python bench/edit_bench.py [--quick] [--json FILE] [--tool redline] [--category C] [-v]

Every corpus case (bench/corpus.py) runs through both tools in the same process;
the table counts verdicts per category (README.md explains the columns). A
separate timing runs a fuzzy-tier edit on a 10,000-line file. Exits 0 unless
the harness itself crashes.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from baseline_harnesskit import apply_baseline
from casekit import Case
from cases_fuzzy import big_file_case
from corpus import CATEGORIES, SEED, build_corpus
from redline.engine.edit import EditRequest, apply_edit
from scoring import VERDICTS, Outcome, Run, Tally, table
from sources import load_sources

Tool = Callable[[bytes, EditRequest], Outcome]
FUZZY_TARGET_MS = 50.0


def redline_tool(data: bytes, request: EditRequest) -> Outcome:
    out = apply_edit(data, request)
    return Outcome(out.result.status, out.data, out.result.match_type)


def baseline_tool(data: bytes, request: EditRequest) -> Outcome:
    out = apply_baseline(data, request)
    return Outcome(out.status, out.data, out.match_type)


def pruned_baseline_tool(data: bytes, request: EditRequest) -> Outcome:
    out = apply_baseline(data, request, prune=True)
    return Outcome(out.status, out.data, out.match_type)


TOOLS: dict[str, Tool] = {
    "redline": redline_tool,
    "baseline": baseline_tool,
    "baseline-pruned": pruned_baseline_tool,
}


def run_case(tool: Tool, case: Case) -> Run:
    start = time.perf_counter()
    try:
        outcome: Outcome | None = tool(case.data, case.request)
        error = None
    except Exception as exc:  # a crash is a verdict, not the end of the benchmark
        outcome, error = None, f"{type(exc).__name__}: {exc}".rstrip(": ")
    return Run(case, outcome, error, time.perf_counter() - start)


def run_all(tool: Tool, cases: list[Case]) -> Tally:
    if cases:
        run_case(tool, cases[0])  # warm-up: imports, caches
    return Tally([run_case(tool, case) for case in cases])


def fuzzy_timing(tools: dict[str, Tool], case: Case, repeats: dict[str, int]) -> dict[str, Any]:
    """Median wall time of each tool on the 10,000-line fuzzy case, and its verdict."""
    out: dict[str, Any] = {"case": case.name, "lines": case.data.count(b"\n")}
    for name, tool in tools.items():
        runs = [run_case(tool, case) for _ in range(repeats[name])]
        if runs[0].error is not None:
            out[name] = {"error": runs[0].error, "runs": len(runs)}
            continue
        ms = [r.seconds * 1000.0 for r in runs]
        out[name] = {
            "median_ms": round(statistics.median(ms), 2),
            "min_ms": round(min(ms), 2),
            "runs": len(ms),
            "verdict": runs[0].verdict,
            "match_type": runs[0].outcome.match_type if runs[0].outcome else None,
        }
    return out


def report(
    cases: list[Case], tallies: dict[str, Tally], timing: dict[str, Any], verbose: bool
) -> str:
    sizes = Counter(c.category for c in cases)
    categories = [c for c in CATEGORIES if c in sizes]
    parts = [
        f"redline edit benchmark: {len(cases)} cases, {len(categories)} categories, "
        f"stdlib of Python {platform.python_version()}",
        "",
        table(categories, sizes, tallies),
        "",
    ]
    for name, tally in tallies.items():
        n = max(len(tally.runs), 1)
        parts.append(
            f"time {name:15} {tally.seconds:8.3f} s total  "
            f"{1000.0 * tally.seconds / n:8.2f} ms/case"
        )
        for error, count in tally.errors().most_common(3):
            parts.append(f"  {name} crashed {count}x: {error[:120]}")
        if tally.runs and tally.errors().get("NotImplementedError") == len(tally.runs):
            parts.append(f"  note: {name} is still a stub (NotImplementedError on every case)")
    for name in ("baseline", "baseline-pruned"):
        ratio = _speed_ratio(tallies, name)
        if ratio is not None:
            parts.append(f"speed: {name}/redline = {ratio:.1f}x")
    parts.append("")
    parts.append(f"fuzzy edit, 12-line block with a 1-char typo, {timing['lines']}-line file:")
    for name in tallies:
        t = timing.get(name, {})
        if "error" in t:
            parts.append(f"  {name:15} n/a ({t['error'][:80]})")
        elif t:
            goal = f"  (target <= {FUZZY_TARGET_MS:.0f} ms)" if name == "redline" else ""
            parts.append(
                f"  {name:15} median {t['median_ms']:9.2f} ms over {t['runs']} runs, "
                f"verdict {t['verdict']}{goal}"
            )
    if verbose:
        for name, tally in tallies.items():
            bad = [r for r in tally.runs if r.verdict != "ok"]
            parts.append(f"\n{name}: {len(bad)} cases not ok")
            parts.extend(f"  [{r.verdict}] {_status(r)} {r.case.name}" for r in bad)
    return "\n".join(parts)


def _status(run: Run) -> str:
    if run.outcome is None:
        return "crash"
    return f"{run.outcome.status}/{run.outcome.match_type or '-'}"


def _speed_ratio(tallies: dict[str, Tally], baseline: str = "baseline") -> float | None:
    both = {"redline", baseline} <= tallies.keys()
    if both and tallies["redline"].seconds > 0 and not tallies["redline"].errors():
        return tallies[baseline].seconds / tallies["redline"].seconds
    return None


def as_json(cases: list[Case], tallies: dict[str, Tally], timing: dict[str, Any]) -> dict[str, Any]:
    sizes = Counter(c.category for c in cases)
    per_category = {
        category: {
            "n": sizes[category],
            **{name: dict(_zero() | t.counts(category)) for name, t in tallies.items()},
        }
        for category in CATEGORIES
        if category in sizes
    }
    return {
        "python": platform.python_version(),
        "seed": SEED,
        "cases": len(cases),
        "per_category": per_category,
        "totals": {name: dict(_zero() | t.counts()) for name, t in tallies.items()},
        "seconds": {name: round(t.seconds, 4) for name, t in tallies.items()},
        "speed_ratio_baseline_over_redline": _speed_ratio(tallies),
        "fuzzy_10k": timing,
        "match_types": {
            name: {c: dict(t.match_types(c)) for c in per_category} for name, t in tallies.items()
        },
        "not_ok": {
            name: [
                {"case": r.case.name, "verdict": r.verdict, "status": _status(r), "error": r.error}
                for r in t.runs
                if r.verdict != "ok"
            ]
            for name, t in tallies.items()
        },
    }


def _zero() -> dict[str, int]:
    return dict.fromkeys(VERDICTS, 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 cases per category, fewer runs")
    parser.add_argument("--json", type=Path, help="write the numbers to this file")
    parser.add_argument("--tool", action="append", choices=sorted(TOOLS), help="default: both")
    parser.add_argument("--category", action="append", help="only these categories")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every case not ok")
    args = parser.parse_args(argv)

    tools = {name: TOOLS[name] for name in (args.tool or list(TOOLS))}
    cases = build_corpus(args.quick, only=set(args.category) if args.category else None)
    tallies = {name: run_all(tool, cases) for name, tool in tools.items()}
    timing_case = big_file_case(load_sources(), f"{SEED}:fuzzy-10k")
    # The straightforward baseline takes seconds per run on 10,000 lines: fewer runs.
    repeats = {
        "redline": 5 if args.quick else 20,
        "baseline": 1 if args.quick else 3,
        "baseline-pruned": 3 if args.quick else 10,
    }
    timing = fuzzy_timing(tools, timing_case, repeats)
    print(report(cases, tallies, timing, args.verbose))
    if args.json:
        args.json.write_text(json.dumps(as_json(cases, tallies, timing), indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
