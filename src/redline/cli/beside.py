"""The text the agent sent beside the text redline found in the file, line by line.

``redline demo`` and ``redline review`` show a request this way, indentation made
visible (· a space, → a tab), so a reader sees at once what was tolerated.
"""

from __future__ import annotations

WIDTH = 44  # characters of the left column
LEGEND = "(· a space, → a tab)"


def visible(line: str) -> str:
    """``line`` with its indentation shown: a space as ·, a tab as →."""
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)]
    return indent.replace(" ", "·").replace("\t", "→   ") + body


def rows(sent: str, found: str) -> list[tuple[str, str]]:
    """(agent's line, file's line) pairs, indentation made visible; "" where one runs out."""
    left, right = sent.splitlines(), found.splitlines()
    return [
        (visible(left[n]) if n < len(left) else "", visible(right[n]) if n < len(right) else "")
        for n in range(max(len(left), len(right)))
    ]


def beside(sent: str, found: str, where: str, what: str = "old_string") -> list[str]:
    """The two texts in two columns under a heading, and the legend."""
    width = WIDTH
    out = [f"{f'the agent sent ({what})':<{width}} | redline found in the file ({where})"]
    out += [f"{a:<{width}} | {b}".rstrip() for a, b in rows(sent, found)]
    out.append(LEGEND)
    return out
