"""Verdicts per case, tallies per tool and category, and the printed table."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from casekit import Case

# Column order of the table; README.md explains each.
VERDICTS = ("ok", "wrong", "refused", "accepted", "other", "crash")
SHORT = {
    "ok": "ok",
    "wrong": "wrng",
    "refused": "rfsd",
    "accepted": "accp",
    "other": "othr",
    "crash": "crsh",
}


@dataclass(frozen=True)
class Outcome:
    status: str
    data: bytes | None
    match_type: str | None = None


@dataclass(frozen=True)
class Run:
    """One tool on one case: the outcome (or the exception) and the time it took."""

    case: Case
    outcome: Outcome | None
    error: str | None
    seconds: float

    @property
    def verdict(self) -> str:
        return verdict(self.case, self.outcome)


def verdict(case: Case, outcome: Outcome | None) -> str:
    if outcome is None:
        return "crash"
    accepted = outcome.status == "applied" or outcome.data is not None
    if case.expected is not None:
        if not accepted:
            return "refused"
        return "ok" if outcome.data == case.expected else "wrong"
    if accepted:
        return "accepted"
    if case.refuse and outcome.status not in case.refuse:
        return "other"
    return "ok"


@dataclass
class Tally:
    runs: list[Run] = field(default_factory=list)

    def counts(self, category: str | None = None) -> Counter[str]:
        return Counter(r.verdict for r in self.runs if category in (None, r.case.category))

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.runs)

    def errors(self) -> Counter[str]:
        return Counter(r.error for r in self.runs if r.error is not None)

    def match_types(self, category: str) -> Counter[str]:
        return Counter(
            r.outcome.match_type or r.outcome.status
            for r in self.runs
            if r.outcome is not None and r.case.category == category
        )


def table(categories: list[str], sizes: Counter[str], tallies: dict[str, Tally]) -> str:
    tools = list(tallies)
    cols = " ".join(f"{SHORT[v]:>4}" for v in VERDICTS)
    width = len(cols)
    head1 = f"{'':21}{'':>4}" + "".join(f" | {name:^{width}}" for name in tools)
    head2 = f"{'category':21}{'n':>4}" + f" | {cols}" * len(tools)
    lines = [head1, head2, "-" * len(head2)]
    for category in [*categories, None]:
        label = category or "TOTAL"
        n = sizes[category] if category else sum(sizes.values())
        if category is None:
            lines.append("-" * len(head2))
        row = f"{label:21}{n:>4}"
        for tool in tools:
            counts = tallies[tool].counts(category)
            row += " | " + " ".join(f"{counts.get(v, 0):>4}" for v in VERDICTS)
        lines.append(row)
    total = sum(sizes.values())
    acc = "  ".join(
        f"{tool}: {tallies[tool].counts()['ok']}/{total} "
        f"({100.0 * tallies[tool].counts()['ok'] / max(total, 1):.1f}%)"
        for tool in tools
    )
    lines.append(f"correct: {acc}")
    return "\n".join(lines)
