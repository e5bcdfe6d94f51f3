"""Benchmark the daemon's side of ``redline apply --session``: from connecting to the answer.

    python bench/daemon_bench.py [--src SRC] [--other SRC] [--files 2000] [--rounds 5]
        [--requests 20] [--gap 0.05] [--json FILE]

What a ``redline apply --session`` process pays between connecting to the
daemon and reading its answer, without the process's own start-up: for each
``src`` (this checkout's, and ``--other``'s, for example ``/work/main/src``) a
daemon of that code (``python -m redline`` with it first on ``PYTHONPATH``)
serves a session of a repository of ``--files`` files (built here, no
network, the way ``git_bench.py`` builds them). Each round sends ``--requests``
exact one-line edits to each daemon, alternating request by request so that
both meet the same load (each daemon first in turn), each on a new connection
by this checkout's client, as the command does: it says hello with its first
call (one round trip to a daemon that takes it; a daemon older than that is
said hello to first, two round trips, as its own client does).

Prints per code the p50 and p90 of the wall time from connect to answer, and
the daemon's CPU per request (user + system of its process, over each round),
with the ratios this / other. ``--gap`` pauses after each request (more than 1 s
lets the daemon's idle-time upkeep run between them, as between a person's
commands). Exit status 0 unless the bench crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from git_bench import FILES_PER_DIR, build_repo, percentile
from redline.daemon.client import Client
from redline.pipeline.daemon_call import send
from session_bench import Bench, Runner

HERE = Path(__file__).resolve().parent.parent / "src"
EDITED = "d000/m001.py"
TICKS = os.sysconf("SC_CLK_TCK")


class Code:
    """One checkout's daemon, serving session ``s`` of a clone of the source repository."""

    def __init__(self, label: str, src: Path, base: Path, source: Path) -> None:
        self.label = label
        folder = Path(tempfile.mkdtemp(dir=base, prefix=f"{label}-"))
        self.bench = Bench(folder, src)
        self.repo = folder / "repo"
        self.bench.run(["git", "clone", "-q", str(source), str(self.repo)])
        self.bench.run([*self.bench.redline, "daemon", "start", "--repo", str(self.repo)])
        self.bench.cli("session", "open", "--json", "--name", "s", "--repo", str(self.repo))
        status = self.bench.cli("daemon", "status", "--json", "--repo", str(self.repo))
        self.socket = Path(status["socket"])
        self.pid = int(status["pid"])
        self.value = 0
        self.failures: list[str] = []

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime

    def request(self) -> float:
        """One edit on a new connection: ms from connect to answer."""
        edit = {
            "tool": "edit",
            "path": EDITED,
            "old_string": f"VALUE = {self.value}\n",
            "new_string": f"VALUE = {self.value + 1}\n",
        }
        started = time.perf_counter()
        with Client(self.socket) as client:
            result = send(client, "s", edit, full=False).result
        took = (time.perf_counter() - started) * 1000
        if result.get("status") == "applied":
            self.value += 1
        else:
            self.failures.append(str(result.get("error")))
        return took

    def stop(self) -> None:
        self.bench.run([*self.bench.redline, "daemon", "stop", "--repo", str(self.repo)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", type=Path, default=HERE, help="the code measured as 'this'")
    parser.add_argument("--other", type=Path, help="another checkout's src to compare with")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20, help="requests per round and code")
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between requests")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rldaemon-", dir="/tmp"))
    try:
        run(base, args)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(base: Path, args: argparse.Namespace) -> None:
    setup = Bench(Path(tempfile.mkdtemp(dir=base, prefix="setup-")), HERE)
    source = base / "source"
    build_repo(Runner(setup), source, max(1, args.files // FILES_PER_DIR))
    srcs = [("this", args.src.resolve())]
    if args.other:
        srcs.append(("other", args.other.resolve()))
    codes = [Code(label, src, base, source) for label, src in srcs]
    wall: dict[str, list[float]] = {c.label: [] for c in codes}
    cpu: dict[str, list[float]] = {c.label: [] for c in codes}
    try:
        for code in codes:  # warm: the first requests of a session pay for its caches
            for _ in range(5):
                code.request()
        for _ in range(args.rounds):
            spent = dict.fromkeys(wall, 0.0)
            for i in range(args.requests):
                # Request by request, so that both meet the same load, each first in turn
                # (the first of a pair is slower: the second finds the caches warm).
                for code in codes if i % 2 == 0 else codes[::-1]:
                    before = code.cpu_seconds()
                    wall[code.label].append(code.request())
                    time.sleep(args.gap)
                    spent[code.label] += code.cpu_seconds() - before
            for label, seconds in spent.items():
                cpu[label].append(seconds * 1000 / args.requests)
    finally:
        for code in codes:
            code.stop()
    report(codes, wall, cpu, args)


def report(
    codes: list[Code], wall: dict[str, list[float]], cpu: dict[str, list[float]], args: Any
) -> None:
    out: dict[str, Any] = {"files": args.files, "requests": args.rounds * args.requests}
    print(
        f"connect to answer, one exact edit on a new connection ({args.files} files, "
        f"{args.rounds} rounds x {args.requests} requests)"
    )
    for code in codes:
        label = code.label
        out[label] = {
            "p50_ms": percentile(wall[label], 50),
            "p90_ms": percentile(wall[label], 90),
            "daemon_cpu_ms_per_request": statistics.median(cpu[label]),
            "failures": code.failures,
        }
        row = out[label]
        print(
            f"  {label:6} wall p50 {row['p50_ms']:6.2f} ms  p90 {row['p90_ms']:6.2f} ms  "
            f"daemon CPU {row['daemon_cpu_ms_per_request']:6.2f} ms/request"
            + (f"  ({len(code.failures)} not applied)" if code.failures else "")
        )
    if "other" in out:
        ratios = {
            key: out["this"][key] / out["other"][key]
            for key in ("p50_ms", "p90_ms", "daemon_cpu_ms_per_request")
            if out["other"][key]
        }
        out["this_over_other"] = ratios
        print("  this/other " + "  ".join(f"{k} {v:.2f}" for k, v in ratios.items()))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
