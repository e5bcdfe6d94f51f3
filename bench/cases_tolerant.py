"""Whitespace and punctuation categories: old_string differs from the file only in
indentation, trailing spaces, tabs, quote style or CJK punctuation.

Expected bytes follow the merge principle: the block's lines as the file has them,
with only the edit's own change applied (changed lines keep the file's
indentation and punctuation; an inserted line takes the indentation the file
gives the line it is inserted before).
"""

from __future__ import annotations

import random
import re
import zlib

from casekit import Case, block_case, echo, same_touch
from mutations import Mod, choose_mod, curly, touched
from sources import Source, blocks, plain_block, unique_in
from textmodel import Doc, indent_of, reindent, tabify

ALL_KINDS = ("rename", "insert", "retext", "delete")


def _exact_elsewhere(doc: Doc, old_lines: list[str]) -> bool:
    return "\n".join(old_lines) in doc.text()


def indent_drift(src: Source, rng: random.Random) -> Case | None:
    """old_string re-indented by +4 / -4 spaces, or written with tabs (file: spaces)."""
    mode = rng.choice(("+4", "-4", "tabs"))
    for i, j in blocks(rng, src.doc, 3, 9, tries=30 if mode == "+4" else 120):
        lines = src.doc.lines[i:j]
        if mode == "-4" and any(s.strip() and not s.startswith("    ") for s in lines):
            continue
        if mode == "tabs" and any(len(indent_of(s)) % 4 for s in lines):
            continue
        if mode == "tabs":
            view = [tabify(s) for s in lines]
        else:
            view = [reindent(s, 4 if mode == "+4" else -4) for s in lines]
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is None or not same_touch(mod, view, lines) or _exact_elsewhere(src.doc, view):
            continue
        if not unique_in(src.doc, "\n".join(view)):
            continue
        note = f"{mode} {mod.describe()}"
        return block_case(
            "indent_drift", src, src.doc, (i, j), view, mod.apply(view), mod.apply(lines), note
        )
    return None


