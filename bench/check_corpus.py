"""Self-check of the corpus: expected bytes re-derived a second, independent way.

For the categories whose expectation is a plain string replacement (exact, CRLF,
mixed endings, zero-width after removing the invisible characters, replace_all)
the position-built expected bytes must equal ``str.replace`` on the file's LF
view with the file's newlines restored. Every applying case must change the file.

    python bench/check_corpus.py [--quick]
"""

from __future__ import annotations

import argparse
import sys

from casekit import Case
from corpus import build_corpus

_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u2060\u00ad\ufeff\u200c"))
_BY_REPLACE = {"exact", "crlf", "mixed_endings", "zero_width", "replace_all"}


def problems(case: Case) -> list[str]:
    out: list[str] = []
    if case.expected is None:
        return out
    if case.expected == case.data:
        out.append("expected bytes equal the original file")
    if case.category not in _BY_REPLACE:
        return out
    item = case.request.edits[0]
    text = case.data.decode("utf-8")
    lf = text.replace("\r\n", "\n")
    old = item.old_string.translate(_INVISIBLE)
    new = item.new_string.translate(_INVISIBLE)
    if lf.count(old) != 1 and not item.replace_all:
        out.append(f"old_string occurs {lf.count(old)} times")
    want = lf.replace(old, new) if item.replace_all else lf.replace(old, new, 1)
    got = case.expected.decode("utf-8")
    if case.category == "mixed_endings":
        got = got.replace("\r\n", "\n")  # endings are checked line by line by construction
    elif "\r\n" in text:
        want = want.replace("\n", "\r\n")
    if want != got:
        out.append("expected bytes differ from str.replace")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    cases = build_corpus(parser.parse_args().quick)
    bad = [(case.name, p) for case in cases for p in problems(case)]
    for name, problem in bad:
        print(f"{name}: {problem}")
    print(f"{len(cases)} cases checked, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
