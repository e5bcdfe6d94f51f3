"""The tolerant budget: the largest requests tolerant matching accepts, and their time.

    python bench/budget_bench.py [--quick] [--json FILE]    # full ~6 min, quick ~2 min

Three parts, each through ``redline.engine.edit.apply_edit`` in this process:

1. Code: stdlib files concatenated into files of 1,000 to 100,000 lines; in
   each, the largest block (whole lines from the middle, with one character
   dropped, so that only the fuzzy tier finds it) whose estimate fits the
   budget, and a 300-line block; the largest file a 40-character one-line
   fragment may be looked for in. Time p50/max over the runs.
2. Shapes at the limit: for each shape (short or long lines, a one-line file,
   fragments, repeated lines, an old_string half the file, ...) the request
   scaled until its estimate is just under the limit: p50/max time, and the
   longest the GIL was held meanwhile (a thread sleeping 1 ms measures how
   late it wakes: what a daemon's other requests would wait).
3. Past the limit: requests the budget refuses (the shapes of issue 12), timed
   as redline refuses them and, as the baseline, with the budget off
   (``limit`` = 10^18) in a subprocess stopped after ``--timeout`` seconds.

The exit status is 1 when a request within the budget took longer than the
2 s target, or was refused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from redline.engine import budget
from redline.engine.edit import EditItem, EditRequest, apply_edit

TARGET_S = 2.0
UNLIMITED = 10**18
WORDS = ("the", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by")

Shape = Callable[[float], tuple[str, str, str]]  # scale -> (file, old_string, new_string)


# --- text ------------------------------------------------------------------------------


def _stdlib_lines() -> list[str]:
    lib = Path(sysconfig.get_paths()["stdlib"])
    text = "".join(p.read_text(errors="replace") for p in sorted(lib.glob("*.py")))
    return text.splitlines(keepends=True)


STDLIB = _stdlib_lines()


def code(lines: int) -> list[str]:
    """``lines`` lines of standard-library code (repeated when there are too few)."""
    return (STDLIB * (lines // len(STDLIB) + 1))[:lines]


def words(rng: random.Random, n: int) -> str:
    out: list[str] = []
    total = 0
    while total < n:
        word = rng.choice(WORDS)
        out.append(word)
        total += len(word) + 1
    return " ".join(out)[:n]


def slip(block: str) -> str:
    """``block`` with one character dropped in its middle (not a space or newline)."""
    i = len(block) // 2
    while block[i] in " \n":
        i += 1
    return block[:i] + block[i + 1 :]


def middle_block(lines: list[str], k: int) -> tuple[str, str, str]:
    """A k-line block from the middle with a slip, and an edit of it."""
    at = len(lines) // 2 - k // 2
    block = "".join(lines[at : at + k])
    old = slip(block)
    return "".join(lines), old, old + "# added by the edit\n"


# --- shapes ------------------------------------------------------------------------------


def _code_typo(s: float) -> tuple[str, str, str]:
    n = max(4, int(s))
    return middle_block(code(n), max(2, n // 100))


def _code_absent(s: float) -> tuple[str, str, str]:
    lines = code(max(4, int(s)))
    rng = random.Random(7)
    old = "".join(line[::-1] for line in rng.sample(lines, max(2, len(lines) // 100)))
    return "".join(lines), old, old + "x\n"


def _code_drift(s: float) -> tuple[str, str, str]:
    lines = code(max(6, int(s)))
    k = max(3, len(lines) // 100)
    at = len(lines) // 3
    old = "".join(
        line.replace("e", "E") if i % 3 == 0 else line for i, line in enumerate(lines[at : at + k])
    )
    return "".join(lines), old, old + "x\n"


def _half_file(s: float) -> tuple[str, str, str]:
    n = max(8, int(s))
    return middle_block(code(n), n // 2)


def _short_lines(s: float) -> tuple[str, str, str]:
    n = max(8, int(s))
    text = "".join(f"a{i % 97:02d}\n" for i in range(n))
    old = "".join(f"z{i % 89:02d}\n" for i in range(max(4, n // 100)))
    return text, old, old + "q\n"


def _long_lines(s: float) -> tuple[str, str, str]:
    rng = random.Random(7)
    lines = [words(rng, 1000) + "\n" for _ in range(max(2, int(s) // 1000))]
    old = "".join(words(rng, 1000) + "\n" for _ in range(max(2, len(lines) // 50)))
    return "".join(lines), old, old + "q\n"


def _one_line_file(s: float) -> tuple[str, str, str]:
    rng = random.Random(7)
    n = max(100, int(s))
    old = words(rng, max(20, n // 100)) + "\n" + words(rng, 40)
    return words(rng, n), old, old + "q"


def _fragment(n: int, where: str) -> Shape:
    def shape(s: float) -> tuple[str, str, str]:
        rng = random.Random(7)
        if where == "code":
            text = "".join(code(max(4, int(s))))
        elif where == "long":
            text = "".join(words(rng, 2 * n) + "\n" for _ in range(max(2, int(s) // (2 * n))))
        else:  # one line
            text = words(rng, max(n, int(s)))
        old = words(random.Random(99), n)
        return text, old, old + "q"

    return shape


def _repeated(s: float) -> tuple[str, str, str]:
    """The same line again and again; old_string a slipped copy of a unique stretch."""
    k = max(2, int(s))
    body = ["    value = compute(alpha, beta)\n"] * k
    lines = ["def header():\n", *body, "    return footer\n"]
    old_lines = list(lines)
    old_lines[len(old_lines) // 2] = "    value = compute(alpha, bta)\n"
    old = "".join(old_lines)
    pad = code(2 * k)
    return "".join(pad[:k] + lines + pad[k:]), old, old.replace("footer", "footer2")


def _repeated_tokens(s: float) -> tuple[str, str, str]:
    """A long line of one token repeated, written with curly quotes in the file and
    straight ones in old_string: the punctuation tier, then the merge's token alignments."""
    body = "word, " * max(2, int(s) // 6)
    text = f"head\nmsg = \u201c{body}\u201d\nx = 1\ntail\n"
    old = f'msg = "{body}"\nx = 1\n'
    return text, old, old.replace("x = 1", "x = 2")


def _reindented(s: float) -> tuple[str, str, str]:
    lines = code(max(8, int(s)))
    block = lines[len(lines) // 4 : len(lines) // 4 + len(lines) // 2]
    old = "".join("  " + line if line.strip() else line for line in block)
    return "".join(lines), old, old.replace("return", "return (", 1)


SHAPES: dict[str, tuple[str, Shape]] = {
    "code, a block with a slip": ("stdlib code; old_string 1/100 of the file", _code_typo),
    "code, absent": ("old_string lines reversed: nothing matches", _code_absent),
    "code, drifted": ("every third line changed: near, refused, diagnosed", _code_drift),
    "half the file": ("old_string half the file: the window refinement", _half_file),
    "3-character lines": ("the per-line cost", _short_lines),
    "1,000-character lines": ("long lines, absent", _long_lines),
    "one-line file": ("a minified file; a two-line old_string", _one_line_file),
    "fragment 40, code": ("one-line old_string of 40 characters in code", _fragment(40, "code")),
    "fragment 200, code": ("200 characters in code", _fragment(200, "code")),
    "fragment 200, long lines": ("200 characters in 400-character lines", _fragment(200, "long")),
    "fragment 200, one line": ("200 characters in a one-line file", _fragment(200, "one")),
    "repeated lines": ("one line repeated; a unique stretch with a slip", _repeated),
    "re-indented half": ("half the file re-indented: the whitespace tier", _reindented),
    "a line of one token repeated": (
        "curly quotes around `word, ` repeated: the merge's token alignments",
        _repeated_tokens,
    ),
}


# --- measuring ---------------------------------------------------------------------------


@dataclass
class Run:
    seconds: list[float]
    gil_ms: float  # the longest a 1 ms sleep overslept while the request ran
    status: str
    match_type: str | None
    too_large: bool  # refused by the budget

    def figures(self) -> dict[str, object]:
        return asdict(self) | {"p50": self.p50, "max": self.worst}

    @property
    def p50(self) -> float:
        return statistics.median(self.seconds)

    @property
    def worst(self) -> float:
        return max(self.seconds)


def timed(text: str, old: str, new: str, runs: int) -> Run:
    data = text.encode()
    request = EditRequest("bench.py", (EditItem(old, new),))
    seconds: list[float] = []
    late = [0.0]
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            time.sleep(0.001)
            late[0] = max(late[0], time.perf_counter() - started - 0.001)

    thread = threading.Thread(target=probe)
    thread.start()
    try:
        for _ in range(runs):
            started = time.perf_counter()
            outcome = apply_edit(data, request)
            seconds.append(time.perf_counter() - started)
    finally:
        stop.set()
        thread.join()
    result = outcome.result
    too_large = budget.TOO_LARGE in (result.error or "")
    run = Run(seconds, late[0] * 1000, result.status, result.match_type, too_large)
    if not too_large:
        WITHIN.append(run)
    return run


WITHIN: list[Run] = []  # every run of a request the budget accepted


def estimate(text: str, old: str, new: str) -> int:
    return budget.estimate(old, text, new=new, limit=UNLIMITED)


def largest(fits: Callable[[int], bool], low: int, high: int) -> int:
    """The largest n in [low, high] with fits(n) (fits is monotone; fits(low))."""
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def scale_to(shape: Shape, target: float) -> float:
    """The scale at which the shape's estimate is just under ``target``."""
    low, high = 4.0, 8.0
    while estimate(*shape(high)) < target and high < 1e9:
        low, high = high, high * 2
    for _ in range(40):
        mid = (low + high) / 2
        if estimate(*shape(mid)) < target:
            low = mid
        else:
            high = mid
    return low


# --- the parts ---------------------------------------------------------------------------


def part_code(sizes: list[int], runs: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for n in sizes:
        lines = code(n)
        k = largest(lambda k, lines=lines: estimate(*middle_block(lines, k)) <= budget.LIMIT, 1, n)
        text, old, new = middle_block(lines, k)
        run = timed(text, old, new, runs)
        row: dict[str, object] = {
            "file_lines": n,
            "file_chars": len(text),
            "largest_block_lines": k,
            "largest_block_chars": len(old),
            "largest": run.figures(),
        }
        typical = ""
        if k >= 300:
            text300, old300, new300 = middle_block(lines, 300)
            run300 = timed(text300, old300, new300, runs)
            share = estimate(text300, old300, new300) / budget.LIMIT
            row["block_300"] = run300.figures() | {"share_of_limit": share}
            typical = f"; 300 lines: {share:.0%} of the limit, p50 {run300.p50:.2f} s"
        rows.append(row)
        print(
            f"  {n:>7,} lines ({len(text) / 1e6:4.1f} MB): largest block {k:>5,} lines "
            f"({len(old):>7,} chars) {run.status:>8} {run.match_type or '-':>6} "
            f"p50 {run.p50:5.2f} s max {run.worst:5.2f} s{typical}",
            flush=True,
        )
    return rows


def part_fragment(runs: int) -> dict[str, object]:
    shape = _fragment(40, "code")
    lines = largest(lambda n: estimate(*shape(n)) <= budget.LIMIT, 4, 5_000_000)
    text, old, new = shape(lines)
    run = timed(text, old, new, runs)
    print(
        f"  a 40-character one-line fragment: files up to {lines:,} lines "
        f"({len(text) / 1e6:.1f} MB), p50 {run.p50:.2f} s max {run.worst:.2f} s",
        flush=True,
    )
    return {"file_lines": lines, "file_chars": len(text)} | run.figures()


def part_shapes(runs: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for name, (what, shape) in SHAPES.items():
        scale = scale_to(shape, 0.98 * budget.LIMIT)
        text, old, new = shape(scale)
        run = timed(text, old, new, runs)
        rows.append(
            {
                "shape": name,
                "what": what,
                "file_chars": len(text),
                "file_lines": text.count("\n") + 1,
                "old_chars": len(old),
                "old_lines": old.count("\n") + 1,
                "estimate": estimate(text, old, new),
            }
            | run.figures()
        )
        print(
            f"  {name:26} file {len(text):>10,} chars old {len(old):>7,} chars: "
            f"{run.status:>9} p50 {run.p50:5.2f} s max {run.worst:5.2f} s, "
            f"GIL held up to {run.gil_ms:4.0f} ms",
            flush=True,
        )
    return rows


_UNBUDGETED = """
import sys, time
from redline.engine.edit import EditItem, EditRequest, apply_edit
text, old, new = (open(p, encoding="utf-8").read() for p in sys.argv[1:4])
started = time.perf_counter()
out = apply_edit(text.encode(), EditRequest("bench.py", (EditItem(old, new),), limit=10**18))
print(time.perf_counter() - started, out.result.status)
"""


def part_past(timeout: float, scratch: Path) -> list[dict[str, object]]:
    rng = random.Random(11)
    one_mb = "".join(code(28_000))
    minified = words(rng, 1_000_000)
    cases = {
        "100 KB block with a slip, 1 MB of code": (one_mb, *middle_block(code(28_000), 2_800)[1:]),
        "10 KB one-line old_string, 1 MB of code": (one_mb, words(rng, 10_000), "x"),
        "10 KB one-line old_string, 1 MB one-line file": (minified, words(rng, 10_000), "x"),
    }
    rows: list[dict[str, object]] = []
    for name, (text, old, new) in cases.items():
        run = timed(text, old, new, 3)
        paths = []
        for label, content in (("text", text), ("old", old), ("new", new)):
            path = scratch / f"{label}.txt"
            path.write_text(content, encoding="utf-8")
            paths.append(str(path))
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _UNBUDGETED, *paths],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=os.environ,
            )
            seconds, status = proc.stdout.split()
            baseline: float | None = float(seconds)
        except subprocess.TimeoutExpired:
            baseline, status = None, "timed out"
        rows.append(
            {
                "case": name,
                "estimate": estimate(text, old, new),
                "redline_s": run.p50,
                "redline_status": run.status,
                "unbudgeted_s": baseline,
                "unbudgeted_status": status,
            }
        )
        shown = f"{baseline:6.1f} s" if baseline is not None else f"> {timeout:.0f} s"
        print(
            f"  {name:46} estimate {estimate(text, old, new):.1e}: redline {run.status} in "
            f"{run.p50 * 1000:5.1f} ms; without the budget {shown} ({status})",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and runs")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write every figure here")
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds for each unbudgeted baseline"
    )
    args = parser.parse_args()
    runs = 2 if args.quick else 5
    timeout = args.timeout or (20.0 if args.quick else 150.0)
    sizes = [1_000, 30_000] if args.quick else [1_000, 10_000, 30_000, 100_000]
    load = os.getloadavg()
    print(
        f"tolerant budget: {budget.LIMIT:.1e} character comparisons; {runs} runs each; "
        f"load average {load[0]:.2f} on {os.cpu_count()} CPUs"
    )
    apply_edit(b"x = 1\n", EditRequest("w.py", (EditItem("y = 1 and more\n", "z"),)))  # imports
    print("\n1. code: the largest block tolerant matching accepts (fuzzy tier), and its time")
    code_rows = part_code(sizes, runs)
    fragment = part_fragment(runs)
    print("\n2. shapes scaled to just under the limit")
    shape_rows = part_shapes(runs)
    print("\n3. past the limit: refused, against the engine without a budget")
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"budget-bench-{os.getpid()}"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        past_rows = part_past(timeout, scratch)
    finally:
        for leftover in scratch.iterdir():
            leftover.unlink()
        scratch.rmdir()
    worst = max(run.worst for run in WITHIN)
    refused = [r for r in [*code_rows, fragment] if r.get("too_large")]
    ok = worst <= TARGET_S and not refused
    print(
        f"\nworst time within the budget: {worst:.2f} s over {len(WITHIN)} requests "
        f"(target <= {TARGET_S:.0f} s): " + ("met" if ok else "NOT MET")
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "limit": budget.LIMIT,
                    "runs": runs,
                    "load_average": load,
                    "code": code_rows,
                    "fragment": fragment,
                    "shapes": shape_rows,
                    "past_the_limit": past_rows,
                    "worst_within_s": worst,
                },
                indent=2,
            )
        )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
