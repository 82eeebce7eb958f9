"""Page layout maps for paginated sources (PDF): normalized text back to page, bbox, page text.

A :class:`PageLayout` is a sorted tuple of runs. Each run is a contiguous range of the
normalized text that came from one place on one page (a span or line of the PDF), with its
bbox in PDF points (x0, y0, x1, y1; origin top-left as PyMuPDF reports it) and the index of
its first character in that page's extracted text. A chunk's provenance is the union bbox
of the runs it touches, per page: it contains every character of the chunk on that page.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from tessera.types import PageSpan


@dataclass(frozen=True)
class LayoutRun:
    start: int
    end: int
    page: int
    page_start: int
    bbox: tuple[float, float, float, float]
    ocr: bool = False
    confidence: float = 1.0


@dataclass(frozen=True)
class PageLayout:
    runs: tuple[LayoutRun, ...]

    def __post_init__(self) -> None:
        starts = [r.start for r in self.runs]
        if starts != sorted(starts) or any(r.start >= r.end for r in self.runs):
            raise ValueError("layout runs must be non-empty and sorted by start")

    def touching(self, start: int, end: int) -> list[LayoutRun]:
        """Runs that intersect the normalized range ``[start, end)``."""
        k = max(0, bisect.bisect_right([r.start for r in self.runs], start) - 1)
        out = []
        for run in self.runs[k:]:
            if run.start >= end:
                break
            if run.end > start:
                out.append(run)
        return out

    def spans(self, start: int, end: int) -> tuple[PageSpan, ...]:
        """Pages of ``[start, end)`` with the union bbox of its runs on each page."""
        boxes: dict[int, list[float]] = {}
        for run in self.touching(start, end):
            b = boxes.setdefault(run.page, list(run.bbox))
            b[0], b[1] = min(b[0], run.bbox[0]), min(b[1], run.bbox[1])
            b[2], b[3] = max(b[2], run.bbox[2]), max(b[3], run.bbox[3])
        return tuple(PageSpan(p, (b[0], b[1], b[2], b[3])) for p, b in sorted(boxes.items()))

    def ocr(self, start: int, end: int) -> bool:
        return any(r.ocr for r in self.touching(start, end))

    def to_json(self) -> list[list[Any]]:
        return [[r.start, r.end, r.page, r.page_start, list(r.bbox), r.ocr, r.confidence] for r in self.runs]

    @classmethod
    def from_json(cls, data: list[list[Any]]) -> PageLayout:
        return cls(
            tuple(
                LayoutRun(int(a), int(b), int(p), int(ps), (bb[0], bb[1], bb[2], bb[3]), bool(o), float(c))
                for a, b, p, ps, bb, o, c in data
            )
        )
