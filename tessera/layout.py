"""Layout maps: normalized text back to PDF page + bbox, or to Office zip part + element.

A :class:`PageLayout` is a sorted tuple of runs. Each run is a contiguous range of the
normalized text that came from one place on one page (a span or line of the PDF), with its
bbox in PDF points (x0, y0, x1, y1; origin top-left as PyMuPDF reports it) and the index of
its first character in that page's extracted text. A chunk's provenance is the union bbox
of the runs it touches, per page: it contains every character of the chunk on that page.

A :class:`PartLayout` (Office documents) is a sorted tuple of :class:`PartRun`: each run is a
contiguous range of the normalized text that equals a range of one element's text (a DOCX
paragraph, a PPTX shape paragraph, an XLSX cell). The characters between runs are the
parser's separators (newlines, table syntax); a chunk's :class:`~tessera.types.PartSpan`
tuple carries them, so the spans give the chunk's text exactly.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from tessera.types import PageSpan, PartSpan


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


@dataclass(frozen=True, slots=True)
class PartRun:
    """``text[start:end] == element_text(part, locator)[offset : offset + end - start]``."""

    start: int
    end: int
    part: str
    locator: str
    offset: int


@dataclass(frozen=True)
class PartLayout:
    runs: tuple[PartRun, ...]

    def __post_init__(self) -> None:
        if any(a.end > b.start for a, b in zip(self.runs, self.runs[1:], strict=False)) or any(
            r.start >= r.end for r in self.runs
        ):
            raise ValueError("part runs must be non-empty, sorted and disjoint")

    def spans(self, text: str, start: int, end: int) -> tuple[PartSpan, ...]:
        """The element ranges of ``text[start:end]`` with the separators between them."""
        k = max(0, bisect.bisect_right([r.start for r in self.runs], start) - 1)
        out: list[PartSpan] = []
        pos = start
        for run in self.runs[k:]:
            if run.start >= end:
                break
            if run.end <= start:
                continue
            a, b = max(start, run.start), min(end, run.end)
            lo, hi = run.offset + a - run.start, run.offset + b - run.start
            prev = out[-1] if out else None
            if prev and a == pos and (prev.part, prev.locator, prev.end) == (run.part, run.locator, lo):
                out[-1] = PartSpan(run.part, run.locator, prev.start, hi, prev.lead)
            else:
                out.append(PartSpan(run.part, run.locator, lo, hi, text[pos:a]))
            pos = b
        if out and pos < end:
            last = out[-1]
            out[-1] = PartSpan(last.part, last.locator, last.start, last.end, last.lead, text[pos:end])
        return tuple(out)

    def to_json(self) -> list[list[Any]]:
        return [[r.start, r.end, r.part, r.locator, r.offset] for r in self.runs]

    @classmethod
    def from_json(cls, data: list[list[Any]]) -> PartLayout:
        return cls(tuple(PartRun(int(a), int(b), str(p), str(loc), int(o)) for a, b, p, loc, o in data))
