"""Answer size: the bytes of ``redline apply``'s answer to an exact edit, before and after.

Exact edits cut from standard-library files (1-4 whole lines, unique in their file;
the last line gets a trailing comment), sent as one ``redline apply --jsonl`` stream
to copies of the files by three commands in the same run: this tree's default
answer, this tree's ``--full`` and, with ``--src DIR``, another checkout's code
(``PYTHONPATH=DIR``; e.g. main's ``src``, what answers were). Prints the median
and p10/p90 bytes per answer line of the applied exact edits, the ratios, and
whether the contract fields (status, path, match_type, confidence, matched_text)
are the same in every answer.

    python bench/answer_size.py --src ../main/src [--files 40] [--per-file 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from sources import STDLIB_FILES, stdlib_dir

CONTRACT = ("status", "path", "match_type", "confidence", "matched_text")


def requests(files: list[str], per_file: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out = []
    for rel in files:
        text = (stdlib_dir() / rel).read_text(encoding="utf-8")
        lines = text.split("\n")
        used: set[int] = set()
        picked = 0
        for _ in range(200):
            if picked == per_file:
                break
            size = rng.randint(1, 4)
            start = rng.randrange(0, max(1, len(lines) - size))
            span = range(start, start + size)
            block = lines[start : start + size]
            old = "\n".join(block)
            if used & set(range(start - 1, start + size + 1)) or not block[-1].strip():
                continue
            if len(old.strip()) < 8 or text.count(old) != 1 or "#" in block[-1]:
                continue
            used |= set(span)
            new = "\n".join([*block[:-1], block[-1] + "  # edited"])
            out.append({"tool": "edit", "path": rel, "old_string": old, "new_string": new})
            picked += 1
    return out


def run(
    label: str, reqs: list[dict[str, object]], files: list[str], src: str | None, *options: str
) -> list[bytes]:
    root = Path(tempfile.mkdtemp(prefix=f"answer-{label}-"))
    try:
        for rel in files:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(stdlib_dir() / rel, target)
        env = dict(os.environ)
        if src:
            env["PYTHONPATH"] = src
        payload = "".join(json.dumps(r) + "\n" for r in reqs).encode()
        done = subprocess.run(
            [sys.executable, "-m", "redline", "apply", "--jsonl", "--root", str(root), *options],
            input=payload,
            capture_output=True,
            env=env,
            timeout=600,
        )
        lines = done.stdout.splitlines(keepends=True)
        assert len(lines) == len(reqs), (label, done.stderr.decode()[-2000:])
        return lines
    finally:
        shutil.rmtree(root, ignore_errors=True)


def summary(sizes: list[int]) -> str:
    cuts = statistics.quantiles(sizes, n=10)
    return f"median {statistics.median(sizes):7.0f}  p10 {cuts[0]:7.0f}  p90 {cuts[-1]:7.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", help="another checkout's src (e.g. main's), run beside this tree")
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--per-file", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    files = [f for f in STDLIB_FILES if (stdlib_dir() / f).is_file()][: args.files]
    reqs = requests(files, args.per_file, args.seed)
    here = str(Path(__file__).resolve().parents[1] / "src")
    runs = {
        "default": run("default", reqs, files, here),
        "--full": run("full", reqs, files, here, "--full"),
    }
    if args.src:
        runs["--src"] = run("src", reqs, files, args.src)
    answers = {name: [json.loads(line) for line in lines] for name, lines in runs.items()}
    exact = [
        i
        for i, a in enumerate(answers["default"])
        if a["status"] == "applied" and a["match_type"] == "exact"
    ]
    print(f"{len(reqs)} exact edits in {len(files)} files; {len(exact)} applied exact")
    sizes = {name: [len(runs[name][i]) for i in exact] for name in runs}
    for name, values in sizes.items():
        print(f"  {name:8} {summary(values)} bytes per answer line")
    for name in runs:
        if name != "default":
            ratio = statistics.median(sizes["default"]) / statistics.median(sizes[name])
            print(f"  default / {name} (medians): {ratio:.2f}")
    for name in runs:
        if name == "default":
            continue
        same = all(
            {k: a.get(k) for k in CONTRACT} == {k: b.get(k) for k in CONTRACT}
            for a, b in zip(answers["default"], answers[name], strict=True)
        )
        print(f"  contract fields of every answer equal to {name}'s: {same}")


if __name__ == "__main__":
    main()
