"""Benchmark ``redline guard``: the pre-commit hook on a repository with 5,000 edit notes.

    python bench/guard_bench.py [--json FILE] [--profile] [--keep] [--loose]

Builds a repository under a short ``/tmp`` directory: 500 modules in 20
directories and a ``.redline.toml`` protecting ``pkg00/**`` and ``pkg01/**``
(``require = "exact"``) and ``pkg02/**`` (``min_confidence = 0.9``), committed on
``main``. A side branch ``redline/bench`` then gets 5,000 one-file commits, each
inserting two lines, made in-process with pygit2, and each gets a redline note
(``refs/notes/redline``, written in batches of 500 with ``notes.prepare`` +
``notes.publish``). 10 % of the edits are tolerant (fuzzy or whitespace,
confidence < 1), a quarter of those on protected paths, where the policy flags
most of them (the verdict and violations are those of the real policy). The
repository is then packed with ``git gc`` (``--loose`` keeps loose objects).

The commit being checked is staged on ``main`` and touches 50 files:

* 15 protected files with the side branch's version (they carry flagged edits:
  the guard must refuse, naming exactly those edits),
* 10 protected files with flagged edits elsewhere on the branch but only a manual
  line added here (checked, not carried),
* 25 unprotected files with the side branch's version (tolerant, unflagged).

Measured as subprocesses in the repository root (``redline guard --stage
pre-commit`` with the console script next to this interpreter, not a pyenv shim):
the refusing run cold (no ``.git/redline/ledger.json``: reads all 5,000 notes)
and warm (median of 10, in rounds with the references ``python -c pass``,
``python -c 'import pygit2'``, ``python -c 'import redline.cli.main'`` and a
process importing everything the guard imports); the same through ``git commit``
with the hooks installed, and ``git commit`` without a hook; ``redline approve``
of the refused edits; then the passing run, first after the approval (the ledger
catches up by diffing the notes trees) and warm. Then the guard's phases are
timed in a fresh interpreter (imports, repository, policy, staged change, ledger
load warm and cold, the carried check) and, when the target is missed or with
``--profile``, the warm run is profiled with cProfile. Target: ≤ 300 ms wall time
for the hook process. Exit status 0 unless the bench itself fails.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from redline.gitops import notes
from redline.gitops.trees import FILE, Entry, with_entries
from redline.settings.policy import parse_policy

SRC = Path(__file__).resolve().parents[1] / "src"
TARGET_MS = 300.0
DIRS = 20
FILES_PER_DIR = 25  # 500 files
LINES_PER_FILE = 40
NOTES = 5_000
TOLERANT_EVERY = 10  # one edit in ten is tolerant
PROTECTED_SHARE = 0.25  # of the tolerant edits, on protected paths
BATCH = 500
CARRIED_FILES = 15
MANUAL_PROTECTED_FILES = 10
CLEAN_FILES = 25
COLD_RUNS = 5
WARM_RUNS = 10
COMMIT_RUNS = 5
PHASE_RUNS = 3
SEED = 20240611

POLICY_TOML = """\
[guard]
action = "review"

[[guard.protect]]
paths = ["pkg00/**", "pkg01/**"]
require = "exact"

