"""engine.edit_plan: an edit planned against a snapshot as one file group."""

from __future__ import annotations

from redline.engine.edit import EditItem, EditRequest, apply_edit
from redline.engine.edit_plan import plan_edit
from redline.engine.plan import MemorySnapshot
from redline.engine.policy import Policy

FILES = {"a.py": b"def f():\n    return 1\n", "pkg/b.py": b"x = 1\n", "notes.txt": b"return 1\n"}


def edit(path: str, old: str, new: str, validate: bool = False) -> EditRequest:
    return EditRequest(path, (EditItem(old, new),), validate=validate)


def test_an_edit_is_one_group_with_the_bytes_the_edit_tool_makes() -> None:
    request = edit("a.py", "return 1", "return 2")
    planned = plan_edit(request, MemorySnapshot(FILES))
    assert planned.plan is not None
    [group] = planned.plan.groups
    assert group.paths == ("a.py",) and group.ok
    [change] = group.changes
    expected = apply_edit(FILES["a.py"], request).data
    assert (change.path, change.before, change.after) == ("a.py", FILES["a.py"], expected)
    assert planned.changes == [change]
    assert planned.result.status == "applied" and planned.result.path == "a.py"


def test_nothing_to_change_plans_nothing() -> None:
    planned = plan_edit(edit("a.py", "return 9", "return 2"), MemorySnapshot(FILES))
    assert planned.plan is None and planned.changes == []
    assert planned.result.status != "applied"


def test_a_missing_file_or_a_folder_is_refused_in_the_callers_words() -> None:
    snapshot = MemorySnapshot(FILES)
    missing = plan_edit(edit("c.py", "a", "b"), snapshot)
    folder = plan_edit(edit("pkg", "a", "b"), snapshot)
    assert missing.result.status == folder.result.status == "invalid"
    assert "c.py" in (missing.result.error or "")
    assert "is a directory" in (folder.result.error or "")
    worded = plan_edit(edit("pkg", "a", "b"), snapshot, missing=lambda path, dir_: f"{path} {dir_}")
    assert worded.result.error == "pkg True" and worded.plan is None


def test_a_path_the_policy_refuses_is_invalid_and_reads_nothing() -> None:
    planned = plan_edit(edit("../a.py", "return 1", "return 2"), MemorySnapshot(FILES))
    assert planned.result.status == "invalid" and planned.plan is None


def test_the_policy_forces_validation_of_the_paths_it_names() -> None:
    broken = edit("a.py", "return 1", "return (")
    policy = Policy(validate=("*.py",))
    unasked = plan_edit(broken, MemorySnapshot(FILES), Policy().validated(False))
    assert unasked.result.status == "applied"
    forced = plan_edit(broken, MemorySnapshot(FILES), policy.validated(False))
    assert forced.result.status == "validation_failed" and forced.plan is None
    # a path the policy does not name is not validated unless the request asks
    text = edit("notes.txt", "return 1", "return (")
    assert plan_edit(text, MemorySnapshot(FILES), policy.validated(False)).plan is not None
    validated = plan_edit(
        edit("a.py", "return 1", "return 2"), MemorySnapshot(FILES), policy.validated(False)
    )
    assert validated.plan is not None and validated.plan.groups[0].validation


def test_policy_validated_says_which_paths_must_parse() -> None:
    assert Policy().validated(False) is None
    every = Policy().validated(True)
    assert every is not None and every("any.txt")
    named = Policy(validate=("src/**",)).validated(False)
    assert named is not None and named("src/a.py") and not named("docs/a.md")
