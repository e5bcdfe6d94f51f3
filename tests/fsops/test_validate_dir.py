"""Validation in embedded mode: an edit or a patch group that leaves a file unparseable
writes nothing; the others still apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engine.edit import EditItem, EditRequest
from redline.engine.patch import PatchRequest
from redline.engine.policy import Policy
from redline.engine.write import WriteRequest
from redline.fsops.apply import apply_in_directory

APP_PY = "def total(items):\n    return sum(items)\n"
CONFIG_JSON = '{\n  "name": "app",\n  "debug": false\n}\n'
NOTES = "plain text\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(APP_PY)
    (tmp_path / "config.json").write_text(CONFIG_JSON)
    (tmp_path / "notes.xyz").write_text(NOTES)
    return tmp_path


def edit(path: str, old: str, new: str, *, validate: bool = True) -> EditRequest:
    return EditRequest(path, (EditItem(old, new),), validate=validate)


def patch(*sections: str, validate: bool = True) -> PatchRequest:
    return PatchRequest("*** Begin Patch\n" + "".join(sections) + "*** End Patch\n", validate)


BREAK_APP = "*** Update File: src/app.py\n@@\n-    return sum(items)\n+    return sum(items\n"
FIX_CONFIG = '*** Update File: config.json\n@@\n-  "debug": false\n+  "debug": true\n'


def test_an_edit_that_breaks_the_file_writes_nothing(root: Path) -> None:
    result = apply_in_directory(root, edit("src/app.py", "sum(items)", "sum(items"))
    assert result.status == "validation_failed"
    assert result.exit_code == 1
    assert (result.match_type, result.confidence) == ("exact", 1.0)
    assert [m.start_line for m in result.matches] == [2]
    assert result.validation == {
        "path": "src/app.py",
        "language": "python",
        "parser": "compile",
        "ok": False,
        "errors": [
            {
                "line": 2,
                "column": 15,
                "message": "'(' was never closed",
                "text": "    return sum(items",
            }
        ],
    }
    assert result.error is not None and "unparseable" in result.error
    assert result.hint is not None and "src/app.py was not changed" in result.hint
    assert (root / "src" / "app.py").read_text() == APP_PY


def test_an_edit_that_parses_is_written_and_says_what_was_checked(root: Path) -> None:
    result = apply_in_directory(root, edit("src/app.py", "sum(items)", "sum(items, 0)"))
    assert result.status == "applied"
    assert result.validation == {
        "path": "src/app.py",
        "language": "python",
        "parser": "compile",
        "ok": True,
    }
    assert "sum(items, 0)" in (root / "src" / "app.py").read_text()


def test_without_validation_a_broken_edit_is_written_as_before(root: Path) -> None:
    result = apply_in_directory(root, edit("src/app.py", "sum(items)", "sum(items", validate=False))
    assert result.status == "applied"
    assert result.validation is None
    assert "sum(items\n" in (root / "src" / "app.py").read_text()


def test_a_tolerant_edit_refused_by_validation_keeps_its_match_evidence(root: Path) -> None:
    result = apply_in_directory(
        root, edit("src/app.py", "return  sum( items )", "return sum(items]")
    )
    assert result.status == "validation_failed"
    assert result.match_type not in (None, "exact")
    assert result.confidence is not None and result.confidence < 1.0
    assert (root / "src" / "app.py").read_text() == APP_PY


def test_a_dry_run_validates_too(root: Path) -> None:
    result = apply_in_directory(root, edit("src/app.py", "sum(items)", "sum(items"), dry_run=True)
    assert (result.status, result.dry_run) == ("validation_failed", True)


def test_an_unknown_extension_is_written_and_the_result_says_it_was_not_validated(
    root: Path,
) -> None:
    result = apply_in_directory(root, edit("notes.xyz", "plain", "(((plain"))
    assert result.status == "applied"
    assert result.validation == {"path": "notes.xyz", "skipped": "no parser for .xyz files"}


def test_the_policy_turns_validation_on_for_its_paths(root: Path) -> None:
    policy = Policy(validate=("src/**/*.py",))
    refused = apply_in_directory(
        root, edit("src/app.py", "sum(items)", "sum(items", validate=False), policy=policy
    )
    assert refused.status == "validation_failed"
    # a path the policy does not name is not validated
    other = apply_in_directory(
        root, edit("config.json", '"app"', '"app', validate=False), policy=policy
    )
    assert (other.status, other.validation) == ("applied", None)


def test_a_patch_group_that_breaks_its_file_is_not_applied_and_the_others_are(
    root: Path,
) -> None:
    result = apply_in_directory(root, patch(BREAK_APP, FIX_CONFIG))
    assert result.status == "partially_applied"
    assert result.exit_code == 3
    assert (root / "src" / "app.py").read_text() == APP_PY
    assert '"debug": true' in (root / "config.json").read_text()
    [committed] = result.written
    assert committed.paths == ["config.json"]
    assert committed.validation == [
        {"path": "config.json", "language": "json", "parser": "json", "ok": True}
    ]
    [refused] = result.not_applied
    assert refused.paths == ["src/app.py"]
    assert refused.reason is not None
    assert refused.reason.startswith("the patch would leave src/app.py unparseable")
    [report] = refused.validation
    assert report["ok"] is False and report["errors"][0]["line"] == 2
    assert result.validation == report  # the first file that failed
    assert result.hint is not None and "src/app.py was not changed" in result.hint


def test_a_patch_whose_only_group_breaks_its_file_is_validation_failed(root: Path) -> None:
    result = apply_in_directory(root, patch(BREAK_APP))
    assert result.status == "validation_failed"
    assert result.exit_code == 1
    assert (result.match_type, result.confidence) == ("exact", 1.0)
    assert result.path == "src/app.py"
    assert result.validation is not None and result.validation["ok"] is False
    assert (root / "src" / "app.py").read_text() == APP_PY


def test_a_patch_failing_for_another_reason_as_well_is_failed(root: Path) -> None:
    missing = "*** Update File: gone.py\n@@\n-x\n+y\n"
    result = apply_in_directory(root, patch(BREAK_APP, missing))
    assert result.status == "failed"


def test_a_new_file_is_validated_and_a_deleted_one_is_not(root: Path) -> None:
    add = "*** Add File: src/new.py\n+def f(:\n+    pass\n"
    result = apply_in_directory(root, patch(add))
    assert result.status == "validation_failed"
    assert not (root / "src" / "new.py").exists()
    delete = "*** Delete File: config.json\n"
    deleted = apply_in_directory(root, patch(delete))
    assert deleted.status == "applied"
    assert deleted.written[0].validation == []


def test_a_moved_file_is_judged_against_what_its_new_path_held(root: Path) -> None:
    """Nothing was at the new path: every error of the moved file counts as introduced,
    including one its source already had (a rename must not launder a broken file)."""
    (root / "old.json").write_text('{\n  "a": 1,\n  "b": 2,\n}\n')  # a trailing comma
    move = '*** Update File: old.json\n*** Move to: new.json\n@@\n-  "a": 1,\n+  "a": 3,\n'
    result = apply_in_directory(root, patch(move))
    assert result.status == "validation_failed"
    [report] = result.not_applied[0].validation
    assert report["path"] == "new.json"
    assert report["ok"] is False and "preexisting_errors" not in report
    assert (root / "old.json").exists() and not (root / "new.json").exists()


def test_a_file_moved_from_a_path_that_is_not_validated_is_validated(root: Path) -> None:
    (root / "x.txt").write_text("def f(:\n    pass\n")
    move = "*** Update File: x.txt\n*** Move to: x.py\n@@\n def f(:\n"
    result = apply_in_directory(
        root, patch(move, validate=False), policy=Policy(validate=("**/*.py",))
    )
    assert result.status == "validation_failed"
    assert "x.py" in (result.error or "")
    assert not (root / "x.py").exists()


def test_the_policy_names_the_patch_paths_to_validate(root: Path) -> None:
    policy = Policy(validate=("*.json",))
    result = apply_in_directory(root, patch(BREAK_APP, FIX_CONFIG, validate=False), policy=policy)
    assert result.status == "applied"  # src/app.py is not named: not validated
    assert "sum(items\n" in (root / "src" / "app.py").read_text()
    assert [g.validation for g in result.written] == [
        [],
        [{"path": "config.json", "language": "json", "parser": "json", "ok": True}],
    ]


# --- the write tool --------------------------------------------------------------------


def write(path: str, content: str, *, validate: bool = True) -> WriteRequest:
    return WriteRequest(path, content, validate=validate)


def test_a_write_that_would_not_parse_writes_nothing(root: Path) -> None:
    result = apply_in_directory(root, write("config.json", '{\n  "name": "app",\n}\n'))
    assert result.status == "validation_failed"
    assert result.exit_code == 1
    assert result.validation == {
        "path": "config.json",
        "language": "json",
        "parser": "json",
        "ok": False,
        "errors": [
            {
                "line": 3,
                "column": 1,
                "message": "Expecting property name enclosed in double quotes",
                "text": "}",
            }
        ],
    }
    assert result.error is not None
    assert result.error.startswith("the write would leave config.json unparseable")
    assert result.hint is not None and "config.json was not changed" in result.hint
    assert (root / "config.json").read_text() == CONFIG_JSON


def test_a_write_that_parses_is_written_and_says_what_was_checked(root: Path) -> None:
    result = apply_in_directory(root, write("src/app.py", "def total(items):\n    return 0\n"))
    assert result.status == "applied"
    assert result.validation == {
        "path": "src/app.py",
        "language": "python",
        "parser": "compile",
        "ok": True,
    }
    assert (root / "src" / "app.py").read_text() == "def total(items):\n    return 0\n"


def test_a_new_file_written_is_validated(root: Path) -> None:
    result = apply_in_directory(root, write("src/new.py", "def f(:\n    pass\n"))
    assert result.status == "validation_failed"
    assert result.validation is not None and result.validation["errors"][0]["line"] == 1
    assert not (root / "src" / "new.py").exists()


def test_a_write_keeps_the_old_errors_of_a_broken_file(root: Path) -> None:
    """Only the errors the write introduces count, as for an edit."""
    broken = '{\n  "a": 1,\n  "b": 2,\n}\n'  # a trailing comma
    (root / "config.json").write_text(broken)
    result = apply_in_directory(root, write("config.json", broken.replace('"a": 1', '"a": 3')))
    assert result.status == "applied"
    assert result.validation is not None
    assert (result.validation["ok"], result.validation["preexisting_errors"]) == (True, 1)


def test_a_write_without_validation_and_of_an_unknown_kind(root: Path) -> None:
    plain = apply_in_directory(root, write("config.json", "{", validate=False))
    assert (plain.status, plain.validation) == ("applied", None)
    assert (root / "config.json").read_text() == "{"
    unknown = apply_in_directory(root, write("notes.xyz", "((("))
    assert unknown.status == "applied"
    assert unknown.validation == {"path": "notes.xyz", "skipped": "no parser for .xyz files"}


def test_the_policy_validates_the_writes_of_its_paths(root: Path) -> None:
    policy = Policy(validate=("*.json",))
    refused = apply_in_directory(root, write("config.json", "{", validate=False), policy=policy)
    assert refused.status == "validation_failed"
    assert (root / "config.json").read_text() == CONFIG_JSON
    other = apply_in_directory(root, write("src/app.py", "(", validate=False), policy=policy)
    assert (other.status, other.validation) == ("applied", None)


def test_a_dry_run_write_validates_too(root: Path) -> None:
    result = apply_in_directory(root, write("config.json", "{"), dry_run=True)
    assert (result.status, result.dry_run) == ("validation_failed", True)