[[guard.protect]]
paths = ["pkg02/**"]
min_confidence = 0.9
"""
PROTECTED_DIRS = ("pkg00", "pkg01", "pkg02")


# -- environment and processes -----------------------------------------------------


def hermetic_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
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


@dataclass
class Timed:
    ms: float  # wall
    cpu_ms: float  # user + system of the process and the children it waited for
    code: int
    stdout: str
    stderr: str


class Runner:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd
        self.redline = redline_command()

    def timed(self, args: list[str], stdin: bytes | None = None) -> Timed:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            args,
            cwd=self.cwd,
            env=self.env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
        ms = (time.perf_counter() - started) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
        return Timed(
            ms,
            cpu,
            done.returncode,
            done.stdout.decode(errors="replace"),
            done.stderr.decode("utf-8"),
        )

    def ok(self, args: list[str]) -> str:
        done = self.timed(args)
        if done.code != 0:
            raise RuntimeError(
                f"{' '.join(args)} failed ({done.code}):\n{done.stderr}{done.stdout}"
            )
        return done.stdout

    def git(self, *args: str) -> str:
        return self.ok(["git", *args])

    def guard(self) -> Timed:
        return self.timed([*self.redline, "guard", "--stage", "pre-commit"])


# -- the fixture ---------------------------------------------------------------------


def base_lines(folder: str, index: int) -> list[str]:
    out = [f'"""Module {folder}/mod{index:02d}: generated for the guard benchmark."""', ""]
    for i in range(LINES_PER_FILE // 2 - 1):
        out.append(f"def {folder}_f{index:02d}_{i:02d}(x: int) -> int:")
        out.append(f"    return x * {i + 1} + {index}  # {folder}")
    return out


def text_of(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


@dataclass
class Edit:
    index: int
    commit: str
    edit: str
    path: str
    match_type: str
    confidence: float
    flagged: bool


@dataclass
class Fixture:
    root: Path
    repo: Path
    home: Path
    files: list[str]
    side: dict[str, list[str]]  # path -> lines at the side branch's tip
    edits: list[Edit]
    build_s: dict[str, float] = field(default_factory=dict)
    staged: dict[str, list[str]] = field(default_factory=dict)  # group -> paths
    expected_blocked: set[str] = field(default_factory=set)
    requests: dict[str, Any] = field(default_factory=dict)  # commit -> the request sent

    @property
    def tolerant(self) -> list[Edit]:
        return [e for e in self.edits if e.match_type != "exact"]

    @property
    def flagged(self) -> list[Edit]:
        return [e for e in self.edits if e.flagged]


def _engine_edit(
    lines: list[str], at: int, new: list[str], path: str, how: str
) -> tuple[Any, Any] | None:
    """The request an agent would send to insert ``new`` before line ``at`` — quoting that
    line exactly, with spaces left out (``whitespace``) or with a character
    dropped from it and its neighbours quoted too (``fuzzy``) — and the engine's outcome
    on the file; None when the engine does not apply it as asked."""
    from redline.engine.edit import EditItem, EditRequest, apply_edit

    old = lines[at]
    if how == "whitespace" and " + " in old:
        quoted = old.replace(" + ", "+")
        request = EditRequest(path, (EditItem(quoted, "\n".join([*new, quoted])),))
    elif how == "fuzzy" and 2 < at < len(lines) - 1:
        cut = len(old) // 2
        before, after = lines[at - 1], lines[at + 1]
        quoted = "\n".join([before, old[:cut] + old[cut + 1 :], after]) + "\n"
        replaced = "\n".join([before, *new, old[:cut] + old[cut + 1 :], after]) + "\n"
        request = EditRequest(path, (EditItem(quoted, replaced),))
    else:
        request = EditRequest(path, (EditItem(old, "\n".join([*new, old])),))
    outcome = apply_edit(text_of(lines), request)
    if outcome.data is None or outcome.result.status != "applied":
        return None
    return request, outcome


def build(root: Path, packed: bool, genuine: int = 0) -> tuple[Fixture, Runner]:
    """The repository; its last ``genuine`` edits are made by the engine from requests
    an agent would send (``Fixture.requests``, by commit), so that running each request
    again reproduces its note (``redline guard --range --verify``)."""
    home = root / "h"
    repo_dir = root / "r"
    home.mkdir()
    env = hermetic_env(home)
    runner = Runner(env, repo_dir)
    timings: dict[str, float] = {}

    started = time.perf_counter()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo_dir)], env=env, check=True)
    runner.git("config", "user.name", "Bench Mark")
    runner.git("config", "user.email", "bench@example.invalid")
    runner.git("config", "commit.gpgsign", "false")
    runner.git("config", "gc.auto", "0")
    files = []
    contents: dict[str, list[str]] = {}
    for d in range(DIRS):
        folder = f"pkg{d:02d}"
        (repo_dir / folder).mkdir()
        for m in range(FILES_PER_DIR):
            path = f"{folder}/mod{m:02d}.py"
            lines = base_lines(folder, m)
            (repo_dir / path).write_bytes(text_of(lines))
            files.append(path)
            contents[path] = lines
    (repo_dir / ".redline.toml").write_text(POLICY_TOML)
    runner.git("add", "-A")
    runner.git("commit", "-q", "-m", "initial import")
    timings["base_commit"] = time.perf_counter() - started

    started = time.perf_counter()
    repo = pygit2.Repository(str(repo_dir))
    policy = parse_policy(POLICY_TOML, ".redline.toml")
    base = repo.head.peel(pygit2.Commit)
    tree = base.tree
    parent = base.id
    rng = random.Random(SEED)
    protected = [f for f in files if f.split("/")[0] in PROTECTED_DIRS]
    unprotected = [f for f in files if f.split("/")[0] not in PROTECTED_DIRS]
    t0 = base.commit_time
    edits: list[Edit] = []
    requests: dict[str, Any] = {}
    pending: list[tuple[pygit2.Oid, dict[str, Any]]] = []
    for i in range(NOTES):
        tolerant = i % TOLERANT_EVERY == 3
        if tolerant:
            pool = protected if rng.random() < PROTECTED_SHARE else unprotected
            path = rng.choice(pool)
            if rng.random() < 0.6:
                match_type, confidence = "fuzzy", round(rng.uniform(0.80, 0.97), 3)
            else:
                match_type, confidence = "whitespace", 0.99
        else:
            path = rng.choice(files)
            match_type, confidence = "exact", 1.0
        lines = contents[path]
        at = rng.randrange(2, len(lines))
        old = lines[at]
        new = [f"    edited_{i:05d} = compute({i}, 'bench')", f"    log_{i:05d}('edit {i}')"]
        made = None
        if i >= NOTES - genuine:
            how = match_type if match_type != "exact" else "exact"
            made = _engine_edit(lines, at, new, path, how) or _engine_edit(
                lines, at, new, path, "exact"
            )
            assert made is not None, (path, at)
            [match] = made[1].result.matches
            match_type, confidence = match.match_type, match.confidence
            matched = match.matched_text
            start, end = match.start_line, match.end_line
            lines[:] = made[1].data.decode().splitlines()
        else:
            lines[at:at] = new
            matched, start, end = old, at + 1, at + 1
        before = tree[path].id
        blob = repo.create_blob(text_of(lines))
        tree_id = with_entries(repo, tree, {path: Entry(blob, FILE)})
        written = repo[tree_id]
        assert isinstance(written, pygit2.Tree)
        tree = written
        edit_id = f"{rng.getrandbits(48):012x}"
        kind = f"{match_type} {confidence}"
        message = (
            f"redline: edit {path} ({kind})\n\nApplied by redline session bench (edit).\n\n"
            f"Redline-Edit: {edit_id}\n"
        )
        sig = pygit2.Signature("Bench Mark", "bench@example.invalid", t0 + 1 + i, 0)
        parent = repo.create_commit(None, sig, sig, message, tree_id, [parent])
        operation = {
            "path": path,
            "op": "edit",
            "match_type": match_type,
            "confidence": confidence,
            "start_line": start,  # the line matched (and kept after the two inserted)
            "end_line": end,
            "matched_sha256": notes.sha256(matched),
            "matched_preview": notes.preview(matched),
        }
        violations = [
            {"rule": v.rule, "path": v.path, "reason": v.reason}
            for v in policy.check(path, match_type, confidence)
        ]
        note: dict[str, Any] = {
            "schema": notes.SCHEMA,
            "edit": edit_id,
            "request": f"req-{i:05d}",
            "session": "bench",
            "tool": "edit",
            "model": None,
            "source": "agent",
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + 1 + i)),
            "operations": [operation],
            "cleaned": [],
            "policy": (
                {
                    "verdict": "flagged",
                    "action": "review",
                    "source": ".redline.toml",
                    "violations": violations,
                }
                if violations
                else {"verdict": "pass", "source": ".redline.toml"}
            ),
            "approvals": [],
            "files": [{"path": path, "before": str(before), "after": str(blob)}],
        }
        if match_type != "exact":
            note["tolerances"] = [match_type]
        pending.append((parent, note))
        if made is not None:
            requests[str(parent)] = made[0]
        edits.append(Edit(i, str(parent), edit_id, path, match_type, confidence, bool(violations)))
    repo.create_reference_direct("refs/heads/redline/bench", parent, False)
    timings["side_commits"] = time.perf_counter() - started

    started = time.perf_counter()
    sig = pygit2.Signature("Bench Mark", "bench@example.invalid")
    for start in range(0, len(pending), BATCH):
        batch = dict(pending[start : start + BATCH])
        old_notes = notes.current(repo)
        new_notes = notes.prepare(repo, batch, sig, old_notes)
        notes.publish(repo, lambda tip, batch=batch: batch, sig, prepared=(old_notes, new_notes))
    timings["notes"] = time.perf_counter() - started
    del repo, tree  # nothing of ours holds the repository open while git packs it

    if packed:
        started = time.perf_counter()
        runner.git("gc", "-q")
        timings["gc"] = time.perf_counter() - started

    fixture = Fixture(root, repo_dir, home, files, contents, edits, timings)
    fixture.requests = requests
    stage(fixture, runner)
    return fixture, runner


def stage(fixture: Fixture, runner: Runner) -> None:
    """Stage the 50-file change on main and work out which edits it must be refused for."""
    flagged_by_path: dict[str, list[Edit]] = {}
    for e in fixture.flagged:
        flagged_by_path.setdefault(e.path, []).append(e)
    with_flags = sorted(flagged_by_path)
    need = CARRIED_FILES + MANUAL_PROTECTED_FILES
    if len(with_flags) < need:
        raise RuntimeError(f"only {len(with_flags)} protected files have flagged edits")
    carried = with_flags[:CARRIED_FILES]
    manual = with_flags[CARRIED_FILES:need]
    touched_by_side = {e.path for e in fixture.edits}
    clean = [
        f for f in fixture.files if f.split("/")[0] not in PROTECTED_DIRS and f in touched_by_side
    ][::7][:CLEAN_FILES]
    if len(clean) < CLEAN_FILES:
        raise RuntimeError("not enough unprotected files for the clean part of the commit")
    for path in carried + clean:
        (fixture.repo / path).write_bytes(text_of(fixture.side[path]))
    for path in manual:
        target = fixture.repo / path
        target.write_bytes(target.read_bytes() + b"MANUAL_CHANGE = 'made by a person'\n")
    runner.git("add", "--", *carried, *manual, *clean)
    fixture.staged = {"carried": carried, "manual": manual, "clean": clean}
    fixture.expected_blocked = {e.edit for p in carried for e in flagged_by_path[p]}
    staged = runner.git("diff", "--cached", "--name-only").split()
    if len(staged) != need + CLEAN_FILES:
        raise RuntimeError(f"expected {need + CLEAN_FILES} staged files, git has {len(staged)}")


# -- measuring -----------------------------------------------------------------------


@dataclass
class Row:
    name: str
    runs: list[Timed]
    target: bool = False  # judged against TARGET_MS
    note: str = ""

    @property
    def walls(self) -> list[float]:
        return [r.ms for r in self.runs]

    @property
    def codes(self) -> list[int]:
        return [r.code for r in self.runs]

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(r.cpu_ms for r in self.runs)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "median_ms": round(self.median, 1),
            "min_ms": round(min(self.walls), 1),
            "max_ms": round(max(self.walls), 1),
            "cpu_median_ms": round(self.cpu, 1),
            "runs_ms": [round(r, 1) for r in self.walls],
            "exit_codes": sorted(set(self.codes)),
            "target_ms": TARGET_MS if self.target else None,
            "meets_target": (self.median <= TARGET_MS) if self.target else None,
            "note": self.note,
        }


def rounds(runner: Runner, commands: dict[str, list[str]], runs: int) -> dict[str, list[Timed]]:
    """Each command once per round, ``runs`` rounds (after one unmeasured round), so that
    what else the machine is doing weighs on every row alike."""
    for args in commands.values():
        runner.timed(args)  # page cache, .pyc, the ledger cache
    out: dict[str, list[Timed]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, args in commands.items():
            out[name].append(runner.timed(args))
    return out


BLOCKED_LINE = re.compile(r"^\s+edit ([0-9a-f]{12}) \(commit", re.M)


def refused_edits(stderr: str) -> set[str]:
    return set(BLOCKED_LINE.findall(stderr))


def ledger_file(fixture: Fixture) -> Path:
    return fixture.repo / ".git" / "redline" / "ledger.json"


def guard_runs(
    fixture: Fixture,
    runner: Runner,
    name: str,
    runs: int,
    cold: bool = False,
    restore: bytes | None = None,
) -> tuple[Row, Timed]:
    """``runs`` guard processes; ``cold`` deletes the ledger cache before each, ``restore``
    puts back an older cache (so each run catches up from the same notes commit)."""
    done = []
    for _ in range(runs):
        if cold:
            ledger_file(fixture).unlink(missing_ok=True)
        if restore is not None:
            ledger_file(fixture).write_bytes(restore)
        done.append(runner.guard())
    return Row(name, done, target=True), done[-1]


def commit_runs(runner: Runner, name: str, runs: int) -> Row:
    """``git commit`` of the staged change; a commit that is made is undone (soft reset)."""
    done = []
    for _ in range(runs):
        done.append(runner.timed(["git", "commit", "-q", "-m", "guard bench"]))
        if done[-1].code == 0:
            runner.git("reset", "-q", "--soft", "HEAD~1")
    return Row(name, done)


# Everything `redline guard` imports, doing nothing: the floor under the hook's time.
GUARD_IMPORTS = (
    "import redline.cli.main, redline.hooks.ledger, redline.hooks.stages, "
    "redline.hooks.guard, redline.settings.policy"
)

PHASES = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    clock = time.perf_counter
    out = {}
    t = clock()
    import pygit2
    out["import pygit2"] = clock() - t
    t = clock()
    import redline.cli.main
    out["import redline.cli.main (CLI, click, daemon client)"] = clock() - t
    t = clock()
    from redline.cli.guard import _policy, _repo
    from redline.hooks import ledger, stages
    from redline.hooks.guard import blocked
    import redline.settings.policy
    out["import redline.hooks.* (policy, tomllib)"] = clock() - t
    t = clock()
    repo = _repo(Path("."))
    out["open repository"] = clock() - t
    t = clock()
    policy = _policy(repo)
    out["policy (.redline.toml from HEAD)"] = clock() - t
    t = clock()
    change = stages.commit_change(repo, None, stages.amending())
    out["stages.commit_change (index -> tree)"] = clock() - t
    t = clock()
    entries = ledger.load(repo)
    out["ledger.load (warm: read cache)"] = clock() - t
    t = clock()
    found = blocked(repo, entries, policy, change.parent, change.new)
    out["guard.blocked (carried check)"] = clock() - t
    t = clock()
    cache = ledger._read_cache(ledger.cache_path(repo))
    out["  of ledger.load: _read_cache (json)"] = clock() - t
    current = ledger.notes.current(repo)
    previous = repo[current].parents[0].id if repo[current].parents else None
    catchup_notes = 0
    if previous is not None and cache is not None:
        catchup_notes = len(repo[previous].tree.diff_to_tree(repo[current].tree))
        cache.notes_commit = str(previous)
        t = clock()
        ledger._catch_up(repo, cache, repo[current])
        out["ledger catch-up: last notes commit's changes"] = clock() - t
    t = clock()
    fresh = ledger.Ledger(None, {}, {})
    ledger._catch_up(repo, fresh, ledger.notes.notes_commit(repo))
    out["ledger cold: _catch_up (all notes)"] = clock() - t
    t = clock()
    ledger._write_cache(Path(sys.argv[1]), fresh)
    out["ledger cold: _write_cache"] = clock() - t
    info = {
        "ms": {k: round(v * 1000, 2) for k, v in out.items()},
        "entries": len(entries.entries),
        "by_commit": len(entries.by_commit),
        "blocked": len(found),
        "catchup_notes": catchup_notes,
        "cache_bytes": os.path.getsize(ledger.cache_path(repo)),
        "modules": len(sys.modules),
        "heavy": sorted(m for m in ("pygit2", "pydantic", "watchdog", "redline.daemon.client")
                        if m in sys.modules),
    }
    print(json.dumps(info))
    """
)

