"""Adapting the replacement: the file's text survives where the edit does not change it."""

from __future__ import annotations

import pytest

from redline.engine.errors import MergeConflict
from redline.engine.merge import adapt


def test_exact_returns_new_string() -> None:
    assert adapt("a", "b", "a", "exact") == "b"


def test_trailing_newline_drops_the_newline_the_file_lacks() -> None:
    assert adapt("x = 1\n", "x = 2\n", "x = 1", "trailing_newline") == "x = 2"


def test_punctuation_keeps_the_files_quotes_for_unchanged_parts() -> None:
    got = adapt(
        'print("hello", name)', 'print("hello", user)', "print(“hello”, name)", "punctuation"
    )
    assert got == "print(“hello”, user)"


def test_punctuation_keeps_full_width_cjk_punctuation() -> None:
    got = adapt(
        "# 注意:不要修改(见上)", "# 注意:不要删除(见上)", "# 注意：不要修改（见上）", "punctuation"
    )
    assert got == "# 注意：不要删除（见上）"


def test_whitespace_adapts_added_lines_to_tabs() -> None:
    got = adapt(
        "    if x:\n        return 1\n",
        "    if x:\n        log()\n        return 1\n",
        "\tif x:\n\t\treturn 1\n",
        "whitespace",
    )
    assert got == "\tif x:\n\t\tlog()\n\t\treturn 1\n"


def test_whitespace_adapts_constant_reindent() -> None:
    got = adapt(
        "def f():\n    return 1\n",
        "def f():\n    y = 2\n    return y\n",
        "    def f():\n        return 1\n",
        "whitespace",
    )
    assert got == "    def f():\n        y = 2\n        return y\n"


def test_whitespace_keeps_the_files_spacing_inside_a_line() -> None:
    assert adapt("foo(a, b)", "foo(a, c)", "foo(a,  b)", "whitespace") == "foo(a,  c)"


def test_fuzzy_keeps_a_line_that_drifted() -> None:
    got = adapt(
        "def f():\n    x = 1\n    y = 2\n    return x\n",
        "def f():\n    x = 1\n    y = 2\n    return x + y\n",
        "def f():\n    x = 10\n    y = 2\n    return x\n",
        "fuzzy",
    )
    assert got == "def f():\n    x = 10\n    y = 2\n    return x + y\n"


def test_fuzzy_refuses_to_change_a_line_that_drifted() -> None:
    with pytest.raises(MergeConflict) as caught:
        adapt(
            "def f():\n    x = 1\n    y = 2\n",
            "def f():\n    x = 5\n    y = 2\n",
            "def f():\n    x = 10\n    y = 2\n",
            "fuzzy",
        )
    assert caught.value.line == 1
    assert caught.value.found.strip() == "x = 10"


def test_fuzzy_rewrites_a_misspelt_line_whole() -> None:
    got = adapt(
        "    return self._cahce[key]\n",
        "    return self._cache.get(key)\n",
        "    return self._cache[key]\n",
        "fuzzy",
    )
    assert got == "    return self._cache.get(key)\n"


def test_fuzzy_fixes_a_slip_copied_into_new_string() -> None:
    got = adapt(
        "    return self._cahce[key]\n    y = 2\n",
        "    return self._cahce.get(key)\n    y = 3\n",
        "    return self._cache[key]\n    y = 2\n",
        "fuzzy",
    )
    assert got == "    return self._cache.get(key)\n    y = 3\n"
