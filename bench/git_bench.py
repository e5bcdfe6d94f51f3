"""Benchmark git mode: exact edits through a real daemon on a real socket.

    python bench/git_bench.py [--quick] [--files N] [--json FILE] [--profile] [--keep]

Builds two repositories under a short ``/tmp`` directory (``--files``, 20,000 by
default, 100,000 for a monorepo: directories of 100 small modules; and 200 files of
the same shape), opens a
session in each through the ``redline`` command (which starts the daemon), then
measures:

1. the round trip of one exact edit (``apply`` over the socket with an
   in-process ``Client``: snapshot, commit, note, worktree write, index update)
   -- p50/p90/p99 on both repositories and the p50 ratio big/200;
2. the same change with the git CLI in a plain clone of the big repository
   (write the file, ``git add``, ``git commit``) and the speedup over redline;
3. throughput of 4 sessions edited concurrently by 4 threads;
4. the wall time of a ``redline apply --session`` process sending a real edit
   next to ``python -c 'import click'``, and which packages that process imports.

When a target is missed (or with ``--profile``) the daemon's work is reproduced
in-process after the daemons are stopped -- ``Service.apply`` through
``Service.call`` (which writes the staged objects as one pack) on the same
sessions, watched by the daemon's own ``Watcher`` -- timed per phase and
profiled with cProfile. Exit status 0 unless the bench crashes.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import cProfile
import importlib.metadata
import io
import json
import math
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.daemon.client import Client
from redline.daemon.protocol import PROTOCOL_VERSION

# Targets from the brief.
TARGET_P50_MS = 15.0
TARGET_RATIO = 1.5
TARGET_SPEEDUP = 8.0
TARGET_STARTUP_RATIO = 1.5
HEAVY = ("pygit2", "watchdog", "pydantic")

FILES_PER_DIR = 100
BIG_DIRS = 200  # 20,000 files (--files sets it)
BIG = "20k"  # its name in the report and the JSON
SMALL_DIRS = 2  # 200 files
EDITED_FILES = 50  # each stream rotates over this many files
SESSION = "bench"


@dataclass(frozen=True)
class Sizes:
    warmup: int
    measured: int
    git_runs: int
    concurrent_sessions: int
    concurrent_edits: int
    startup_runs: int
    profile_edits: int


FULL = Sizes(20, 200, 30, 4, 100, 20, 100)
QUICK = Sizes(20, 50, 10, 4, 25, 10, 40)


# -- environment and processes -----------------------------------------------------


def hermetic_env(home: Path, runtime: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env.update(
        HOME=str(home),
        XDG_RUNTIME_DIR=str(runtime),
        XDG_CONFIG_HOME=str(home / ".config"),
        REDLINE_IDLE_TIMEOUT="600",
        LC_ALL="C.UTF-8",
    )
    return env


def redline_command() -> list[str]:
    """The console script next to this interpreter (not a pyenv shim: that is a shell)."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / "redline"
        if candidate.is_file():
            return [str(candidate)]
    return [sys.executable, "-m", "redline"]


class Runner:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.redline = redline_command()

    def run(
        self, args: list[str], cwd: Path | None = None, stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(
            args,
            cwd=cwd,
            env=self.env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args)} failed ({done.returncode}):\n"
                + done.stderr.decode(errors="replace")
                + done.stdout.decode(errors="replace")
            )
        return done

    def git(self, repo: Path, *args: str) -> str:
        return self.run(["git", "-C", str(repo), *args]).stdout.decode()

    def cli(self, *args: str) -> Any:
        return json.loads(self.run([*self.redline, *args]).stdout)


# -- repositories and edits --------------------------------------------------------


def module_text(folder: str, index: int) -> str:
    return (
        f'"""Module {folder}/m{index:03d}: generated for the git-mode benchmark."""\n'
        "\n"
        "from __future__ import annotations\n"
        "\n"
        "VALUE = 0\n"
        "\n"
        "\n"
        f"def compute_{index}(x: int) -> int:\n"
        f'    """Add {index} to ``x``."""\n'
        f"    return x + {index} + VALUE\n"
        "\n"
        "\n"
        f"class Thing{index}:\n"
        "    def __init__(self, size: int) -> None:\n"
        "        self.size = size\n"
    )


