"""``redline stats`` end to end, on the repository of ``tests/stats_fixtures.py``.

Every figure is worked out from the scenario's plan (its docstring draws the
history): which edits landed with which match_type and confidence, which was
flagged and approved, which requests were refused, and which later commit
rewrote which inserted line at what distance.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import pytest

from gitmode_fixtures import git, git_mode, note_of
from redline.cli.stats import bar, parse_since
from stats_fixtures import Scenario, built
from support import cli as inproc


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    base = tmp_path_factory.mktemp("stats")
    home = base / "home"
    home.mkdir()
    with built(base, home) as s:
        yield s


def stats(s: Scenario, *args: str, repo: Path | None = None, **env: str) -> dict[str, Any]:
    proc = run(s, "--json", *args, repo=repo, **env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert isinstance(data, dict)
    return data


def run(
    s: Scenario, *args: str, repo: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    where = repo or s.repo
    proc = inproc.run(["stats", "--repo", str(where), *args], env={**s.mode.env, **env}, cwd=where)
    assert "Traceback" not in proc.stderr
    return proc


def rows(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["match_type"]: row for row in data["match_types"]}


def quart(values: list[float]) -> dict[str, float]:
    """Quartiles by linear interpolation, worked out for one or two values."""
    low, high = min(values), max(values)
    return {
        "min": round(low, 4),
        "q1": round(low + 0.25 * (high - low), 4),
        "median": round(low + 0.5 * (high - low), 4),
        "q3": round(low + 0.75 * (high - low), 4),
        "max": round(high, 4),
    }


def test_the_scenario_went_as_planned(scenario: Scenario) -> None:
    r = scenario.results
    assert [r[n]["match_type"] for n in ("E1", "E2", "E3", "E4", "E6", "E7")] == [
        "exact", "whitespace", "fuzzy", "fuzzy", "exact", "exact",
    ]  # fmt: skip
    assert [h["match_type"] for h in r["E5"]["hunks"]] == ["exact"]
    assert r["E4"]["flags"] and not r["E3"].get("flags")
    assert [r[n]["status"] for n in ("no_match", "ambiguous", "rejected")] == [
        "no_match", "ambiguous", "rejected",
    ]  # fmt: skip
    assert r["rejected"]["match_type"] == "fuzzy"
    assert [
        (r[n]["status"], r[n]["match_type"]) for n in ("broken_whitespace", "broken_exact")
    ] == [
        ("validation_failed", "whitespace"),
        ("validation_failed", "exact"),
    ]
    assert note_of(scenario.repo, scenario.commit("E4"))["approvals"]


def test_the_table_number_by_number(scenario: Scenario) -> None:
    data = stats(scenario)
    assert data["schema"] == "redline.stats/1"
    assert (data["session"], data["since"], data["later"]) == (None, None, 10)
    assert data["requests"] == 7  # E1..E7
    assert data["edits"] == 7
    assert [row["match_type"] for row in data["match_types"]] == ["exact", "whitespace", "fuzzy"]
    table = rows(data)
    fuzzy = [scenario.confidence("E3"), scenario.confidence("E4")]
    assert table["exact"] == {
        "match_type": "exact",
        "edits": 4,  # E1, E5's hunk, E6, E7
        "share": round(4 / 7, 4),
        "confidence": quart([1.0]),
        "tools": {"apply_patch": 1, "edit": 3},
        "flagged": 0,
        "approved": 0,
        "rejected": 0,
        "validation_failed": 1,  # s2's edit of b.py that would not parse
        "inserted_lines": 6,  # E1 2, E5 2, E6 1, E7 1
        "later_changed_lines": 3,  # E1's two (L1 at 6, E7 at 10), E5's BETA (E6 at 1)
        "later_changed_rate": 0.5,
    }
    assert table["whitespace"] == {
        "match_type": "whitespace",
        "edits": 1,
        "share": round(1 / 7, 4),
        "confidence": quart([0.95]),
        "tools": {"edit": 1},
        "flagged": 0,
        "approved": 0,
        "rejected": 0,
        "validation_failed": 1,  # s1's edit of util.py that would not parse
        "inserted_lines": 1,
        "later_changed_lines": 0,
        "later_changed_rate": 0.0,
    }
    assert table["fuzzy"] == {
        "match_type": "fuzzy",
        "edits": 2,  # E3, E4
        "share": round(2 / 7, 4),
        "confidence": quart(fuzzy),
        "tools": {"edit": 2},
        "flagged": 1,  # E4, on the protected migration
        "approved": 1,  # by `redline approve`
        "rejected": 1,  # s2's fuzzy migration edit, from the outcome log
        "validation_failed": 0,
        "inserted_lines": 3,  # E3 1, E4 2
        "later_changed_lines": 2,  # E3's line (L2 at 5), E4's created_at (L3 at 5)
        "later_changed_rate": round(2 / 3, 4),
    }
    assert data["inserted_lines"] == 10
    assert data["later_changed_lines"] == 5
    assert data["later_changed_rate"] == 0.5
    assert data["outcomes"] == {
        "rejected": 1,
        "validation_failed": 2,
        "no_match": 1,
        "ambiguous": 1,
    }


@pytest.mark.parametrize(
    ("later", "exact", "fuzzy"),
    [
        (10, 3, 2),  # E7 rewrites E1's first line 10 commits after it
        (9, 2, 2),  # ...one too many
        (6, 2, 2),  # L1 rewrites E1's second line at 6
        (5, 1, 2),  # only E6's rewrite of E5's BETA (at 1); L2 and L3 at 5 still count
        (4, 1, 0),  # L2 and L3 are 5 commits after E3 and E4
        (1, 1, 0),
    ],
)
def test_later_changed_counts_commits_within_the_window(
    scenario: Scenario, later: int, exact: int, fuzzy: int
) -> None:
    table = rows(stats(scenario, "--later", str(later)))
    assert table["exact"]["later_changed_lines"] == exact
    assert table["exact"]["later_changed_rate"] == round(exact / 6, 4)
    assert table["fuzzy"]["later_changed_lines"] == fuzzy
    assert table["whitespace"]["later_changed_lines"] == 0


def test_a_session_or_all(scenario: Scenario) -> None:
    everything = stats(scenario)
    assert stats(scenario, "--all") == everything
    s1 = stats(scenario, "--session", "s1")
    assert s1["session"] == "s1"
    assert {name: row["edits"] for name, row in rows(s1).items()} == {
        "exact": 3, "whitespace": 1, "fuzzy": 2,
    }  # fmt: skip
    assert rows(s1)["fuzzy"]["rejected"] == 0  # the rejection was in s2
    assert rows(s1)["whitespace"]["validation_failed"] == 1
    assert rows(s1)["exact"]["validation_failed"] == 0  # that failure was in s2
    assert s1["outcomes"] == {"rejected": 0, "validation_failed": 1, "no_match": 1, "ambiguous": 1}
    # Lines are followed through every later commit, whichever session made it.
    assert rows(s1)["exact"]["later_changed_lines"] == 3
    s2 = stats(scenario, "--session", "s2")
    assert {
        name: (row["edits"], row["rejected"], row["validation_failed"])
        for name, row in rows(s2).items()
    } == {
        "exact": (1, 0, 1),
        "fuzzy": (0, 1, 0),
    }
    assert rows(s2)["fuzzy"]["share"] == 0.0
    assert rows(s2)["fuzzy"]["confidence"] is None
    assert s2["outcomes"] == {"rejected": 1, "validation_failed": 1, "no_match": 0, "ambiguous": 0}


def test_an_unknown_session_or_both_selections_are_refused(scenario: Scenario) -> None:
    proc = run(scenario, "--session", "nope")
    assert proc.returncode != 0
    assert "no session named 'nope'" in proc.stderr
    assert "redline stats --all" in proc.stderr
    both = run(scenario, "--session", "s1", "--all")
    assert both.returncode == 2
    assert "--session NAME or --all, not both" in both.stderr
    bad = run(scenario, "--session", "../x")
    assert bad.returncode != 0 and "invalid session name" in bad.stderr


def test_since_reads_the_notes_time(scenario: Scenario, tmp_path: Path) -> None:
    """E1's note says it was made in 2020 (rewritten in a copy of the repository)."""
    copy = tmp_path / "copy"
    shutil.copytree(scenario.repo, copy, symlinks=True)
    env = scenario.mode.env
    e1 = scenario.commit("E1")
    note = note_of(copy, e1, env)
    note["created"] = "2020-03-01T12:00:00Z"
    (tmp_path / "note.json").write_text(json.dumps(note))
    git(copy, "notes", "--ref=redline", "add", "-f", "-F", str(tmp_path / "note.json"), e1, env=env)

    assert stats(scenario, repo=copy)["edits"] == 7
    for since in ("2021-01-01", "2020-03-01T12:00:01Z", "1 day ago", "2.weeks.ago"):
        data = stats(scenario, "--since", since, repo=copy)
        assert data["edits"] == 6, since
        assert data["older"] == 1
        assert rows(data)["exact"]["edits"] == 3
        assert rows(data)["exact"]["inserted_lines"] == 4
        assert data["outcomes"]["rejected"] == 1  # logged just now
    assert stats(scenario, "--since", "2020-03-01T12:00:00Z", repo=copy)["edits"] == 7
    assert stats(scenario, "--since", "2020-01-01", repo=copy)["since"] == "2020-01-01T00:00:00Z"

    future = run(scenario, "--since", "2999-01-01", repo=copy)
    assert future.returncode == 0
    assert "no edits since 2999-01-01" in future.stdout
    assert "(7 older)" in future.stdout
    garbled = run(scenario, "--since", "last blue moon", repo=copy)
    assert garbled.returncode == 2
    assert "'last blue moon' is not a date" in garbled.stderr
    assert "2 weeks ago" in garbled.stderr


