"""Whether and how a PDF page is OCRed, decided from what the page shows; running it.

The decision (:func:`decide`) compares the page area covered by images with the area covered
by text-layer lines, not a character count, so a scan with a short typed header is still read:

* ``page``: the text layer is garbage (dropped); the whole page is read;
* ``images``: the page has no text at all but images (at least :data:`MIN_IMAGE` of the
  page), or images cover at least :data:`IMAGE_SHARE` of the page while the text lines lying
  on them cover less than :data:`TEXT_ON_IMAGE` of the image area (a scanner's text layer
  covers much more) and the text beside them covers less than the images do. The image
  regions are read, the text layer is kept, and OCR words on a text-layer line are dropped
  (no repeated header);
* ``none``: anything else, e.g. a text page with a logo.

A page that was to be OCRed but was not (OCR off, no engine, time spent, a timeout, an
engine failure) gets an ``images_not_ocred`` warning besides the specific one.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

from tessera.parsing.ocr import OcrFailed, OcrTimeout, OcrUnavailable, ocr_page
from tessera.parsing.pdf_extract import PageContext, PageStats
from tessera.parsing.pdf_model import Box, Page, PageContent, union

MIN_IMAGE = 0.01
IMAGE_SHARE = 0.4
TEXT_ON_IMAGE = 0.1
MERGE_CONFIDENCE = 0.3
"""Words read from the image regions of a page that keeps its text layer need this confidence."""
MIN_SECONDS = 3.0
"""OCR time left (per document) below which a page is not started."""


@dataclass(frozen=True, slots=True)
class OcrPlan:
    mode: str
    """``none``, ``images`` or ``page``."""
    image_cover: float
    """Share of the page covered by images (their union)."""
    text_cover: float
    """Share of the page covered by text-layer lines and tables."""
    text_on_images: float
    """Share of the image area covered by text-layer lines."""
    regions: tuple[Box, ...] = ()
    text_boxes: tuple[Box, ...] = ()


def union_area(boxes: list[Box]) -> float:
    """Area of the union of ``boxes`` (coordinate compression; meant for tens of boxes)."""
    xs = sorted({x for b in boxes for x in (b[0], b[2])})
    total = 0.0
    for xa, xb in itertools.pairwise(xs):
        spans = sorted((b[1], b[3]) for b in boxes if b[0] <= xa and b[2] >= xb)
        covered, end = 0.0, -1e18
        for y0, y1 in spans:
            if y1 > end:
                covered += y1 - max(y0, end)
                end = y1
        total += covered * (xb - xa)
    return total


def _clip(b: Box, w: float, h: float) -> Box:
    return (max(b[0], 0.0), max(b[1], 0.0), min(b[2], w), min(b[3], h))


def _overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def decide(page: Page, content: PageContent, ctx: PageContext, stats: PageStats) -> OcrPlan:
    w, h = content.width, content.height
    area = max(w * h, 1.0)
    text_boxes = [ln.bbox for b in content.blocks for ln in b.lines] + [t.bbox for t in content.tables]
    text_area = sum((b[2] - b[0]) * (b[3] - b[1]) for b in text_boxes)
    if stats.garbage:
        return OcrPlan("page", -1.0, text_area / area, 0.0)
    if stats.chars >= 50 and not page.get_images():  # cheap: no image XObject on the page
        return OcrPlan("none", 0.0, text_area / area, 0.0, (), tuple(text_boxes))
    images = [c for i in ctx.images if (c := _clip(i, w, h))[2] > c[0] and c[3] > c[1]]
    images = [i for i in images if (i[2] - i[0]) * (i[3] - i[1]) >= MIN_IMAGE * area][:64]
    image_area = union_area(images)
    on = min(sum(_overlap(t, i) for t in text_boxes for i in images), image_area)
    cover, text_cover = image_area / area, text_area / area
    on_share = on / image_area if image_area else 0.0
    off = (text_area - on) / area
    scan = cover >= IMAGE_SHARE and on_share < TEXT_ON_IMAGE and off < cover
    mode = "images" if scan or (images and not text_boxes) else "none"
    regions = (union(images),) if mode == "images" else ()
    return OcrPlan(mode, cover, text_cover, on_share, regions, tuple(text_boxes))


def run_ocr(
    page: Page, content: PageContent, plan: OcrPlan, deadline: float, page_seconds: float
) -> list[str]:
    """OCR ``page`` as ``plan`` says, into ``content``; returns the warnings."""
    number = content.number
    notes: list[str] = []
    if plan.mode == "page":
        content.blocks, content.tables = [], []
        notes.append(f"garbage_text: page {number}: text layer dropped")
    left = deadline - time.monotonic()
    if left < min(MIN_SECONDS, page_seconds):
        return [*notes, f"ocr_skipped: page {number}: OCR time budget spent", _not_ocred(number, plan)]
    limit = min(page_seconds, left)
    merge = plan.mode == "images" and bool(content.blocks or content.tables)
    try:
        blocks = ocr_page(
            page,
            timeout=limit,
            clip=plan.regions[0] if merge and plan.regions else None,
            exclude=plan.text_boxes if merge else (),
            min_confidence=MERGE_CONFIDENCE if merge else 0.0,
        )
    except OcrUnavailable:
        return [*notes, f"ocr_unavailable: page {number}", _not_ocred(number, plan)]
    except OcrTimeout as e:
        return [*notes, f"ocr_timeout: page {number}: {e}", _not_ocred(number, plan)]
    except OcrFailed as e:
        return [*notes, f"ocr_failed: page {number}: {e}", _not_ocred(number, plan)]
    if merge:
        content.blocks = [*content.blocks, *blocks]
    elif blocks:
        content.blocks, content.tables = blocks, []
    return notes


def _not_ocred(number: int, plan: OcrPlan) -> str:
    if plan.mode == "page":
        return f"images_not_ocred: page {number}: garbage text layer dropped, page not read"
    return (
        f"images_not_ocred: page {number}: images cover {plan.image_cover:.0%} of the page, "
        f"text {plan.text_cover:.0%}"
    )


def not_ocred(number: int, plan: OcrPlan) -> str:
    """The warning for a page that needed OCR while OCR is turned off."""
    return _not_ocred(number, plan) + " (OCR off)"