def build_repo(runner: Runner, path: Path, dirs: int) -> float:
    """A repository of ``dirs`` x 100 modules in one commit, packed; seconds taken."""
    started = time.perf_counter()
    runner.run(["git", "init", "-q", "-b", "main", str(path)])
    runner.git(path, "config", "user.name", "Bench Mark")
    runner.git(path, "config", "user.email", "bench@example.invalid")
    runner.git(path, "config", "commit.gpgsign", "false")
    for d in range(dirs):
        folder = f"d{d:03d}"
        (path / folder).mkdir()
        for m in range(FILES_PER_DIR):
            (path / folder / f"m{m:03d}.py").write_text(module_text(folder, m))
    runner.git(path, "add", "-A")
    runner.git(path, "-c", "gc.auto=0", "commit", "-q", "-m", "initial import")
    runner.git(path, "gc", "-q")  # a real repository is packed; no auto-gc mid-measurement
    return time.perf_counter() - started


def file_prices(folder: Path, count: int = 50) -> tuple[float, float]:
    """Median ms to create (and close) an empty file in ``folder``, and to link one there.

    Each request names a handful of new files (a pack and its index, ref locks,
    a temporary file, ``index.lock``). Creating one allocates an inode, whose
    price varies by disk and by directory by more than 10x; the daemon links
    a spare instead (gitops/spares.py). Both are printed so runs can be
    compared fairly.
    """
    created, linked = [], []
    source = folder / ".rlb-probe-source"
    source.touch()
    for i in range(count):
        probe = folder / f".rlb-probe-{i}"
        started = time.perf_counter()
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        created.append((time.perf_counter() - started) * 1000)
        probe.unlink()
        started = time.perf_counter()
        os.link(source, probe)
        linked.append((time.perf_counter() - started) * 1000)
        probe.unlink()
    source.unlink()
    return statistics.median(created), statistics.median(linked)


def edited_paths(dirs: int) -> list[str]:
    """EDITED_FILES distinct files spread over the directories."""
    return [
        f"d{(i * 41) % dirs:03d}/m{(i * 67) % FILES_PER_DIR:03d}.py" for i in range(EDITED_FILES)
    ]


@dataclass
class EditStream:
    """Successive one-line edits, rotating over files; ``VALUE = n`` -> ``n + 1``."""

    paths: list[str]
    values: dict[str, int] = field(default_factory=dict)
    position: int = 0
    failures: list[str] = field(default_factory=list)

    @classmethod
    def over(cls, dirs: int) -> EditStream:
        paths = edited_paths(dirs)
        return cls(paths, dict.fromkeys(paths, 0))

    def next(self) -> tuple[str, dict[str, Any]]:
        path = self.paths[self.position % len(self.paths)]
        self.position += 1
        value = self.values[path]
        return path, {
            "tool": "edit",
            "path": path,
            "old_string": f"VALUE = {value}\n",
            "new_string": f"VALUE = {value + 1}\n",
        }

    def record(self, path: str, result: Any) -> None:
        ok = (
            isinstance(result, dict)
            and result.get("status") == "applied"
            and len(result.get("commits") or []) == 1
        )
        if ok:
            self.values[path] += 1
        else:
            status = result.get("status") if isinstance(result, dict) else result
            error = result.get("error") if isinstance(result, dict) else None
            self.failures.append(f"{path}: {status} {error or ''}".strip())

    @property
    def applied(self) -> int:
        return sum(self.values.values())


# -- statistics -------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(samples_ms: list[float]) -> dict[str, Any]:
    return {
        "n": len(samples_ms),
        "p50_ms": percentile(samples_ms, 50),
        "p90_ms": percentile(samples_ms, 90),
        "p99_ms": percentile(samples_ms, 99),
        "mean_ms": statistics.fmean(samples_ms) if samples_ms else math.nan,
        "max_ms": max(samples_ms, default=math.nan),
        "samples_ms": [round(s, 3) for s in samples_ms],
    }


def timed_call(client: Client, session: str, stream: EditStream) -> float:
    path, request = stream.next()
    started = time.perf_counter()
    result = client.call("apply", {"session": session, "request": request})
    elapsed = (time.perf_counter() - started) * 1000
    stream.record(path, result)
    return elapsed


# -- the phases -------------------------------------------------------------------


