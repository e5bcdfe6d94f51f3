"""One request never blocks everyone: a real daemon on a real socket.

While one session runs large tolerant requests (each one seconds of matching,
within the budget), ``hello`` and an exact edit in another session answer
within 100 ms; requests of one session still come one after the other; past
the budget a request is refused at once, and an exact edit of any size applies.
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import GitMode, commit_records, rev
from perturbations import code, with_slip
from redline.daemon.client import Client
from redline.engine.budget import TOO_LARGE

pytestmark = pytest.mark.slow

BIG_LINES = 25_000  # 1.4 MB
BLOCK = 300  # lines of each large tolerant request: a few seconds of matching before
SLOW_REQUESTS = 3
FAST = 0.100  # seconds: what "answers at once" means
PROBE_EVERY = 0.05


def tolerant_request(n: int) -> dict[str, Any]:
    """A fuzzy edit of a 300-line block (a different block each time)."""
    first = 2_000 + n * 6_000
    block = code(BLOCK, start=first)
    target = f"gamma={first + 1})"
    return {
        "tool": "edit",
        "path": "big.py",
        "old_string": with_slip(block),
        "new_string": block.replace(target, "gamma=-1)"),
    }


def small_edit(i: int) -> dict[str, Any]:
    return {
        "tool": "edit",
        "path": "small.txt",
        "old_string": f"line {i}: original\n",
        "new_string": f"line {i}: edited\n",
    }


@pytest.fixture
def daemon(gm: GitMode) -> Path:
    (gm.repo / "big.py").write_text(code(BIG_LINES))
    (gm.repo / "small.txt").write_text("".join(f"line {i}: original\n" for i in range(200)))
    gm.git("add", "big.py", "small.txt")
    gm.git("commit", "-q", "-m", "big and small files")
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    socket = gm.socket()
    with Client(socket) as setup:
        for name in ("slow", "quick"):
            setup.call("session.open", {"name": name})
    return socket


def timed(conn: Client, method: str, params: dict[str, Any]) -> tuple[float, float, Any]:
    started = time.monotonic()
    result = conn.call(method, params)
    return started, time.monotonic(), result


def test_hello_and_another_sessions_exact_edit_answer_while_a_large_request_runs(
    gm: GitMode, daemon: Path
) -> None:
    slow: list[tuple[float, float, Any]] = []
    failure: list[BaseException] = []

    def run_slow() -> None:
        try:
            with Client(daemon) as conn:
                for n in range(SLOW_REQUESTS):
                    slow.append(
                        timed(conn, "apply", {"session": "slow", "request": tolerant_request(n)})
                    )
        except BaseException as exc:  # reported below
            failure.append(exc)

    hellos: list[tuple[float, float, Any]] = []
    edits: list[tuple[float, float, Any]] = []
    with Client(daemon) as probe:
        probe.call("apply", {"session": "quick", "request": small_edit(199)})  # warm
        thread = threading.Thread(target=run_slow)
        thread.start()
        time.sleep(0.3)  # the first large request is being matched by now
        i = 0
        while thread.is_alive() and i < 150:
            hellos.append(timed(probe, "hello", {"protocol": 1}))
            edits.append(timed(probe, "apply", {"session": "quick", "request": small_edit(i)}))
            i += 1
            time.sleep(PROBE_EVERY)
        thread.join(timeout=120)
    assert not thread.is_alive(), "the large requests never finished"
    assert not failure, failure

    # The large requests ran, each for a while, and applied.
    assert len(slow) == SLOW_REQUESTS
    for _, _, result in slow:
        assert result["status"] == "applied", result
        assert result["match_type"] == "fuzzy"
    busy = [(start, end) for start, end, _ in slow]
    assert max(end - start for start, end in busy) > 0.3

    def during(probes: list[tuple[float, float, Any]]) -> list[float]:
        """How long each probe took that was sent and answered while a large request ran."""
        return [
            end - start
            for start, end, _ in probes
            if any(b0 < start and end < b1 for b0, b1 in busy)
        ]

    hello_times, edit_times = during(hellos), during(edits)
    # Before, every probe waited for the large request it came behind: none
    # would be answered while one ran.
    assert len(hello_times) >= 3, (hellos, busy)
    assert len(edit_times) >= 3, (edits, busy)
    assert min(hello_times) < FAST, sorted(hello_times)
    assert min(edit_times) < FAST, sorted(edit_times)
    # Not only the luckiest probe: most answer soon (generous, for a loaded machine).
    assert statistics.median(hello_times) < 4 * FAST, sorted(hello_times)
    assert statistics.median(edit_times) < 4 * FAST, sorted(edit_times)
    for _, _, result in edits:
        assert result["status"] == "applied", result
        assert result["match_type"] == "exact"


def test_a_sessions_requests_are_served_in_the_order_they_came(gm: GitMode, daemon: Path) -> None:
    base = rev(gm.repo, "redline/slow")
    answers: dict[str, tuple[float, float, Any]] = {}

    def send(label: str, request: dict[str, Any]) -> None:
        with Client(daemon) as conn:
            answers[label] = timed(conn, "apply", {"session": "slow", "request": request})

    large = threading.Thread(target=send, args=("large", tolerant_request(0)))
    large.start()
    time.sleep(0.2)  # sent after the large one, on another connection
    quick = threading.Thread(target=send, args=("quick", small_edit(5)))
    quick.start()
    large.join(timeout=120)
    quick.join(timeout=120)
    assert set(answers) == {"large", "quick"}
    assert answers["quick"][0] > answers["large"][0]
    # The quick edit waited for the large one of its own session.
    assert answers["quick"][1] >= answers["large"][1]
    assert answers["large"][2]["status"] == answers["quick"][2]["status"] == "applied"
    records = commit_records(gm.repo, "redline/slow", base)
    assert [r.files for r in records] == [["big.py"], ["small.txt"]], records


def test_closing_a_session_waits_for_its_request(gm: GitMode, daemon: Path) -> None:
    answers: dict[str, tuple[float, float, Any]] = {}

    def send(label: str, method: str, params: dict[str, Any]) -> None:
        with Client(daemon) as conn:
            answers[label] = timed(conn, method, params)

    large = threading.Thread(
        target=send, args=("apply", "apply", {"session": "slow", "request": tolerant_request(1)})
    )
    large.start()
    time.sleep(0.2)
    close = threading.Thread(target=send, args=("close", "session.close", {"name": "slow"}))
    close.start()
    large.join(timeout=120)
    close.join(timeout=120)
    assert answers["apply"][2]["status"] == "applied"
    assert answers["close"][2] == {"name": "slow", "closed": True}
    assert answers["close"][1] >= answers["apply"][1]
    edited = gm.git("show", "redline/slow:big.py")
    assert "gamma=-1)" in edited


def test_past_the_budget_a_request_is_refused_at_once_and_nothing_is_committed(
    gm: GitMode, daemon: Path
) -> None:
    base = rev(gm.repo, "redline/slow")
    block = code(3_000, start=1_000)  # 170 KB against 1.4 MB: minutes of matching before
    request = {
        "tool": "edit",
        "path": "big.py",
        "old_string": with_slip(block),
        "new_string": block.replace("gamma=1001)", "gamma=0)"),
    }
    with Client(daemon) as conn:
        started = time.monotonic()
        result = conn.call("apply", {"session": "slow", "request": request})
        took = time.monotonic() - started
        assert conn.call("hello", {"protocol": 1})["protocol"] == 1
    assert took < 5
    assert result["status"] == "no_match"
    assert TOO_LARGE in result["error"]
    assert (
        f"old_string: {len(request['old_string']):,} characters in 3,000 lines" in result["error"]
    )
    assert "the limit is 1.0e11" in result["error"]
    assert result.get("commits", []) == []
    assert rev(gm.repo, "redline/slow") == base


def test_an_exact_edit_of_any_size_applies(gm: GitMode, daemon: Path) -> None:
    old = code(10_000, start=10_000)  # 570 KB, exact
    new = old.replace("alpha", "ALPHA")
    with Client(daemon) as conn:
        result = conn.call(
            "apply",
            {
                "session": "slow",
                "request": {"tool": "edit", "path": "big.py", "old_string": old, "new_string": new},
            },
        )
    assert result["status"] == "applied"
    assert result["match_type"] == "exact"
    assert gm.git("show", "redline/slow:big.py") == code(BIG_LINES).replace(old, new)
