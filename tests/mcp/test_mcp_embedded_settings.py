"""``redline mcp`` in embedded mode reads its folder's settings as ``redline apply`` does
(settings.folder): once, for the tool surface, the permissions and the runner alike."""

from __future__ import annotations

from collections import Counter

import pytest
from mcp_fixtures import Folder

from redline.cli import mcp as mcp_command
from redline.mcp.server import Served
from support import cli as inproc
from support.settings_reads import count_reads

POLICY = (
    '[[validate]]\npaths = ["*.py"]\n[permission]\nedit = { "secret/**" = "deny" }\n'
    '[agent]\nmodel = "gpt-5"\n'
)


def served_embedded(folder: Folder, monkeypatch: pytest.MonkeyPatch) -> tuple[Served, Counter[str]]:
    """What ``redline mcp --embedded`` would serve in ``folder``, and how often it read
    each settings file."""
    reads = count_reads(monkeypatch)
    served: list[Served] = []
    monkeypatch.setattr(mcp_command, "run_stdio", served.append)
    done = inproc.run(
        ["mcp", "--embedded", "--repo", str(folder.root)], env=folder.env, cwd=folder.root
    )
    assert served, done.stderr
    served[0].backend.close()
    return served[0], reads


def test_the_settings_are_read_once_for_every_step(
    folder: Folder, monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder.root / ".redline.toml").write_text(POLICY)
    served, reads = served_embedded(folder, monkeypatch)
    assert reads == {".redline.toml": 1}
    assert served.model == "gpt-5"  # the tool surface's settings
    assert served.names == ["apply_patch", "read"]
    decision, _ = served.permissions.decide(
        {
            "tool": "apply_patch",
            "patch": ("*** Begin Patch\n*** Add File: secret/k.py\n+x\n*** End Patch\n"),
        }
    )
    assert decision.action == "deny"
    # the runner validates under the same policy: a .py file that does not parse is refused
    answer = served.backend.apply({"tool": "write", "path": "bad.py", "content": "def (\n"}, None)
    assert answer["status"] == "validation_failed"


def test_settings_that_cannot_be_used_refuse_the_server_naming_the_file(
    folder: Folder, monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder.root / ".redline.toml").write_text('[permission]\nedit = "maybe"\n')
    monkeypatch.setattr(mcp_command, "run_stdio", lambda served: None)
    done = inproc.run(
        ["mcp", "--embedded", "--repo", str(folder.root)], env=folder.env, cwd=folder.root
    )
    assert done.returncode != 0
    assert ".redline.toml" in done.stderr and "Traceback" not in done.stderr
