"""The journal: one file per session, overwritten in place, torn records read as empty."""

from __future__ import annotations

from pathlib import Path

from redline.gitops import journal


def _entry(session: str = "s", files: int = 1) -> journal.JournalEntry:
    return journal.JournalEntry(
        session=session,
        request="r1",
        ref=f"refs/heads/redline/{session}",
        old="a" * 40,
        new="b" * 40,
        notes={"a" * 40: "c" * 40},
        files={f"src/f{i}.py": ("d" * 40, 0o100644) for i in range(files)} | {"gone.txt": None},
        stage=("src/f0.py",),
    )


def test_an_entry_reads_back_until_it_is_cleared(tmp_path: Path) -> None:
    assert journal.read(tmp_path, "s") is None
    entry = _entry()
    journal.write(tmp_path, entry)
    assert journal.read(tmp_path, "s") == entry
    assert journal.read(tmp_path, "other") is None
    journal.clear(tmp_path, "s")
    assert journal.read(tmp_path, "s") is None
    assert [p.name for p in tmp_path.iterdir()] == ["s.journal"]  # kept for the next request


def test_a_short_record_over_a_long_one_reads_as_itself(tmp_path: Path) -> None:
    journal.write(tmp_path, _entry(files=200))  # several pages
    journal.clear(tmp_path, "s")
    short = _entry(files=1)
    journal.write(tmp_path, short)
    assert journal.read(tmp_path, "s") == short


def test_a_record_cut_short_or_damaged_never_happened(tmp_path: Path) -> None:
    journal.write(tmp_path, _entry(files=200))
    path = journal.path_for(tmp_path, "s")
    whole = path.read_bytes()
    for damaged in (whole[:-1], whole[:6], b"", whole[:100] + b"X" + whole[101:]):
        path.write_bytes(damaged)
        assert journal.read(tmp_path, "s") is None, len(damaged)
