"""The match chain: each tier, its confidence, ambiguity and thresholds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redline.engine.match import CONFIDENCE, FileView, find_all, match_chain

FILE = """\
import os


def load(path):
    with open(path) as handle:
        data = handle.read()
    return data.splitlines()


def save(path, lines):
    with open(path, "w") as handle:
        handle.write("\\n".join(lines))
"""


def chain(text: str, old: str, threshold: float = 0.8):
    return match_chain(FileView(text), old, threshold)


def test_exact_is_unique_and_full_confidence() -> None:
    found = chain(FILE, "    return data.splitlines()\n")
    assert found.match_type == "exact"
    assert len(found.spans) == 1
    span = found.spans[0]
    assert FILE[span.start : span.end] == "    return data.splitlines()\n"
    assert span.score == 1.0


def test_exact_duplicates_are_ambiguous_not_first() -> None:
    found = chain(FILE, "with open(path")
    assert found.match_type == "exact"
    assert len(found.spans) == 2


def test_overlapping_occurrences_count_as_ambiguous() -> None:
    assert find_all("aaa", "aa") == [0, 1]
    assert len(chain("aaa\n", "aa").spans) == 2


def test_trailing_newline_tier_matches_at_end_of_file() -> None:
    text = "a = 1\nb = 2"
    found = chain(text, "b = 2\n")
    assert found.match_type == "trailing_newline"
    assert found.spans[0].score == CONFIDENCE["trailing_newline"] == 0.99
    assert text[found.spans[0].start : found.spans[0].end] == "b = 2"


def test_trailing_newline_tier_does_not_match_mid_file() -> None:
    found = chain("b = 2x\nrest\n", "b = 2\n")
    assert found.match_type != "trailing_newline"


@pytest.mark.parametrize(
    ("file_text", "old"),
    [
        ("msg = “hello”\n", 'msg = "hello"'),
        ("msg = 'it’s'\n", "msg = 'it's'"),
        ("a – b\n", "a - b"),
        ("注释：说明（见上）。\n", "注释:说明(见上)"),
        ("print(a,b)\n", "print(a, b)"),
        ("print(a, b)\n", "print(a,b)"),
        ("使用 Python 编写\n", "使用Python编写"),
    ],
)
def test_punctuation_tier(file_text: str, old: str) -> None:
    found = chain(file_text, old)
    assert found.match_type == "punctuation"
    assert found.spans[0].score == 0.97
    assert len(found.spans) == 1


def test_punctuation_tier_ignores_zero_width_characters_in_the_file() -> None:
    found = chain("value = comp\u200bute()\n", "value = compute()")
    assert found.match_type == "punctuation"


@pytest.mark.parametrize(
    ("file_text", "old"),
    [
        ("def f():\n\treturn 1\n", "def f():\n    return 1\n"),
        ("x  =  1\n", "x = 1"),
        ("if a:\n        pass\n", "if a:\n    pass\n"),
        ("call(a,\n     b)\n", "call(a, b)"),
    ],
)
def test_whitespace_tier(file_text: str, old: str) -> None:
    found = chain(file_text, old)
    assert found.match_type == "whitespace"
    assert found.spans[0].score == 0.95


def test_whitespace_tier_span_covers_indentation_and_line_end() -> None:
    text = "x\n\tif a:\n\t\tpass\ny\n"
    found = chain(text, "    if a:\n        pass\n")
    span = found.spans[0]
    assert text[span.start : span.end] == "\tif a:\n\t\tpass\n"


def test_tolerant_match_never_starts_inside_a_word() -> None:
    # "x = 1" would whitespace-match inside "max=1"; that is not a match.
    found = chain("max=1\n", "x = 1")
    assert found.match_type is None


def test_fuzzy_tier_tolerates_a_typo() -> None:
    old = "    with open(path) as handel:\n        data = handle.read()\n"
    found = chain(FILE, old)
    assert found.match_type == "fuzzy"
    assert 0.8 <= found.spans[0].score < 1.0
    span = found.spans[0]
    assert FILE[span.start : span.end] == (
        "    with open(path) as handle:\n        data = handle.read()\n"
    )


def test_fuzzy_fragment_inside_a_line() -> None:
    text = "result = compute_total(items, discount) + shipping\n"
    found = chain(text, "compute_totl(items, discount)")
    assert found.match_type == "fuzzy"
    span = found.spans[0]
    assert text[span.start : span.end] == "compute_total(items, discount)"


def test_line_fuzzy_when_lines_drifted_but_mean_is_high() -> None:
    lines = [f"    value_{i} = compute_something({i}, flag=True)" for i in range(10)]
    text = "def f():\n" + "\n".join(lines) + "\n"
    drifted = list(lines)
    drifted[3] = "    something entirely different was here before"
    drifted[7] = "    and another line nobody remembers well"
    found = chain(text, "\n".join(drifted) + "\n", threshold=0.8)
    assert found.match_type in ("fuzzy", "line_fuzzy")
    assert len(found.spans) == 1


def test_threshold_boundary() -> None:
    text = "alpha_beta_gamma_delta = 1\n"
    old = "alpha_beta_gamma_dexta = 1"
    found = chain(text, old, threshold=0.8)
    assert found.match_type == "fuzzy"
    score = found.spans[0].score
    assert chain(text, old, threshold=score).match_type == "fuzzy"
    assert chain(text, old, threshold=min(1.0, score + 0.001)).match_type is None


def test_fuzzy_tie_is_ambiguous() -> None:
    block = "def handler(event):\n    process(event.payload)\n    return True\n"
    text = block + "\n\n" + block
    found = chain(text, block.replace("payload", "paylod"))
    assert found.match_type in ("fuzzy", "line_fuzzy")
    assert len(found.spans) == 2


def test_fuzzy_near_tie_within_margin_is_ambiguous() -> None:
    a = "def handler(event):\n    process(event.payload)\n    return True\n"
    b = "def handler(event):\n    process(event.payloads)\n    return True\n"
    found = chain(
        a + "\n\n" + b, "def handler(event):\n    process(event.paylod)\n    return True\n"
    )
    assert len(found.spans) == 2


def test_fuzzy_blocks_equal_but_for_their_spacing_are_ambiguous() -> None:
    # Found replaying jinja's history (re-indented, dashes): the line indented and
    # spaced like old_string scored higher than its twin, and the edit changed it.
    text = (
        "# autogenerated by pip-compile-multi\n#\n#    pip-compile-multi\n#\n"
        "attrs==23.2.0\n    # via\n    #   pip-compile-multi\n    #   pip-tools\n"
    )
    found = chain(text, "    #    pip–compile–multi\n")
    assert found.match_type == "fuzzy"
    assert sorted(text[s.start : s.end] for s in found.spans) == [
        "    #   pip-compile-multi\n",
        "#    pip-compile-multi\n",
    ]


@pytest.mark.parametrize("other", ["", "# café\n"], ids=["ascii", "not-ascii"])
def test_fuzzy_blocks_of_several_lines_equal_but_for_indentation_are_ambiguous(
    other: str,
) -> None:
    # An ASCII file's twins are found line by line, any other file's in its whole fold.
    block = "if ready:\n    process(event.payload)\n    return True\n"
    text = other + "def a():\n" + block.replace("\n    ", "\n        ") + "\n" + block
    found = chain(text, "  if ready:\n      process(event.paylod)\n      return True\n")
    assert found.match_type in ("fuzzy", "line_fuzzy")
    assert len(found.spans) == 2


def test_fuzzy_clear_winner_is_accepted() -> None:
    a = "def handler(event):\n    process(event.payload)\n    return True\n"
    b = "def other_thing(evt, ctx):\n    log(ctx.name)\n    return None\n"
    found = chain(
        a + "\n\n" + b, "def handler(event):\n    process(event.paylod)\n    return True\n"
    )
    assert found.match_type == "fuzzy"
    assert len(found.spans) == 1


def test_short_old_string_never_fuzzy_matches() -> None:
    found = chain("x = 2\n", "x = 3")
    assert found.match_type is None


def test_absent_text_reports_nearest_miss() -> None:
    found = chain(FILE, "def remove(path):\n    os.unlink(path)\n")
    assert found.match_type is None
    assert found.nearest is None or found.nearest.score < 0.8


# --- honest confidence: a tolerant match never records 1.0 ----------------------------------


def _long_block_with_a_typo() -> tuple[str, str, str]:
    """A 300-line block whose old_string has one real typo: 0.99996 similar."""
    lines = [f"    value_{i} = compute(argument_{i}, other_{i})  # step {i}" for i in range(300)]
    block = "\n".join(lines)
    text = "def f():\n" + block + "\n    return 1\n"
    old = block.replace("argument_150,", "argment_150,")  # a dropped letter
    return text, old, block


def test_a_long_fuzzy_match_reports_less_than_one() -> None:
    from redline.engine.edit import EditItem, EditRequest, apply_edit
    from redline.engine.policy import Policy, Rule
    from redline.engine.similarity import ratio

    text, old, block = _long_block_with_a_typo()
    assert round(ratio(old, block), 4) == 1.0  # what was recorded before
    outcome = apply_edit(
        text.encode(), EditRequest("a.py", (EditItem(old, old.replace("step 0", "first")),))
    )
    result = outcome.result
    assert (result.status, result.match_type) == ("applied", "fuzzy")
    assert result.confidence is not None and result.confidence < 1.0
    assert all(m.confidence < 1.0 for m in result.matches)
    # so a policy that takes only full confidence refuses it
    strict = Policy(rules=(Rule("r", ("**",), None, 1.0),))
    assert strict.check("a.py", "fuzzy", result.confidence)


@pytest.mark.parametrize("score", [1.0, 0.99999999, 0.99996, 0.9999])
def test_honest_confidence_caps_every_tolerant_match_below_one(score: float) -> None:
    from redline.engine.match import TOLERANT_CEILING, honest_confidence

    for match_type in ("fuzzy", "line_fuzzy", "whitespace", "punctuation"):
        assert honest_confidence(match_type, score) == min(score, TOLERANT_CEILING) < 1.0
    assert honest_confidence("exact", 1.0) == 1.0


def test_honest_confidence_keeps_the_unrounded_value() -> None:
    from redline.engine.match import honest_confidence

    assert honest_confidence("fuzzy", 0.849996) == 0.849996  # not 0.85


def test_the_best_candidates_are_the_top_of_a_stable_sort_of_all() -> None:
    import random

    import numpy as np

    from redline.engine.match import _MAX_FUZZY_CANDIDATES, _best_first

    rng = random.Random(11)
    for size in (0, 1, 39, 40, 41, 200, 5_000):
        for levels in (2, 7, 1_000):  # many ties, some, hardly any
            scores = np.array([rng.randrange(levels) / levels for _ in range(size)], np.float32)
            whole = np.argsort(-scores.astype(np.float64), kind="stable")
            assert _best_first(scores) == [int(i) for i in whole[:_MAX_FUZZY_CANDIDATES]]
    with_nan = np.array([0.5, float("nan"), 0.9] * 30)
    whole = np.argsort(-with_nan, kind="stable")
    assert _best_first(with_nan) == [int(i) for i in whole[:_MAX_FUZZY_CANDIDATES]]


def test_line_of_answers_the_same_in_any_order_asked() -> None:
    import random

    rng = random.Random(4)
    text = "".join(rng.choice(["a", "\n", "bc", "\n\n"]) for _ in range(400))
    view = FileView(text)
    asked = [rng.randrange(len(text) + 1) for _ in range(300)]
    asked += sorted(asked)  # in order, as a replace_all's matches are described
    for pos in asked:
        assert view.line_of(pos) == text.count("\n", 0, pos)
    _ = view.offsets  # once the offsets are made, by a search in them
    for pos in asked:
        assert view.line_of(pos) == text.count("\n", 0, pos)


# Past match._BY_LINE: the punctuation and whitespace tiers work by line.
_LARGE_START = "x = (1, 2)\n" * 1_600
_TYPOGRAPHIC = st.text(
    alphabet=st.sampled_from([*"ab(),.:; \n\t\u00a0\u3000“”‘’–—，。（）「」é\uff41", "\u200b"]),
    max_size=40,
)


@settings(max_examples=100)
@given(_TYPOGRAPHIC, _TYPOGRAPHIC, st.data())
def test_the_punctuation_tier_finds_what_the_whole_fold_finds(
    text: str, other: str, data: st.DataObject
) -> None:
    """Looked through by the file's compact lines first, the punctuation tier finds the
    same candidates as by folding the whole file (for old_string cut from the file,
    retyped with ASCII marks, or other text)."""
    from redline.engine import match
    from redline.engine.fold import translate_punctuation
    from redline.engine.match import _punctuation

    text = _LARGE_START + text
    assert len(text) > match._BY_LINE
    start = data.draw(st.integers(len(_LARGE_START), len(text)))
    end = data.draw(st.integers(start, len(text)))
    for old in (text[start:end], translate_punctuation(text[start:end]), other):
        if not old:
            continue
        quick, whole = FileView(text), FileView(text)
        whole.__dict__["skeleton"] = None  # no shortcut: the whole fold
        assert _punctuation(quick, old) == _punctuation(whole, old)


@settings(max_examples=300)
@given(_TYPOGRAPHIC, st.data())
def test_the_whitespace_tier_maps_back_by_line_as_by_every_kept_character(
    text: str, data: st.DataObject
) -> None:
    """With compact lines, a whitespace match is mapped back to the file line by line;
    without, through the positions of every character the fold keeps: the same spans."""
    from redline.engine.match import _whitespace

    prefix = data.draw(st.sampled_from(["", _LARGE_START]))  # small, or large
    text = prefix + text
    start = data.draw(st.integers(len(prefix), len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 50)))
    cut = text[start:end]
    for old in (cut, cut.replace(" ", ""), cut.replace("\n", "\n  ")):
        if not old.strip():
            continue
        by_line, by_char = FileView(text), FileView(text)
        by_char.__dict__["compact"] = None
        assert _whitespace(by_line, old) == _whitespace(by_char, old)


@pytest.mark.parametrize("places", [3, 64, 65, 300])
def test_a_key_in_many_places_finds_what_the_whole_fold_finds(places: int) -> None:
    """Past a number of places the whole fold is made instead: the same spans."""
    text = _LARGE_START + "def f():\n" + "    call( a, b )\n    other = 1\n" * places
    for old in ("call(a,b)", "    call(a, b)\n", "call( a,b )\n    other = 1"):
        quick, whole = FileView(text), FileView(text)
        whole.__dict__["skeleton"] = None
        found = match_chain(quick, old, 0.8)
        assert found.match_type == "punctuation"
        assert found.spans == match_chain(whole, old, 0.8).spans
        assert len(found.spans) == places
