"""Benchmark a session's start: ``session open``, its first request, the requests after.

    python bench/session_bench.py [--quick] [--json FILE] [--keep] [--dir DIR] [--src DIR]

Builds repositories of 200, 2,000 and 20,000 files (quick: 200 and 2,000) the
way ``git_bench.py`` does (100 small modules a directory, one commit, packed),
then, against a real daemon on a real socket:

1. **warm daemon**: one daemon runs; each round opens a new session
   (``session.open`` over the socket), sends its first request, then
   ``--later`` more (each a one-line exact edit that commits), and closes the
   session. A pause between rounds lets the daemon's idle-time upkeep run
   outside the measurements, as it does between a user's sessions;
2. **cold daemon**: no daemon runs; ``redline session open`` as a process
   (daemon start included) opens the session, then the first and later
   requests go over the socket as above.

It prints the p50 of each per repository, and the ratio first / later p50
against the target (the first request within 2x of the ones after it).
``--src`` measures another checkout's ``src`` (for example an export of an
older commit): the daemon runs ``python -m redline`` with that ``src`` first
on ``PYTHONPATH``; by default the ``src`` next to this script. Exit status 0
unless the bench crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# This checkout's client (the wire protocol is the same for every --src measured).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from git_bench import EditStream, build_repo, percentile
from redline.daemon.client import Client

TARGET_RATIO = 2.0  # first request p50 / later requests p50
PAUSE = 1.5  # seconds between rounds: more than the daemon's QUIET_DELAY


@dataclass(frozen=True)
class Sizes:
    repos: dict[str, int]  # label -> directories of 100 modules
    rounds: int  # warm-daemon sessions per repository
    cold_rounds: int  # cold-daemon sessions per repository
    later: int  # requests after the first, per session


FULL = Sizes({"200": 2, "2k": 20, "20k": 200}, rounds=12, cold_rounds=5, later=10)
QUICK = Sizes({"200": 2, "2k": 20}, rounds=6, cold_rounds=3, later=6)


class Bench:
    def __init__(self, base: Path, src: Path) -> None:
        home, runtime = base / "h", base / "x"
        home.mkdir()
        runtime.mkdir(mode=0o700)
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON", "REDLINE_"))
        }
        self.env.update(
            HOME=str(home),
            XDG_RUNTIME_DIR=str(runtime),
            XDG_CONFIG_HOME=str(home / ".config"),
            REDLINE_IDLE_TIMEOUT="600",
            PYTHONPATH=str(src),
            LC_ALL="C.UTF-8",
        )
        self.redline = [sys.executable, "-m", "redline"]

    def run(self, args: list[str]) -> bytes:
        done = subprocess.run(
            args, env=self.env, stdin=subprocess.DEVNULL, capture_output=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args)} failed ({done.returncode}):\n"
                + done.stderr.decode(errors="replace")
            )
        return done.stdout

    def cli(self, *args: str) -> Any:
        return json.loads(self.run([*self.redline, *args]))

    def git(self, repo: Path, *args: str) -> str:
        return self.run(["git", "-C", str(repo), *args]).decode()


class Runner:
    """What ``git_bench.build_repo`` needs: ``run`` and ``git``."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench

    def run(self, args: list[str]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.CompletedProcess(args, 0, self.bench.run(args), b"")

    def git(self, repo: Path, *args: str) -> str:
        return self.bench.git(repo, *args)


def timed_ms(fn: Any, *args: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn(*args)
    return (time.perf_counter() - started) * 1000, result


def one_session(
    client: Client, name: str, dirs: int, later: int, failures: list[str]
) -> tuple[float, list[float]]:
    """The first request's ms and the later ones', in a session just opened."""
    stream = EditStream.over(dirs)
    times = []
    for _ in range(1 + later):
        path, request = stream.next()
        elapsed, result = timed_ms(client.call, "apply", {"session": name, "request": request})
        stream.record(path, result)
        times.append(elapsed)
    failures.extend(f"{name}: {f}" for f in stream.failures)
    return times[0], times[1:]


def measure(bench: Bench, repo: Path, dirs: int, sizes: Sizes) -> dict[str, Any]:
    failures: list[str] = []
    out: dict[str, Any] = {}
    # Cold: no daemon; the `session open` process starts it.
    opens, firsts, laters = [], [], []
    for i in range(sizes.cold_rounds):
        bench.run([*bench.redline, "daemon", "stop", "--repo", str(repo)])
        name = f"cold{i}"
        elapsed, _ = timed_ms(
            bench.cli, "session", "open", "--repo", str(repo), "--name", name, "--json"
        )
        opens.append(elapsed)
        socket = Path(bench.cli("daemon", "status", "--json", "--repo", str(repo))["socket"])
        with Client(socket) as client:
            first, rest = one_session(client, name, dirs, sizes.later, failures)
            firsts.append(first)
            laters.extend(rest)
            client.call("session.close", {"name": name, "delete_branch": True, "force": True})
        time.sleep(PAUSE)
    out["cold"] = rows(opens, firsts, laters)
    # Warm: one daemon for every round.
    bench.run([*bench.redline, "daemon", "stop", "--repo", str(repo)])
    bench.run([*bench.redline, "daemon", "start", "--repo", str(repo)])
    socket = Path(bench.cli("daemon", "status", "--json", "--repo", str(repo))["socket"])
    time.sleep(PAUSE)
    opens, firsts, laters, hellos = [], [], [], []
    with Client(socket) as client:
        for i in range(sizes.rounds):
            name = f"warm{i}"
            elapsed, _ = timed_ms(client.call, "session.open", {"name": name})
            opens.append(elapsed)
            first, rest = one_session(client, name, dirs, sizes.later, failures)
            firsts.append(first)
            laters.extend(rest)
            for _ in range(5):
                hellos.append(timed_ms(client.call, "hello", {"protocol": 1})[0])
            client.call("session.close", {"name": name, "delete_branch": True, "force": True})
            time.sleep(PAUSE)
    bench.run([*bench.redline, "daemon", "stop", "--repo", str(repo)])
    out["warm"] = rows(opens, firsts, laters)
    out["warm"]["hello_p50_ms"] = percentile(hellos, 50)
    out["failures"] = failures
    return out


def rows(opens: list[float], firsts: list[float], laters: list[float]) -> dict[str, Any]:
    first, later = percentile(firsts, 50), percentile(laters, 50)
    return {
        "sessions": len(opens),
        "open_p50_ms": percentile(opens, 50),
        "first_p50_ms": first,
        "later_p50_ms": later,
        "later_p90_ms": percentile(laters, 90),
        "ratio": first / later,
        "open_ms": [round(x, 2) for x in opens],
        "first_ms": [round(x, 2) for x in firsts],
    }


def print_report(data: dict[str, Any]) -> None:
    print(
        f"\n{'repo':<6}{'daemon':<7}{'n':>4}{'open p50':>11}{'1st p50':>10}{'later p50':>11}"
        f"{'later p90':>11}{'1st/later':>11}  verdict"
    )
    for label, result in data["results"].items():
        for kind in ("warm", "cold"):
            row = result[kind]
            ok = row["ratio"] <= TARGET_RATIO
            print(
                f"{label:<6}{kind:<7}{row['sessions']:>4}{row['open_p50_ms']:>11.1f}"
                f"{row['first_p50_ms']:>10.2f}{row['later_p50_ms']:>11.2f}"
                f"{row['later_p90_ms']:>11.2f}{row['ratio']:>10.2f}x  "
                + ("PASS" if ok else "MISS")
                + f" (target <= {TARGET_RATIO:g}x)"
            )
    print(
        "(ms; warm: session.open over the socket of a running daemon; cold: the "
        "`redline session open` process, daemon start included; 1st: the session's first "
        "request; later: the requests after it in the same session)"
    )
    hellos = ", ".join(f"{k} {v['warm']['hello_p50_ms']:.2f}" for k, v in data["results"].items())
    print(f"hello p50 (the daemon's floor), ms: {hellos}")
    failures = [f for r in data["results"].values() for f in r["failures"]]
    print(
        f"checks: {len(failures)} requests not applied" + (f": {failures[:5]}" if failures else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="two smaller repositories, fewer rounds"
    )
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--dir", type=Path, default=Path("/tmp"), help="parent of the temporary directory"
    )
    parser.add_argument(
        "--src",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "src",
        help="the redline source tree to measure (default: this checkout's src)",
    )
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    src = args.src.resolve()
    base = Path(tempfile.mkdtemp(prefix="rls", dir=args.dir))
    bench = Bench(base, src)
    data: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "src": str(src),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "git": bench.run(["git", "--version"]).decode().strip(),
            "load_average_start": os.getloadavg(),
        },
        "results": {},
    }
    print(
        f"redline session bench ({data['mode']}) of {src}: {data['machine']['cpus']} CPUs, "
        f"Python {data['machine']['python']}, {data['machine']['git']}; in {base}"
    )
    repos: list[Path] = []
    try:
        for label, dirs in sizes.repos.items():
            repo = base / label
            repos.append(repo)
            built = build_repo(Runner(bench), repo, dirs)  # type: ignore[arg-type]
            print(f"  {label}: {dirs * 100} files, built and packed in {built:.1f} s")
            data["results"][label] = measure(bench, repo, dirs, sizes)
    finally:
        for repo in repos:
            subprocess.run(
                [*bench.redline, "daemon", "stop", "--repo", str(repo)],
                env=bench.env,
                capture_output=True,
                check=False,
            )
    data["machine"]["load_average_end"] = os.getloadavg()
    print_report(data)
    loads = data["machine"]["load_average_start"][0], data["machine"]["load_average_end"][0]
    print(f"load average (1 min) at start {loads[0]:.2f}, at end {loads[1]:.2f}")
    if max(loads) > (os.cpu_count() or 1) * 0.75:
        print("the machine was busy with other work: expect noisy figures; compare ratios")
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.json}")
    if args.keep:
        print(f"kept {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
