"""Syntax validation's cost per edit: a 5,000-line Python file and a 5,000-line TypeScript file.

    python bench/validate_bench.py [--runs N] [--json FILE]     # ~30 s with the default 31 runs

Each file is generated (seeded: the same file every run), realistic code: a
module of classes and functions with docstrings, comments, comprehensions,
f-strings / template literals, generics. For each file, through
``redline.engine.edit.apply_edit`` (an exact one-line edit in the middle of the
file, its new text different in every run), p50 and p90 over ``--runs`` runs
after a warm-up, as wall time and as this process's CPU time (the machine is
shared: CPU time is what validation itself costs):

- ``edit (baseline)``: the edit without validation;
- ``first validation``: the edit with ``validate`` on, leaving the file
  parseable, in a process that has not validated the file before (each
  embedded ``redline apply`` process; the first edit of a file in the daemon):
  Python compiles the top-level part the edit changed, as it was and as it is,
  and scans the text before it (``engine.pysyntax.adds_no_error``);
  tree-sitter parses the new content whole;
- ``validated before``: the same edit where the file's previous content was
  validated in this process (the daemon, a ``--jsonl`` stream): the part as it
  was is remembered, so Python compiles one part; tree-sitter parses whole;
- ``refused``: an edit that breaks the file, first validation — the new content
  and then the old one are parsed, the most an edit of a parseable file pays;
- ``already broken``: the file had an error before and keeps it through an
  unrelated edit — Python's compile stops at the first error, so both contents
  are read again by tree-sitter (the rare worst case).

The target is ≤ 20 ms per file for what validation adds to the edit (a row's
CPU p50 less the baseline's), in the ``first validation`` and ``validated
before`` cases; the exit status is 1 when one is over.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from redline.engine.edit import EditItem, EditRequest, apply_edit
from redline.engine.validate import forget_compiled_parts, validate

LINES = 5000
TARGET_MS = 20.0
NAMES = (
    "order", "item", "user", "account", "price", "total", "record", "entry", "batch", "queue",
    "cache", "client", "config", "event", "handler", "payload", "report", "result", "session",
    "token", "value", "window", "buffer", "count", "limit", "offset", "source", "target",
)  # fmt: skip


def _name(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(NAMES) for _ in range(parts))


def _camel(rng: random.Random, parts: int = 2) -> str:
    words = [rng.choice(NAMES) for _ in range(parts)]
    return words[0] + "".join(w.title() for w in words[1:])


# --- Python ----------------------------------------------------------------------------


def _py_function(rng: random.Random, indent: str, method: bool) -> list[str]:
    name = _name(rng)
    args = ", ".join(_name(rng, 1) + f"_{i}" for i in range(rng.randint(1, 3)))
    args = f"self, {args}" if method else args
    body = indent + "    "
    lines = [
        f"{indent}def {name}({args}) -> dict[str, int]:",
        f'{body}"""Return the {name.replace("_", " ")} for the given inputs.',
        "",
        f"{body}Values below the limit are dropped; the rest are grouped by source.",
        f'{body}"""',
        f"{body}result: dict[str, int] = {{}}",
    ]
    for _ in range(rng.randint(2, 5)):
        kind = rng.random()
        var = _name(rng, 1)
        if kind < 0.3:
            lines += [
                f"{body}for {var} in sorted({_name(rng)}, key=lambda x: x.{_name(rng, 1)}):",
                f"{body}    if {var}.{_name(rng, 1)} > {rng.randint(1, 99)}:",
                f"{body}        result[{var}.name] = result.get({var}.name, 0) + 1",
                f"{body}    # keep the {_name(rng, 1)} for the next pass",
            ]
        elif kind < 0.55:
            lines += [
                f"{body}{var} = [x * {rng.randint(2, 9)} for x in {_name(rng)} if x is not None]",
                f'{body}log.debug(f"{var}={{{var}!r}} ({{len({var})}} entries)")',
            ]
        elif kind < 0.8:
            lines += [
                f"{body}try:",
                f"{body}    {var} = self._{_name(rng)}({rng.randint(0, 9)})"
                if method
                else f"{body}    {var} = {_name(rng)}({rng.randint(0, 9)})",
                f"{body}except (KeyError, ValueError) as exc:",
                f'{body}    raise {_camel(rng).title()}Error(f"cannot read {{exc}}") from None',
                f"{body}result['{var}'] = len({var})",
            ]
        else:
            lines += [
                f"{body}with open({_name(rng)}, encoding='utf-8') as handle:",
                f"{body}    {var} = {{k: v for k, v in json.load(handle).items() if v}}",
            ]
    lines += [f"{body}return result", ""]
    return lines


