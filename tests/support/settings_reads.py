"""How often each of redline's settings files is read from a folder
(``settings.files.folder_reader``, the one reader of a folder's settings)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from redline.settings import files


def count_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """A counter, by file name, of the settings files read from disk from now on (for the
    rest of the test)."""
    seen: Counter[str] = Counter()
    real = files.folder_reader

    def counting(root: Path) -> files.Reader:
        read = real(root)

        def counted(name: str) -> bytes | None:
            seen[name] += 1
            return read(name)

        return counted

    monkeypatch.setattr(files, "folder_reader", counting)
    return seen