def round_trip(socket: Path, stream: EditStream, sizes: Sizes) -> dict[str, Any]:
    with Client(socket) as client:
        warm = [timed_call(client, SESSION, stream) for _ in range(sizes.warmup)]
        samples = [timed_call(client, SESSION, stream) for _ in range(sizes.measured)]
        hello = []  # the floor: socket, JSON, asyncio and the hop to the worker thread
        for _ in range(sizes.measured):
            started = time.perf_counter()
            client.call("hello", {"protocol": PROTOCOL_VERSION})
            hello.append((time.perf_counter() - started) * 1000)
    out = summary(samples)
    out["hello_p50_ms"] = percentile(hello, 50)
    out["first_request_ms"] = warm[0]  # the session's first (see bench/session_bench.py)
    out["warmup_ms"] = [round(w, 3) for w in warm]
    return out


def git_cli(runner: Runner, origin: Path, clone: Path, sizes: Sizes) -> dict[str, Any]:
    runner.run(["git", "clone", "-q", str(origin), str(clone)])
    runner.git(clone, "config", "user.name", "Bench Mark")
    runner.git(clone, "config", "user.email", "bench@example.invalid")
    runner.git(clone, "status", "--porcelain")  # prime the index's stat data, as a user's is
    stream = EditStream.over(BIG_DIRS)
    samples: list[float] = []
    for i in range(3 + sizes.git_runs):
        path, request = stream.next()
        started = time.perf_counter()
        target = clone / path
        text = target.read_text()
        target.write_text(text.replace(request["old_string"], request["new_string"], 1))
        runner.git(clone, "add", path)
        runner.git(clone, "commit", "-q", "-m", f"edit {path}")
        elapsed = (time.perf_counter() - started) * 1000
        stream.values[path] += 1
        if i >= 3:
            samples.append(elapsed)
    return summary(samples)


def concurrent(
    runner: Runner, repo: Path, socket: Path, sizes: Sizes
) -> tuple[dict[str, Any], list[EditStream]]:
    names = [f"t{i}" for i in range(sizes.concurrent_sessions)]
    started = time.perf_counter()
    for name in names:
        runner.cli("session", "open", "--repo", str(repo), "--name", name, "--json")
    opened = time.perf_counter() - started
    streams = [EditStream.over(BIG_DIRS) for _ in names]
    clients = [Client(socket) for _ in names]
    try:
        for client, name, stream in zip(clients, names, streams, strict=True):
            for _ in range(5):  # past the session's first requests
                timed_call(client, name, stream)
        barrier = threading.Barrier(len(names) + 1)
        latencies: list[list[float]] = [[] for _ in names]
        errors: list[BaseException] = []

        def work(index: int) -> None:
            barrier.wait()
            try:
                for _ in range(sizes.concurrent_edits):
                    latencies[index].append(
                        timed_call(clients[index], names[index], streams[index])
                    )
            except BaseException as exc:  # reported below; the bench goes on
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(names))]
        for thread in threads:
            thread.start()
        barrier.wait()
        begin = time.perf_counter()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - begin
    finally:
        for client in clients:
            client.close()
    every = [x for per in latencies for x in per]
    out = summary(every)
    out.update(
        sessions=len(names),
        edits_per_session=sizes.concurrent_edits,
        wall_s=wall,
        edits_per_s=len(every) / wall if wall else math.nan,
        sessions_open_s=opened,
        errors=[repr(e) for e in errors],
    )
    return out, streams


def startup(runner: Runner, repo: Path, stream: EditStream, sizes: Sizes) -> dict[str, Any]:
    apply_cmd = [*runner.redline, "apply", "--session", SESSION, "--repo", str(repo)]
    click_cmd = [sys.executable, "-c", "import click"]

    def run_apply(env: dict[str, str] | None = None) -> tuple[float, bytes]:
        path, request = stream.next()
        started = time.perf_counter()
        done = subprocess.run(
            apply_cmd,
            input=json.dumps(request).encode(),
            capture_output=True,
            env=env or runner.env,
            check=False,
        )
        elapsed = (time.perf_counter() - started) * 1000
        try:
            result: Any = json.loads(done.stdout)
        except ValueError:
            result = f"exit {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}"
        stream.record(path, result)
        return elapsed, done.stderr

    def run_click() -> float:
        started = time.perf_counter()
        subprocess.run(
            click_cmd, stdin=subprocess.DEVNULL, capture_output=True, env=runner.env, check=True
        )
        return (time.perf_counter() - started) * 1000

    for _ in range(2):  # page cache, pyc files
        run_apply()
        run_click()
    apply_ms: list[float] = []
    click_ms: list[float] = []
    for _ in range(sizes.startup_runs):  # interleaved, so drift hits both alike
        apply_ms.append(run_apply()[0])
        click_ms.append(run_click())
    _, log = run_apply({**runner.env, "PYTHONPROFILEIMPORTTIME": "1"})
    click_log = subprocess.run(
        click_cmd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**runner.env, "PYTHONPROFILEIMPORTTIME": "1"},
        check=True,
    ).stderr
    imports = import_report(log.decode(errors="replace"), click_log.decode(errors="replace"))
    return {
        "command": apply_cmd,
        "apply_ms": summary(apply_ms),
        "import_click_ms": summary(click_ms),
        "ratio": statistics.median(apply_ms) / statistics.median(click_ms),
        "imports": imports,
    }


