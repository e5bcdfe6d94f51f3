"""The daemon logs refused requests for ``redline stats``, and never fails one over it."""

from __future__ import annotations

import json

from gitmode_fixtures import GitMode, gm

__all__ = ["gm"]

NO_MATCH = {"tool": "edit", "path": "c.txt", "old_string": "nothing like it\n", "new_string": "x"}
APPLIES = {"tool": "edit", "path": "c.txt", "old_string": "beta\n", "new_string": "BETA\n"}


def test_only_refusals_are_logged_and_dry_runs_not_at_all(gm: GitMode) -> None:
    gm.cli.open_session("s")
    assert gm.cli.apply("s", APPLIES)[1]["status"] == "applied"
    assert gm.cli.apply("s", NO_MATCH, "--dry-run")[1]["status"] == "no_match"
    code, result = gm.cli.apply("s", NO_MATCH)
    assert (code, result["status"]) == (1, "no_match")
    log = gm.repo / ".git" / "redline" / "outcomes" / "s.jsonl"
    [line] = [json.loads(x) for x in log.read_text().splitlines()]
    assert (line["session"], line["status"], line["path"], line["tool"]) == (
        "s", "no_match", "c.txt", "edit",
    )  # fmt: skip


def test_a_log_that_cannot_be_written_fails_nothing(gm: GitMode) -> None:
    gm.cli.open_session("s")
    state = gm.repo / ".git" / "redline"
    (state / "outcomes").write_text("a file where the log's folder goes\n")
    code, result = gm.cli.apply("s", NO_MATCH)
    assert (code, result["status"]) == (1, "no_match")
    assert result["error"].startswith("old_string not found in file")
    assert gm.cli.status()["running"] is True
    assert gm.cli.apply("s", APPLIES)[1]["status"] == "applied"
    assert "outcome not recorded" in (state / "daemon.log").read_text()