PROFILE = textwrap.dedent(
    """
    import cProfile, io, pstats, sys
    sys.argv = ["redline", "guard", "--stage", "pre-commit"]
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        from redline.cli.main import cli
        cli.main(standalone_mode=False)
    except SystemExit:
        pass
    profiler.disable()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text).sort_stats("cumulative")
    stats.print_stats(r"^(?!<frozen|\\{built-in method builtins)", 30)
    print(text.getvalue())
    """
)


def phases(fixture: Fixture, runner: Runner) -> dict[str, Any]:
    """The guard's phases in fresh interpreters (median per phase of PHASE_RUNS)."""
    runner.guard()  # the ledger cache is valid
    scratch = fixture.root / "ledger-scratch.json"
    results = [
        json.loads(runner.ok([sys.executable, "-c", PHASES, str(scratch)]))
        for _ in range(PHASE_RUNS)
    ]
    merged = dict(results[-1])
    merged["ms"] = {
        k: round(statistics.median(r["ms"][k] for r in results), 1) for k in merged["ms"]
    }
    return merged


def import_profile(
    runner: Runner, runs: int = 3
) -> list[tuple[str, float, list[tuple[str, float]]]]:
    """``python -X importtime -m redline guard``: each top-level import's cumulative ms and
    its direct imports of ≥ 2 ms (median over ``runs``), largest first."""
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(runs):
        done = runner.timed([sys.executable, "-X", "importtime", "-m", "redline", "guard"])
        pending: list[tuple[str, float]] = []  # importtime prints children before parents
        for line in done.stderr.splitlines():
            parts = line.split("|")
            if not line.startswith("import time:") or len(parts) != 3:
                continue
            try:
                ms = float(parts[1]) / 1000
            except ValueError:
                continue  # the header
            name = parts[2].rstrip()
            depth = (len(name) - len(name.lstrip()) - 1) // 2
            if depth == 1:
                pending.append((name.strip(), ms))
            elif depth == 0:
                top = name.strip()
                samples.setdefault((top, ""), []).append(ms)
                for child, child_ms in pending:
                    samples.setdefault((top, child), []).append(child_ms)
                pending = []
    out = []
    for (parent, child), values in samples.items():
        if child or statistics.median(values) < 1.0:
            continue
        children = [
            (c, statistics.median(v))
            for (p, c), v in samples.items()
            if p == parent and c and statistics.median(v) >= 2.0
        ]
        out.append((parent, statistics.median(values), sorted(children, key=lambda kv: -kv[1])))
    return sorted(out, key=lambda item: -item[1])