def parse_importtime(log: str) -> list[tuple[str, int, int]]:
    """(module, self us, cumulative us) per line of a ``-X importtime`` log."""
    rows = []
    for line in log.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line.split(":", 1)[1].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue  # the header line
        own, cumulative, name = parts
        rows.append((name.rstrip(), int(own), int(cumulative)))
    return rows


def import_report(log: str, click_log: str) -> dict[str, Any]:
    """What the apply process imports: heavy packages, and what it adds to ``import click``."""
    rows = parse_importtime(log)
    modules = [name.strip() for name, _, _ in rows]
    packages = sorted({m.split(".")[0] for m in modules})
    baseline = {name.strip() for name, _, _ in parse_importtime(click_log)}
    extra = sorted(
        ((name.strip(), own) for name, own, _ in rows if name.strip() not in baseline),
        key=lambda r: -r[1],
    )
    return {
        "modules": len(modules),
        "import_ms": sum(own for _, own, _ in rows) / 1000,
        "non_stdlib_packages": [
            p for p in packages if p not in sys.stdlib_module_names and p != "_distutils_hack"
        ],
        "heavy_imported": [p for p in packages if p in HEAVY or p == "pydantic_core"],
        "beyond_click_modules": len(extra),
        "beyond_click_ms": sum(own for _, own in extra) / 1000,
        "beyond_click_top_ms": [(m, own / 1000) for m, own in extra[:12]],
    }


# -- in-process reproduction: phase timing and cProfile ------------------------------


class PhaseTimer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1

        return timed


@contextlib.contextmanager
def patched(targets: list[tuple[object, str, str]], timer: PhaseTimer) -> Iterator[None]:
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in targets]
    try:
        for obj, attr, name in targets:
            setattr(obj, attr, timer.wrap(name, getattr(obj, attr)))
        yield
    finally:
        for obj, attr, original in reversed(saved):
            setattr(obj, attr, original)


# (label, indent) in the order the daemon runs them; the label is the key in PhaseTimer.
PHASES: list[tuple[str, int]] = [
    ("Service.call (worker thread, total)", 0),
    ("parse_request", 1),
    ("SessionApplier.apply", 1),
    ("_tip (branch ref + tip tree)", 2),
    ("_external_changes (snapshot of dirty paths)", 2),
    ("changed_paths", 3),
    ("entry_on_disk (read + hash one file)", 4),
    ("_plan (read blob, match, new blob, note dict)", 2),
    ("plan_edit (engine)", 3),
    ("commit (tree update + commit object)", 2),
    ("trees.with_entries", 3),
    ("_changed_on_disk (re-read target)", 2),
    ("Publisher.publish", 2),
    ("notes.prepare (notes blob/trees/commit)", 3),
    ("StagedObjects.flush (one pack)", 3),
    ("journal.write", 3),
    ("refs.update x2 (branch, notes)", 3),
    ("write_files (worktree)", 3),
    ("update_index (worktree index)", 3),
    ("journal.clear", 3),
]


