"""OCR for PDF pages without a usable text layer: tesseract through pytesseract.

The page is rendered (``get_pixmap``, grey, :data:`DPI`), ``image_to_data`` returns words with
pixel boxes and confidences, and the boxes are mapped back to PDF points in the *unrotated*
page frame that ``get_text`` uses. Tesseract's own layout analysis gives the reading order:
its paragraphs become blocks, its lines become lines, one :class:`Piece` (one layout run,
``ocr=True``) per line with the mean word confidence (0..1). A badly read page is tried
again turned by 180/90/270 degrees (scans placed upside down or sideways).

Threading: tesseract runs OpenMP threads of its own, which on a shared 2-core machine made one
page take ~30 s instead of 6-10 s. Every call here runs the tesseract subprocess with
``OMP_THREAD_LIMIT`` set to :data:`OMP_THREADS` (pytesseract passes ``os.environ`` to its
subprocess, so it is set there for the call and restored after), whoever the caller is.

Only part of a page may be read (``clip``: the image regions of a page that also has a text
layer), and words whose centre lies on a text-layer line (``exclude``, e.g. a header drawn over
a scan) are dropped, so merged OCR text never repeats the text layer.

When tesseract (the binary) or pytesseract (the wrapper) is missing, :class:`OcrUnavailable`
is raised and the caller records a warning; nothing crashes. A read past its time limit
raises :class:`OcrTimeout`; other engine failures :class:`OcrFailed`.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tessera.parsing.pdf_model import Box, Line, Page, Piece, TextBlock, pymupdf, union

DPI = 200
LANG = "eng"
MIN_CONFIDENCE = 0.0
GOOD_CONFIDENCE = 0.6
OMP_THREADS: str | None = "1"
"""``OMP_THREAD_LIMIT`` for the tesseract subprocess (None: inherit the environment)."""
EXCLUDE_PAD = 2.0
log = logging.getLogger(__name__)


class OcrUnavailable(Exception):
    """No OCR engine on this machine."""


class OcrFailed(Exception):
    """The engine ran but failed (crash, bad image)."""


class OcrTimeout(OcrFailed):
    """The engine did not finish within the time limit."""


@contextmanager
def thread_limit() -> Iterator[None]:
    """``OMP_THREAD_LIMIT`` = :data:`OMP_THREADS` in ``os.environ`` for the duration."""
    if OMP_THREADS is None:
        yield
        return
    old = os.environ.get("OMP_THREAD_LIMIT")
    os.environ["OMP_THREAD_LIMIT"] = OMP_THREADS
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("OMP_THREAD_LIMIT", None)
        else:
            os.environ["OMP_THREAD_LIMIT"] = old


def _engine() -> Any:
    try:
        import pytesseract  # type: ignore[import-untyped,unused-ignore]
    except ImportError as e:
        raise OcrUnavailable("pytesseract is not installed") from e
    cmd = pytesseract.pytesseract.tesseract_cmd
    if shutil.which(cmd) is None:
        raise OcrUnavailable(f"tesseract binary {cmd!r} not found")
    return pytesseract


def available() -> bool:
    try:
        _engine()
    except OcrUnavailable:
        return False
    return True


def ocr_page(
    page: Page,
    dpi: int = DPI,
    timeout: float = 30.0,
    lang: str = LANG,
    clip: Box | None = None,
    exclude: Sequence[Box] = (),
    min_confidence: float = MIN_CONFIDENCE,
) -> list[TextBlock]:
    """Blocks of OCR text for ``page`` (or its ``clip`` area) with boxes in PDF points.

    A page whose words come back with a low mean confidence may be a scan placed upside down
    or sideways: it is read again turned by 180, 90 and 270 degrees (until one reads well,
    or the time is up: the best reading so far is kept) and the best reading is kept, its
    boxes turned back. Words centred on an ``exclude`` box or below ``min_confidence``
    (0..1) are dropped.
    """
    engine = _engine()
    deadline = time.monotonic() + timeout
    zoom = dpi / 72.0
    if clip is not None and page.rotation:
        clip = None  # a clip is in the rotated frame: read the whole page instead
    pix = page.get_pixmap(
        matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False, clip=clip
    )
    to_pdf = pymupdf.Matrix(1 / zoom, 1 / zoom)
    if clip is not None:
        to_pdf = to_pdf * pymupdf.Matrix(1, 0, 0, 1, pix.x / zoom, pix.y / zoom)
    to_pdf = to_pdf * page.derotation_matrix
    image = pix.pil_image()
    best = _read(engine, image, lang, deadline, timeout)
    for angle in (180, 90, 270):
        if _score(best) >= GOOD_CONFIDENCE or deadline - time.monotonic() < 2:
            break
        try:
            turned = _read(engine, image.rotate(angle, expand=True), lang, deadline, timeout)
        except OcrTimeout:
            log.info("OCR retry turned by %d degrees timed out; keeping the first reading", angle)
            break
        if _score(turned) > _score(best) + 0.1:
            best = _unrotate(turned, angle, pix.width, pix.height)
    return _blocks(best, to_pdf, exclude, min_confidence)


def _read(engine: Any, image: Any, lang: str, deadline: float, limit: float) -> dict[str, list[Any]]:
    left = deadline - time.monotonic()
    try:
        with thread_limit():
            data: dict[str, list[Any]] = engine.image_to_data(
                image, lang=lang, output_type=engine.Output.DICT, timeout=max(0.1, left)
            )
    except RuntimeError as e:  # pytesseract raises RuntimeError on its timeout
        if "timeout" not in str(e).lower():
            raise OcrFailed(f"tesseract failed: {e!r}") from e
        raise OcrTimeout(f"tesseract did not finish within {limit:.1f}s") from e
    except Exception as e:
        raise OcrFailed(f"tesseract failed: {e!r}") from e
    return data


def _score(data: dict[str, list[Any]]) -> float:
    """Mean word confidence (0..1) of a reading; 0 when it found no words."""
    confs = [float(c) for w, c in zip(data["text"], data["conf"], strict=True) if str(w).strip()]
    return sum(c for c in confs if c >= 0) / len(confs) / 100.0 if confs else 0.0


def _unrotate(data: dict[str, list[Any]], angle: int, w: int, h: int) -> dict[str, list[Any]]:
    """Word boxes of an image turned ``angle`` degrees counter-clockwise, in the original's pixels."""
    out = dict(data)
    out["left"], out["top"], out["width"], out["height"] = [], [], [], []
    for left, top, bw, bh in zip(data["left"], data["top"], data["width"], data["height"], strict=True):
        x0, y0, x1, y1 = int(left), int(top), int(left) + int(bw), int(top) + int(bh)
        if angle == 180:
            box = (w - x1, h - y1, w - x0, h - y0)
        elif angle == 90:  # original (x, y) -> turned (y, w - x)
            box = (w - y1, x0, w - y0, x1)
        else:  # 270: original (x, y) -> turned (h - y, x)
            box = (y0, h - x1, y1, h - x0)
        out["left"].append(box[0])
        out["top"].append(box[1])
        out["width"].append(box[2] - box[0])
        out["height"].append(box[3] - box[1])
    return out


