"""Codex's public apply_patch scenarios, run through embedded ``redline apply``.

Each scenario copies ``input/`` to an empty directory, applies ``patch.txt`` and
compares the whole tree byte for byte with ``expected/``. The scenarios live in
``../shared`` beside the checkout, which CI has and a clone may not.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance_paths import MISSING, SCENARIOS, scenario_names
from redline.fsops.patch import apply_patch_in_directory

# redline refuses a Move onto, or an Add over, an existing file (Codex overwrites):
# that file group is left untouched, so the tree stays as input/.
REFUSED = {
    "010_move_overwrites_existing_destination": "cannot move",
    "011_add_overwrites_existing_file": "cannot add file that already exists",
}


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


pytestmark = pytest.mark.skipif(not SCENARIOS.is_dir(), reason=MISSING)


@pytest.mark.parametrize("name", scenario_names() or ["(none)"])
def test_scenario(name: str, tmp_path: Path) -> None:
    case = SCENARIOS / name
    work = tmp_path / "work"
    work.mkdir()
    if (case / "input").is_dir():
        shutil.copytree(case / "input", work, dirs_exist_ok=True)
    before = _tree(work)
    result = apply_patch_in_directory(work, (case / "patch.txt").read_text(encoding="utf-8"))
    if name in REFUSED:
        assert result.status == "failed"
        assert REFUSED[name] in (result.error or "")
        assert _tree(work) == before
        return
    expected = case / "expected"
    assert _tree(work) == (_tree(expected) if expected.is_dir() else {})
    if _tree(work) == before:
        assert result.status in ("failed", "invalid"), result
    else:
        assert result.status in ("applied", "partially_applied"), result
