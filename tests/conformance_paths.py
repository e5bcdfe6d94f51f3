"""Where the public conformance cases live: ``../shared`` beside the checkout.

CI has that folder; a user's clone may not, and tests that read it skip with
this reason.
"""

from __future__ import annotations

from pathlib import Path

SCENARIOS = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "codex-apply-patch"
MISSING = (
    f"Codex conformance scenarios not found at {SCENARIOS}; they live in the 'shared' "
    "folder beside the checkout, which CI provides"
)


def scenario_names() -> list[str]:
    """Every scenario folder with a patch, sorted; empty when the folder is absent."""
    if not SCENARIOS.is_dir():
        return []
    return sorted(p.name for p in SCENARIOS.iterdir() if (p / "patch.txt").is_file())
