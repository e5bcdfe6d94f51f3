"""Benchmark the daemon at monorepo scale, this checkout against another, in one run.

    python bench/scale_bench.py [--files 100000] [--other SRC] [--dir DIR]
        [--requests 1000] [--memory-requests 10000] [--json FILE]
        [--skip-daemon | --fuzzy-only] [--rounds 3]

Builds (once; kept in ``--dir``) a repository of ``--files`` files the way
``git_bench.py`` does (100 small modules a directory, one commit, packed; no
network), then for each ``src`` — this checkout's and ``--other``'s (for
example ``/work/main/src``), alternating — starts a daemon running that code
(``python -m redline`` with it first on ``PYTHONPATH``) and measures:

1. **open**: a session ``other`` is opened and waited for; then, while a
   probe thread sends ``hello`` and an exact edit of ``other`` every 20 ms,
   ``session.open`` of a second session over the socket (``wait: false``: the
   answer), then how long until its worktree is complete (``session.status``;
   for code that answers only when done, the answer is that moment). Reported:
   the open's answer, the whole checkout, and the p50/max of the probes sent
   while it ran; the daemon's RSS once both sessions are open;
2. **flat per-edit cost**: ``--requests`` exact edits in ``other``, back to
   back (no pause: housekeeping never sees requests pause); p50 of requests
   1-20 against p50 of the last 20 (and of 1-100 against the last 100), wall
   time, and the daemon's CPU time per request (``/proc/PID/stat``, all its
   threads: steadier on a busy machine);
3. **flat memory**: the daemon's RSS after 1,000 and after ``--memory-requests``
   requests (0 skips it), with its file-backed part (``RssFile``: mapped packs)
   and the packs in the repository;
4. **guard in a hook**: ``redline guard --stage pre-commit`` as git's hook runs it,
   a one-file change staged in the repository (p50 of ``--guard-runs``, the two
   codes alternating);
5. **fuzzy edit in a 100,000-line file**: ``apply_edit`` in a process of each code,
   after a small tolerant edit has imported the tolerant tiers' libraries (the
   daemon imports them when requests first pause; that edit's time is printed
   too): the first request on the file's content and the next one on the same
   content, wall time and the process's CPU time (steadier on a busy machine);
   then the same on the file with one line of typographic marks (``marks_``),
   and a re-indented edit without a slip (the whitespace tier's, ``reindent_``);
   and an exact one-line hunk of ``apply_patch`` in the same file (``patch_``).

``--skip-daemon`` measures 4 and 5 only; ``--fuzzy-only`` 5 only (no repository
is built).

Each code's daemon starts from the same repository: the notes a round added are
taken away again after it (``refs/notes/redline`` set back), so the second code
does not start with the first one's 10,000 notes. ``--rounds 0`` skips 4 and 5.

Prints each figure per code and the ratios; exit status 0 unless it crashes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from git_bench import EditStream, build_repo, percentile
from redline.daemon.client import Client
from session_bench import Bench, Runner

HERE = Path(__file__).resolve().parent.parent / "src"
PROBE_EVERY = 0.02


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


TICK = os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int) -> float:
    """CPU time the process has used (user + system, all its threads), in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICK


class Daemon:
    def __init__(self, bench: Bench, repo: Path) -> None:
        self.bench, self.repo = bench, repo
        bench.run([*bench.redline, "daemon", "stop", "--repo", str(repo)])
        bench.run([*bench.redline, "daemon", "start", "--repo", str(repo)])
        status = bench.cli("daemon", "status", "--json", "--repo", str(repo))
        self.socket, self.pid = Path(status["socket"]), int(status["pid"])

    def stop(self) -> None:
        try:
            self.bench.run([*self.bench.redline, "daemon", "stop", "--repo", str(self.repo)])
        except RuntimeError as exc:  # the figures are printed already; say so and go on
            print(f"could not stop the daemon: {exc}", flush=True)


def packs(repo: Path) -> int:
    """Pack files in the repository (each request writes one until they are rolled up)."""
    return sum(1 for _ in (repo / ".git" / "objects" / "pack").glob("*.pack"))


def wait_ready(conn: Client, name: str, answer: dict[str, Any]) -> None:
    if answer.get("ready", True):
        return
    while True:
        status = conn.call("session.status", {"name": name})
        if status.get("error"):
            raise RuntimeError(f"checkout of {name} failed: {status['error']}")
        if status.get("ready"):
            return
        time.sleep(0.05)


