"""OCR for PDF pages without a usable text layer: tesseract through pytesseract.

The page is rendered (``get_pixmap``, grey, :data:`DPI`), ``image_to_data`` returns words with
pixel boxes and confidences, and the boxes are mapped back to PDF points in the *unrotated*
page frame that ``get_text`` uses. Tesseract's own layout analysis gives the reading order:
its paragraphs become blocks, its lines become lines, one :class:`Piece` (one layout run,
``ocr=True``) per line with the mean word confidence (0..1). A badly read page is tried
again turned by 180/90/270 degrees (scans placed upside down or sideways).

When tesseract (the binary) or pytesseract (the wrapper) is missing, :class:`OcrUnavailable`
is raised and the caller records a warning; nothing crashes.
"""

from __future__ import annotations

import shutil
import time
from typing import Any

from tessera.parsing.pdf_model import Box, Line, Page, Piece, TextBlock, pymupdf, union

DPI = 200
LANG = "eng"
MIN_CONFIDENCE = 0.0
GOOD_CONFIDENCE = 0.6


class OcrUnavailable(Exception):
    """No OCR engine on this machine."""


class OcrFailed(Exception):
    """The engine ran but failed (timeout, crash, bad image)."""


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


def ocr_page(page: Page, dpi: int = DPI, timeout: float = 30.0, lang: str = LANG) -> list[TextBlock]:
    """Blocks of OCR text for ``page`` with boxes in PDF points.

    A page whose words come back with a low mean confidence may be a scan placed upside down
    or sideways: it is read again turned by 180, 90 and 270 degrees (until one reads well)
    and the best reading is kept, its boxes turned back.
    """
    engine = _engine()
    deadline = time.monotonic() + timeout
    zoom = dpi / 72.0
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    to_pdf = pymupdf.Matrix(1 / zoom, 1 / zoom) * page.derotation_matrix
    image = pix.pil_image()
    best = _read(engine, image, lang, deadline)
    for angle in (180, 90, 270):
        if _score(best) >= GOOD_CONFIDENCE or deadline - time.monotonic() < 2:
            break
        turned = _read(engine, image.rotate(angle, expand=True), lang, deadline)
        if _score(turned) > _score(best) + 0.1:
            best = _unrotate(turned, angle, pix.width, pix.height)
    return _blocks(best, to_pdf)


def _read(engine: Any, image: Any, lang: str, deadline: float) -> dict[str, list[Any]]:
    left = deadline - time.monotonic()
    try:
        data: dict[str, list[Any]] = engine.image_to_data(
            image, lang=lang, output_type=engine.Output.DICT, timeout=max(1.0, left)
        )
    except RuntimeError as e:  # pytesseract raises RuntimeError on its timeout
        raise OcrFailed(f"tesseract timed out after {left:.0f}s") from e
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


def _blocks(data: dict[str, list[Any]], to_pdf: Any) -> list[TextBlock]:
    lines: dict[tuple[int, int, int], list[tuple[str, Box, float]]] = {}
    for k, word in enumerate(data["text"]):
        word = str(word).strip()
        conf = float(data["conf"][k])
        if not word or conf < MIN_CONFIDENCE:
            continue
        x, y, w, h = (int(data[f][k]) for f in ("left", "top", "width", "height"))
        r = pymupdf.Rect(x, y, x + w, y + h) * to_pdf
        r.normalize()
        key = (int(data["block_num"][k]), int(data["par_num"][k]), int(data["line_num"][k]))
        lines.setdefault(key, []).append((word, (r.x0, r.y0, r.x1, r.y1), conf / 100.0))
    blocks: dict[tuple[int, int], list[Line]] = {}
    for (b, p, _l), words in lines.items():
        bbox = union([w[1] for w in words])
        confidence = round(sum(w[2] for w in words) / len(words), 3)
        piece = Piece(" ".join(w[0] for w in words), bbox, ocr=True, confidence=confidence)
        blocks.setdefault((b, p), []).append(Line([piece], bbox))
    return [TextBlock(ls, union([ln.bbox for ln in ls])) for ls in blocks.values()]