def test_text_table_and_bar_chart(scenario: Scenario) -> None:
    proc = run(scenario, COLUMNS="80")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    assert lines[0] == f"redline stats for {scenario.repo} (all sessions)"
    exact = next(line for line in lines if line.startswith("exact "))
    assert exact.split()[:8] == ["exact", "4", "57.1%", "1.000", "1.000", "1.000", "1.000", "1.000"]
    assert exact.split()[8:] == ["0", "0", "0", "1", "50.0%", "(3/6", "lines)"]
    whitespace = next(line for line in lines if line.startswith("whitespace "))
    assert whitespace.split()[8:12] == ["0", "0", "0", "1"]
    fuzzy = next(line for line in lines if line.startswith("fuzzy "))
    assert fuzzy.split()[8:12] == ["1", "1", "1", "0"]
    assert "66.7% (2/3 lines)" in fuzzy
    # The chart: 40 cells at 80 columns; 4/7 of 40 cells is 22 and 7/8.
    chart = lines[lines.index("Share of edits") + 1 :][:3]
    assert chart[0] == "  exact            " + "█" * 22 + "▉" + " " * 17 + "  57.1%"
    assert chart[1].startswith("  whitespace       " + "█" * 5 + "▊")  # 1/7 of 40 = 5 6/8
    assert chart[2].startswith("  fuzzy            " + "█" * 11 + "▍")  # 2/7 of 40 = 11 3/8
    assert "a proxy for edits that were wrong" in out
    assert "refused requests (outcome log of this clone): rejected 1, validation_failed 2, " in out
    # A narrow terminal gets a narrower chart, never a wider one.
    narrow = run(scenario, COLUMNS="40").stdout.splitlines()
    narrow_chart = narrow[narrow.index("Share of edits") + 1 :][:3]
    assert all(len(line) <= 40 for line in narrow_chart), narrow_chart


