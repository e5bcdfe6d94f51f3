"""What ``redline apply --session`` prints: the daemon cuts its answer to the fields that
say something (or keeps every field, with ``--full``), and the client prints it as it
is — the same as the embedded call prints for the same result."""

from __future__ import annotations

import json

from gitmode_fixtures import GitMode, gm
from redline.engine.result import shown

__all__ = ["gm"]

FUZZY = {"tool": "edit", "path": "b.py", "old_string": "VALUE  =  1", "new_string": "VALUE = 2"}


def test_the_answer_is_cut_as_the_embedded_call_cuts_it(gm: GitMode) -> None:
    gm.cli.open_session("s")
    code, full = gm.cli.apply("s", FUZZY, "--dry-run", "--full")
    assert code == 0 and full["status"] == "applied" and full["match_type"] != "exact"
    assert "error" in full and full["error"] is None  # every field, defaults included
    code, cut = gm.cli.apply("s", FUZZY, "--dry-run")
    assert code == 0
    assert cut == shown(full)
    assert "error" not in cut and "diff" in cut  # a tolerant match keeps what it wrote


def test_an_answer_made_by_the_client_is_cut_too(gm: GitMode) -> None:
    """A refusal the client makes itself (no such session) is cut as a result is."""
    gm.cli.open_session("s")
    proc = gm.cli.run("apply", "--session", "nope", "--repo", str(gm.repo), input=json.dumps(FUZZY))
    assert proc.returncode == 2
    answer = json.loads(proc.stdout)
    assert answer == shown(answer)
    assert "no session named 'nope'" in answer["error"] and "diff" not in answer
