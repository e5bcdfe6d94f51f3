"""Many clients and sessions at once against one real daemon.

Four sessions, two client threads each (every thread with its own socket
connection), ten edits per client to its own file: every edit is applied,
each session's branch holds exactly its twenty commits, and each client's
commits appear in the order it sent them.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from gitmode_fixtures import GitMode, assert_fsck_clean, commit_records, porcelain, rev
from redline.daemon.client import Client

SESSIONS = 4
CLIENTS = 2
EDITS = 10


def file_for(client: int) -> str:
    return f"work/client{client}.txt"


def content(done: int) -> str:
    """The client file after ``done`` edits: line i reads 'edited i' once edit i ran."""
    return "".join(f"line {i}: {'edited' if i < done else 'original'}\n" for i in range(EDITS))


def run_client(socket: Path, session: str, client: int, out: dict[tuple[str, int], Any]) -> None:
    results = []
    try:
        with Client(socket, timeout=120) as conn:
            for i in range(EDITS):
                request = {
                    "tool": "edit",
                    "path": file_for(client),
                    "old_string": f"line {i}: original\n",
                    "new_string": f"line {i}: edited\n",
                }
                results.append(conn.call("apply", {"session": session, "request": request}))
        out[(session, client)] = results
    except BaseException as exc:  # reported by the main thread
        out[(session, client)] = exc


def test_four_sessions_two_clients_each_ten_edits(gm: GitMode) -> None:
    for client in range(CLIENTS):
        (gm.repo / file_for(client)).parent.mkdir(exist_ok=True)
        (gm.repo / file_for(client)).write_text(content(0))
    gm.git("add", "work")
    gm.git("commit", "-q", "-m", "client files")
    base = rev(gm.repo, "HEAD")
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    socket = gm.socket()
    names = [f"s{n}" for n in range(SESSIONS)]
    with Client(socket) as setup:
        worktrees = {n: Path(setup.call("session.open", {"name": n})["worktree"]) for n in names}

    out: dict[tuple[str, int], Any] = {}
    threads = [
        threading.Thread(target=run_client, args=(socket, name, client, out))
        for name in names
        for client in range(CLIENTS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
        assert not thread.is_alive(), "a client hung"

    for key, results in out.items():
        assert not isinstance(results, BaseException), f"{key}: {results!r}"
    assert len(out) == SESSIONS * CLIENTS

    for name in names:
        branch = f"redline/{name}"
        records = {r.commit: r for r in commit_records(gm.repo, branch, base)}
        assert len(records) == CLIENTS * EDITS, name
        position = {commit: i for i, commit in enumerate(records)}
        for client in range(CLIENTS):
            results = out[(name, client)]
            assert [r["status"] for r in results] == ["applied"] * EDITS
            assert all(r["session"] == name for r in results)
            mine = []
            for i, result in enumerate(results):
                [info] = result["commits"]  # never an "external" commit: nobody else wrote
                assert info["source"] == "agent"
                assert info["paths"] == [file_for(client)]
                record = records[info["commit"]]
                assert record.files == [file_for(client)]
                assert record.trailers == [info["edit"]]
                note = record.note
                assert note is not None and note["edit"] == info["edit"]
                assert note["session"] == name
                assert note["operations"][0]["start_line"] == i + 1
                mine.append(position[info["commit"]])
            assert mine == sorted(mine), f"{name}/client{client}: commits out of order"
        for client in range(CLIENTS):
            assert (worktrees[name] / file_for(client)).read_text() == content(EDITS)
            assert gm.git("show", f"{branch}:{file_for(client)}") == content(EDITS)
        assert porcelain(worktrees[name]) == ""

    assert gm.cli.status()["running"] is True
    assert_fsck_clean(gm.repo)
    notes = gm.git("notes", "--ref=redline", "list").splitlines()
    assert len(notes) == SESSIONS * CLIENTS * EDITS
