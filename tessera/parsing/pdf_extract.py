"""One page of a PDF to text lines and blocks, with hidden text filtered out.

One ``get_text("dict")`` call per page (no ``sort=True``: reading order is done on blocks by
:mod:`tessera.parsing.pdf_layout`), with ``TEXT_COLLECT_VECTORS`` so the same pass also
returns the page's vector paths: ruling lines decide whether the page looks tabular, and
filled shapes are the background against which text colour is judged.

Hidden text (a prompt-injection channel) never reaches the normalized text:

* render mode 3/7 or zero opacity (span ``alpha == 0`` or neither filled nor stroked in
  ``char_flags``), unless it lies over an image: that is a scanner's OCR text layer;
* font size below 1 pt;
* fill colour (nearly) equal to the background: the smallest filled shape under the span,
  else white paper (text over an image is kept, its background is unknown).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tessera.parsing.pdf_model import Box, Line, Page, PageContent, Piece, TextBlock, pymupdf, union


def text_flags() -> int:
    """``get_text`` flags (read when a page is parsed: PyMuPDF is imported on first use)."""
    return int(
        pymupdf.TEXT_MEDIABOX_CLIP | pymupdf.TEXT_CID_FOR_UNKNOWN_UNICODE | pymupdf.TEXT_COLLECT_VECTORS
    )


FILLED, STROKED = 16, 32  # char_flags bits (FZ_STEXT_FILLED / FZ_STEXT_STROKED)
MIN_SIZE = 1.0
BAND = 0.12
"""Top and bottom share of a page where running headers and footers are looked for."""
GARBAGE_SAMPLE = 4000
WORD_SAMPLE = 1500
_SYMBOL = re.compile(r"[^\w\s.,;:!?'\"()\[\]{}<>/\\|@#$%&*+=~^`\-–—…·•’‘“”]")
_WORD = re.compile(r"\b[A-Za-z]{3,}\b")
_NOT_A_WORD = re.compile(
    r"\b(?:[A-Za-z]*[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{5}[A-Za-z]*|[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{3,})\b"
)
_BAD = re.compile("[\ufffd\x00-\x08\x0b-\x1f\x7f-\x9f\ue000-\uf8ff]")


MAX_HIDDEN_CHARS = 20_000
"""Chars of hidden span text kept per page to classify (``PageStats.hidden_texts``)."""


@dataclass(slots=True)
class PageStats:
    hidden: int = 0
    hidden_texts: list[str] = field(default_factory=list)
    """The text of the hidden spans, in order, up to :data:`MAX_HIDDEN_CHARS` in all."""
    hidden_chars: int = 0
    ocr_layer: int = 0
    chars: int = 0
    garbage: bool = False
    h_rules: int = 0
    grid_rows: int = 0


def center(b: Box) -> tuple[float, float]:
    return (b[0] + b[2]) / 2, (b[1] + b[3]) / 2


def inside(pt: tuple[float, float], b: Box, tol: float = 0.0) -> bool:
    return b[0] - tol <= pt[0] <= b[2] + tol and b[1] - tol <= pt[1] <= b[3] + tol


class PageContext:
    """Per-page context for the visibility tests (fills and images, computed lazily)."""

    def __init__(self, page: Page, vectors: list[dict[str, Any]]) -> None:
        self.page = page
        self.fills = [
            (tuple(v["bbox"]), int(v.get("color", 0)), int(v.get("alpha", 255)))
            for v in vectors
            if not v.get("stroked") and v["bbox"][2] - v["bbox"][0] > 3 and v["bbox"][3] - v["bbox"][1] > 3
        ]
        self._images: list[Box] | None = None

    @property
    def images(self) -> list[Box]:
        if self._images is None:
            self._images = [tuple(i["bbox"]) for i in self.page.get_image_info()]
        return self._images

    def over_image(self, b: Box) -> bool:
        c = center(b)
        return any(inside(c, i) for i in self.images)

    def background(self, b: Box) -> int | None:
        c = center(b)
        best: tuple[float, int] | None = None
        for fb, color, alpha in self.fills:
            if alpha > 0 and inside(c, fb):
                area = (fb[2] - fb[0]) * (fb[3] - fb[1])
                if best is None or area < best[0]:
                    best = (area, color)
        return None if best is None else best[1]


def _close(a: int, b: int, tol: int = 0x18) -> bool:
    return (
        abs((a >> 16) - (b >> 16)) <= tol
        and abs(((a >> 8) & 0xFF) - ((b >> 8) & 0xFF)) <= tol
        and abs((a & 0xFF) - (b & 0xFF)) <= tol
    )


def visibility(span: dict[str, Any], ctx: PageContext) -> str:
    """``"visible"``, ``"hidden"`` or ``"ocr_layer"`` (invisible text over an image)."""
    if (  # the common case first: opaque, filled, normal size, not whitish, no shapes behind
        not ctx.fills
        and span["size"] >= MIN_SIZE
        and span.get("alpha", 255) == 255
        and span.get("char_flags", FILLED) & (FILLED | STROKED)
        and (span.get("color", 0) & 0xE0E0E0) != 0xE0E0E0
        and span["bbox"][3] - span["bbox"][1] >= MIN_SIZE
    ):
        return "visible"
    if span["size"] < MIN_SIZE or span["bbox"][3] - span["bbox"][1] < MIN_SIZE:
        return "hidden"
    if span.get("alpha", 255) == 0 or not span.get("char_flags", FILLED) & (FILLED | STROKED):
        return "ocr_layer" if ctx.over_image(span["bbox"]) else "hidden"
    color = int(span.get("color", 0))
    bg = ctx.background(span["bbox"])
    if bg is None:
        if _close(color, 0xFFFFFF) and not ctx.over_image(span["bbox"]):
            return "hidden"
    elif _close(color, bg):
        return "hidden"
    return "visible"


@lru_cache(maxsize=1024)
def _bold_font(font: str) -> bool:
    font = font.lower()
    return "bold" in font or "black" in font or "heavy" in font


def _bold(span: dict[str, Any]) -> bool:
    return bool(span["flags"] & 16) or _bold_font(str(span.get("font", "")))


def _simple_line(spans: list[dict[str, Any]], ctx: PageContext, skip: list[Box]) -> Line | None:
    """The common case, without the general machinery: one plain visible span, no tables."""
    s = spans[0]
    bbox = s["bbox"]
    text = s["text"].strip()
    if "\u00ad" in text[:-1]:
        text = text[:-1].replace("\u00ad", "") + text[-1]
    return Line([Piece(text, bbox)], bbox, s["size"], _bold(s), text) if text else None


def _plain(spans: list[dict[str, Any]], ctx: PageContext, skip: list[Box]) -> bool:
    if len(spans) != 1 or skip or ctx.fills:
        return False
    s = spans[0]
    b = s["bbox"]
    return bool(
        s["size"] >= MIN_SIZE
        and s.get("alpha", 255) == 255
        and s.get("char_flags", FILLED) & (FILLED | STROKED)
        and (s.get("color", 0) & 0xE0E0E0) != 0xE0E0E0
        and b[3] - b[1] >= MIN_SIZE
    )


def _line(spans: list[dict[str, Any]], ctx: PageContext, stats: PageStats, skip: list[Box]) -> Line | None:
    pieces: list[Piece] = []
    size, bold = 0.0, True
    for s in spans:
        text = s["text"]
        if not text or text.isspace():
            continue
        vis = visibility(s, ctx)
        if vis == "hidden":
            stats.hidden += 1
            if stats.hidden_chars < MAX_HIDDEN_CHARS:
                stats.hidden_texts.append(text)
                stats.hidden_chars += len(text)
            continue
        if vis == "ocr_layer":  # a scanner's OCR text: flagged like our own OCR
            stats.ocr_layer += 1
        bbox: Box = s["bbox"]
        if skip and any(inside(center(bbox), t) for t in skip):
            continue  # text of a table: the table pass emits it
        if "\u00ad" in text and "\u00ad" in text[:-1]:
            text = text[:-1].replace("\u00ad", "") + text[-1]
        if pieces:
            prev = pieces[-1]
            if (
                not prev.text.endswith(" ")
                and not text.startswith(" ")
                and bbox[0] - prev.bbox[2] > 0.15 * max(s["size"], 1.0)
            ):
                prev.text += " "
        pieces.append(Piece(text, bbox, ocr=vis == "ocr_layer"))
        size = max(size, float(s["size"]))
        bold = bold and _bold(s)
    if not pieces:
        return None
    if len(pieces) == 1:
        p = pieces[0]
        p.text = p.text.strip()
        return Line(pieces, p.bbox, size, bold, p.text) if p.text else None
    pieces[0].text = pieces[0].text.lstrip()
    pieces[-1].text = pieces[-1].text.rstrip()
    pieces = [p for p in pieces if p.text]
    if not pieces:
        return None
    return Line(pieces, union([p.bbox for p in pieces]), size, bold)


def rules(vectors: list[dict[str, Any]], stats: PageStats) -> None:
    """Ruling-line structure of a page: how many horizontal rules form a grid with vertical
    ones (``grid_rows``), and the largest group of same-width horizontal rules
    (``h_rules``, booktabs-style tables). Stroked rectangles count as their four edges."""
    hs: list[Box] = []
    vs: list[Box] = []
    for v in vectors:
        x0, y0, x1, y1 = v["bbox"]
        w, h = x1 - x0, y1 - y0
        if h <= 3 and w >= 10:
            hs.append((x0, y0, x1, y1))
        elif w <= 3 and h >= 6:
            vs.append((x0, y0, x1, y1))
        elif v.get("stroked") and w >= 10 and h >= 6:
            hs += [(x0, y0, x1, y0), (x0, y1, x1, y1)]
            vs += [(x0, y0, x0, y1), (x1, y0, x1, y1)]
    if len(hs) < 3:
        return
    widths: dict[tuple[int, int], set[int]] = {}
    for x0, y0, x1, _ in hs:
        widths.setdefault((round(x0 / 4), round(x1 / 4)), set()).add(round(y0))
    stats.h_rules = max(len(ys) for ys in widths.values())
    if len(vs) < 3 or len(hs) * len(vs) > 250_000:
        stats.grid_rows = 0 if len(vs) < 3 else len(hs)
        return
    tol = 2.0
    rows = 0
    for hx0, hy0, hx1, _hy1 in hs:
        touching = sum(
            1 for vx0, vy0, vx1, vy1 in vs if hx0 - tol <= vx0 <= hx1 + tol and vy0 - tol <= hy0 <= vy1 + tol
        )
        if touching >= 3:
            rows += 1
    stats.grid_rows = rows


def page_dict(page: Page) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Text blocks and vector blocks of a page, from one extraction."""
    blocks = page.get_text("dict", flags=text_flags())["blocks"]
    text = [b for b in blocks if b["type"] == 0]
    vectors = [b for b in blocks if b["type"] == 3]
    return text, vectors


