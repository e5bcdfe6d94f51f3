"""Bytes to text and back, keeping the file's encoding and byte-order mark.

UTF-8 (with or without BOM) and UTF-16/32 with a BOM are recognised directly;
other text encodings (GB18030, Shift-JIS, cp1252, ...) are detected with
charset-normalizer and accepted only when decoding and re-encoding gives the
original bytes back, so writing an untouched region never changes a byte.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from redline.engine.errors import BinaryFileError, EncodingError

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


@dataclass(frozen=True)
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

    best = from_bytes(data).best()
    if best is None or best.encoding is None:
        raise BinaryFileError("no text encoding fits its bytes")
    name = codecs.lookup(best.encoding).name
    if name.startswith(("utf-16", "utf-32")):
        # Accepted only with a byte-order mark (handled above); without one and
        # without NUL bytes, the guess is noise.
        raise BinaryFileError(f"looks like {name} without a byte-order mark")
    for encoding in dict.fromkeys((_WIDEN.get(name, name), name)):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if text.encode(encoding, errors="strict") == data:
            return Decoded(text, encoding)
    raise BinaryFileError(f"detected {name}, but it does not round-trip the bytes exactly")
