"""Benchmark an MCP tool call against the same request sent straight to the daemon's socket.

    python bench/mcp_bench.py [-n N] [--warmup W] [--dirs D] [--json FILE] [--keep] [--dir DIR]

Builds a repository of D x 100 modules (default 2: 200 files) the way
``git_bench.py`` does, starts ``redline mcp --repo R --session mcp-bench`` as
an MCP client starts it (a subprocess on stdio, driven by the SDK's own
``ClientSession``), and connects a socket client (``daemon.client.Client``) to
the daemon that server started. Then, alternating, N times each:

- **MCP**: ``call_tool("edit", …)``: client → stdio → server → daemon →
  commit → answer (the result text and structured content) → client;
- **socket**: ``Client.call("apply", …)`` in this process, same session, same
  kind of one-line exact edit that commits.

Alternating puts both under the same machine load. After W warm-up calls of
each (the session's first requests, which ``session_bench.py`` measures), it
prints p50 and p90 of both and the ratio of the p50s against the target
(MCP ≤ 2× socket). ``--profile`` runs the server under cProfile and prints its
top functions (the server's side only). Exit status 0 unless the bench crashes
or an edit is not applied.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

# This checkout's client and server.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import anyio
import mcp_types as types

from git_bench import EditStream, build_repo, percentile
from mcp import ClientSession, StdioServerParameters, stdio_client
from redline.daemon.client import Client

SRC = Path(__file__).resolve().parent.parent / "src"
TARGET_RATIO = 2.0  # MCP p50 / socket p50
SESSION = "mcp-bench"


class Runner:
    """What ``git_bench.build_repo`` needs: ``run`` and ``git``, in a clean environment."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def run(self, args: list[str]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(args, env=self.env, capture_output=True, check=True)

    def git(self, repo: Path, *args: str) -> str:
        return self.run(["git", "-C", str(repo), *args]).stdout.decode()


def environment(base: Path) -> dict[str, str]:
    home, runtime = base / "h", base / "x"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON", "REDLINE_"))}
    env.update(
        HOME=str(home),
        XDG_RUNTIME_DIR=str(runtime),
        XDG_CONFIG_HOME=str(home / ".config"),
        REDLINE_IDLE_TIMEOUT="600",
        PYTHONPATH=str(SRC),
        LC_ALL="C.UTF-8",
    )
    return env


@contextlib.asynccontextmanager
async def mcp_session(
    env: dict[str, str], repo: Path, errlog: Path, profile: Path | None
) -> AsyncIterator[ClientSession]:
    prefix = ["-m", "cProfile", "-o", str(profile)] if profile else []
    params = StdioServerParameters(
        command=sys.executable,
        args=[*prefix, "-m", "redline", "mcp", "--repo", str(repo), "--session", SESSION],
        env=env,
        cwd=str(repo),
    )
    with errlog.open("a") as log:
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(
                read, write, client_info=types.Implementation(name="mcp-bench", version="1")
            ) as session,
        ):
            await session.initialize()
            yield session


async def measure(
    env: dict[str, str], repo: Path, n: int, warmup: int, dirs: int, profile: Path | None
) -> dict[str, Any]:
    stream = EditStream.over(dirs)
    mcp_ms: list[float] = []
    socket_ms: list[float] = []
    async with mcp_session(env, repo, repo.parent / "mcp-stderr.log", profile) as session:
        # The server opens the session (starting the daemon) on its first call.
        path, request = stream.next()
        stream.record(path, (await call(session, request))[1])
        status = json.loads(
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "redline",
                    "daemon",
                    "status",
                    "--json",
                    "--repo",
                    str(repo),
                ],
                env=env,
                capture_output=True,
                check=True,
            ).stdout
        )
        with Client(Path(status["socket"])) as client:
            for i in range(warmup + n):
                path, request = stream.next()
                elapsed, result = await call(session, request)
                stream.record(path, result)
                if i >= warmup:
                    mcp_ms.append(elapsed)
                path, request = stream.next()
                started = time.perf_counter()
                # Every field, as redline mcp asks the daemon for (its text needs the diff).
                params = {"session": SESSION, "request": request, "full": True}
                result = client.call("apply", params)
                elapsed = (time.perf_counter() - started) * 1000
                stream.record(path, result)
                if i >= warmup:
                    socket_ms.append(elapsed)
    if stream.failures:
        raise RuntimeError("edits not applied: " + "; ".join(stream.failures[:5]))
    return {"mcp": mcp_ms, "socket": socket_ms, "daemon_pid": status.get("pid")}


async def call(session: ClientSession, request: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    arguments = {k: v for k, v in request.items() if k != "tool"}
    started = time.perf_counter()
    answer = await session.call_tool("edit", arguments)
    elapsed = (time.perf_counter() - started) * 1000
    result = answer.structured_content or {}
    return elapsed, result


def stop_daemon(env: dict[str, str], repo: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "redline", "daemon", "stop", "--repo", str(repo)],
        env=env,
        capture_output=True,
        check=False,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=200, help="measured calls of each kind")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured calls of each first")
    parser.add_argument("--dirs", type=int, default=2, help="directories of 100 modules")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--profile", action="store_true", help="profile the server's side")
    parser.add_argument("--keep", action="store_true", help="keep the repository")
    parser.add_argument("--dir", type=Path, default=None, help="where to build it")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="rl-mcpb-", dir=args.dir))
    env = environment(base)
    repo = base / "repo"
    profile = base / "server.prof" if args.profile else None
    try:
        built = build_repo(Runner(env), repo, args.dirs)
        found = anyio.run(measure, env, repo, args.n, args.warmup, args.dirs, profile)
    finally:
        if repo.exists():
            stop_daemon(env, repo)
    figures = {
        name: {"p50": percentile(found[name], 50), "p90": percentile(found[name], 90)}
        for name in ("mcp", "socket")
    }
    ratio = figures["mcp"]["p50"] / figures["socket"]["p50"]
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cpus; repository of "
        f"{args.dirs * 100} files built in {built:.1f} s; n={args.n} (+{args.warmup} warm-up)"
    )
    print(f"{'':8} {'p50 ms':>8} {'p90 ms':>8}")
    for name in ("mcp", "socket"):
        print(f"{name:8} {figures[name]['p50']:8.2f} {figures[name]['p90']:8.2f}")
    verdict = "meets" if ratio <= TARGET_RATIO else "MISSES"
    print(f"MCP / socket p50: {ratio:.2f}x ({verdict} the target of {TARGET_RATIO:g}x)")
    if profile is not None:
        import pstats

        pstats.Stats(str(profile)).sort_stats("cumulative").print_stats(25)
    if args.json is not None:
        args.json.write_text(
            json.dumps({"figures": figures, "ratio": ratio, "n": args.n}, indent=2)
        )
    if args.keep:
        print(f"kept {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
