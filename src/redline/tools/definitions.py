"""The tools a model is shown: what each is for, how to use it well, its arguments.

A definition is endpoint-neutral: :mod:`redline.tools.surface` picks the tools
for a model and renders them in an endpoint's shape. ``parameters`` is a JSON
Schema (Draft 2020-12, ``type: object`` at the top and no combinators there, as
the OpenAI and Anthropic endpoints require) of a call's arguments: the wire
request minus ``tool`` and minus the fields only callers set (``threshold``,
``turn``, ``model``).

The descriptions teach the habits that make edits land first time — copy the
smallest unique block from a fresh read, re-read after a failure — and say
nothing of the tolerant matching tiers: a model told that near misses are
repaired quotes less carefully.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

TOOL_NAMES = ("edit", "apply_patch", "write", "delete", "read")


@dataclass(frozen=True)
class ToolDefinition:
    name: str  # "edit" | "apply_patch" | "write" | "delete" | "read"
    description: str  # how to use it well; never advertises the tolerant tiers
    parameters: dict[str, Any]  # JSON Schema (type object) of the call's arguments


_PATH = {
    "type": "string",
    "minLength": 1,
    "description": "The file's path relative to the repository root, with forward slashes.",
}

_OLD_STRING = {
    "type": "string",
    "description": (
        "The exact text to replace, copied from a fresh read of the file: the smallest "
        "block of whole lines that occurs once, with its indentation, without line numbers."
    ),
}
_NEW_STRING = {
    "type": "string",
    "description": "The text that replaces old_string (empty to delete it).",
}
_REPLACE_ALL = {
    "type": "boolean",
    "default": False,
    "description": "Replace every occurrence of old_string instead of exactly one.",
}

EDIT = ToolDefinition(
    name="edit",
    description=(
        "Replace text in one existing file. Read the file first, then copy old_string "
        "exactly from what you read: the smallest block of whole lines that occurs only "
        "once in the file, with its indentation and without the line numbers. Give "
        "old_string and new_string for one change, or `edits` (a list of "
        "{old_string, new_string}) for several changes to the same file, applied in "
        "order as one edit; one file per call. If old_string occurs more than once, add "
        "surrounding lines until it is unique, or set replace_all to change every "
        "occurrence. If an edit fails, read the file again and retry with text copied "
        "from that new read; do not retry from memory. To create a file use write; to "
        "remove one use delete."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _PATH,
            "old_string": _OLD_STRING,
            "new_string": _NEW_STRING,
            "replace_all": _REPLACE_ALL,
            "edits": {
                "type": "array",
                "minItems": 1,
                "description": (
                    "Several changes to the same file, applied in order, instead of "
                    "old_string/new_string/replace_all."
                ),
                "items": {
                    "type": "object",
                    "properties": {
                        "old_string": _OLD_STRING,
                        "new_string": _NEW_STRING,
                        "replace_all": _REPLACE_ALL,
                    },
                    "required": ["old_string", "new_string"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)

PATCH_FORMAT = """\
*** Begin Patch
*** Add File: path/new.py
+every line of the new file, each after a '+'
*** Delete File: path/old.py
*** Update File: path/app.py
*** Move to: path/main.py        (optional: rename the file)
@@ def handler():                 (optional: a line near the change, to place the hunk)
 unchanged line (space first)
-removed line
+added line
*** End Patch"""

_PATCH_ADVICE = (
    "Paths are relative to the repository root. In each hunk, copy the context (' ') "
    "and removed ('-') lines exactly from a fresh read of the file, keep about three "
    "lines of context above and below each change, and add more (or an '@@ ' line) "
    "when the context occurs more than once. One patch may change several files. If "
    "a patch fails, read the files again and send a new patch built from that read; "
    "do not resend the old one."
)

APPLY_PATCH = ToolDefinition(
    name="apply_patch",
    description=(
        "Add, delete, rename and change files with one patch in this format:\n\n"
        f"{PATCH_FORMAT}\n\n{_PATCH_ADVICE}"
    ),
    parameters={
        "type": "object",
        "properties": {
            "patch": {
                "type": "string",
                "description": "The whole patch, from '*** Begin Patch' to '*** End Patch'.",
            },
        },
        "required": ["patch"],
        "additionalProperties": False,
    },
)

# The freeform (custom) apply_patch takes the patch itself as its input, not JSON.
FREEFORM_PATCH_DESCRIPTION = (
    "Add, delete, rename and change files. Your input is the patch itself (no JSON), "
    f"in this format:\n\n{PATCH_FORMAT}\n\n{_PATCH_ADVICE}"
)

WRITE = ToolDefinition(
    name="write",
    description=(
        "Create a file, or replace a whole file, with the given content. Use it for new "
        "files and for rewrites of small files; to change part of an existing file, change "
        "only that part with the edit or patch tool, which keeps the rest untouched. "
        "Folders on the way are created. An existing file keeps its line endings and "
        "encoding; a new file gets LF line endings unless line_ending says crlf."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _PATH,
            "content": {"type": "string", "description": "The file's whole new content."},
            "line_ending": {
                "type": "string",
                "enum": ["lf", "crlf"],
                "description": "Line endings of a new file (default lf).",
            },
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
)

DELETE = ToolDefinition(
    name="delete",
    description="Delete one file (not a folder). Give the file's path relative to the root.",
    parameters={
        "type": "object",
        "properties": {"path": _PATH},
        "required": ["path"],
        "additionalProperties": False,
    },
)

READ = ToolDefinition(
    name="read",
    description=(
        "Read a text file as numbered lines, with its encoding and line endings. Read a "
        "file before changing it, and again after a change fails; copy "
        "text to replace from the read without the line numbers. Long files come in "
        "parts: offset is the first line to show (1-based), limit how many lines."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _PATH,
            "offset": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "The first line to show, counting from 1.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "default": 2000,
                "description": "How many lines to show at most.",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)

DEFINITIONS: Mapping[str, ToolDefinition] = MappingProxyType(
    {d.name: d for d in (EDIT, APPLY_PATCH, WRITE, DELETE, READ)}
)
