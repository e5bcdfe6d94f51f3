"""Bytes to text and back, keeping the file's encoding and byte-order mark.

UTF-8 (with or without BOM) and UTF-16/32 with a BOM are recognised directly;
other text encodings (GB18030, Shift-JIS, cp1252, ...) are detected with
charset-normalizer and accepted only when decoding and re-encoding gives the
original bytes back, so writing an untouched region never changes a byte.
"""

from __future__ import annotations

import codecs
import re

from redline.engine.errors import BinaryFileError, EncodingError
from redline.engine.records import record

# Longest first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Detected legacy Chinese encodings are widened to their superset, so that
# text added by an edit can use any character the superset covers.
_WIDEN = {"gb2312": "gb18030", "gbk": "gb18030", "cp936": "gb18030"}

# Control characters that text files do not contain (tab, newlines, form feed
# and ESC aside); a legacy decoding that yields them is reading binary data.
_CONTROL = re.compile(r"[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")

_CHAOS_TIE = 0.01
_COHERENCE_TIE = 0.05
# Codec names (as codecs.lookup spells them), most widely used first.
_PREFERENCE = [
    "gb18030",
    "cp932",
    "shift_jis",
    "big5",
    "cp949",
    "euc_kr",
    "euc_jp",
    "cp1252",
    "latin-1",
    "iso8859-15",
    "cp1251",
    "koi8-r",
    "cp1250",
    "iso8859-2",
]


@record(frozen=True)
class Decoded:
    """A file's text and what is needed to write it back byte for byte."""

    text: str
    encoding: str  # a Python codec name, without BOM handling
    bom: bytes = b""

    def encode(self, text: str) -> bytes:
        return self.bom + encode_text(text, self.encoding)


def encode_text(text: str, encoding: str) -> bytes:
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as exc:
        raise EncodingError(encoding, exc.object[exc.start]) from None


def decode(data: bytes) -> Decoded:
    """Decode a file's bytes; raise :class:`BinaryFileError` for anything not text."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return Decoded(data[len(bom) :].decode(encoding), encoding, bom)
            except UnicodeDecodeError as exc:
                raise BinaryFileError(f"invalid {encoding} after its byte-order mark") from exc
    if b"\x00" in data:
        raise BinaryFileError("contains NUL bytes")
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    return _detect(data)


def _detect(data: bytes) -> Decoded:
    from charset_normalizer import from_bytes  # imported only for non-UTF-8 files

    # UTF-16/32 are accepted only with a byte-order mark (handled above); without
    # one and without NUL bytes, such a guess is noise.
    matches = [
        m
        for m in from_bytes(data)
        if m.encoding and not codecs.lookup(m.encoding).name.startswith(("utf-16", "utf-32"))
    ]
    if not matches:
        raise BinaryFileError("no text encoding fits its bytes")
    # charset-normalizer often cannot tell encodings apart on a short file; among
    # the candidates as good as the best, prefer the ones in common use.
    least_chaos = min(m.chaos for m in matches)
    tied = [m for m in matches if m.chaos <= least_chaos + _CHAOS_TIE]
    most_coherent = max(m.coherence for m in tied)
    tied = [m for m in tied if m.coherence >= most_coherent - _COHERENCE_TIE]
    names = [codecs.lookup(m.encoding).name for m in tied]
    names.sort(key=lambda n: _PREFERENCE.index(n) if n in _PREFERENCE else len(_PREFERENCE))
    controls = False
    for name in names:
        for encoding in dict.fromkeys((_WIDEN.get(name, name), name)):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError:
                continue
            if text.encode(encoding, errors="strict") != data:
                continue
            if _CONTROL.search(text.removesuffix("\x1a")):  # a final ^Z ends a DOS file
                controls = True
                continue
            return Decoded(text, encoding)
    if controls:
        raise BinaryFileError(f"decoded as {names[0]}, it holds control characters")
    raise BinaryFileError(f"detected {names[0]}, but it does not round-trip the bytes exactly")
