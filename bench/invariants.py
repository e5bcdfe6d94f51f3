"""A long run of the invariant properties (``tests/engine/test_invariants.py``).

    python bench/invariants.py [-n 2000] [-k EXPR] [--show 3] [--corpus PATH ...]

Runs pytest on the property file with ``REDLINE_INVARIANT_EXAMPLES`` examples
per property, in collect mode (a wrong result is logged instead of stopping
the property at its first failure), then prints per property and per
perturbation how many outcomes were right (the exact request's bytes), refused
(nothing written), wrong, or skipped (the perturbed text is really in the
file), and the first wrong results of each. ``--corpus`` draws the files from
folders (a repository: any text file, Markdown, RST, YAML, TOML, Rust, Go,
JavaScript as well as Python) instead of the standard library. The exit status
is pytest's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROPERTIES = ROOT / "tests" / "engine" / "test_invariants.py"
OUTCOMES = ("right", "refused", "wrong", "skipped")


def run(examples: int, select: str | None, log: Path, corpus: list[Path] | None = None) -> int:
    env = dict(os.environ)
    env.update(
        REDLINE_INVARIANT_EXAMPLES=str(examples),
        REDLINE_INVARIANT_LOG=str(log),
        REDLINE_INVARIANT_COLLECT="1",
    )
    if corpus:
        env["REDLINE_INVARIANT_CORPUS"] = os.pathsep.join(str(p.resolve()) for p in corpus)
    command = [sys.executable, "-m", "pytest", str(PROPERTIES), "-q", "--no-header"]
    if select:
        command += ["-k", select]
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def summarise(log: Path, show: int) -> int:
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    wrong: dict[tuple[str, str], list[str]] = defaultdict(list)
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            key = (entry["property"], entry["perturbation"])
            counts[key][entry["outcome"]] += 1
            if entry["outcome"] == "wrong":
                wrong[key].append(entry.get("detail", ""))
    print(f"\n{'property':<16} {'perturbation':<28}" + "".join(f"{o:>9}" for o in OUTCOMES))
    totals: Counter[str] = Counter()
    for (prop, perturbation), counter in sorted(counts.items()):
        totals += counter
        row = "".join(f"{counter[o]:>9}" for o in OUTCOMES)
        print(f"{prop:<16} {perturbation:<28}{row}")
    print(f"{'total':<45}" + "".join(f"{totals[o]:>9}" for o in OUTCOMES))
    for (prop, perturbation), details in sorted(wrong.items()):
        print(f"\n=== wrong: {prop} / {perturbation} ({len(details)}) ===")
        for detail in details[:show]:
            print(detail[:3000])
            print("---")
    return totals["wrong"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--examples", type=int, default=2000, help="examples per property")
    parser.add_argument("-k", dest="select", help="pytest -k expression (a subset of properties)")
    parser.add_argument("--show", type=int, default=3, help="wrong results shown per row")
    parser.add_argument(
        "--corpus",
        type=Path,
        nargs="+",
        help="folders or files to draw the files from (default: the standard library)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "outcomes.jsonl"
        code = run(args.examples, args.select, log, args.corpus)
        summarise(log, args.show)
    return code


if __name__ == "__main__":
    sys.exit(main())
