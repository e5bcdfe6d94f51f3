"""Benchmark the calls that start a process per edit or per commit, against another checkout.

    python bench/start_bench.py [--src SRC] [--other SRC] [--files 2000]
        [--guard-files N] [--rounds 5] [--runs 10] [--json FILE]

For each ``src`` — this checkout's (or ``--src``'s) and ``--other``'s (for example
``/work/main/src``),
alternating round by round, so both meet the same load — runs ``python -m redline``
with that code first on ``PYTHONPATH`` and measures the wall time of:

1. **embedded apply**: one exact edit by ``redline apply`` in a folder of one file
   (reference: ``git apply`` of the same change);
2. **session apply**: one exact edit by ``redline apply --session`` in a repository of
   ``--files`` files, the daemon (that code's) running (reference: writing the file,
   then ``git add <file> && git commit`` in a clone);
3. **guard in a hook**: ``redline guard --stage pre-commit`` in a repository of
   ``--guard-files`` files (default ``--files``) with a one-file change staged.

References: ``python -c pass``, ``python -c 'import json, socket'`` (what any Python
client that sends a request over a socket and prints its JSON answer starts with:
``apply --session`` cannot go below it plus the daemon's commit), ``python -c 'import
pygit2'`` (what the guard's start cannot go below). Prints the p50 of each per code,
the ratios, and the ratio of each redline call to its git reference. Builds its repositories
(no network) in a temporary folder it removes.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from git_bench import FILES_PER_DIR, build_repo
from session_bench import Bench, Runner

HERE = Path(__file__).resolve().parent.parent / "src"
EDITED = "d000/m001.py"


REFERENCES = (
    "python -c pass",
    "import json, socket",
    "import pygit2",
    "git apply",
    "git add+commit",
)
_CLIENT = "import json, socket"
_PYGIT2 = "import pygit2"
CPU: list[float] = []  # CPU ms (user + system) of each timed process, in order


def timed(args: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b"") -> float:
    """Wall ms of the process; its CPU ms goes to :data:`CPU` (less moved by a loaded
    machine than the wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, input=stdin, env=env, cwd=cwd, capture_output=True)
    took = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.returncode}\n{done.stderr.decode()}")
    return took


class Code:
    """One checkout's code, with its own folders, repositories and daemon."""

    def __init__(self, label: str, src: Path, base: Path, source: Path, guard: Path) -> None:
        self.label = label
        folder = Path(tempfile.mkdtemp(dir=base, prefix=f"{label}-"))
        self.bench = Bench(folder, src)
        self.env = self.bench.env
        self.redline = self.bench.redline
        self.plain = folder / "plain"
        self.plain.mkdir()
        (self.plain / "a.py").write_text("VALUE = 0\n")
        self.value = 0
        self.repo = folder / "repo"
        self.bench.run(["git", "clone", "-q", str(source), str(self.repo)])
        self.bench.run([*self.redline, "daemon", "start", "--repo", str(self.repo)])
        self.bench.run(
            [*self.redline, "session", "open", "--json", "--name", "s", "--repo", str(self.repo)]
        )
        self.session_value = 0
        self.guarded = folder / "guarded"
        self.bench.run(["git", "clone", "-q", str(guard), str(self.guarded)])
        target = self.guarded / EDITED
        target.write_text(target.read_text() + "# staged for the guard\n")
        self.bench.git(self.guarded, "add", EDITED)

    def embedded(self) -> float:
        request = {
            "tool": "edit",
            "path": "a.py",
            "old_string": f"VALUE = {self.value}",
            "new_string": f"VALUE = {self.value + 1}",
        }
        took = timed([*self.redline, "apply"], self.env, self.plain, json.dumps(request).encode())
        self.value += 1
        return took

    def session(self) -> float:
        request = {
            "tool": "edit",
            "path": EDITED,
            "old_string": f"VALUE = {self.session_value}\n",
            "new_string": f"VALUE = {self.session_value + 1}\n",
        }
        args = [*self.redline, "apply", "--session", "s", "--repo", str(self.repo)]
        took = timed(args, self.env, self.repo, json.dumps(request).encode())
        self.session_value += 1
        return took

    def guard(self) -> float:
        return timed([*self.redline, "guard", "--stage", "pre-commit"], self.env, self.guarded)

    def stop(self) -> None:
        subprocess.run(
            [*self.redline, "daemon", "stop", "--repo", str(self.repo)],
            env=self.env,
            capture_output=True,
        )