# -- report ---------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    width = max(len(r.name) for r in rows) + 2
    out = [
        f"{'wall ms':>{width + 8}}{'min':>8}{'max':>8}{'cpu ms':>8}{'runs':>6}  exit"
        f"  vs {TARGET_MS:g} ms"
    ]
    for r in rows:
        codes = ",".join(str(c) for c in sorted(set(r.codes)))
        verdict = ("ok" if r.median <= TARGET_MS else "SLOW") if r.target else ""
        out.append(
            f"{r.name:{width}}{r.median:8.1f}{min(r.walls):8.1f}{max(r.walls):8.1f}{r.cpu:8.1f}"
            f"{len(r.runs):6d}  {codes:<4}  {verdict}" + (f"  ({r.note})" if r.note else "")
        )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--profile", action="store_true", help="cProfile the warm guard run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary repository")
    parser.add_argument("--loose", action="store_true", help="do not pack the repository")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="rlg", dir="/tmp"))
    try:
        return run(root, args)
    finally:
        if args.keep:
            print(f"\nrepository kept: {root / 'r'}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def run(root: Path, args: argparse.Namespace) -> int:
    started = time.perf_counter()
    fixture, runner = build(root, packed=not args.loose)
    runner.env["PYTHONPATH"] = str(SRC)  # this checkout's redline, whatever is installed
    f = fixture
    print(
        f"fixture: {len(f.files)} files in {DIRS} dirs; {NOTES:,} commits on redline/bench with "
        f"notes ({len(f.tolerant)} tolerant, {len(f.flagged)} flagged by .redline.toml); "
        f"built in {time.perf_counter() - started:.1f} s "
        f"({', '.join(f'{k} {v:.1f}' for k, v in f.build_s.items())}; "
        f"{'packed' if not args.loose else 'loose objects'})"
    )
    print(
        f"staged commit: {sum(map(len, f.staged.values()))} files — "
        f"{len(f.staged['carried'])} protected carrying flagged edits "
        f"({len(f.expected_blocked)} edits), {len(f.staged['manual'])} protected with a manual "
        f"change, {len(f.staged['clean'])} unprotected from the side branch"
    )
    print(f"guard command: {' '.join(runner.redline)} guard --stage pre-commit")
    load_start = os.getloadavg()
    print("load average at start: " + " ".join(f"{x:.1f}" for x in load_start) + "\n")

    py = sys.executable
    problems: list[str] = []
    cold, _ = guard_runs(f, runner, "guard refuses, cold (builds ledger)", COLD_RUNS, cold=True)
    cold.note = f"first run {cold.walls[0]:.1f} ms"
    warm_name = "guard refuses, warm (cache valid)"
    measured = rounds(
        runner,
        {
            "python -c pass": [py, "-c", "pass"],
            "python -c 'import pygit2'": [py, "-c", "import pygit2"],
            "python -c 'import redline.cli.main'": [py, "-c", "import redline.cli.main"],
            "imports of guard, no work": [py, "-c", GUARD_IMPORTS],
            warm_name: [*runner.redline, "guard", "--stage", "pre-commit"],
        },
        WARM_RUNS,
    )
    rows = [Row(name, runs, target=name == warm_name) for name, runs in measured.items()]
    warm = rows.pop()
    rows += [cold, warm]
    last = warm.runs[-1]
    refused = refused_edits(last.stderr)
    if last.code != 1 or refused != f.expected_blocked:
        problems.append(
            f"refusal: exit {last.code}, {len(refused)} edits named, expected "
            f"{len(f.expected_blocked)}; missing {sorted(f.expected_blocked - refused)}, "
            f"extra {sorted(refused - f.expected_blocked)}\n{last.stderr}"
        )
    refusal_text = last.stderr

    breakdown = {"refuses": phases(f, runner)}
    imports = import_profile(runner)

    rows.append(commit_runs(runner, "git commit, no hook (reference)", COMMIT_RUNS))
    runner.ok([*runner.redline, "hooks", "install"])
    hook_refuse = commit_runs(runner, "git commit + hook (refused)", COMMIT_RUNS)
    rows.append(hook_refuse)
    if set(hook_refuse.codes) != {1}:
        problems.append(f"git commit with the hook: exit codes {hook_refuse.codes}, expected 1")

    before_approve = ledger_file(f).read_bytes()  # the cache as of the old notes
    approve = runner.timed([*runner.redline, "approve", *sorted(refused or f.expected_blocked)])
    rows.append(Row(f"redline approve ({len(refused)} edits)", [approve]))
    if approve.code != 0:
        problems.append(f"redline approve failed: {approve.stderr}")

    incremental, inc_last = guard_runs(
        f, runner, "guard passes, after approve (catch-up)", COLD_RUNS, restore=before_approve
    )
    warm_pass, pass_last = guard_runs(f, runner, "guard passes, warm (cache valid)", WARM_RUNS)
    rows += [incremental, warm_pass]
    for row, final in ((incremental, inc_last), (warm_pass, pass_last)):
        if set(row.codes) != {0}:
            problems.append(f"{row.name}: exit codes {row.codes}\n{final.stderr}")
    breakdown["passes"] = phases(f, runner)
    hook_pass = commit_runs(runner, "git commit + hook (passes)", COMMIT_RUNS)
    rows.append(hook_pass)
    if set(hook_pass.codes) != {0}:
        problems.append(f"git commit with the hook (approved): exit codes {hook_pass.codes}")

    print(table(rows))
    print(
        f"\nguard phases in a fresh interpreter, wall ms (median of {PHASE_RUNS}); "
        "load average now " + " ".join(f"{x:.1f}" for x in os.getloadavg())
    )
    states = list(breakdown)
    print(f"  {'':<50}" + "".join(f"{s:>10}" for s in states))
    for name in breakdown[states[0]]["ms"]:
        print(f"  {name:<50}" + "".join(f"{breakdown[s]['ms'].get(name, 0):10.1f}" for s in states))
    for state in states:
        b = breakdown[state]
        print(
            f"  {state}: {b['blocked']} blocked; ledger {b['entries']} entries over "
            f"{b['by_commit']} commits, cache {b['cache_bytes'] / 1024:.0f} KiB; catch-up read "
            f"{b['catchup_notes']} notes; {b['modules']} modules loaded"
        )
    print("\nimports of `python -m redline guard` (-X importtime, cumulative ms, median of 3):")
    for name, ms, children in imports:
        inner = ", ".join(f"{c} {m:.1f}" for c, m in children)
        print(f"  {name:<24}{ms:7.1f}" + (f"   ({inner})" if inner else ""))

    judged = [r for r in rows if r.target]
    slow = [r for r in judged if r.median > TARGET_MS]

    def mark(row: Row) -> str:
        return f"{row.median:.0f} ms {'ok' if row.median <= TARGET_MS else 'SLOW'}"

    print(f"\nverdict (median wall time of the hook process vs ≤ {TARGET_MS:g} ms):")
    print(f"  steady state, ledger cache valid:   refuses {mark(warm)}, passes {mark(warm_pass)}")
    print(f"  first run after a notes change:     {mark(incremental)} (catch-up of the approval)")
    print(f"  first run in a clone / cache lost:  {mark(cold)} (reads all {NOTES:,} notes)")
    named = {r.name: r for r in rows}
    floor, bare = named["imports of guard, no work"], named["python -c pass"]
    print(
        f"  of the warm refusal: interpreter {bare.median:.0f} ms, imports "
        f"{floor.median - bare.median:.0f} ms, the guard's own work "
        f"{warm.median - floor.median:.0f} ms (cpu: {bare.cpu:.0f} / "
        f"{floor.cpu - bare.cpu:.0f} / {warm.cpu - floor.cpu:.0f})"
    )
    print(
        f"  => {'target met' if not slow else 'target MISSED'}"
        + (f" ({', '.join(r.name for r in slow)})" if slow else "")
    )
    load_end = os.getloadavg()
    cpus = os.cpu_count() or 1
    if max(load_start[0], load_end[0]) > cpus * 0.75:
        print(
            f"  note: load average {load_start[0]:.1f} → {load_end[0]:.1f} on {cpus} CPUs — other "
            "processes were running, so wall times are inflated (cpu ms less so)"
        )
    first_lines = refusal_text.strip().splitlines()
    print(f"\nrefusal message (first 3 lines of {len(first_lines)}):")
    for line in first_lines[:3]:
        print("  " + line)

    profile_text = ""
    if slow or args.profile:
        runner.guard()  # make sure the cache is warm
        profile_text = runner.ok([sys.executable, "-c", PROFILE])
        print("\ncProfile of a warm guard run (cumulative):")
        print(textwrap.indent(profile_text.strip(), "  "))

    for problem in problems:
        print(f"\nPROBLEM: {problem}")

    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "target_ms": TARGET_MS,
                    "meets_target": not slow,
                    "fixture": {
                        "files": len(f.files),
                        "dirs": DIRS,
                        "notes": NOTES,
                        "tolerant": len(f.tolerant),
                        "flagged": len(f.flagged),
                        "staged": {k: len(v) for k, v in f.staged.items()},
                        "expected_refused_edits": len(f.expected_blocked),
                        "packed": not args.loose,
                        "build_s": {k: round(v, 2) for k, v in f.build_s.items()},
                    },
                    "python": sys.version.split()[0],
                    "cpus": os.cpu_count(),
                    "load_average": {"start": load_start, "end": load_end},
                    "pygit2": importlib.metadata.version("pygit2"),
                    "libgit2": pygit2.LIBGIT2_VERSION,
                    "guard_command": runner.redline,
                    "rows": [r.as_json() for r in rows],
                    "phases": breakdown,
                    "imports_ms": {
                        name: {"cumulative": round(ms, 2), **{c: round(m, 2) for c, m in ch}}
                        for name, ms, ch in imports
                    },
                    "profile": profile_text or None,
                    "problems": problems,
                },
                indent=1,
            )
            + "\n"
        )
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
