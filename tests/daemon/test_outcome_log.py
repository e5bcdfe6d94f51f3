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


def test_a_patchs_refused_file_group_is_logged_with_its_evidence(gm: GitMode) -> None:
    """A patch partly applied: the group that failed validation is a line of its own,
    with how its hunk matched; the group that applied is not."""
    patch = (
        "*** Begin Patch\n"
        "*** Update File: a.py\n@@\n def greet(name):\n-    return 'Hello, ' + name\n"
        "+    return ('Hello, ' + name\n"
        "*** Update File: c.txt\n@@\n alpha\n-beta\n+BETA\n"
        "*** End Patch"
    )
    gm.cli.open_session("s")
    code, result = gm.cli.apply("s", {"tool": "apply_patch", "patch": patch, "validate": True})
    assert (code, result["status"]) == (3, "partially_applied")
    [refused] = result["not_applied"]
    assert (refused["paths"], refused["status"]) == (["a.py"], "validation_failed")
    assert (refused["match_type"], refused["confidence"]) == ("exact", 1.0)
    assert "status" not in result["committed"][0]  # applied: no status of its own
    log = gm.repo / ".git" / "redline" / "outcomes" / "s.jsonl"
    [line] = [json.loads(x) for x in log.read_text().splitlines()]
    assert (line["status"], line["path"], line["tool"], line["match_type"]) == (
        "validation_failed", "a.py", "apply_patch", "exact",
    )  # fmt: skip
    stats = json.loads(gm.cli.run("stats", "--repo", str(gm.repo), "--json").stdout)
    rows = {row["match_type"]: row for row in stats["match_types"]}
    assert rows["exact"]["validation_failed"] == 1