def reproduce(repo: Path, stream: EditStream, edits: int) -> dict[str, Any]:
    """The daemon's worker-thread work for ``edits`` requests, in this process.

    As ``lifecycle.run`` wires it: a ``Service`` whose sessions are watched by the
    real ``Watcher``, each request going through ``Service.call`` (which writes the
    objects it staged as one pack, and now and then consolidates the packs).
    """
    import redline.gitops.apply as gitapply
    import redline.gitops.publish as publishing
    import redline.gitops.snapshot as snapshot
    import redline.gitops.transaction as transaction
    import redline.tools.request as requests
    from redline.daemon import watcher as watching
    from redline.daemon.service import Service
    from redline.gitops import journal, notes, refs
    from redline.gitops.gitenv import without_git_redirects

    watcher = watching.Watcher()
    service = Service(repo, git_env=without_git_redirects(os.environ))
    service.spares.start()
    service.housekeeping.start()
    try:
        service.on_session_open = lambda a: watcher.watch(a.session.name, a.root, a.dirty)
        applier = service.applier(SESSION)

        def one() -> None:
            path, request = stream.next()
            result = service.call(service.apply, {"session": SESSION, "request": request})
            stream.record(path, result)

        for _ in range(20):
            one()
        timer = PhaseTimer()
        targets: list[tuple[object, str, str]] = [
            (service, "call", "Service.call (worker thread, total)"),
            (requests, "parse_request", "parse_request"),
            (applier, "apply", "SessionApplier.apply"),
            (applier.tx, "_tip", "_tip (branch ref + tip tree)"),
            (applier.tx, "_external_changes", "_external_changes (snapshot of dirty paths)"),
            (transaction, "changed_paths", "changed_paths"),
            (snapshot, "entry_on_disk", "entry_on_disk (read + hash one file)"),
            (applier, "_plan", "_plan (read blob, match, new blob, note dict)"),
            (gitapply, "plan_edit", "plan_edit (engine)"),
            (applier.tx, "commit", "commit (tree update + commit object)"),
            (transaction, "with_entries", "trees.with_entries"),
            (applier.tx, "_changed_on_disk", "_changed_on_disk (re-read target)"),
            (applier.publisher, "publish", "Publisher.publish"),
            (notes, "prepare", "notes.prepare (notes blob/trees/commit)"),
            (service.staged, "flush", "StagedObjects.flush (one pack)"),
            (journal, "write", "journal.write"),
            (refs, "update", "refs.update x2 (branch, notes)"),
            (publishing, "write_files", "write_files (worktree)"),
            (publishing, "update_index", "update_index (worktree index)"),
            (journal, "clear", "journal.clear"),
        ]
        with patched(targets, timer):
            for _ in range(edits):
                one()
        phases = {
            label: {
                "ms_per_request": timer.seconds[label] * 1000 / edits,
                "calls_per_request": timer.calls[label] / edits,
            }
            for label, _ in PHASES
        }
        per_call: list[float] = []
        for _ in range(edits):
            started = time.perf_counter()
            one()
            per_call.append((time.perf_counter() - started) * 1000)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(edits):
            one()
        profiler.disable()
        index_entries = len(applier.worktree.index)
    finally:
        service.shutdown()
        watcher.stop()
    return {
        "edits": edits,
        "service_apply_ms": summary(per_call),
        "phases": phases,
        "profile": profile_rows(profiler, edits),
        "index_entries": index_entries,
    }


def profile_rows(profiler: cProfile.Profile, edits: int) -> dict[str, list[dict[str, Any]]]:
    stats = pstats.Stats(profiler, stream=io.StringIO())
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    rows = []
    for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in raw.items():
        rows.append(
            {
                "function": short_name(filename, line, func),
                "calls_per_request": ncalls / edits,
                "self_ms": tottime * 1000 / edits,
                "cumulative_ms": cumtime * 1000 / edits,
            }
        )
    by_self = sorted(rows, key=lambda r: -r["self_ms"])[:20]
    by_cumulative = sorted(rows, key=lambda r: -r["cumulative_ms"])[:30]
    return {"by_self": by_self, "by_cumulative": by_cumulative}


