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

# Scenario patches that neither the strict grammar (tools/apply_patch.lark) nor the
# parser accepts.
MALFORMED_SCENARIOS = {
    "005_rejects_empty_patch",
    "008_rejects_empty_update_hunk",
    "013_rejects_invalid_hunk_header",
}
# Scenario patches only the lenient parser accepts (the grammar shown to models is
# strict), and why.
LENIENT_SCENARIOS = {
    "017_whitespace_padded_hunk_header": "an operation header indented by spaces",
    "018_whitespace_padded_patch_markers": "Begin/End markers padded with a space",
    "020_whitespace_padded_patch_marker_lines": "Begin/End markers padded with a space",
}


def scenario_names() -> list[str]:
    """Every scenario folder with a patch, sorted; empty when the folder is absent."""
    if not SCENARIOS.is_dir():
        return []
    return sorted(p.name for p in SCENARIOS.iterdir() if (p / "patch.txt").is_file())
