"""OCR quality and speed on scans we make ourselves: word recall against the reference text.

Pages of generated text (a fixed vocabulary, seeded) are rendered to images as a scanner
would give them (300, 200 or 150 dpi; the 150 dpi pages with Gaussian noise, a 1.2 degree
skew and JPEG compression), embedded as image-only PDF pages and parsed by
:class:`tessera.parsing.pdf.PdfParser` (OCR on, tables off). Word recall is the multiset
overlap of lower-cased words (punctuation stripped) with the reference, divided by the
reference's word count; precision divides by the OCR's word count.

The same pages are read with tesseract's threads limited (``OMP_THREAD_LIMIT=1``, what the
parser sets) and with its default threading (``tessera.parsing.ocr.OMP_THREADS = None``),
alternating page by page in one process. One page with a typed header over a scan checks
the OCR decision. Writes ``bench/results/ocr_quality.json``.
"""

from __future__ import annotations

import io
import random
import re
import statistics
import sys
import time
from collections import Counter
from typing import Any

from bench.common import write_result
from tessera.types import SourceDocument, sha256_hex

_VOCAB = (
    "account active address agreement amount annual answer approval archive balance batch board "
    "budget building business capital central change chapter charge client committee company "
    "contract council credit customer daily damage data delivery department deposit design detail "
    "director document due early effect energy estimate event evidence excess export factory "
    "federal field figure final finance first form freight general group growth harbour health "
    "history holder income index insurance interest invoice issue item journal labour land ledger "
    "level license limit loan local machine manager market member method minute model monthly "
    "national notice number office order owner paper parcel partner payment period permit policy "
    "port premium price process product profit program property public quarter railway rate "
    "receipt record region registry report request reserve result return revenue review river "
    "salary sample schedule section service share shipment signature society source station "
    "statement steel storage street supply survey system tariff tax tenant term total trade "
    "transfer treasury trust union unit value vessel volume warehouse water weekly work year"
)
VOCAB = _VOCAB.split()
VARIANTS = {
    "clean_300dpi": {"dpi": 300, "noise": 0.0, "skew": 0.0},
    "clean_200dpi": {"dpi": 200, "noise": 0.0, "skew": 0.0},
    "noisy_skewed_150dpi": {"dpi": 150, "noise": 24.0, "skew": 1.2},
}
PAGES_PER_VARIANT = 3
_WORD = re.compile(r"[a-z0-9]+")


def reference(seed: int, lines: int = 34) -> list[str]:
    rng = random.Random(seed)
    out = []
    for k in range(lines):
        words = [rng.choice(VOCAB) for _ in range(rng.randint(7, 11))]
        if k % 4 == 0:
            words.insert(rng.randint(0, len(words)), str(rng.randint(10, 99999)))
        out.append(" ".join(words).capitalize() + ".")
    return out


def scan_pdf(lines: list[str], dpi: int, noise: float, skew: float, seed: int) -> bytes:
    from PIL import Image

    from tessera.parsing.pdf_model import pymupdf  # typed as Any

    src = pymupdf.open()
    page = src.new_page(width=595, height=842)
    for k, line in enumerate(lines):
        page.insert_text((56, 70 + k * 21), line, fontsize=11, fontname="tiro")
    img = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).pil_image().convert("L")
    if noise:
        grain = Image.effect_noise(img.size, noise)
        img = Image.blend(img, grain, 0.25)
    if skew:
        angle = skew if seed % 2 else -skew
        img = img.rotate(angle, resample=Image.Resampling.BILINEAR, expand=False, fillcolor=255)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=70 if noise else 90)
    doc = pymupdf.open()
    out = doc.new_page(width=595, height=842)
    out.insert_image(out.rect, stream=buf.getvalue())
    data: bytes = doc.tobytes(deflate=True)
    return data


def words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


def score(ref: str, got: str) -> tuple[float, float]:
    r, g = words(ref), words(got)
    hit = sum((r & g).values())
    return hit / max(1, sum(r.values())), hit / max(1, sum(g.values()))


def _parse(raw: bytes) -> tuple[str, tuple[str, ...], float]:
    from tessera.parsing.pdf import PdfParser

    doc = SourceDocument(
        "bench", "scan.pdf", "bench://scan.pdf", sha256_hex(raw), "application/pdf", (), ("a",)
    )
    t0 = time.perf_counter()
    p = PdfParser(tables=False, ocr_budget_seconds=120, ocr_page_seconds=60).parse(doc, raw)
    return p.text, p.warnings, time.perf_counter() - t0


def spread(xs: list[float]) -> dict[str, float]:
    return {
        "mean": round(statistics.fmean(xs), 3),
        "median": round(statistics.median(xs), 3),
        "min": round(min(xs), 3),
        "max": round(max(xs), 3),
    }


def main() -> int:
    from tessera.parsing import ocr

    if not ocr.available():
        print("tesseract not installed: nothing measured")
        return 0
    arms: dict[str, str | None] = {"omp_thread_limit_1": "1", "default_threading": None}
    per: dict[str, dict[str, list[Any]]] = {a: {} for a in arms}
    for variant, cfg in VARIANTS.items():
        for k in range(PAGES_PER_VARIANT):
            seed = 1000 * (1 + list(VARIANTS).index(variant)) + k
            lines = reference(seed)
            raw = scan_pdf(lines, int(cfg["dpi"]), float(cfg["noise"]), float(cfg["skew"]), seed)
            order = list(arms) if k % 2 == 0 else list(arms)[::-1]
            for arm in order:
                ocr.OMP_THREADS = arms[arm]
                text, warns, secs = _parse(raw)
                recall, precision = score(" ".join(lines), text)
                per[arm].setdefault(variant, []).append(
                    {
                        "seconds": round(secs, 3),
                        "recall": round(recall, 4),
                        "precision": round(precision, 4),
                        "warnings": list(warns),
                    }
                )
                print(
                    variant, k, arm, f"{secs:.2f}s recall {recall:.3f} precision {precision:.3f}", flush=True
                )
    ocr.OMP_THREADS = "1"
    result: dict[str, Any] = {"pages_per_variant": PAGES_PER_VARIANT, "variants": VARIANTS, "arms": {}}
    for arm, by_variant in per.items():
        rows = [r for rs in by_variant.values() for r in rs]
        result["arms"][arm] = {
            "pages": len(rows),
            "pages_per_s": round(len(rows) / sum(r["seconds"] for r in rows), 3),
            "seconds_per_page": spread([r["seconds"] for r in rows]),
            "word_recall": spread([r["recall"] for r in rows]),
            "word_precision": spread([r["precision"] for r in rows]),
            "by_variant": {
                v: {
                    "word_recall": spread([r["recall"] for r in rs]),
                    "seconds": spread([r["seconds"] for r in rs]),
                }
                for v, rs in by_variant.items()
            },
            "pages_detail": by_variant,
        }
    from tests.pdf_fixtures import SCAN_HEADER, scan_lines, scan_with_header_pdf

    text, warns, secs = _parse(scan_with_header_pdf())
    recall, _ = score(" ".join(scan_lines()), text)
    result["scan_with_text_header"] = {
        "ocred": any(w in text for w in ("scan05", "scan10")),
        "header_times_in_text": " ".join(text.split()).count(SCAN_HEADER),
        "word_recall": round(recall, 4),
        "seconds": round(secs, 3),
        "warnings": list(warns),
    }
    print(write_result("ocr_quality", result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