class Git:
    """The git references: ``git apply`` in a folder, ``git add && git commit`` in a clone."""

    def __init__(self, base: Path, source: Path, env: dict[str, str]) -> None:
        self.env = env
        self.repo = base / "git-clone"
        subprocess.run(["git", "clone", "-q", str(source), str(self.repo)], check=True, env=env)
        for key, value in (("user.name", "Bench Mark"), ("user.email", "bench@example.invalid")):
            subprocess.run(["git", "-C", str(self.repo), "config", key, value], check=True, env=env)
        self.plain = base / "git-plain"
        self.plain.mkdir()
        subprocess.run(["git", "init", "-q", str(self.plain)], check=True, env=env)
        (self.plain / "a.py").write_text("VALUE = 0\n")
        self.value = 0
        self.commits = 0

    def apply(self) -> float:
        patch = (
            "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n"
            f"-VALUE = {self.value}\n+VALUE = {self.value + 1}\n"
        )
        took = timed(["git", "apply"], self.env, self.plain, patch.encode())
        self.value += 1
        return took

    def commit(self) -> float:
        target = self.repo / EDITED
        self.commits += 1
        started = time.perf_counter()
        target.write_text(f"VALUE = {self.commits}\n")
        subprocess.run(["git", "add", EDITED], cwd=self.repo, env=self.env, check=True)
        subprocess.run(
            ["git", "commit", "-q", "-m", f"edit {self.commits}"],
            cwd=self.repo,
            env=self.env,
            check=True,
        )
        return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", type=Path, default=HERE, help="the code measured as 'this'")
    parser.add_argument("--other", type=Path, help="another checkout's src to compare with")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--guard-files", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10, help="calls of each kind per round")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rlstart-"))
    try:
        run(base, args)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(base: Path, args: argparse.Namespace) -> None:
    setup = Bench(Path(tempfile.mkdtemp(dir=base, prefix="setup-")), HERE)
    source = base / "source"
    build_repo(Runner(setup), source, max(1, args.files // FILES_PER_DIR))
    guard_source = source
    guard_files = args.guard_files or args.files
    if guard_files != args.files:
        guard_source = base / "guard-source"
        build_repo(Runner(setup), guard_source, max(1, guard_files // FILES_PER_DIR))
    srcs = [("this", args.src.resolve())]
    if args.other:
        srcs.append(("other", args.other.resolve()))
    codes = [Code(label, src, base, source, guard_source) for label, src in srcs]
    git = Git(base, source, setup.env)
    kinds = ("embedded", "session", "guard")
    times: dict[str, dict[str, list[float]]] = {c.label: {k: [] for k in kinds} for c in codes}
    cpu: dict[str, dict[str, list[float]]] = {c.label: {k: [] for k in kinds} for c in codes}
    refs: dict[str, list[float]] = {name: [] for name in REFERENCES}
    refs_cpu: dict[str, list[float]] = {name: [] for name in REFERENCES}

    def python(code: str) -> float:
        return timed([sys.executable, "-c", code], {}, base)

    try:
        for _ in range(args.rounds):
            for code in codes:
                for _ in range(args.runs):
                    for kind in kinds:
                        times[code.label][kind].append(getattr(code, kind)())
                        cpu[code.label][kind].append(CPU[-1])
            for _ in range(args.runs):
                for name, measure in (
                    ("python -c pass", lambda: python("pass")),
                    ("import json, socket", lambda: python(_CLIENT)),
                    ("import pygit2", lambda: python(_PYGIT2)),
                    ("git apply", git.apply),
                ):
                    refs[name].append(measure())
                    refs_cpu[name].append(CPU[-1])
                refs["git add+commit"].append(git.commit())
    finally:
        for code in codes:
            code.stop()
    report(times, refs, args, guard_files)
    report_cpu(cpu, refs_cpu)


def report(
    times: dict[str, dict[str, list[float]]],
    refs: dict[str, list[float]],
    args: argparse.Namespace,
    guard_files: int,
) -> None:
    p50 = {
        label: {k: statistics.median(v) for k, v in kinds.items()} for label, kinds in times.items()
    }
    ref50 = {k: statistics.median(v) for k, v in refs.items()}
    out: dict[str, Any] = {"files": args.files, "guard_files": guard_files, "p50_ms": p50}
    out["references_p50_ms"] = ref50
    print(
        f"p50 ms ({args.rounds} rounds x {args.runs} calls; {args.files} files, "
        f"guard at {guard_files})"
    )
    names = {
        "embedded": "redline apply (embedded)",
        "session": "redline apply --session",
        "guard": "redline guard (pre-commit)",
    }
    for kind, name in names.items():
        line = f"  {name:32}" + "".join(f" {label} {p50[label][kind]:7.1f}" for label in p50)
        if "other" in p50:
            line += f"   this/other {p50['this'][kind] / p50['other'][kind]:.2f}"
        print(line)
    for name, value in ref50.items():
        print(f"  {name:32} {value:7.1f}")
    this = p50["this"]
    print(f"  session apply / git add+commit: {this['session'] / ref50['git add+commit']:.2f}")
    print(f"  embedded apply / git apply:     {this['embedded'] / ref50['git apply']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


def report_cpu(cpu: dict[str, dict[str, list[float]]], refs: dict[str, list[float]]) -> None:
    print("p50 CPU ms (user + system) of the same processes")
    p50 = {
        label: {k: statistics.median(v) for k, v in kinds.items()} for label, kinds in cpu.items()
    }
    for kind in ("embedded", "session", "guard"):
        line = f"  {kind:10}" + "".join(f" {label} {p50[label][kind]:7.1f}" for label in p50)
        if "other" in p50:
            line += f"   this/other {p50['this'][kind] / p50['other'][kind]:.2f}"
        print(line)
    for name, values in refs.items():
        if values:
            print(f"  {name:10} {statistics.median(values):7.1f}")


if __name__ == "__main__":
    main()
