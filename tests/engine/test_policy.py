"""engine.policy: gitignore-style globs and which edit evidence a rule accepts."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redline.engine.policy import (
    DEFAULT_PROTECTED,
    DEFAULT_RULE,
    GUARD_FILE_REASON,
    MATCH_TYPES,
    Policy,
    Rule,
    Violation,
    default_rules,
    glob_matches,
)

# --- globs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        # ** crosses directories, including none
        ("migrations/**", "migrations/001.sql", True),
        ("migrations/**", "migrations/2024/01/001.sql", True),
        ("migrations/**", "src/migrations/001.sql", False),
        ("migrations/**", "migrations.sql", False),
        ("**/*.sql", "001.sql", True),
        ("**/*.sql", "db/migrations/001.sql", True),
        ("**/*.sql", "db/migrations/001.sql.bak", False),
        ("src/**/auth.py", "src/auth.py", True),
        ("src/**/auth.py", "src/a/b/c/auth.py", True),
        ("src/**/auth.py", "lib/src/auth.py", False),
        ("src/**/auth.py", "src/a/b/c/auth.pyc", False),
        # * stays within one path segment
        ("src/*.py", "src/app.py", True),
        ("src/*.py", "src/sub/app.py", False),
        ("src/*.py", "src/app.pyi", False),
        ("src/auth*", "src/authz.py", True),
        ("src/?.py", "src/a.py", True),
        ("src/?.py", "src/ab.py", False),
        ("src/[ab].py", "src/b.py", True),
        ("src/[ab].py", "src/c.py", False),
        ("src/[!ab].py", "src/c.py", True),
        ("src/[!ab].py", "src/a.py", False),
        # a directory pattern covers everything below it
        ("src/auth", "src/auth/login.py", True),
        ("src/auth", "src/auth/deep/er/tokens.py", True),
        ("src/auth", "src/authz/login.py", False),
        ("src/auth/", "src/auth/login.py", True),
        ("docs/", "docs/readme.md", True),
        ("docs/", "site/docs/readme.md", True),  # no inner slash: unanchored
        ("src/*", "src/sub/deep.py", True),  # matches the directory src/sub
        # a name without a slash matches at any depth
        ("*.sql", "001.sql", True),
        ("*.sql", "db/migrations/001.sql", True),
        ("*.sql", "db/001.sqlite", False),
        ("secrets", "secrets", True),
        ("secrets", "config/secrets", True),
        ("secrets", "config/secrets/prod.env", True),
        ("secrets", "config/mysecrets", False),
        (".redline.toml", "sub/project/.redline.toml", True),
        # a leading slash anchors a name at the root
        ("/config.py", "config.py", True),
        ("/config.py", "src/config.py", False),
        # regular-expression characters are literal
        ("a+b.(c)", "a+b.(c)", True),
        ("a+b.(c)", "aab.(c)", False),
        ("v1.0/*.txt", "v1x0/a.txt", False),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert glob_matches(pattern, path) is expected


def test_a_rule_covers_a_path_when_any_of_its_globs_matches() -> None:
    rule = Rule("r", ("migrations/**", "*.sql"), frozenset({"exact"}))
    assert rule.covers("migrations/x.py")
    assert rule.covers("db/schema.sql")
    assert not rule.covers("src/app.py")


# --- Policy.check -------------------------------------------------------------------------


def minimum(value: float, paths: tuple[str, ...] = ("docs/**",)) -> Policy:
    return Policy(rules=(Rule("docs rule", paths, None, value),))


def test_confidence_equal_to_the_minimum_passes() -> None:
    assert minimum(0.9).check("docs/a.md", "fuzzy", 0.9) == []
    assert minimum(0.9925).check("docs/a.md", "fuzzy", 0.9925) == []


def test_confidence_just_below_the_minimum_fails() -> None:
    [violation] = minimum(0.9).check("docs/a.md", "fuzzy", 0.8999)
    assert violation == Violation(
        "docs rule", "docs/a.md", "confidence 0.8999 is below the minimum 0.9"
    )


def test_confidence_above_the_minimum_passes() -> None:
    assert minimum(0.9).check("docs/a.md", "line_fuzzy", 0.9001) == []


def test_a_minimum_of_zero_accepts_any_confidence() -> None:
    assert minimum(0.0).check("docs/a.md", "fuzzy", 0.0) == []


def test_a_minimum_of_one_accepts_only_full_confidence() -> None:
    policy = minimum(1.0)
    assert len(policy.check("docs/a.md", "trailing_newline", 0.99)) == 1
    assert policy.check("docs/a.md", "whitespace", 1.0) == []


def test_require_as_one_match_type() -> None:
    policy = Policy(rules=(Rule("m", ("migrations/**",), frozenset({"whitespace"})),))
    assert policy.check("migrations/1.sql", "whitespace", 0.95) == []
    [violation] = policy.check("migrations/1.sql", "fuzzy", 0.99)
    assert violation.rule == "m"
    assert violation.path == "migrations/1.sql"
    assert violation.reason == "match_type fuzzy is not one of: whitespace"


def test_require_as_a_list_of_match_types() -> None:
    allowed = frozenset({"trailing_newline", "punctuation", "whitespace"})
    policy = Policy(rules=(Rule("m", ("migrations/**",), allowed),))
    for match_type in allowed:
        assert policy.check("migrations/1.sql", match_type, 0.9) == []
    [violation] = policy.check("migrations/1.sql", "line_fuzzy", 0.97)
    assert violation.reason == (
        "match_type line_fuzzy is not one of: punctuation, trailing_newline, whitespace"
    )


def test_require_and_minimum_together() -> None:
    policy = Policy(rules=(Rule("m", ("m/**",), frozenset({"fuzzy"}), 0.95),))
    assert policy.check("m/a", "fuzzy", 0.95) == []
    [low] = policy.check("m/a", "fuzzy", 0.94)
    assert "below the minimum 0.95" in low.reason
    [wrong] = policy.check("m/a", "whitespace", 0.99)
    assert "match_type whitespace" in wrong.reason


@pytest.mark.parametrize(
    "rule",
    [
        Rule("require fuzzy", ("**",), frozenset({"fuzzy"})),
        Rule("require whitespace", ("**",), frozenset({"whitespace"})),
        Rule("minimum 1", ("**",), None, 1.0),
        Rule("both", ("**",), frozenset({"line_fuzzy"}), 1.0),
    ],
)
def test_exact_edits_pass_every_rule_a_policy_can_state(rule: Rule) -> None:
    policy = Policy(rules=(rule, *default_rules()))
    assert policy.check("migrations/001.sql", "exact", 1.0) == []
    # ...but not the guard's own files: an exact edit can unprotect a path there
    assert policy.check(".redline.toml", "exact", 1.0) == [
        Violation(DEFAULT_RULE, ".redline.toml", GUARD_FILE_REASON)
    ]


def test_an_exact_label_below_full_confidence_is_still_checked() -> None:
    policy = Policy(rules=(Rule("m", ("**",), None, 1.0),))
    assert len(policy.check("a.py", "exact", 0.5)) == 1


def test_unprotected_paths_pass_whatever_the_evidence() -> None:
    policy = Policy(rules=(Rule("m", ("migrations/**",), frozenset({"exact"}), 1.0),))
    for match_type in MATCH_TYPES:
        assert policy.check("src/app.py", match_type, 0.01) == []


def test_every_rule_that_covers_the_path_reports() -> None:
    policy = Policy(
        rules=(
            Rule("one", ("migrations/**",), frozenset({"exact"})),
            Rule("two", ("*.sql",), None, 0.999),
            Rule("three", ("docs/**",), frozenset({"exact"})),
        )
    )
    found = policy.check("migrations/001.sql", "fuzzy", 0.99)
    assert [v.rule for v in found] == ["one", "two"]


def test_an_empty_policy_passes_everything() -> None:
    assert Policy().check(".redline.toml", "fuzzy", 0.1) == []


# --- defaults -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        ".redline.toml",
        ".pre-commit-config.yaml",
        ".pre-commit-hooks.yaml",
        ".githooks/pre-commit",
        ".husky/pre-push",
        "sub/project/.redline.toml",
        "lefthook.yml",
        ".lefthook.yaml",
        "lefthook-local.yml",
        ".github/workflows/redline.yml",
        ".github/workflows/nested/ci.yaml",
        ".github/actions/setup/action.yml",
        ".gitlab-ci.yml",
        ".gitlab/ci/test.yml",
        ".circleci/config.yml",
        ".travis.yml",
        "azure-pipelines.yml",
        "bitbucket-pipelines.yml",
        "Jenkinsfile",
        "services/api/Jenkinsfile",
        ".buildkite/pipeline.yml",
        ".drone.yml",
        ".woodpecker/build.yml",
        "appveyor.yml",
        ".cirrus.yml",
        ".gitea/workflows/ci.yml",
        ".forgejo/workflows/ci.yml",
    ],
)
def test_default_rules_flag_every_edit_of_the_guard_files(path: str) -> None:
    policy = Policy(rules=default_rules())
    expected = [Violation("default (guard files: policy, hooks, CI)", path, GUARD_FILE_REASON)]
    assert GUARD_FILE_REASON == (
        "edits to the guard's own files (its policy, hook configuration and CI definitions) "
        "need a person's approval"
    )
    # whatever the match type: tolerant, exact, or none at all (add, delete, write)
    for match_type in (*MATCH_TYPES, None):
        assert policy.check(path, match_type, 1.0) == expected, match_type
    assert policy.check(path, "fuzzy", 0.5) == expected  # one flag, not one per reason


@pytest.mark.parametrize(
    "path",
    [
        "src/app.py",
        "pyproject.toml",
        "docs/workflows/ci.yml",  # a workflows folder that is not GitHub's
        "src/.github/workflows.py",
        "github/workflows/ci.yml",
        "Jenkinsfile.md",
    ],
)
def test_default_rules_leave_other_files_alone(path: str) -> None:
    policy = Policy(rules=default_rules())
    assert policy.check(path, "fuzzy", 0.81) == []
    assert policy.check(path, "exact", 1.0) == []


def test_the_policy_adds_guard_files_as_a_rule_of_their_own() -> None:
    policy = Policy(rules=default_rules((), ("deploy/**", "Makefile")))
    [violation] = policy.check("deploy/prod.sh", "exact", 1.0)
    assert violation.rule == "guard.files (deploy/**, Makefile)"
    assert violation.reason == GUARD_FILE_REASON
    assert policy.check("tools/Makefile", None, 0.0)
    assert policy.check(".gitlab-ci.yml", "exact", 1.0)  # the defaults still hold


def test_default_rules_take_extra_paths() -> None:
    policy = Policy(rules=default_rules(("pyproject.toml",)))
    assert policy.check("pyproject.toml", "fuzzy", 0.99)
    assert set(DEFAULT_PROTECTED) <= set(policy.rules[0].paths)


def test_the_default_policy_reviews() -> None:
    assert Policy().action == "review"
    assert Policy().source == "defaults"


# --- operations without matched text, and joined policies ------------------------------------


@dataclass(frozen=True)
class Op:
    path: str
    match_type: str | None
    confidence: float | None


def test_judge_flags_adds_and_deletes_only_of_the_guards_own_files() -> None:
    policy = Policy(
        rules=(*default_rules(), Rule("m", ("migrations/**",), frozenset({"exact"}), 1.0))
    )
    ops = [
        Op(".redline.toml", None, None),  # added, deleted or moved: no text matched
        Op(".husky/pre-push", "exact", 1.0),
        Op("migrations/002.sql", None, None),  # a new migration matched nothing: passes
        Op("migrations/001.sql", "exact", 1.0),
        Op("migrations/003.sql", "fuzzy", 0.9),
    ]
    judged = [(op.path, v.rule) for op, v in policy.judge(ops)]
    assert judged == [
        (".redline.toml", DEFAULT_RULE),
        (".husky/pre-push", DEFAULT_RULE),
        ("migrations/003.sql", "m"),
    ]


AUTH = Rule("guard.protect[2] (src/auth/**)", ("src/auth/**",), frozenset({"exact"}))
MIGRATIONS = Rule("guard.protect[1] (migrations/**)", ("migrations/**",), frozenset({"exact"}))


def test_a_stricter_join_keeps_every_rule_of_both() -> None:
    before = Policy("review", (*default_rules(), MIGRATIONS, AUTH), ".redline.toml")
    # the new policy drops src/auth/** and adds docs/**
    docs = Rule("guard.protect[2] (docs/**)", ("docs/**",), None, 0.9)
    after = Policy("review", (*default_rules(), MIGRATIONS, docs), ".redline.toml")
    joined = after.stricter(before, "before the push")
    assert [r.name for r in joined.rules] == [
        DEFAULT_RULE,
        "guard.protect[1] (migrations/**)",
        "guard.protect[2] (docs/**)",
        "guard.protect[2] (src/auth/**) of .redline.toml before the push",
    ]
    assert joined.source == ".redline.toml"
    [violation] = joined.check("src/auth/login.py", "fuzzy", 0.9)
    assert violation.rule == "guard.protect[2] (src/auth/**) of .redline.toml before the push"
    assert joined.check("docs/a.md", "fuzzy", 0.5)
    # joined the other way round, the same rules apply
    other = before.stricter(after, "in the push")
    assert {r.paths for r in other.rules} == {r.paths for r in joined.rules}


def test_a_join_with_an_equal_policy_changes_nothing() -> None:
    policy = Policy("review", (*default_rules(), MIGRATIONS), ".redline.toml")
    same = Policy("review", (*default_rules(), MIGRATIONS), ".redline.toml")
    assert policy.stricter(same, "anywhere") is policy


def test_a_join_rejects_when_either_side_does() -> None:
    review = Policy("review", default_rules(), ".redline.toml")
    reject = Policy("reject", default_rules(), ".redline.toml")
    assert review.stricter(reject, "x").action == "reject"
    assert reject.stricter(review, "x").action == "reject"


# --- the paths whose files must still parse --------------------------------------------


def test_validation_is_off_by_default_and_on_for_the_named_paths() -> None:
    assert not Policy().validates("src/app.py")
    policy = Policy(validate=("**/*.py", "config/*.json"))
    assert policy.validates("app.py")
    assert policy.validates("src/deep/app.py")
    assert policy.validates("config/a.json")
    assert not policy.validates("data/a.json")
    assert not policy.validates("src/app.pyc")


def test_a_join_validates_the_paths_of_both() -> None:
    base = Policy("review", default_rules(), ".redline.toml", ("**/*.py",))
    session = Policy("review", default_rules(), ".redline.toml", ("*.json",))
    joined = session.stricter(base, "at the base")
    assert joined.validate == ("*.json", "**/*.py")
    assert joined.validates("a.py") and joined.validates("a.json")
    # a session policy without [[validate]] does not turn the base's off
    assert Policy("review", default_rules()).stricter(base, "at the base").validates("a.py")
    assert base.stricter(Policy("review", default_rules()), "x") is base


# --- globs without wildcards are matched without pathspec, the same way ---------------------

LITERAL_GLOBS = [*DEFAULT_PROTECTED, "src/auth", "/src", "docs", "a b", "/a/b/**", "x.y/**"]
NAMES = ["src", "auth", "docs", "a b", "a", "b", "x.y", "Jenkinsfile", "lefthook.yml",
         ".github", "workflows", "ci.yml", ".husky", ".redline.toml", ".gitlab-ci.yml"]  # fmt: skip


@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4))
def test_a_glob_without_wildcards_matches_as_pathspec_reads_it(parts: list[str]) -> None:
    from redline.engine.policy import _compile, _literal_form

    path = "/".join(parts)
    for pattern in LITERAL_GLOBS:
        assert _literal_form(pattern) is not None, pattern
        assert glob_matches(pattern, path) == _compile(pattern).match_file(path), (pattern, path)
