"""engine.weakening: a policy compared as parsed rules, before and after.

The property test is the contract: random policies, random mutations (remove,
narrow, widen, reorder rules; change thresholds, ``require``, the action, the
guard files), both written as TOML and parsed as redline reads them. An oracle
that knows nothing of the comparison judges a grid of (path, match type,
confidence) with each policy's own verdict (``Policy.check``): the new policy is
weaker iff some grid point the old one flags passes the new one. The comparison
must report a weakening whenever the oracle finds one — no misses.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redline.engine.policy import MATCH_TYPES, Policy, glob_matches
from redline.engine.records import replace
from redline.engine.weakening import glob_covers, weakenings
from redline.settings.policy import parse_policy

GLOBS = [
    "src/**",
    "src/auth/**",
    "src/auth/*.py",
    "src/auth",
    "/src",
    "src/",
    "src/*",
    "docs/**",
    "docs",
    "docs/",
    "**/docs/**",
    "*.sql",
    "a.sql",
    "migrations/**",
    "migrations/*.sql",
    "**",
    "*",
    "**/*.py",
    "*.md",
    "lib/**",
    ".github/workflows/**",
    "deploy/**",
]
PATHS = [
    "src",
    "src/app.py",
    "src/auth",
    "src/auth/login.py",
    "src/auth/deep/x.py",
    "src/authz/a.py",
    "src/docs/a.md",
    "docs",
    "docs/readme.md",
    "docs/api/x.md",
    "lib/docs/z.md",
    "lib/a.py",
    "migrations/001.sql",
    "db/migrations/002.sql",
    "a.sql",
    "x/a.sql/y",
    "README.md",
    "tests/test_a.py",
    ".github/workflows/ci.yml",
    "deploy/run.sh",
    ".redline.toml",
]
THRESHOLDS = [0.5, 0.8, 0.9, 0.95, 0.97, 0.99, 1.0]
# Every threshold, just below it, and the ends: each verdict changes only at a threshold.
CONFIDENCES = sorted({0.0, 1.0, *THRESHOLDS, *(t - 1e-9 for t in THRESHOLDS)})
EXTRA_FILES = ["deploy/**", "Makefile", "lib/**"]


def at(policy: Policy, path: str) -> Policy:
    """``policy`` as it stands at ``path``: its rules that cover it, the rest left out
    (``Policy.check`` still judges; it only has fewer globs to match each time)."""
    return replace(policy, rules=tuple(r for r in policy.rules if r.covers(path)))


def oracle(old: Policy, new: Policy) -> list[tuple[str, str | None, float]]:
    """The grid points the old policy flags and the new one passes."""
    found = []
    for path in PATHS:
        before, after = at(old, path), at(new, path)
        for match_type in (*MATCH_TYPES, None):
            for confidence in CONFIDENCES:
                if before.check(path, match_type, confidence) and not after.check(
                    path, match_type, confidence
                ):
                    found.append((path, match_type, confidence))
    return found


# --- policies as text, and their mutations ---------------------------------------------------

Rule = dict[str, object]


def toml(action: str, rules: list[Rule], files: list[str]) -> str:
    out = [f'[guard]\naction = "{action}"']
    if files:
        out.append("files = [" + ", ".join(f'"{f}"' for f in files) + "]")
    for rule in rules:
        out.append("\n[[guard.protect]]")
        out.append("paths = [" + ", ".join(f'"{p}"' for p in rule["paths"]) + "]")  # type: ignore[attr-defined]
        if rule.get("require") is not None:
            out.append("require = [" + ", ".join(f'"{t}"' for t in rule["require"]) + "]")  # type: ignore[attr-defined]
        if rule.get("min_confidence") is not None:
            out.append(f"min_confidence = {rule['min_confidence']!r}")
    return "\n".join(out) + "\n"


requires = st.none() | st.lists(st.sampled_from(MATCH_TYPES), min_size=1, max_size=4, unique=True)


@st.composite
def rules(draw: st.DrawFn) -> Rule:
    require = draw(requires)
    minimum = draw(st.none() | st.sampled_from(THRESHOLDS))
    if require is None and minimum is None:
        minimum = draw(st.sampled_from(THRESHOLDS))
    paths = draw(st.lists(st.sampled_from(GLOBS), min_size=1, max_size=2, unique=True))
    return {"paths": paths, "require": require, "min_confidence": minimum}


MUTATIONS = (
    "remove",
    "narrow",
    "widen",
    "replace_paths",
    "reorder",
    "swap_terms",
    "threshold",
    "drop_threshold",
    "require",
    "drop_require",
    "add_rule",
    "action",
    "files",
)


def mutate(
    rng: random.Random, action: str, old: list[Rule], files: list[str], how: str
) -> tuple[str, list[Rule], list[str]]:
    new = [dict(r) for r in old]
    if how == "remove" and new:
        new.pop(rng.randrange(len(new)))
    elif how == "narrow" and new:
        rule = rng.choice(new)
        paths = list(rule["paths"])  # type: ignore[call-overload]
        if len(paths) > 1:
            paths.pop(rng.randrange(len(paths)))
        else:
            paths = [rng.choice(GLOBS)]
        rule["paths"] = paths
    elif how == "widen" and new:
        rule = rng.choice(new)
        rule["paths"] = list(dict.fromkeys([*rule["paths"], rng.choice(GLOBS)]))  # type: ignore[misc]
    elif how == "replace_paths" and new:
        rng.choice(new)["paths"] = [rng.choice(GLOBS)]
    elif how == "reorder":
        rng.shuffle(new)
    elif how == "swap_terms" and len(new) > 1:
        # two lines of the file swapped between rules: the paths stay, the terms move
        a, b = rng.sample(range(len(new)), 2)
        new[a], new[b] = (
            {**new[b], "paths": new[a]["paths"]},
            {**new[a], "paths": new[b]["paths"]},
        )
    elif how == "threshold" and new:
        rng.choice(new)["min_confidence"] = rng.choice(THRESHOLDS)
    elif how == "drop_threshold" and new:
        rule = rng.choice(new)
        if rule.get("require") is not None:
            rule["min_confidence"] = None
    elif how == "require" and new:
        rng.choice(new)["require"] = rng.sample(MATCH_TYPES, rng.randint(1, 4))
    elif how == "drop_require" and new:
        rule = rng.choice(new)
        if rule.get("min_confidence") is not None:
            rule["require"] = None
    elif how == "add_rule":
        new.insert(
            rng.randrange(len(new) + 1),
            {"paths": [rng.choice(GLOBS)], "require": None, "min_confidence": 0.9},
        )
    elif how == "action":
        action = "review" if action == "reject" else "reject"
    elif how == "files":
        files = rng.sample(EXTRA_FILES, rng.randint(0, len(EXTRA_FILES)))
    return action, new, files


@given(
    old_rules=st.lists(rules(), max_size=4),
    action=st.sampled_from(["review", "reject"]),
    files=st.lists(st.sampled_from(EXTRA_FILES), max_size=2, unique=True),
    steps=st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3),
    seed=st.integers(0, 2**32 - 1),
)
@settings(max_examples=300, deadline=None)
def test_every_weakening_the_oracle_finds_is_reported(
    old_rules: list[Rule], action: str, files: list[str], steps: list[str], seed: int
) -> None:
    rng = random.Random(seed)
    new_action, new_rules, new_files = action, old_rules, files
    for how in steps:
        new_action, new_rules, new_files = mutate(rng, new_action, new_rules, new_files, how)
    old = parse_policy(toml(action, old_rules, files), ".redline.toml")
    new = parse_policy(toml(new_action, new_rules, new_files), ".redline.toml")
    missed = oracle(old, new)
    reported = weakenings(old, new)
    if missed:
        assert reported, f"a weakening was not reported: {missed[:3]}"
    if action == "reject" and new_action == "review":
        assert any("guard.action" in r for r in reported)


@given(
    rules_=st.lists(rules(), min_size=1, max_size=4),
    action=st.sampled_from(["review", "reject"]),
    seed=st.integers(0, 2**32 - 1),
)
@settings(max_examples=150, deadline=None)
def test_reordering_or_adding_rules_is_not_a_weakening(
    rules_: list[Rule], action: str, seed: int
) -> None:
    rng = random.Random(seed)
    shuffled = list(rules_)
    rng.shuffle(shuffled)
    more = [*shuffled, {"paths": [rng.choice(GLOBS)], "require": ["exact"], "min_confidence": None}]
    old = parse_policy(toml(action, rules_, []), ".redline.toml")
    assert weakenings(old, parse_policy(toml(action, shuffled, []), ".redline.toml")) == []
    assert weakenings(old, parse_policy(toml(action, more, ["lib/**"]), ".redline.toml")) == []
    assert weakenings(old, old) == []


@given(outer=st.sampled_from(GLOBS), inner=st.sampled_from(GLOBS))
def test_glob_covers_is_sound(outer: str, inner: str) -> None:
    """When it says every path of ``inner`` is matched by ``outer``, no path says otherwise."""
    if glob_covers(outer, inner):
        for path in PATHS:
            if glob_matches(inner, path):
                assert glob_matches(outer, path), (outer, inner, path)


@pytest.mark.parametrize(
    ("outer", "inner"),
    [
        ("src/auth/**", "src/auth/**"),
        ("**", "src/auth/**"),
        ("src/**", "src/auth/**"),
        ("src/**", "src/auth/*.py"),
        ("src/**", "src/auth"),
        ("/src", "src/auth/**"),
        ("src/auth", "src/auth/**"),
        ("src/", "src/auth/**"),
        ("docs", "docs/**"),
        ("docs", "lib/docs/**"),
        ("*.sql", "a.sql"),
        ("*", "anything/at/all"),
    ],
)
def test_glob_covers_what_it_can_prove(outer: str, inner: str) -> None:
    assert glob_covers(outer, inner)


@pytest.mark.parametrize(
    ("outer", "inner"),
    [
        ("src/auth/**", "src/**"),
        ("src/auth/**", "src/auth"),  # a file named src/auth itself
        ("src/**", "src"),  # src at any depth
        ("docs/**", "docs"),
        ("*.sql", "migrations/**"),
        ("docs/", "docs"),  # a file named docs
        ("src/*", "src/auth/**"),  # unproven: left to a person
    ],
)
def test_glob_covers_refuses_what_it_cannot_prove(outer: str, inner: str) -> None:
    assert not glob_covers(outer, inner)


# --- the reproduction, and the words ------------------------------------------------------------

POLICY = """\
[[guard.protect]]
paths = ["src/auth/**"]
require = "exact"

