"""Render ``redline review --html`` in headless Chromium and save a screenshot.

A throwaway repository (the demo's: a policy protecting ``app/**``) gets two
tolerant edits through a session — spaces and straight quotes for the file's
tabs and curly quotes, and a slip of the pen — both flagged; ``redline review
--html`` writes the page, and Chromium (Debian's ``chromium``) renders it with
the network off. Look at the PNG: one section per flagged edit, the agent's text
beside the file's with the differences marked, the diff coloured, the approving
command.

    python bench/review_page.py [--out review.png] [--keep]

Prints the page's path, the screenshot's and their sizes. Needs ``git`` and
``chromium`` (or ``chromium-browser``/``google-chrome``) on the PATH.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SLIP = {
    "tool": "edit",
    "path": "app/greet.py",
    "old_string": 'def farewell(name):\n\treturn f"Godbye, {name}."\n',
    "new_string": 'def farewell(name):\n\treturn f"Godbye, {name}!"\n',
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("review.png"))
    parser.add_argument("--keep", action="store_true", help="keep the throwaway repository")
    args = parser.parse_args()
    browser = next(
        (b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None
    )
    if browser is None:
        print("no chromium on the PATH: install Debian's `chromium` (apt-get install chromium)")
        return 2

    import os

    from redline.cli._connect import daemon_client, daemon_files
    from redline.cli.demo import TOLERANT, _git_env, _make_repository
    from redline.daemon.lifecycle import stop

    root = Path(tempfile.mkdtemp(prefix="redline-review-"))
    repo = root / "repo"
    env = _git_env(os.environ)
    try:
        _make_repository(repo, env)
        redline = [sys.executable, "-m", "redline"]
        subprocess.run([*redline, "session", "open", "--name", "bench"], cwd=repo, env=env,
                       check=True, capture_output=True, timeout=120)  # fmt: skip
        with daemon_client(repo, idle=60) as client:
            for request in (TOLERANT, SLIP):
                result = client.call("apply", {"session": "bench", "request": request})
                assert result.get("flags"), result
        page = root / "review.html"
        shown = subprocess.run([*redline, "review", "--html", str(page)], cwd=repo, env=env,
                               capture_output=True, text=True, timeout=120)  # fmt: skip
        print(shown.stdout.splitlines()[-1])
        out = args.out.resolve()
        subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--proxy-server=127.0.0.1:9", "--window-size=1280,1700",
             f"--screenshot={out}", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        print(f"page {page} ({page.stat().st_size} bytes); screenshot {out} "
              f"({out.stat().st_size} bytes)")  # fmt: skip
    finally:
        stop(daemon_files(repo))
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