def python_file(seed: int = 1, lines: int = LINES) -> str:
    rng = random.Random(seed)
    out = [
        '"""Orders, accounts and their reports (generated for the validation bench)."""',
        "",
        "from __future__ import annotations",
        "",
        "import json",
        "import logging",
        "from dataclasses import dataclass, field",
        "",
        "log = logging.getLogger(__name__)",
        "",
    ]
    while True:
        if rng.random() < 0.4:
            cls = _camel(rng).title().replace("_", "")
            block = [
                "",
                "@dataclass",
                f"class {cls}:",
                f'    """A {cls} and what it holds."""',
                "",
                f"    {_name(rng)}: int = 0",
                f"    {_name(rng)}: list[str] = field(default_factory=list)",
                "",
            ]
            for _ in range(rng.randint(1, 3)):
                block += _py_function(rng, "    ", method=True)
        else:
            block = ["", *_py_function(rng, "", method=False)]
        if len(out) + len(block) > lines:
            break
        out += block
    out += [f"LIMIT_{i} = {i}" for i in range(lines - len(out))]
    return "\n".join(out) + "\n"


# --- TypeScript ------------------------------------------------------------------------


def _ts_function(rng: random.Random, indent: str, method: bool) -> list[str]:
    name = _camel(rng)
    params = ", ".join(f"{_camel(rng, 1)}{i}: number" for i in range(rng.randint(1, 3)))
    head = f"{indent}{'' if method else 'export function '}{name}({params}): Map<string, number> {{"
    body = indent + "  "
    lines = [
        f"{indent}/**",
        f"{indent} * Returns the {name} for the given inputs.",
        f"{indent} */",
        head,
        f"{body}const result = new Map<string, number>();",
    ]
    for _ in range(rng.randint(2, 5)):
        kind = rng.random()
        var = _camel(rng, 1)
        if kind < 0.3:
            lines += [
                f"{body}for (const {var} of {_camel(rng)}.filter((x) => x.{_camel(rng, 1)} > "
                f"{rng.randint(1, 99)})) {{",
                f"{body}  result.set({var}.name, (result.get({var}.name) ?? 0) + 1);",
                f"{body}  // keep the {_camel(rng, 1)} for the next pass",
                f"{body}}}",
            ]
        elif kind < 0.55:
            lines += [
                f"{body}const {var} = {_camel(rng)}.map((x) => x * {rng.randint(2, 9)});",
                f"{body}console.debug(`{var}=${{{var}.length}} entries`);",
            ]
        elif kind < 0.8:
            lines += [
                f"{body}try {{",
                f"{body}  const {var} = await fetch{_camel(rng).title()}({rng.randint(0, 9)});",
                f"{body}  result.set('{var}', {var}.length);",
                f"{body}}} catch (err: unknown) {{",
                f"{body}  throw new Error(`cannot read ${{String(err)}}`);",
                f"{body}}}",
            ]
        else:
            lines += [
                f"{body}const {var}: Record<string, number> = {{ ...{_camel(rng)}, "
                f"{_camel(rng, 1)}: {rng.randint(0, 99)} }};",
            ]
    lines += [f"{body}return result;", f"{indent}}}", ""]
    return lines


def typescript_file(seed: int = 2, lines: int = LINES) -> str:
    rng = random.Random(seed)
    out = [
        "// Orders, accounts and their reports (generated for the validation bench).",
        "import { readFile } from 'node:fs/promises';",
        "",
    ]
    while True:
        if rng.random() < 0.4:
            cls = _camel(rng).title().replace("_", "")
            block = [
                f"export interface {cls}Options<T extends object = object> {{",
                f"  {_camel(rng)}: number;",
                f"  {_camel(rng)}?: readonly T[];",
                "}",
                "",
                f"export class {cls} {{",
                f"  private {_camel(rng)} = 0;",
                f"  constructor(private readonly options: {cls}Options) {{}}",
                "",
            ]
            for _ in range(rng.randint(1, 3)):
                block += _ts_function(rng, "  ", method=True)
            block += ["}", ""]
        else:
            block = _ts_function(rng, "", method=False)
        if len(out) + len(block) > lines:
            break
        out += block
    out += [f"export const limit{i} = {i};" for i in range(lines - len(out))]
    return "\n".join(out) + "\n"