def trailing_spaces(src: Source, rng: random.Random) -> Case | None:
    """Trailing spaces on lines of old_string the edit does not change."""
    for i, j in blocks(rng, src.doc, 3, 9):
        lines = src.doc.lines[i:j]
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is None:
            continue
        hit = touched(mod, lines)
        free = [k for k, s in enumerate(lines) if s.strip() and k not in hit]
        if not free:
            continue
        chosen = rng.sample(free, rng.randint(1, max(1, len(free) // 2)))
        old = [s + " " * rng.randint(1, 3) if k in chosen else s for k, s in enumerate(lines)]
        if not same_touch(mod, old, lines) or not unique_in(src.doc, "\n".join(old)):
            continue
        note = f"{len(chosen)} lines {mod.describe()}"
        return block_case(
            "trailing_spaces", src, src.doc, (i, j), old, echo(mod, old), mod.apply(lines), note
        )
    return None


_TAB_DOCS: dict[str, Doc] = {}


def tab_doc(src: Source) -> Doc:
    if src.path not in _TAB_DOCS:
        _TAB_DOCS[src.path] = Doc([tabify(s) for s in src.doc.lines], list(src.doc.ends))
    return _TAB_DOCS[src.path]


def tabs(src: Source, rng: random.Random) -> Case | None:
    """The file indents with tabs; old_string has tabs (exact) or 4 spaces per tab."""
    file = tab_doc(src)
    for i, j in blocks(rng, src.doc, 3, 9):
        spaces = src.doc.lines[i:j]
        if any(len(indent_of(s)) % 4 for s in spaces) or not any(
            s.startswith("    ") for s in spaces
        ):
            continue
        lines = file.lines[i:j]
        view = spaces if rng.random() < 0.6 else lines
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is None or not same_touch(mod, view, lines):
            continue
        note = ("spaces " if view is spaces else "tabs ") + mod.describe()
        return block_case("tabs", src, file, (i, j), view, mod.apply(view), mod.apply(lines), note)
    return None


def _quoted(lines: list[str]) -> bool:
    return plain_block(lines) and sum(s.count('"') + s.count("'") for s in lines) >= 2


def _quoted_comment(line: str) -> bool:
    return line.lstrip().startswith("#") and ("'" in line or '"' in line)


def curly_quotes(src: Source, rng: random.Random) -> Case | None:
    """Curly quotes in old_string where the file has straight ones, or the reverse."""
    if rng.random() < 0.55:
        return _curly_in_old(src, rng)
    return _curly_in_file(src, rng)


def _curly_in_old(src: Source, rng: random.Random) -> Case | None:
    for i, j in blocks(rng, src.doc, 2, 8, check=_quoted):
        lines = src.doc.lines[i:j]
        old = [curly(s) for s in lines]
        mod = choose_mod(rng, lines, ALL_KINDS, quotes_ok=False)
        if mod is None or not same_touch(mod, old, lines):
            continue
        note = "old-curly " + mod.describe() + _quoted_change(mod, old, lines)
        return block_case(
            "curly_quotes", src, src.doc, (i, j), old, echo(mod, old), mod.apply(lines), note
        )
    return None


def _curly_in_file(src: Source, rng: random.Random) -> Case | None:
    def has_comment(lines: list[str]) -> bool:
        return plain_block(lines) and any(_quoted_comment(s) for s in lines)

    for i, j in blocks(rng, src.doc, 2, 8, check=has_comment):
        old = src.doc.lines[i:j]
        lines = [curly(s) if _quoted_comment(s) else s for s in old]
        file = src.doc.replace_block(i, j, lines)
        mod = choose_mod(rng, lines, ALL_KINDS, quotes_ok=False)
        if mod is None or not same_touch(mod, old, lines) or not unique_in(file, "\n".join(old)):
            continue
        note = "file-curly " + mod.describe() + _quoted_change(mod, old, lines)
        return block_case(
            "curly_quotes", src, file, (i, j), old, echo(mod, old), mod.apply(lines), note
        )
    return None


def _quoted_change(mod: Mod, old: list[str], lines: list[str]) -> str:
    """Marks cases where a changed line carries folded quotes (char-level merge needed)."""
    hit = touched(mod, lines)
    return " +quoted-change" if any(old[k] != lines[k] for k in hit) else ""


# ---- full-width CJK punctuation ----

_CJK_LINES = (
    "# 注意：这里的顺序很重要（不要随意调整）！",
    "# 如果参数为空，则使用默认值；否则直接返回",
    "# 兼容旧版本：保留原来的行为（见上文）",
    "# 为什么要复制一份？因为调用方可能会修改它！",
    "# 性能优化：避免重复计算（结果已缓存）",
    "# 边界情况：输入为空（或只有空白）时，直接跳过",
    "# 这一步可能失败；失败时抛出异常！",
    "# 先检查类型，再检查取值范围（见文档）",
    "# 临时方案：等上游修复后删除（问题编号：1234）",
    "# 返回值：成功时为真，失败时为假；不会返回空值",
    '_msg = "无法解析配置：请检查格式（第一行）！"',
    '_hint = "参数错误：需要字符串，收到其他类型？"',
)
_TO_ASCII = str.maketrans(
    {"，": ",", "；": ";", "：": ":", "（": "(", "）": ")", "！": "!", "？": "?"}
)
_STATEMENTS = ("if ", "for ", "return ", "while ", "raise ", "with ", "try:")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def has_cjk(line: str) -> bool:
    return _CJK.search(line) is not None


def asciify(rng: random.Random, line: str) -> str:
    """Full-width punctuation typed as ASCII, sometimes with a space after , ; :"""
    text = line.translate(_TO_ASCII)
    if rng.random() < 0.5:
        text = re.sub(r"([,;:])(?=\S)", lambda m: m.group(1) + " ", text)
    return text


_CJK_DOCS: dict[tuple[str, bool], Doc] = {}


def cjk_doc(src: Source, fullwidth: bool) -> Doc:
    """The source with Chinese comments/strings planted before some statements."""
    key = (src.path, fullwidth)
    if key not in _CJK_DOCS:
        rng = random.Random(zlib.crc32(src.path.encode()))
        out: list[str] = []
        prev = ""
        for line in src.doc.lines:
            opener = prev.rstrip().endswith(("(", "[", "{", ",", "\\"))
            statement = line.strip().startswith(_STATEMENTS) and prev.strip() and not opener
            if statement and rng.random() < 0.3:
                text = rng.choice(_CJK_LINES)
                out.append(indent_of(line) + (text if fullwidth else text.translate(_TO_ASCII)))
            out.append(line)
            prev = line
        _CJK_DOCS[key] = Doc.from_text("\n".join(out) + "\n")
    return _CJK_DOCS[key]


def _cjk_block(lines: list[str]) -> bool:
    if not lines[0].strip() or not lines[-1].strip() or not any(has_cjk(s) for s in lines):
        return False
    return all("\t" not in s and s == s.rstrip() and "“" not in s for s in lines)


def cjk_punctuation(src: Source, rng: random.Random) -> Case | None:
    """Chinese comments/strings: file full-width and old_string ASCII, or the reverse."""
    fullwidth_file = rng.random() < 0.6
    file = cjk_doc(src, fullwidth_file)
    for i, j in blocks(rng, file, 3, 8, check=_cjk_block):
        lines = file.lines[i:j]
        twin = _fullwidth_twin(lines)
        old = [asciify(rng, s) if has_cjk(s) else s for s in lines] if fullwidth_file else twin
        if old is None:
            continue
        mod = choose_mod(rng, lines, ALL_KINDS)
        if mod is None or not same_touch(mod, old, lines):
            continue
        if any(has_cjk(lines[k]) for k in touched(mod, lines)):
            continue
        if old == lines or not unique_in(file, "\n".join(old)):
            continue
        note = ("file-fullwidth " if fullwidth_file else "file-ascii ") + mod.describe()
        return block_case(
            "cjk_punctuation", src, file, (i, j), old, echo(mod, old), mod.apply(lines), note
        )
    return None


def _fullwidth_twin(lines: list[str]) -> list[str] | None:
    """The full-width spelling of each planted ASCII line (same sentence list)."""
    out: list[str] = []
    for line in lines:
        if not has_cjk(line):
            out.append(line)
            continue
        body = line.strip()
        twin = next((c for c in _CJK_LINES if c.translate(_TO_ASCII) == body), None)
        if twin is None:
            return None
        out.append(indent_of(line) + twin)
    return out
