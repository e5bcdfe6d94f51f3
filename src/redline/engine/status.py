"""Process exit codes by result status (imported by the CLI without the engine)."""

from __future__ import annotations

EXIT_CODES: dict[str, int] = {
    "applied": 0,
    "read": 0,
    "no_change": 0,
    "no_match": 1,
    "ambiguous": 1,
    "rejected": 1,
    "failed": 1,
    "validation_failed": 1,
    "invalid": 2,
    "partially_applied": 3,
}