def test_the_help_names_the_proxy_and_the_local_log(scenario: Scenario) -> None:
    proc = run(scenario, "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "a proxy for edits that were wrong" in text
    assert '"applied rate" alone rewards the most aggressive tool' in text
    assert "local to this machine" in text


def test_the_outcome_log_holds_the_refused_requests(scenario: Scenario) -> None:
    folder = scenario.repo / ".git" / "redline" / "outcomes"
    assert sorted(p.name for p in folder.iterdir()) == ["s1.jsonl", "s2.jsonl"]
    s1 = [json.loads(line) for line in (folder / "s1.jsonl").read_text().splitlines()]
    s2 = [json.loads(line) for line in (folder / "s2.jsonl").read_text().splitlines()]
    assert [(x["status"], x["match_type"], x["path"]) for x in s1] == [
        ("no_match", None, "c.txt"),
        ("ambiguous", "exact", "c.txt"),
        ("validation_failed", "whitespace", "pkg/util.py"),
    ]
    rejected, broken = s2
    assert (broken["status"], broken["match_type"], broken["path"]) == (
        "validation_failed",
        "exact",
        "b.py",
    )
    assert rejected["status"] == "rejected"
    assert rejected["session"] == "s2"
    assert rejected["tool"] == "edit"
    assert rejected["match_type"] == "fuzzy"
    assert rejected["confidence"] == scenario.results["rejected"]["confidence"]
    assert rejected["path"] == "migrations/001_users.sql"
    assert len(rejected["request"]) == 16
    stamp = datetime.strptime(rejected["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(stamp.timestamp() - datetime.now(UTC).timestamp()) < 3600
    assert (folder / "s1.jsonl").stat().st_mode & 0o777 == 0o600


def test_a_repository_without_notes_says_so(tmp_path: Path, hermetic_environment: Path) -> None:
    with git_mode(tmp_path, hermetic_environment) as mode:
        proc = mode.cli.run("stats", "--repo", str(mode.repo))
        assert proc.returncode == 0, proc.stderr
        assert "no redline edits recorded here" in proc.stdout
        assert "redline apply --session NAME" in proc.stdout
        assert "git fetch origin refs/notes/redline:refs/notes/redline" in proc.stdout
        data = json.loads(mode.cli.ok("stats", "--json", "--repo", str(mode.repo)))
        assert (data["edits"], data["match_types"]) == (0, [])
        assert mode.cli.status()["running"] is False  # reading started no daemon


def test_parse_since() -> None:
    now = datetime(2026, 3, 15, 12, 0, tzinfo=UTC).timestamp()
    assert parse_since("2 weeks ago", now) == now - 14 * 86400
    assert parse_since("2.weeks.ago", now) == now - 14 * 86400
    assert parse_since("3 days", now) == now - 3 * 86400
    assert parse_since("1 hour ago", now) == now - 3600
    assert parse_since("now", now) == now
    assert (
        parse_since("2026-01-31T09:00:00Z", now) == datetime(2026, 1, 31, 9, tzinfo=UTC).timestamp()
    )
    assert parse_since("2026-01-31", now) == datetime(2026, 1, 31).timestamp()  # local midnight
    today = parse_since("today", now)
    assert parse_since("yesterday", now) == pytest.approx(today - 86400, abs=3600)  # DST
    with pytest.raises(click.BadParameter, match="is not a date"):
        parse_since("soon", now)
    for outside in ("0001-01-01", "9" * 400 + " years ago"):  # past the clock's range
        with pytest.raises(click.BadParameter, match="is not a date"):
            parse_since(outside, now)


def test_bar() -> None:
    assert bar(1.0, 4) == "████"
    assert bar(0.0, 4) == "    "
    assert bar(0.5, 3) == "█▌  "[:3]
    assert bar(1 / 16, 2) == "▏ "
    assert all(len(bar(share / 100, 7)) == 7 for share in range(101))


def test_the_cli_default_window_is_the_computations() -> None:
    from redline.cli.stats import DEFAULT_LATER
    from redline.gitops import stats

    assert DEFAULT_LATER == stats.DEFAULT_LATER