def short_name(filename: str, line: int, func: str) -> str:
    if filename == "~":
        return func  # a built-in
    for marker in ("/src/", "/site-packages/", "/lib/python3.11/", "/lib/python3"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    return f"{filename}:{line}({func})"


# -- report -----------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def print_report(data: dict[str, Any]) -> None:
    rt_big, rt_small = data["round_trip"][BIG], data["round_trip"]["200"]
    print(
        f"\nround trip: exact edit via the daemon (in-process client, "
        f"{rt_big['n']} requests after {data['sizes']['warmup']} warm-up)"
    )
    print(
        f"  {'repo':<6}{'files':>7}{'p50':>9}{'p90':>9}{'p99':>9}{'mean':>9}{'max':>9}"
        f"{'1st':>9}{'hello':>9}"
    )
    for name, files, row in ((BIG, BIG_DIRS * FILES_PER_DIR, rt_big), ("200", 200, rt_small)):
        print(
            f"  {name:<6}{files:>7}"
            + "".join(f"{row[k]:>9.2f}" for k in ("p50_ms", "p90_ms", "p99_ms", "mean_ms"))
            + f"{row['max_ms']:>9.2f}{row['first_request_ms']:>9.1f}{row['hello_p50_ms']:>9.2f}"
        )
    print(
        "  (ms; '1st': the session's first request; 'hello': p50 of a "
        "hello call,\n  the daemon's floor -- socket, JSON, asyncio, hop to the worker thread)"
    )
    git = data["git_cli"]
    print(
        f"\ngit CLI in a clone of the {BIG} repo (write + git add + git commit, {git['n']} runs): "
        f"p50 {git['p50_ms']:.1f} ms, p90 {git['p90_ms']:.1f} ms"
    )
    conc = data["concurrent"]
    print(
        f"\n{conc['sessions']} sessions x {conc['edits_per_session']} edits concurrently ({BIG}): "
        f"{conc['edits_per_s']:.1f} edits/s over {conc['wall_s']:.2f} s; per request "
        f"p50 {conc['p50_ms']:.1f} ms, p90 {conc['p90_ms']:.1f} ms, p99 {conc['p99_ms']:.1f} ms"
        + (f"; errors: {conc['errors']}" if conc["errors"] else "")
    )
    st = data["startup"]
    apply_p50, click_p50 = st["apply_ms"]["p50_ms"], st["import_click_ms"]["p50_ms"]
    print(
        f"\nclient start-up ({st['apply_ms']['n']} runs each, interleaved, medians): "
        f"redline apply --session ({BIG}) {apply_p50:.1f} ms, "
        f"python -c 'import click' {click_p50:.1f} ms; apply minus the round-trip p50 "
        f"{apply_p50 - rt_big['p50_ms']:.1f} ms"
    )
    imp = st["imports"]
    print(
        f"  the apply process imports {imp['modules']} modules ({imp['import_ms']:.1f} ms "
        f"self time); non-stdlib: {', '.join(imp['non_stdlib_packages'])}"
    )
    print(f"  heavy packages imported: {', '.join(imp['heavy_imported']) or 'none'}")
    print(
        f"  beyond `import click`: {imp['beyond_click_modules']} modules, "
        f"{imp['beyond_click_ms']:.1f} ms self time; largest: "
        + ", ".join(f"{m} {ms:.1f}" for m, ms in imp["beyond_click_top_ms"][:8])
    )
    checks = data["checks"]
    print(
        f"\nchecks: {checks['applied_edits']} edits applied, {len(checks['failures'])} not "
        f"applied; commits on redline/{SESSION} ({BIG}) {checks['branch_commits_big']} "
        f"(expected {checks['expected_commits_big']}); session worktree clean: "
        f"{checks['worktree_clean_big']}"
    )
    for failure in checks["failures"][:10]:
        print(f"  not applied: {failure}")

    print("\nverdicts")
    for row in data["verdicts"]:
        print(f"  {row['verdict']}  {row['what']:<50} {row['value']:>10}   target {row['target']}")

    profile = data.get("profile")
    if profile:
        print_profile(profile)


def print_profile(profile: dict[str, Any]) -> None:
    columns = (BIG, "200")
    edits = profile[BIG]["edits"]
    print(
        f"\nin-process reproduction: Service.call(Service.apply) with the daemon's Watcher "
        f"attached, daemons stopped, {edits} edits per column"
    )
    head = "".join(f"{repo:>14}" for repo in columns)
    print(f"  {'phase (ms per request, inclusive)':<52}{head}")
    for label, indent in PHASES:
        cells = "".join(
            f"{profile[repo]['phases'][label]['ms_per_request']:>14.2f}" for repo in columns
        )
        print(f"  {'  ' * indent + label:<52}{cells}")
    hashed = "entry_on_disk (read + hash one file)"
    calls = "".join(f"{profile[r]['phases'][hashed]['calls_per_request']:>14.1f}" for r in columns)
    print(f"  {'files hashed per request (entry_on_disk calls)':<52}{calls}")
    p50s = "".join(f"{profile[r]['service_apply_ms']['p50_ms']:>14.2f}" for r in columns)
    print(f"  {'Service.call p50, unpatched timing':<52}{p50s}")
    for repo in columns:
        rows = profile[repo]["profile"]
        print(f"\n  cProfile {repo}: top functions by self time (ms per request)")
        for row in rows["by_self"][:12]:
            print(
                f"    {row['self_ms']:>7.3f} self {row['cumulative_ms']:>7.3f} cum "
                f"{row['calls_per_request']:>7.1f} calls  {row['function']}"
            )
    print(f"\n  cProfile {BIG}: top functions by cumulative time (ms per request)")
    for row in profile[BIG]["profile"]["by_cumulative"][:18]:
        print(
            f"    {row['cumulative_ms']:>7.3f} cum {row['self_ms']:>7.3f} self "
            f"{row['calls_per_request']:>7.1f} calls  {row['function']}"
        )


# -- main -------------------------------------------------------------------------


def branch_commits(runner: Runner, repo: Path) -> int:
    return int(runner.git(repo, "rev-list", "--count", f"redline/{SESSION}", "^main").strip())


def main() -> None:
    global BIG_DIRS, BIG
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests per measurement")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--profile", action="store_true", help="profile even if targets are met")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("/tmp"),
        help="build the repositories in a new directory under this one (default /tmp; "
        "keep it short: the daemon's socket lives inside the repository)",
    )
    parser.add_argument(
        "--files",
        type=int,
        default=BIG_DIRS * FILES_PER_DIR,
        help="files in the big repository, a multiple of 100 (default 20000; 100000 for a "
        "monorepo's size)",
    )
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    BIG_DIRS = max(1, args.files // FILES_PER_DIR)
    BIG = f"{BIG_DIRS * FILES_PER_DIR // 1000}k"

    base = Path(tempfile.mkdtemp(prefix="rlb", dir=args.dir))
    if not args.keep:  # however the run ends: a crash at 100,000 files leaves gigabytes
        atexit.register(shutil.rmtree, base, True)
    home, runtime = base / "h", base / "x"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    env = hermetic_env(home, runtime)
    # The in-process parts (client, the profiled reproduction) see the same environment.
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        del os.environ[key]
    os.environ.update({k: env[k] for k in ("HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME")})
    runner = Runner(env)
    big, small, clone = base / "big", base / "small", base / "cli"
    data: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "sizes": sizes.__dict__,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "git": runner.run(["git", "--version"]).stdout.decode().strip(),
            "pygit2": importlib.metadata.version("pygit2"),
            "redline_command": runner.redline,
            "tmp": str(base),
            "load_average_start": os.getloadavg(),
        },
    }
    print(
        f"redline git-mode bench ({data['mode']}): {data['machine']['cpus']} CPUs, "
        f"Python {data['machine']['python']}, {data['machine']['git']}, "
        f"pygit2 {data['machine']['pygit2']}; in {base}"
    )
    repos = {BIG: (big, BIG_DIRS), "200": (small, SMALL_DIRS)}
    streams: dict[str, EditStream] = {}
    sockets: dict[str, Path] = {}
    started_daemons: list[Path] = []
    try:
        setup: dict[str, Any] = {}
        for name, (path, dirs) in repos.items():
            built = build_repo(runner, path, dirs)
            started = time.perf_counter()
            started_daemons.append(path)
            runner.cli("session", "open", "--repo", str(path), "--name", SESSION, "--json")
            opened = time.perf_counter() - started
            status = runner.cli("daemon", "status", "--json", "--repo", str(path))
            sockets[name] = Path(status["socket"])
            streams[name] = EditStream.over(dirs)
            prices = {
                where: file_prices(folder)
                for where, folder in (
                    ("objects/pack", path / ".git" / "objects" / "pack"),
                    ("refs/heads", path / ".git" / "refs" / "heads"),
                    ("worktree", path / ".git" / "redline" / "worktrees" / SESSION / "d001"),
                )
            }
            setup[name] = {
                "build_s": built,
                "session_open_s": opened,
                "socket": status["socket"],
                "file_create_ms": {where: made for where, (made, _) in prices.items()},
                "file_link_ms": {where: linked for where, (_, linked) in prices.items()},
            }
            print(
                f"  {name}: built and packed in {built:.1f} s; daemon start + session open "
                f"(worktree checkout) {opened:.1f} s; socket {status['socket']}\n"
                "    one empty file, created / linked (ms, median of 50): "
                + ", ".join(
                    f"{where} {made:.3f} / {linked:.3f}" for where, (made, linked) in prices.items()
                )
            )
        data["setup"] = setup

        data["round_trip"] = {
            name: round_trip(sockets[name], streams[name], sizes) for name in repos
        }
        data["git_cli"] = git_cli(runner, big, clone, sizes)
        data["concurrent"], conc_streams = concurrent(runner, big, sockets[BIG], sizes)
        data["startup"] = startup(runner, big, streams[BIG], sizes)

        worktree = Path(status_worktree(runner, big))
        failures = [f for s in [*streams.values(), *conc_streams] for f in s.failures]
        data["checks"] = {
            "applied_edits": sum(s.applied for s in [*streams.values(), *conc_streams]),
            "failures": failures,
            "branch_commits_big": branch_commits(runner, big),
            "expected_commits_big": streams[BIG].applied,
            "worktree_clean_big": runner.git(worktree, "status", "--porcelain") == "",
        }
    finally:
        for path in started_daemons:
            with contextlib.suppress(RuntimeError):
                runner.run([*runner.redline, "daemon", "stop", "--repo", str(path)])

    p50_big = data["round_trip"][BIG]["p50_ms"]
    p50_small = data["round_trip"]["200"]["p50_ms"]
    ratio = p50_big / p50_small
    speedup = data["git_cli"]["p50_ms"] / p50_big
    st = data["startup"]
    heavy = st["imports"]["heavy_imported"]
    data["verdicts"] = [
        {
            "what": f"round trip p50, {BIG} files",
            "value": f"{p50_big:.2f} ms",
            "target": f"<= {TARGET_P50_MS:g} ms",
            "verdict": verdict(p50_big <= TARGET_P50_MS),
        },
        {
            "what": f"p50({BIG}) / p50(200)",
            "value": f"{ratio:.2f}",
            "target": f"<= {TARGET_RATIO:g}",
            "verdict": verdict(ratio <= TARGET_RATIO),
        },
        {
            "what": f"speedup git CLI p50 / redline p50 ({BIG})",
            "value": f"{speedup:.1f}x",
            "target": f">= {TARGET_SPEEDUP:g}x",
            "verdict": verdict(speedup >= TARGET_SPEEDUP),
        },
        {
            "what": "start-up: redline apply / python -c 'import click'",
            "value": f"{st['ratio']:.2f}",
            "target": f"<= {TARGET_STARTUP_RATIO:g}",
            "verdict": verdict(st["ratio"] <= TARGET_STARTUP_RATIO),
        },
        {
            "what": "client imports none of " + "/".join(HEAVY),
            "value": ",".join(heavy) or "none",
            "target": "none",
            "verdict": verdict(not heavy),
        },
    ]
    missed = p50_big > TARGET_P50_MS or ratio > TARGET_RATIO or speedup < TARGET_SPEEDUP
    if missed or args.profile:
        data["profile"] = {
            name: reproduce(repos[name][0], streams[name], sizes.profile_edits) for name in repos
        }
    data["machine"]["load_average_end"] = os.getloadavg()
    print_report(data)
    print(
        "\nload average (1, 5, 15 min) at start "
        + " ".join(f"{x:.2f}" for x in data["machine"]["load_average_start"])
        + ", at end "
        + " ".join(f"{x:.2f}" for x in data["machine"]["load_average_end"])
        + f" ({data['machine']['cpus']} CPUs)"
    )
    if (
        max(data["machine"]["load_average_start"][0], data["machine"]["load_average_end"][0])
        > (data["machine"]["cpus"] or 1) * 0.75
    ):
        print("the machine was busy with other work: expect noisy figures; compare ratios")
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
        print(f"\nwrote {args.json}")
    if args.keep:
        print(f"kept {base}")


def status_worktree(runner: Runner, repo: Path) -> str:
    for line in runner.git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree ") and line.endswith(f"/{SESSION}"):
            return line.removeprefix("worktree ")
    raise RuntimeError(f"no worktree for session {SESSION} in {repo}")


if __name__ == "__main__":
    main()
