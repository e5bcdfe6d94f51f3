"""Hypothesis strategy for well-formed patches (the parser's and the grammar's tests)."""

from __future__ import annotations

from hypothesis import strategies as st

from redline.engine.patch_parse import AddFile, DeleteFile, Hunk, HunkLine, Patch, UpdateFile

_name = st.text(alphabet="abcxyz019_-. /é", min_size=1, max_size=12).filter(
    lambda s: s.strip() == s
)
_text = st.text(st.characters(blacklist_characters="\r\n"), max_size=12)
_anchor = _text.filter(lambda s: s.strip() != "" and s.rstrip() == s)
_hunk_line = st.builds(HunkLine, st.sampled_from([" ", "-", "+"]), _text)
_hunk = st.builds(
    Hunk,
    st.none() | _anchor,
    st.lists(_hunk_line, min_size=1, max_size=4).map(tuple),
    st.booleans(),
)
_operation = st.one_of(
    st.builds(AddFile, _name, st.lists(_text, max_size=4).map(tuple)),
    st.builds(DeleteFile, _name),
    st.builds(
        UpdateFile, _name, st.none() | _name, st.lists(_hunk, min_size=1, max_size=3).map(tuple)
    ),
)
patches = st.builds(Patch, st.lists(_operation, min_size=1, max_size=4).map(tuple))
