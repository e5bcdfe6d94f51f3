"""Batches: 2–4 exact items matched against the original file, written once.

``batch`` cases apply (sometimes with a no-op item, old == new, which is skipped);
``batch_failing`` cases contain one item that must fail — absent, ambiguous,
whitespace-drifted (batches are exact-only), misspelt, or overlapping another
item — so nothing may be written.
"""

from __future__ import annotations

import random
from functools import partial

from casekit import Attempt, Case, case_name
from cases_exact import crlf_doc
from mutations import choose_mod, typo
from redline.engine.edit import EditItem, EditRequest
from sources import Source, absent_from, blocks
from textmodel import Doc, reindent

ALL_KINDS = ("rename", "insert", "retext", "delete")
Span = tuple[int, int]


def _spans(rng: random.Random, src: Source, count: int) -> list[Span]:
    """``count`` unique blocks of 1–5 lines with at least two lines between any two."""
    spans: list[Span] = []
    for i, j in blocks(rng, src.doc, 1, 5, tries=200):
        if all(j + 2 <= a or b + 2 <= i for a, b in spans):
            spans.append((i, j))
        if len(spans) == count:
            return spans
    return []


def _items(rng: random.Random, file: Doc, spans: list[Span]) -> list[tuple[Span, EditItem]] | None:
    out: list[tuple[Span, EditItem]] = []
    for i, j in spans:
        lines = file.lines[i:j]
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is None:
            return None
        out.append(((i, j), EditItem("\n".join(lines), "\n".join(mod.apply(lines)))))
    return out


def _expected(file: Doc, items: list[tuple[Span, EditItem]]) -> bytes:
    doc = file
    for (i, j), item in sorted(items, key=lambda pair: pair[0], reverse=True):
        doc = doc.replace_block(i, j, item.new_string.split("\n"))
    return doc.encode()


def batch(src: Source, rng: random.Random) -> Case | None:
    file = crlf_doc(src) if rng.random() < 0.25 else src.doc
    count = rng.randint(2, 4)
    noop = count > 2 and rng.random() < 0.3
    spans = _spans(rng, src, count)
    items = _items(rng, file, spans) if spans else None
    if not items:
        return None
    if noop:  # the agent restates one block unchanged: skipped, not checked
        span, item = items[-1]
        items[-1] = (span, EditItem(item.old_string, item.old_string))
    rng.shuffle(items)
    style = "crlf " if file is not src.doc else ""
    note = f"{style}{count} items" + (" +noop" if noop else "")
    return Case(
        name=case_name("batch", src, items[0][0], note),
        category="batch",
        data=file.encode(),
        request=EditRequest(src.path, tuple(item for _, item in items), batch=True),
        expected=_expected(file, items),
        note=note,
    )


def batch_failing(pool: list[Source], src: Source, rng: random.Random) -> Case | None:
    count = rng.randint(2, 4)
    spans = _spans(rng, src, count)
    items = _items(rng, src.doc, spans) if spans else None
    if not items:
        return None
    failure = rng.choice(("absent", "ambiguous", "drifted", "typo", "overlap"))
    bad = _failing_item(rng, failure, src, items, pool)
    if bad is None:
        return None
    edits = [item for _, item in items]
    edits.insert(rng.randrange(len(edits) + 1), bad)
    note = f"{len(edits)} items, {failure} item"
    return Case(
        name=case_name("batch_failing", src, items[0][0], note),
        category="batch_failing",
        data=src.doc.encode(),
        request=EditRequest(src.path, tuple(edits), batch=True),
        expected=None,
        note=note,
    )


def _failing_item(
    rng: random.Random,
    failure: str,
    src: Source,
    items: list[tuple[Span, EditItem]],
    pool: list[Source],
) -> EditItem | None:
    doc = src.doc
    text = doc.text()
    if failure == "absent":
        other = rng.choice([s for s in pool if s.path != src.path])
        for i, j in blocks(rng, other.doc, 2, 4):
            old = "\n".join(other.doc.lines[i:j])
            if absent_from(doc, old):
                return EditItem(old, old.replace("(", "( ", 1) if "(" in old else old + "\n")
        return None
    if failure == "ambiguous":
        # Whole lines found twice (a line-starting text found again after part of a
        # deeper line's indentation is not an exact occurrence).
        lines = [
            s for s in doc.lines if len(s.strip()) >= 14 and ("\n" + text).count(f"\n{s}\n") >= 2
        ]
        if not lines:
            return None
        line = rng.choice(sorted(set(lines)))
        return EditItem(line, line + "  # checked")
    (i, j), item = items.pop(rng.randrange(len(items)))
    lines = doc.lines[i:j]
    if failure == "drifted":
        old = "\n".join(reindent(s, 4) for s in lines)
        return None if old in text else EditItem(old, item.new_string)
    if failure == "typo":
        rows = [k for k, s in enumerate(lines) if typo(rng, s)]
        if not rows:
            return None
        k = rng.choice(rows)
        found = typo(rng, lines[k])
        assert found is not None
        wrong = list(lines)
        wrong[k] = lines[k].replace(found[0], found[1], 1)
        return EditItem("\n".join(wrong), item.new_string)
    # overlap: this item's block plus the line after it, alongside the item itself
    items.append(((i, j), item))
    extended = "\n".join(doc.lines[i : j + 1])
    if not doc.lines[j].strip() or text.count(extended) != 1:
        return None
    return EditItem(extended, extended + "\n" + doc.lines[j].replace(doc.lines[j].strip(), "pass"))


def batch_failing_attempt(pool: list[Source]) -> Attempt:
    return partial(batch_failing, pool)
