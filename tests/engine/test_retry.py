"""A retry of an edit that landed is ``no_change``; nothing else is.

``no_change`` ("already applied", exit 0) tells an agent its edit is in the
file. It is said only when new_string stands where old_string's surroundings
place it — never because new_string occurs somewhere else in the file while
old_string, mistyped, still matches the block the edit was meant for.
"""

from __future__ import annotations

import pytest

from redline.engine.edit import EditItem, EditOutcome, EditRequest, apply_edit


def edit(text: str, old: str, new: str, path: str = "f.py") -> EditOutcome:
    return apply_edit(text.encode(), EditRequest(path, (EditItem(old, new),)))


IMPORTS = (
    "import os\nimport sys\nfrom typing import Any, Dict, List, Optional\nimport json\n\nx = 1\n"
)

# (path, file, old_string, new_string, the exact edit's result): old_string is
# mistyped, and new_string is already in the file — inside the block old_string
# matches, or elsewhere. The edit is still to be made: applied right, or refused.
NOT_LANDED = [
    (
        "f.py",
        IMPORTS,
        "import os\nimport sys\nfrom typing import Any, Dict, List, Optional\nimport jsn\n",
        "import os\nimport sys\nfrom typing import Any, Dict, List, Optional\n",
        IMPORTS.replace("import json\n", ""),
    ),
    (
        "f.py",
        "def load(path):\n    x = compute(alpha)\n\n\ndef save(path):\n    x = compute(alpha, beta)\n",
        "    x = compte(alpha)\n",
        "    x = compute(alpha, beta)\n",
        "def load(path):\n    x = compute(alpha, beta)\n\n\n"
        "def save(path):\n    x = compute(alpha, beta)\n",
    ),
    (
        "ci.yaml",
        "steps:\n  - uses: actions/checkout@v4\n  - uses: actions/setup-python@v5\n  - lint\n  - test\n",
        "steps:\n  - uses: actions/checkout@v4\n  - uses: actions/setup-python@v5\n  - lnt\n",
        "steps:\n  - uses: actions/checkout@v4\n  - uses: actions/setup-python@v5\n",
        "steps:\n  - uses: actions/checkout@v4\n  - uses: actions/setup-python@v5\n  - test\n",
    ),
    (
        "src/lib.rs",
        "use std::collections::HashMap;\nuse std::path::PathBuf;\nuse std::io;\n\nfn main() {}\n",
        "use std::collections::HashMap;\nuse std::path::PathBuf;\nuse std::oi;\n",
        "use std::collections::HashMap;\nuse std::path::PathBuf;\n",
        "use std::collections::HashMap;\nuse std::path::PathBuf;\n\nfn main() {}\n",
    ),
    (
        "README.md",
        "## Install\n\nRun the installer.\n\n## Upgrade\n\nRun the installer with --upgrade.\n",
        "Run the instaler.\n",
        "Run the installer with --upgrade.\n",
        "## Install\n\nRun the installer with --upgrade.\n\n"
        "## Upgrade\n\nRun the installer with --upgrade.\n",
    ),
    (
        "app.js",
        "import React, { useState, useEffect } from 'react';\nimport { render } from 'react-dom';\n"
        "import c from 'c';\n",
        "import React, { useState, useEffect } from 'react';\nimport { render } from 'react-dom';\n"
        "import c from 'cc';\n",
        "import React, { useState, useEffect } from 'react';\nimport { render } from 'react-dom';\n",
        "import React, { useState, useEffect } from 'react';\nimport { render } from 'react-dom';\n",
    ),
]


@pytest.mark.parametrize(
    ("path", "text", "old", "new", "expected"),
    NOT_LANDED,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(NOT_LANDED)],
)
def test_new_string_found_elsewhere_is_not_already_applied(
    path: str, text: str, old: str, new: str, expected: str
) -> None:
    out = edit(text, old, new, path)
    assert out.result.status != "no_change", out.result.hint
    assert out.data is None or out.data.decode() == expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    return 1\n", "    return 2\n"),  # exact old_string, landed
        (
            "    x = computee(1)\n",
            "    x = compute(1)\n    y = 2\n",
        ),  # its match lies in new_string
        ("    log.debug('wating')\n    z = 3\n", "    z = 3\n"),  # a deletion, landed
    ],
)
def test_a_retry_of_an_edit_that_landed_is_no_change(old: str, new: str) -> None:
    base = "def f(x):\n    x = compute(1)\n    log.debug('waiting')\n    z = 3\n    return 1\n"
    landed = base.replace("    return 1\n", "    return 2\n")
    landed = landed.replace("    x = compute(1)\n", "    x = compute(1)\n    y = 2\n")
    landed = landed.replace("    log.debug('waiting')\n    z = 3\n", "    z = 3\n")
    assert landed.count(new) == 1
    out = edit(landed, old, new)
    assert (out.result.status, out.data) == ("no_change", None), out.result.error


def test_a_retry_whose_match_reaches_a_blank_line_before_new_string_is_no_change() -> None:
    # The fuzzy window of old_string took the blank line before new_string's place and
    # read more like old_string than new_string: the edit was made again, the inserted
    # line written twice.
    text = (
        "#!/usr/bin/bash\n\nset -eu\n\n# This script automates the version bump\n"
        '# TODO: keep in sync with the caller\'s check\n\nversion="$1"\n\nif x; then\n'
    )
    old = '# This script automates the version bump\n\nversion="$1"\n'
    new = (
        "# This script automates the version bump\n# TODO: keep in sync with the caller's "
        'check\n\nversion="$1"\n'
    )
    out = edit(text, old, new, "version-bump.sh")
    assert (out.result.status, out.data) == ("no_change", None), out.data