[[guard.protect]]
paths = ["docs/**"]
min_confidence = 0.5
"""
# Lines 3 and 7 swapped: the same lines, src/auth/** now takes 0.5 and docs/** exact.
SWAPPED = """\
[[guard.protect]]
paths = ["src/auth/**"]
min_confidence = 0.5

[[guard.protect]]
paths = ["docs/**"]
require = "exact"
"""


def test_two_lines_swapped_between_rules_weaken_the_policy() -> None:
    assert sorted(POLICY.splitlines()) == sorted(SWAPPED.splitlines())
    old = parse_policy(POLICY, ".redline.toml")
    new = parse_policy(SWAPPED, ".redline.toml")
    found = weakenings(old, new)
    assert found == [
        "src/auth/** (guard.protect[1] (src/auth/**)): required match type exact; the new "
        "policy also takes " + ", ".join(sorted(set(MATCH_TYPES) - {"exact"})),
        # an edit labelled exact below full confidence was checked against 0.5, and no more
        "docs/** (guard.protect[2] (docs/**)): required confidence 0.5; the new policy takes 0",
    ]
    assert ("src/auth/login.py", "fuzzy", 0.99) in oracle(old, new)
    assert weakenings(new, old)  # and back: docs/** lost its rule too


def test_a_lowered_threshold_is_named() -> None:
    old = parse_policy('[[guard.protect]]\npaths = ["docs/**"]\nmin_confidence = 0.9\n', "p")
    new = parse_policy('[[guard.protect]]\npaths = ["docs/**"]\nmin_confidence = 0.8\n', "p")
    assert weakenings(old, new) == [
        "docs/** (guard.protect[1] (docs/**)): required confidence 0.9; the new policy takes 0.8"
    ]


def test_a_rule_removed_and_guard_files_dropped_are_named() -> None:
    old = parse_policy(
        '[guard]\nfiles = ["deploy/**"]\n[[guard.protect]]\npaths = ["m/**"]\nrequire = "exact"\n',
        "p",
    )
    new = parse_policy("", "p")
    found = weakenings(old, new)
    assert any(
        f.startswith("deploy/** (guard.files (deploy/**)): every agent change") for f in found
    )
    assert any(
        f.startswith("m/** (guard.protect[1] (m/**)): required match type exact") for f in found
    )


def test_a_narrower_glob_is_a_weakening_a_wider_one_is_not() -> None:
    def policy(glob: str) -> Policy:
        return parse_policy(f'[[guard.protect]]\npaths = ["{glob}"]\nrequire = "exact"\n', "p")

    assert weakenings(policy("src/**"), policy("src/auth/**"))
    assert weakenings(policy("src/auth/**"), policy("src/**")) == []


def test_stricter_terms_are_not_a_weakening() -> None:
    old = parse_policy('[[guard.protect]]\npaths = ["a/**"]\nmin_confidence = 0.8\n', "p")
    new = parse_policy(
        '[[guard.protect]]\npaths = ["a/**"]\nmin_confidence = 0.9\nrequire = "fuzzy"\n', "p"
    )
    assert weakenings(old, new) == []


def test_reject_to_review_and_a_dropped_validate_glob_are_weakenings() -> None:
    old = parse_policy('[guard]\naction = "reject"\n[[validate]]\npaths = ["**/*.py"]\n', "p")
    new = parse_policy('[guard]\naction = "review"\n', "p")
    assert weakenings(old, new) == [
        'guard.action "reject" became "review": an edit breaking a rule would be applied '
        "(flagged) instead of refused",
        "[[validate]] **/*.py: files there would no longer be validated",
    ]


@given(
    one=st.lists(rules(), max_size=3),
    other=st.lists(rules(), max_size=3),
    actions=st.tuples(st.sampled_from(["review", "reject"]), st.sampled_from(["review", "reject"])),
    files=st.lists(st.sampled_from(EXTRA_FILES), max_size=2, unique=True),
)
@settings(max_examples=100, deadline=None)
def test_a_joined_policy_is_never_weaker_than_either_side(
    one: list[Rule], other: list[Rule], actions: tuple[str, str], files: list[str]
) -> None:
    """How the gate joins the policies it judges by (HEAD's, the change's, BASE's):
    whatever either side flags, the join flags — whatever the order of the rules."""
    first = parse_policy(toml(actions[0], one, files), ".redline.toml")
    second = parse_policy(toml(actions[1], other, []), ".redline.toml")
    for joined in (first.stricter(second, "there"), second.stricter(first, "there")):
        assert oracle(first, joined) == []
        assert oracle(second, joined) == []
        assert weakenings(first, joined) == [] and weakenings(second, joined) == []
