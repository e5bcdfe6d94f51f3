"""A result's plain data: every field, nested records copied, nothing shared."""

from __future__ import annotations

import json
from typing import Any

from redline.engine.records import names
from redline.engine.result import (
    CONTRACT,
    CommitReport,
    Failure,
    GroupReport,
    HunkReport,
    Match,
    Result,
    Tolerance,
    shown,
)


def asdict(value: Any) -> Any:
    """A record's fields as plain data, nested records and containers copied (what
    ``dataclasses.asdict`` gives a dataclass): the oracle ``to_dict`` is held to."""
    if isinstance(value, list | tuple):
        return type(value)(asdict(item) for item in value)
    if isinstance(value, dict):
        return {key: asdict(item) for key, item in value.items()}
    if hasattr(type(value), "__record_fields__"):
        return {name: asdict(getattr(value, name)) for name in names(type(value))}
    return value


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


# --- what a caller is sent (shown) --------------------------------------------------


def exact_edit() -> Result:
    return Result(
        "applied",
        path="a.py",
        match_type="exact",
        confidence=1.0,
        matched_text="x = 1\n",
        matches=[Match("exact", 1.0, "x = 1\n", 3, 3)],
        diff="--- a/a.py\n+++ b/a.py\n@@ -3 +3 @@\n-x = 1\n+x = 2\n",
    )


def test_full_keeps_every_key_as_to_dict_gives_it() -> None:
    for result in (full_result(), exact_edit(), Result("invalid", error="bad")):
        assert shown(result.to_dict(), full=True) == result.to_dict()


def test_an_exact_edit_is_the_contract_and_its_lines() -> None:
    assert shown(exact_edit().to_dict()) == {
        "status": "applied",
        "path": "a.py",
        "match_type": "exact",
        "confidence": 1.0,
        "matched_text": "x = 1\n",
        "start_line": 3,
        "end_line": 3,
    }


def test_the_contract_fields_stay_even_when_null() -> None:
    refused = shown(Result("no_match", path="a.py", error="old_string not found in file").to_dict())
    assert refused == {
        "status": "no_match",
        "path": "a.py",
        "match_type": None,
        "confidence": None,
        "matched_text": None,
        "error": "old_string not found in file",
    }
    assert set(CONTRACT) <= set(shown(Result("failed").to_dict()))


def test_a_tolerant_match_keeps_its_diff_and_what_it_tolerated() -> None:
    result = exact_edit()
    result.match_type, result.confidence = "whitespace", 0.95
    result.matches = [Match("whitespace", 0.95, "x = 1\n", 3, 3)]
    result.tolerated = [Tolerance("indentation", (3,), "indentation differed on 1 line")]
    data = shown(result.to_dict())
    assert data["diff"] == result.diff
    assert data["tolerated"] == [
        {"kind": "indentation", "lines": [3], "text": "indentation differed on 1 line"}
    ]


def test_cleaned_characters_or_a_dry_run_keep_the_diff_of_an_exact_match() -> None:
    cleaned = exact_edit()
    cleaned.cleaned = ["U+200B×1"]
    dry = exact_edit()
    dry.dry_run = True
    assert shown(cleaned.to_dict())["diff"] == cleaned.diff
    assert shown(dry.to_dict())["diff"] == dry.diff
    assert shown(dry.to_dict())["dry_run"] is True


def test_several_spans_stay_a_list_of_matches() -> None:
    result = exact_edit()
    result.matches.append(Match("exact", 1.0, "x = 1\n", 7, 7))
    data = shown(result.to_dict())
    assert [m["start_line"] for m in data["matches"]] == [3, 7]
    assert "start_line" not in data


def test_a_read_keeps_its_own_lines_and_truncated_false() -> None:
    read = Result("read", path="a.py", content="     1\tx", start_line=1, end_line=1, total_lines=1)
    read.truncated = False
    data = shown(read.to_dict())
    assert (data["content"], data["start_line"], data["truncated"]) == ("     1\tx", 1, False)


def test_records_of_a_patch_leave_out_their_defaults() -> None:
    result = Result(
        "partially_applied",
        match_type="exact",
        confidence=1.0,
        written=[GroupReport(["a.py"], ["update a.py"])],
        not_applied=[GroupReport(["b.py"], ["add b.py"], "exists", status="failed")],
        hunks=[HunkReport("a.py", 1, "exact", 1.0, 1, 2, 0, None, "x = 1\n")],
        diff="--- a/a.py\n",
        error="apply_patch partially applied",
    )
    data = shown(result.to_dict())
    assert data["written"] == [{"paths": ["a.py"], "operations": ["update a.py"]}]
    assert data["not_applied"] == [
        {"paths": ["b.py"], "operations": ["add b.py"], "reason": "exists", "status": "failed"}
    ]
    assert data["hunks"] == [
        {
            "path": "a.py",
            "hunk": 1,
            "match_type": "exact",
            "confidence": 1.0,
            "start_line": 1,
            "end_line": 2,
            "other_matches": 0,
            "anchor_found": None,  # no default: the schema requires it
            "matched_text": "x = 1\n",
        }
    ]
    assert "committed" not in data
    assert data["diff"] == "--- a/a.py\n"  # not applied in full: the diff says what was


def test_an_exact_patch_applied_whole_leaves_out_its_diff_and_a_tolerant_one_keeps_it() -> None:
    hunk = HunkReport("a.py", 1, "exact", 1.0, 1, 2, 0, None, "x = 1\n")
    exact = Result("applied", match_type="exact", confidence=1.0, hunks=[hunk], diff="d")
    assert "diff" not in shown(exact.to_dict())
    loose = HunkReport("a.py", 1, "strip", 0.98, 1, 2, 0, None, "x = 1\n")
    tolerant = Result("applied", match_type="strip", confidence=0.98, hunks=[loose], diff="d")
    assert shown(tolerant.to_dict())["diff"] == "d"
