"""A result's plain data: every field, nested records copied, nothing shared."""

from __future__ import annotations

import json
from dataclasses import asdict

from redline.engine.result import CommitReport, Failure, GroupReport, HunkReport, Match, Result


def full_result() -> Result:
    return Result(
        "partially_applied",
        path="a.py",
        match_type="whitespace",
        confidence=0.95,
        matched_text="x = 1\n",
        matches=[Match("whitespace", 0.95, "x = 1\n", 1, 1)],
        error="one group failed",
        hint="re-read",
        cleaned=["zero width space"],
        diff="--- a/a.py\n",
        skipped=[2],
        failures=[Failure(1, "no_match", "not found")],
        committed=[GroupReport(["a.py"], ["update"])],
        not_applied=[GroupReport(["b.py"], ["add"], "exists")],
        hunks=[HunkReport("a.py", 0, "exact", 1.0, 1, 2, 0, None, "x = 1\n")],
        dry_run=True,
        session="s",
        commits=[CommitReport("c0ffee", "e1", ["a.py"], "agent")],
        flags=[{"rule": "protected", "path": "a.py"}],
    )


def test_to_dict_is_what_asdict_gives() -> None:
    result = full_result()
    assert result.to_dict() == asdict(result)
    json.dumps(result.to_dict())  # plain data throughout


def test_to_dict_shares_no_list_or_record_with_the_result() -> None:
    result = full_result()
    data = result.to_dict()
    data["matches"][0]["confidence"] = 0.0
    data["committed"][0]["paths"].append("c.py")
    data["commits"][0]["paths"].clear()
    data["flags"][0]["rule"] = "changed"
    data["cleaned"].append("more")
    assert result.to_dict() == asdict(full_result())
