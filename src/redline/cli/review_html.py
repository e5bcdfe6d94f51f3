"""``redline review --html FILE``: the review as one self-contained page.

No network, no framework, no script: inline CSS, one ``<section>`` per flagged
edit with the rule, the match, what was tolerated, the agent's text beside the
file's (a two-column table; the characters that differ marked with ``<mark>``),
the diff (added and removed lines coloured) and the command that approves it.
Every text from the repository is HTML-escaped.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from html import escape
from typing import Any

from redline.cli.beside import visible

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 80em;
       color: #1f2328; background: #fff; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin: 0 0 .4em; }
section { border: 1px solid #d0d7de; border-radius: 6px; padding: 1em 1.2em;
          margin: 1.2em 0; }
.rule { color: #9a6700; } .match { color: #57606a; }
ul.tolerated { margin: .4em 0; padding-left: 1.4em; } ul.tolerated li { margin: .15em 0; }
table.beside { border-collapse: collapse; width: 100%; table-layout: fixed; margin: .6em 0; }
table.beside th { text-align: left; font-weight: 600; background: #f6f8fa;
                  border: 1px solid #d0d7de; padding: .3em .5em; }
table.beside td { font: 12.5px/1.4 ui-monospace, monospace; white-space: pre-wrap;
                  border: 1px solid #d0d7de; padding: .1em .5em; vertical-align: top; }
td.sent mark { background: #ffd7d5; } td.found mark { background: #fff1a8; }
td.differs { background: #fbfbf3; }
pre.diff { font: 12.5px/1.4 ui-monospace, monospace; background: #f6f8fa;
           border: 1px solid #d0d7de; padding: .5em; overflow-x: auto; }
pre.diff .add { background: #dafbe1; display: inline-block; min-width: 100%; }
pre.diff .del { background: #ffebe9; display: inline-block; min-width: 100%; }
pre.diff .hunk { color: #0969da; }
code.approve { background: #f6f8fa; border: 1px solid #d0d7de; padding: .2em .45em;
               border-radius: 4px; }
.legend, .none { color: #57606a; font-size: .92em; }
"""


def page(items: list[dict[str, Any]], settled: list[str] | None = None) -> str:
    """The review page for the waiting flagged edits ``items`` (review's records)."""
    count = len(items)
    title = (
        f"redline review: {count} flagged edit{'' if count == 1 else 's'} waiting"
        if count
        else "redline review: nothing waiting"
    )
    body = [f"<h1>{escape(title)}</h1>"]
    if not items:
        body.append('<p class="none">Every flagged edit still on a branch is approved.</p>')
    body += [_section(n, item) for n, item in enumerate(items, start=1)]
    if settled:
        body.append(
            f'<p class="none">Not listed: {len(settled)} unapproved flagged edit(s) no longer '
            f"on any branch, HEAD or the index ({escape(' '.join(settled))}): they need no "
            "approval.</p>"
        )
    if items:
        body.append(
            "<p>Approve each edit once you have read it, with the command under it "
            "(<code>redline approve EDIT...</code>, in the repository).</p>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _section(number: int, item: dict[str, Any]) -> str:
    edit = escape(str(item["edit"]))
    start, end = item.get("start_line"), item.get("end_line")
    lines = f" lines {start}-{end}" if start else ""
    how = (
        f"{item['match_type']} {item['confidence']:.2f}"
        if item.get("match_type") is not None and item.get("confidence") is not None
        else str(item.get("op") or "")
    )
    out = [
        f'<section id="edit-{edit}" class="edit">',
        f"<h2>{number}. edit {edit} — {escape(str(item['path']))}{escape(lines)}</h2>",
        f'<p class="match">commit {escape(str(item["commit"])[:12])}, matched: '
        f"<strong>{escape(how)}</strong></p>",
        f'<p class="rule">rule {escape(str(item["rule"]))}: {escape(str(item["reason"]))}</p>',
    ]
    tolerated = item.get("tolerated") or []
    if tolerated:
        out.append('<ul class="tolerated">')
        out += [f"<li>tolerated: {escape(str(t.get('text', '')))}</li>" for t in tolerated]
        out.append("</ul>")
    if item.get("sent_old") is not None and item.get("found") is not None:
        out.append(_beside(item["sent_old"], item["found"], lines.strip()))
    elif item.get("sent_said"):
        out.append(f'<p class="none">The request as sent: {escape(str(item["sent_said"]))}</p>')
    if item.get("sent_new") is not None:
        out.append("<p>The agent's new text:</p>")
        out.append(f'<pre class="diff">{escape(str(item["sent_new"]))}</pre>')
    out.append("<p>The commit's diff:</p>")
    out.append(_diff(str(item.get("diff") or "")))
    out.append(f'<p>Approve: <code class="approve">redline approve {edit}</code></p>')
    out.append("</section>")
    return "\n".join(out)


def _beside(sent: str, found: str, where: str) -> str:
    left, right = sent.splitlines(), found.splitlines()
    rows = [
        '<table class="beside">',
        "<thead><tr><th>the agent sent</th>"
        f"<th>redline found in the file ({escape(where or 'the match')})</th></tr></thead>",
        "<tbody>",
    ]
    for n in range(max(len(left), len(right))):
        a = visible(left[n]) if n < len(left) else ""
        b = visible(right[n]) if n < len(right) else ""
        marked_a, marked_b = _marked(a, b)
        differs = " differs" if a != b else ""
        rows.append(
            f'<tr><td class="sent{differs}">{marked_a}</td>'
            f'<td class="found{differs}">{marked_b}</td></tr>'
        )
    rows.append("</tbody></table>")
    rows.append('<p class="legend">· a space, → a tab; marked: where the two differ</p>')
    return "\n".join(rows)


def _marked(a: str, b: str) -> tuple[str, str]:
    """Both lines escaped, the characters that differ in ``<mark>``."""
    out_a, out_b = [], []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, False).get_opcodes():
        x, y = escape(a[i1:i2]), escape(b[j1:j2])
        if tag == "equal":
            out_a.append(x)
            out_b.append(y)
            continue
        if x:
            out_a.append(f"<mark>{x}</mark>")
        if y:
            out_b.append(f"<mark>{y}</mark>")
    return "".join(out_a), "".join(out_b)


def _diff(text: str) -> str:
    lines = []
    for line in text.splitlines():
        cls = (
            "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+") and not line.startswith("+++")
            else "del"
            if line.startswith("-") and not line.startswith("---")
            else ""
        )
        shown = escape(line)
        lines.append(f'<span class="{cls}">{shown}</span>' if cls else shown)
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"