# --- timing ----------------------------------------------------------------------------


@dataclass
class Row:
    file: str
    case: str
    wall_p50_ms: float
    wall_p90_ms: float
    cpu_p50_ms: float
    status: str


@dataclass(frozen=True)
class Case:
    name: str
    content: bytes
    new: str  # appended to the edited line; "{i}" is the run's number
    validate: bool
    cold: bool  # forget what this process validated before each run


def _middle_line(text: str) -> str:
    lines = text.split("\n")
    for line in lines[len(lines) // 2 :]:
        if line.strip().startswith(("result", "return result")) and text.count(line) == 1:
            return line
    raise AssertionError("no unique line to edit")


def _run(path: str, old: str, case: Case, runs: int) -> tuple[list[float], list[float], str]:
    walls, cpus = [], []
    status = ""
    for i in range(-1, runs):  # run -1 warms up: grammars and the compiler load there
        new = old + case.new.replace("{i}", str(i + 1000))
        request = EditRequest(path, (EditItem(old, new),), validate=case.validate)
        if case.cold:
            forget_compiled_parts()
        else:  # the content before the edit was validated: the daemon's next edit
            validate(path, None, case.content)
        wall, cpu = time.perf_counter(), time.process_time()
        outcome = apply_edit(case.content, request)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        status = outcome.result.status
        if i >= 0:
            walls.append(wall * 1000)
            cpus.append(cpu * 1000)
    return walls, cpus, status


def bench(name: str, path: str, text: str, runs: int, comment: str) -> list[Row]:
    data = text.encode()
    old = _middle_line(text)
    first = text.split("\n")[5]
    broken = text.replace(first, first + " (", 1).encode()  # an old error near the top
    cases = [
        Case("edit (baseline)", data, f"{comment} {{i}}", False, True),
        Case("first validation", data, f"{comment} {{i}}", True, True),
        Case("validated before", data, f"{comment} {{i}}", True, False),
        Case("refused", data, " ({i}", True, True),
        Case("already broken", broken, f"{comment} {{i}}", True, True),
    ]
    rows = []
    for case in cases:
        walls, cpus, status = _run(path, old, case, runs)
        walls.sort()
        rows.append(
            Row(
                name,
                case.name,
                statistics.median(walls),
                walls[int(len(walls) * 0.9)],
                statistics.median(cpus),
                status,
            )
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    py, ts = python_file(), typescript_file()
    assert py.count("\n") == LINES and ts.count("\n") == LINES
    assert not validate("gen.py", None, py.encode()).failed, "the generated Python must parse"
    assert not validate("gen.ts", None, ts.encode()).failed, "the generated TypeScript must parse"
    rows = bench("python, 5,000 lines", "gen.py", py, args.runs, "  # checked")
    rows += bench("typescript, 5,000 lines", "gen.ts", ts, args.runs, " // checked")
    print(f"{'file':<24} {'case':<18} {'wall p50':>9} {'wall p90':>9} {'CPU p50':>9}  status")
    for r in rows:
        print(
            f"{r.file:<24} {r.case:<18} {r.wall_p50_ms:9.2f} {r.wall_p90_ms:9.2f} "
            f"{r.cpu_p50_ms:9.2f}  {r.status}"
        )
    over = []
    for file in dict.fromkeys(r.file for r in rows):
        mine = {r.case: r for r in rows if r.file == file}
        base = mine["edit (baseline)"].cpu_p50_ms
        for case in ("first validation", "validated before"):
            cost = mine[case].cpu_p50_ms - base
            met = "met" if cost <= TARGET_MS else "NOT met"
            print(f"{file}, {case}: validation adds {cost:.2f} ms CPU ({met}: ≤ {TARGET_MS:g} ms)")
            if cost > TARGET_MS:
                over.append((file, case))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