def _excluded(r: Any, exclude: Sequence[Box]) -> bool:
    cx, cy = (r.x0 + r.x1) / 2, (r.y0 + r.y1) / 2
    p = EXCLUDE_PAD
    return any(b[0] - p <= cx <= b[2] + p and b[1] - p <= cy <= b[3] + p for b in exclude)


def _blocks(
    data: dict[str, list[Any]], to_pdf: Any, exclude: Sequence[Box] = (), min_confidence: float = 0.0
) -> list[TextBlock]:
    lines: dict[tuple[int, int, int], list[tuple[str, Box, float]]] = {}
    for k, word in enumerate(data["text"]):
        word = str(word).strip()
        conf = float(data["conf"][k])
        if not word or conf < 100 * min_confidence or conf < 0:
            continue
        x, y, w, h = (int(data[f][k]) for f in ("left", "top", "width", "height"))
        r = pymupdf.Rect(x, y, x + w, y + h) * to_pdf
        r.normalize()
        if exclude and _excluded(r, exclude):
            continue
        key = (int(data["block_num"][k]), int(data["par_num"][k]), int(data["line_num"][k]))
        lines.setdefault(key, []).append((word, (r.x0, r.y0, r.x1, r.y1), conf / 100.0))
    blocks: dict[tuple[int, int], list[Line]] = {}
    for (b, p, _l), words in lines.items():
        bbox = union([w[1] for w in words])
        confidence = round(sum(w[2] for w in words) / len(words), 3)
        piece = Piece(" ".join(w[0] for w in words), bbox, ocr=True, confidence=confidence)
        blocks.setdefault((b, p), []).append(Line([piece], bbox))
    return [TextBlock(ls, union([ln.bbox for ln in ls])) for ls in blocks.values()]
