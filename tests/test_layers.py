"""The house: every import inside ``redline`` points down a layer (README, "Development").

Read from the source (every ``import``, at the top of a module or inside a function),
so a lazy import counts as much as an eager one. The front ends sit on top: ``mcp``
imports nothing from ``cli`` (``cli`` only starts it: ``redline mcp``), and nothing
below them imports either; the pipeline sits under them; the engine imports no
other layer.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "redline"
# A layer may import the layers of a lower rank (and itself).
RANK = {
    "__version__": -1,  # redline.__version__ itself
    "crashlog": 0,
    "userdirs": -1,  # the user's config and cache folders
    "engine": 0,
    "fsops": 1,
    "tools": 1,
    "gitops": 2,
    "settings": 2,
    "hooks": 3,
    "daemon": 4,
    "pipeline": 5,
    "mcp": 6,
    "cli": 7,  # the command line also starts the MCP server (`redline mcp`)
    "__main__": 8,
}


def imports() -> dict[str, set[tuple[str, str]]]:
    """Each layer's imports of another layer: (the layer imported, the module importing it)."""
    found: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC)
        layer = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        if layer == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "redline":
                    names = [f"redline.{alias.name}" for alias in node.names]
                else:
                    names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "redline" and len(parts) > 1 and parts[1] != layer:
                    found[layer].add((parts[1], str(relative)))
    return found


def test_every_layer_is_ranked() -> None:
    layers = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    layers |= {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    assert layers <= set(RANK), sorted(layers - set(RANK))


def test_every_import_points_down() -> None:
    upward = sorted(
        f"{module} imports redline.{target}"
        for layer, targets in imports().items()
        for target, module in targets
        if RANK.get(target, 0) >= RANK[layer]
    )
    assert upward == []


def test_the_front_ends_stand_side_by_side_and_the_engine_alone() -> None:
    found = imports()
    assert not {t for t, _ in found["mcp"]} & {"cli"}
    assert {t for t, _ in found["engine"]} == set()
    below = ("engine", "fsops", "tools", "gitops", "hooks", "daemon", "pipeline")
    assert all(not {t for t, _ in found[layer]} & {"cli", "mcp"} for layer in below)