def measure_open(daemon: Daemon, stream: EditStream) -> dict[str, Any]:
    with Client(daemon.socket, timeout=600) as conn:
        started = time.perf_counter()
        conn.call("session.open", {"name": "other", "wait": True})
        first_open = time.perf_counter() - started
        # warm the other session before probing
        for _ in range(3):
            path, request = stream.next()
            stream.record(path, conn.call("apply", {"session": "other", "request": request}))
    hellos: list[float] = []
    edits: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        with Client(daemon.socket, timeout=600) as conn:
            while not stop.is_set():
                t = time.perf_counter()
                conn.call("hello", {"protocol": 1})
                hellos.append((time.perf_counter() - t) * 1000)
                path, request = stream.next()
                t = time.perf_counter()
                result = conn.call("apply", {"session": "other", "request": request})
                edits.append((time.perf_counter() - t) * 1000)
                stream.record(path, result)
                time.sleep(PROBE_EVERY)

    thread = threading.Thread(target=probe)
    thread.start()
    time.sleep(0.3)
    with Client(daemon.socket, timeout=600) as conn:
        started = time.perf_counter()
        answer = conn.call("session.open", {"name": "big", "wait": False})
        answered = time.perf_counter() - started
        wait_ready(conn, "big", answer)
        complete = time.perf_counter() - started
    stop.set()
    thread.join()
    return {
        "first_open_s": first_open,
        "open_answer_s": answered,
        "checkout_complete_s": complete,
        "hello_p50_ms": percentile(hellos, 50),
        "hello_max_ms": max(hellos),
        "other_edit_p50_ms": percentile(edits, 50),
        "other_edit_max_ms": max(edits),
        "probes": len(hellos),
        "rss_after_open_mib": rss_mib(daemon.pid),
    }