def _same_baseline(a: Line, b: Line) -> bool:
    """``b`` continues ``a`` on the same baseline, a short gap to its right ("5.1   Results")."""
    h = a.bbox[3] - a.bbox[1]
    gap = b.bbox[0] - a.bbox[2]
    return (
        -1.0 <= gap <= 1.5 * max(a.size, b.size, 1.0)
        and abs((a.bbox[1] + a.bbox[3]) - (b.bbox[1] + b.bbox[3])) / 2 < 0.3 * h
    )


def _join(a: Line, b: Line) -> Line:
    pieces = a.pieces + b.pieces
    pieces[len(a.pieces) - 1].text += " "
    return Line(pieces, union([a.bbox, b.bbox]), max(a.size, b.size), a.bold and b.bold)


def build_blocks(
    page: Page,
    number: int,
    text_blocks: list[dict[str, Any]],
    ctx: PageContext,
    stats: PageStats,
    skip: list[Box],
) -> PageContent:
    content = PageContent(number, float(page.rect.width), float(page.rect.height))
    chars = 0
    parts: list[str] = []
    # lines in the header/footer bands stay apart: a page number must not join a running title
    top, bottom = content.height * BAND, content.height * (1 - BAND)
    for b in text_blocks:
        lines: list[Line] = []
        for ln in b["lines"]:
            spans = ln["spans"]
            if _plain(spans, ctx, skip):
                line = _simple_line(spans, ctx, skip)
            else:
                line = _line(spans, ctx, stats, skip)
            if line is None:
                continue
            t = line.text
            parts.append(t)
            chars += len(t)
            if lines and top < line.bbox[1] and line.bbox[3] < bottom and _same_baseline(lines[-1], line):
                lines[-1] = _join(lines[-1], line)
            else:
                lines.append(line)
        if lines:
            content.blocks.append(TextBlock(lines, union([ln.bbox for ln in lines])))
    stats.chars = chars
    stats.garbage = garbage(" ".join(parts))
    return content


def garbage(text: str) -> bool:
    """A text layer that is mostly not text: replacement, control or private-use characters
    (missing ToUnicode maps, CID soup), unusual symbols, or Latin "words" that are not
    pronounceable (no vowel, five consonants in a row: a font with a shifted encoding)."""
    text = text[:GARBAGE_SAMPLE]
    n = len(text) - text.count(" ")
    if n < 20:
        return False
    bad = text.count("\ufffd") if text.isprintable() else len(_BAD.findall(text))
    if bad > 0.25 * n or (not text.isascii() and len(_SYMBOL.findall(text)) > 0.4 * n):
        return True  # (ASCII punctuation is all allowed: only non-ASCII text can fail the symbol test)
    sample = text[:WORD_SAMPLE]
    words = len(_WORD.findall(sample))
    return words >= 20 and len(_NOT_A_WORD.findall(sample)) > 0.5 * words
