"""A fragment of a long line sent as a line of its own is replaced inside that line."""

from __future__ import annotations

import pytest

from redline.engine.edit import EditItem, EditOutcome, EditRequest, apply_edit


def edit(text: str, old: str, new: str, path: str = "f.py") -> EditOutcome:
    return apply_edit(text.encode(), EditRequest(path, (EditItem(old, new),)))


# (path, file, old_string, new_string, expected): one line each, with the indentation
# and newline a line of its own would have; the text is in the middle of one line.
FRAGMENTS = [
    (
        "Button.jsx",
        '  return <Button onClick={go} disabled={busy} className="primary">Go</Button>;\n',
        "    disabled={busy}\n",
        "    disabled={busy || locked}\n",
        '  return <Button onClick={go} disabled={busy || locked} className="primary">Go</Button>;\n',
    ),
    (
        "client.py",
        "    response = session.request(method, url, timeout=30, headers=headers)\n",
        "        timeout=30,\n",
        "        timeout=60,\n",
        "    response = session.request(method, url, timeout=60, headers=headers)\n",
    ),
    (
        "src/geometry.rs",
        "    let p = Point { x: origin.x, y: compute(2) };\n",
        "        y: compute(2)\n",
        "        y: compute(3)\n",
        "    let p = Point { x: origin.x, y: compute(3) };\n",
    ),
    (
        "main.go",
        '\tfmt.Printf("%s has %d items\\n", name, count)\n',
        '\t\t"%s has %d items\\n"\n',
        '\t\t"%s holds %d items\\n"\n',
        '\tfmt.Printf("%s holds %d items\\n", name, count)\n',
    ),
    (
        "ci.yaml",
        "tags: [alpha, beta, gamma-release]\n",
        "  beta, gamma-release\n",
        "  beta, gamma-release, delta\n",
        "tags: [alpha, beta, gamma-release, delta]\n",
    ),
    (
        "README.md",
        "| edit tool accuracy | `python bench/edit_bench.py` | 380/380 right | all |\n",
        "380/380 right\n",
        "381/381 right\n",
        "| edit tool accuracy | `python bench/edit_bench.py` | 381/381 right | all |\n",
    ),
]


@pytest.mark.parametrize(
    ("path", "text", "old", "new", "expected"), FRAGMENTS, ids=[c[0] for c in FRAGMENTS]
)
def test_a_fragment_of_one_longer_line_is_replaced_inside_it(
    path: str, text: str, old: str, new: str, expected: str
) -> None:
    out = edit(text, old, new, path)
    assert (out.result.status, out.result.match_type) == ("applied", "fragment"), out.result.error
    assert out.data == expected.encode()
    assert out.result.matched_text == old.strip()
    assert out.result.hint is not None and "part of line 1" in out.result.hint


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        pytest.param("total = price * qty + tax\n", "total = price * qty\n",
                     "total = price * qty * 2\n", id="the start of the line's text"),
        pytest.param("x = f(a)  # timeout=30 seconds\n", "    timeout=30 seconds\n",
                     "    timeout=60 seconds\n", id="the end of the line's text"),
        pytest.param("f(timeout=30, b)\ng(timeout=30, b)\n", "  timeout=30,\n",
                     "  timeout=60,\n", id="found twice"),
        pytest.param("f(xtimeout=30, b)\n", "timeout=30\n", "timeout=60\n",
                     id="it would cut a word"),
        pytest.param("f(a, n=3, b)\n", "n=3\n", "n=4\n", id="too short to be sure"),
        pytest.param("f(a, timeout=30, b)\n", "  timeout=30\n", "  timeout=60",
                     id="new_string framed otherwise"),
        pytest.param("f(a, timeout=30, b)\n", "timeout=30\n", "timeout=60\nretry=2\n",
                     id="two lines of new_string"),
    ],
)  # fmt: skip
def test_not_a_fragment_edit(text: str, old: str, new: str) -> None:
    out = edit(text, old, new)
    assert out.data is None
    assert out.result.status in ("no_match", "ambiguous")


def test_a_fragment_and_a_fuzzy_match_elsewhere_are_ambiguous() -> None:
    text = "  disabled={bussy}\n  <Button onClick={go} disabled={busy} className='p' />\n"
    out = edit(text, "  disabled={busy}\n", "  disabled={busy || locked}\n")
    assert (out.result.status, out.data) == ("ambiguous", None)
    assert [m.match_type for m in out.result.matches][-1] == "fragment"