def measure_edits(
    daemon: Daemon, stream: EditStream, requests: int, memory_requests: int
) -> dict[str, Any]:
    times: list[float] = []
    cpu: list[float] = []
    out: dict[str, Any] = {}
    with Client(daemon.socket, timeout=600) as conn:
        total = max(requests, memory_requests)
        for i in range(1, total + 1):
            path, request = stream.next()
            c = cpu_ms(daemon.pid)
            t = time.perf_counter()
            result = conn.call("apply", {"session": "other", "request": request})
            times.append((time.perf_counter() - t) * 1000)
            cpu.append(cpu_ms(daemon.pid) - c)
            stream.record(path, result)
            for mark in (1000, memory_requests):
                if i == mark:
                    out[f"rss_after_{mark}_mib"] = rss_mib(daemon.pid)
                    out[f"rss_file_after_{mark}_mib"] = rss_mib(daemon.pid, "RssFile")
                    out[f"packs_after_{mark}"] = packs(daemon.repo)
            if i % 1000 == 0:
                last = percentile(times[-20:], 50)
                print(
                    f"  request {i}: rss {rss_mib(daemon.pid):.0f} MiB (file "
                    f"{rss_mib(daemon.pid, 'RssFile'):.0f}), {packs(daemon.repo)} packs, "
                    f"p50 of the last 20 {last:.1f} ms",
                    flush=True,
                )
    window = 20
    out["early_p50_ms"] = percentile(times[:window], 50)
    late = times[requests - window : requests]
    out["late_p50_ms"] = percentile(late, 50)
    out["late_over_early"] = out["late_p50_ms"] / out["early_p50_ms"]
    # Wider windows too (requests 1-100 against the last 100): 20 requests are few on a busy
    # machine, where one burst of other work moves their p50.
    wide = min(100, requests // 2)
    out["early100_p50_ms"] = percentile(times[:wide], 50)
    out["late100_p50_ms"] = percentile(times[requests - wide : requests], 50)
    out["late100_over_early100"] = out["late100_p50_ms"] / out["early100_p50_ms"]
    # The daemon's CPU per request is counted in clock ticks (10 ms): a mean over each window.
    out["early_cpu_ms"] = statistics.fmean(cpu[:window])
    out["late_cpu_ms"] = statistics.fmean(cpu[requests - window : requests])
    out["late_over_early_cpu"] = out["late_cpu_ms"] / out["early_cpu_ms"]
    if memory_requests >= 1000 and "rss_after_1000_mib" in out:
        out["rss_growth"] = out[f"rss_after_{memory_requests}_mib"] / out["rss_after_1000_mib"]
    return out


GUARD_SCRIPT = """
import subprocess, sys, time, statistics
runs = int(sys.argv[1])
times = []
for _ in range(runs):
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "redline", "guard", "--stage", "pre-commit"],
                          capture_output=True)
    times.append((time.perf_counter() - t) * 1000)
    assert done.returncode == 0, done.stderr
print(statistics.median(times))
"""

FUZZY_SCRIPT = """
import sys, time
sys.path.insert(0, sys.argv[1])
from perturbations import code, with_slip
from redline.engine.edit import EditItem, EditRequest, apply_edit
data = code(100_000).encode()
def request(start, shift=False):
    block = code(3, start=start)
    new = block.replace(f"gamma={start + 1})", "gamma=-1)")
    if shift:  # re-indented, no slip: the whitespace tier's
        return EditRequest(path="big.py", edits=(EditItem(
            "".join("  " + line for line in block.splitlines(True)),
            "".join("  " + line for line in new.splitlines(True))),))
    return EditRequest(path="big.py", edits=(EditItem(with_slip(block), new),))
# The libraries of the tolerant tiers are imported first, as the daemon does when
# requests first pause (daemon.housekeeping): what is timed is the file's content.
t = time.perf_counter()
assert apply_edit(code(300).encode(), request(100)).result.status == "applied"
imports = (time.perf_counter() - t) * 1000
figures = [imports]
# The file as it is, then with one line holding typographic marks (a curly quote,
# an accented letter): the punctuation tier's fold of a non-ASCII text differs.
marked = data.replace(b"value_77 = ", 'value_77 = "caf\u00e9 \u201cx\u201d" + '.encode(), 1)
shifted = data.replace(b"value_5 = ", b"value_5  = ", 1)  # another content
for content, shift in ((data, False), (marked, False), (shifted, True)):
    out = []
    cpu = []
    for start in (50_000, 83_000):
        t, c = time.perf_counter(), time.process_time()
        answer = apply_edit(content, request(start, shift))
        out.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        assert answer.result.status == "applied", answer.result
    figures += [out[0], out[1], cpu[0], cpu[1]]
# An exact one-line hunk of apply_patch in the same file (engine.hunks), twice.
from redline.engine.hunks import apply_hunks
from redline.engine.patch_parse import parse_patch
text = data.decode()
out, cpu = [], []
for start in (50_000, 83_000):
    a, b, c = text.split("\\n")[start : start + 3]
    patch = (f"*** Begin Patch\\n*** Update File: big.py\\n@@\\n {a}\\n-{b}\\n+{b} # changed\\n"
             f" {c}\\n*** End Patch\\n")
    hunks = parse_patch(patch).operations[0].hunks
    t, cp = time.perf_counter(), time.process_time()
    _, (evidence,), _ = apply_hunks(text, hunks, "big.py")
    out.append((time.perf_counter() - t) * 1000)
    cpu.append((time.process_time() - cp) * 1000)
    assert evidence.match_type == "exact", evidence
figures += [out[0], out[1], cpu[0], cpu[1]]
print(*figures)
"""
FUZZY_NAMES = ("imports", "first", "same_content", "first_cpu", "same_content_cpu")
FUZZY_NAMES += tuple(
    f"{kind}_{name}" for kind in ("marks", "reindent", "patch") for name in FUZZY_NAMES[1:]
)


def measure_guard(bench: Bench, repo: Path, runs: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", GUARD_SCRIPT, str(runs)],
        cwd=repo,
        env=bench.env,
        capture_output=True,
        check=True,
    )
    return float(done.stdout.split()[-1])


def measure_fuzzy(bench: Bench) -> tuple[float, ...]:
    tests = Path(__file__).resolve().parent.parent / "tests"
    done = subprocess.run(
        [sys.executable, "-c", FUZZY_SCRIPT, str(tests)],
        env=bench.env,
        capture_output=True,
        check=True,
    )
    return tuple(float(figure) for figure in done.stdout.split()[-len(FUZZY_NAMES) :])


def notes_tip(repo: Path) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "-q", "--verify", "refs/notes/redline"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or None


def restore_notes(repo: Path, tip: str | None) -> None:
    """Set the notes ref back to ``tip`` (None: remove it), for the next round."""
    change = (
        ["update-ref", "refs/notes/redline", tip]
        if tip
        else ["update-ref", "-d", "refs/notes/redline"]
    )
    subprocess.run(["git", "-C", str(repo), *change], check=True)


def one_round(src: Path, base: Path, repo: Path, dirs: int, args: argparse.Namespace) -> Any:
    folder = Path(tempfile.mkdtemp(dir=base, prefix="env-"))
    bench = Bench(folder, src)
    tip = notes_tip(repo)
    daemon = Daemon(bench, repo)
    stream = EditStream.over(dirs)
    try:
        figures = measure_open(daemon, stream)
        print("open", json.dumps(figures), flush=True)
        figures.update(measure_edits(daemon, stream, args.requests, args.memory_requests))
        figures["failures"] = stream.failures[:5]
        print("edits", json.dumps(figures), flush=True)
        with Client(daemon.socket, timeout=600) as conn:
            for name in ("big", "other"):
                conn.call("session.close", {"name": name, "delete_branch": True, "force": True})
    finally:
        daemon.stop()
        restore_notes(repo, tip)
    return figures


def fuzzy_only(args: argparse.Namespace) -> None:
    """Measure 5 alone, alternating the codes ``--rounds`` times; print medians and ratios."""
    base = Path(tempfile.mkdtemp(prefix="rl-fuzzy-", dir="/tmp"))
    srcs = [("this", HERE)] + ([("other", args.other)] if args.other else [])
    names = FUZZY_NAMES
    fuzzy: dict[str, list[tuple[float, ...]]] = {label: [] for label, _ in srcs}
    for _ in range(args.rounds):
        for label, src in srcs:  # alternating, so both see the same load
            bench = Bench(Path(tempfile.mkdtemp(dir=base, prefix="env-")), src)
            fuzzy[label].append(measure_fuzzy(bench))
    results: dict[str, Any] = {}
    for label, _ in srcs:
        results[label] = {
            f"fuzzy_{name}_ms": statistics.median(f[n] for f in fuzzy[label])
            for n, name in enumerate(names)
        }
        print(label, json.dumps(results[label]), flush=True)
    if args.other:
        this, other = results["this"], results["other"]
        results["ratios_this_over_other"] = {key: this[key] / other[key] for key in this}
        print(json.dumps(results["ratios_this_over_other"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--other", type=Path, help="another checkout's src to compare with")
    parser.add_argument("--dir", type=Path, help="where the repository is built (kept)")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--memory-requests", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--guard-runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="alternations of guard/fuzzy")
    parser.add_argument("--skip-daemon", action="store_true", help="only guard and fuzzy")
    parser.add_argument("--fuzzy-only", action="store_true", help="only the fuzzy edit")
    args = parser.parse_args()
    if args.fuzzy_only:
        fuzzy_only(args)
        return
    base = args.dir or Path(tempfile.mkdtemp(prefix="rl-scale-", dir="/tmp"))
    base.mkdir(parents=True, exist_ok=True)
    dirs = max(1, args.files // 100)
    repo = base / f"repo-{dirs * 100}"
    if not repo.exists():
        build = Bench(Path(tempfile.mkdtemp(dir=base, prefix="env-")), HERE)
        took = build_repo(Runner(build), repo, dirs)
        print(f"built {repo} ({dirs * 100} files) in {took:.0f} s", flush=True)
    srcs = [("this", HERE)] + ([("other", args.other)] if args.other else [])
    results: dict[str, Any] = {label: {} for label, _ in srcs}
    # A one-file change staged in the repository's own worktree, for the guard.
    target = repo / "d000" / "m000.py"
    target.write_text(target.read_text() + "# staged for the guard\n")
    subprocess.run(["git", "-C", str(repo), "add", "d000/m000.py"], check=True)
    guards: dict[str, list[float]] = {label: [] for label, _ in srcs}
    fuzzy: dict[str, list[tuple[float, ...]]] = {label: [] for label, _ in srcs}
    for _ in range(args.rounds):
        for label, src in srcs:  # alternating, so both see the same load
            bench = Bench(Path(tempfile.mkdtemp(dir=base, prefix="env-")), src)
            guards[label].append(measure_guard(bench, repo, args.guard_runs))
            fuzzy[label].append(measure_fuzzy(bench))
    subprocess.run(["git", "-C", str(repo), "reset", "-q", "HEAD", "--", "d000"], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "d000/m000.py"], check=True)
    for label, _ in srcs:
        if not args.rounds:
            break
        results[label]["guard_hook_p50_ms"] = statistics.median(guards[label])
        names = FUZZY_NAMES
        for n, name in enumerate(names):
            results[label][f"fuzzy_{name}_ms"] = statistics.median(f[n] for f in fuzzy[label])
        print(label, json.dumps(results[label]), flush=True)
    for label, src in srcs:
        if args.skip_daemon:
            break
        print(f"measuring {label} ({src})...", flush=True)
        results[label].update(one_round(src, base, repo, dirs, args))
        print(json.dumps(results[label], indent=1), flush=True)
    if "other" in results:
        this, other = results["this"], results["other"]
        results["ratios_this_over_other"] = {
            key: this[key] / other[key]
            for key in this
            if isinstance(this[key], float) and isinstance(other.get(key), float) and other[key]
        }
        print(json.dumps(results["ratios_this_over_other"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
