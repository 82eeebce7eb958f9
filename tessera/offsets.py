"""Offset maps: from normalized-text code points back to exact source bytes.

A text-format parser normalizes its input (BOM removed, CRLF to LF, invalid UTF-8
replaced, later: entities decoded). The map stores *anchors* only where the normalized
text stops being a verbatim UTF-8 copy of the source, so it stays small:

* ``(i, b, -1)``: a verbatim run starts; normalized char ``i`` begins at source byte ``b``.
* ``(i, b, w)`` with ``w >= 0``: normalized char ``i`` *replaces* ``w`` source bytes starting
  at ``b`` (``"\\r\\n"`` -> ``"\\n"``: ``w == 2``); a verbatim run resumes at ``b + w``.

Verbatim checkpoints every :data:`CHECKPOINT` characters keep lookups cheap on large texts.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

CHECKPOINT = 4096


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class OffsetMap:
    text_len: int
    anchors: tuple[tuple[int, int, int], ...]

    def _anchor(self, i: int) -> tuple[int, int, int]:
        k = bisect.bisect_right(self.anchors, (i, 1 << 62, 1 << 62)) - 1
        if k < 0:
            raise ValueError(f"offset {i} precedes the first anchor")
        return self.anchors[k]

    def byte_start(self, text: str, i: int) -> int:
        """Source byte where normalized char ``i`` begins (``i == len(text)``: end of source)."""
        if not 0 <= i <= self.text_len:
            raise ValueError(f"offset {i} outside [0, {self.text_len}]")
        idx, b, w = self._anchor(i)
        if idx == i:
            return b
        if w >= 0:
            return b + w + _utf8_len(text[idx + 1 : i])
        return b + _utf8_len(text[idx:i])

    def char_width(self, text: str, i: int) -> int:
        idx, _b, w = self._anchor(i)
        if idx == i and w >= 0:
            return w
        return _utf8_len(text[i])

    def span(self, text: str, start: int, end: int) -> tuple[int, int]:
        """Source byte range ``[b0, b1)`` of the normalized range ``[start, end)``."""
        if not 0 <= start < end <= self.text_len:
            raise ValueError(f"invalid range [{start}, {end}) for text of length {self.text_len}")
        b0 = self.byte_start(text, start)
        return b0, self.byte_start(text, end - 1) + self.char_width(text, end - 1)

    def to_json(self) -> dict[str, object]:
        return {"text_len": self.text_len, "anchors": [list(a) for a in self.anchors]}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> OffsetMap:
        anchors = data["anchors"]
        text_len = data["text_len"]
        assert isinstance(anchors, list) and isinstance(text_len, int)
        return cls(text_len=text_len, anchors=tuple((int(a[0]), int(a[1]), int(a[2])) for a in anchors))


class OffsetMapBuilder:
    """Builds normalized text and its map together, piece by piece."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._anchors: list[tuple[int, int, int]] = []
        self._len = 0
        self._next_verbatim = -1  # source byte where a verbatim copy would continue
        self._last_anchor = -CHECKPOINT

    def verbatim(self, s: str, src_byte: int) -> None:
        """Append ``s``, copied unchanged from the source starting at ``src_byte``."""
        pos = 0
        while pos < len(s):
            piece = s[pos : pos + CHECKPOINT]
            if src_byte != self._next_verbatim or self._len - self._last_anchor >= CHECKPOINT:
                self._anchors.append((self._len, src_byte, -1))
                self._last_anchor = self._len
            self._parts.append(piece)
            self._len += len(piece)
            src_byte += _utf8_len(piece)
            self._next_verbatim = src_byte
            pos += len(piece)

    def replace(self, ch: str, src_byte: int, width: int) -> None:
        """Append one char that stands for ``width`` source bytes at ``src_byte``."""
        if len(ch) != 1:
            raise ValueError("replace() appends exactly one character")
        self._anchors.append((self._len, src_byte, width))
        self._last_anchor = self._len
        self._parts.append(ch)
        self._len += 1
        self._next_verbatim = src_byte + width

    def build(self, empty_at: int = 0) -> tuple[str, OffsetMap]:
        """Text and map; ``empty_at`` is the source byte an empty text maps to."""
        anchors = self._anchors or [(0, empty_at, -1)]
        return "".join(self._parts), OffsetMap(text_len=self._len, anchors=tuple(anchors))


def normalize_text_bytes(raw: bytes) -> tuple[str, OffsetMap, int]:
    """Decode UTF-8 text with an exact map: BOM dropped, CRLF/CR -> LF, bad bytes -> U+FFFD.

    Returns the text, its map and the number of invalid bytes replaced.
    """
    builder = OffsetMapBuilder()
    pos = 3 if raw.startswith(b"\xef\xbb\xbf") else 0
    invalid = 0
    while pos < len(raw):
        try:
            segment = raw[pos:].decode("utf-8")
            bad_start = bad_end = len(raw)
        except UnicodeDecodeError as e:
            segment = raw[pos : pos + e.start].decode("utf-8")
            bad_start, bad_end = pos + e.start, pos + max(e.end, e.start + 1)
        _emit_lines(builder, segment, pos)
        if bad_start < len(raw):
            builder.replace("\ufffd", bad_start, bad_end - bad_start)
            invalid += bad_end - bad_start
        pos = bad_end
    text, omap = builder.build(empty_at=len(raw))
    return text, omap, invalid


def _emit_lines(builder: OffsetMapBuilder, segment: str, src_byte: int) -> None:
    start = 0
    while True:
        cr = segment.find("\r", start)
        if cr < 0:
            if start < len(segment):
                builder.verbatim(segment[start:], src_byte)
            return
        if cr > start:
            builder.verbatim(segment[start:cr], src_byte)
            src_byte += _utf8_len(segment[start:cr])
        width = 2 if segment.startswith("\r\n", cr) else 1
        builder.replace("\n", src_byte, width)
        src_byte += width
        start = cr + width
