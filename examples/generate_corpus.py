"""Draw the example corpus's PDF files with PyMuPDF and write its Office files (the HTML and
Python files are written by hand).

    .venv/bin/python examples/generate_corpus.py            # rewrites the PDFs in examples/corpus
    .venv/bin/python examples/generate_corpus.py --out DIR  # writes them under DIR/<tenant>/...

The output is deterministic: fixed metadata and dates, no random file id, so running it again
gives byte-identical files (``tests/test_example_corpus.py`` checks this). Everything in the
documents is invented.

* ``acme/reports/reliability-review-2026-q3.pdf``: running header and footer, a ruled table on
  page 1, a full-width heading over two columns of prose on page 2;
* ``acme/archive/change-approval-chg-2291.pdf``: a typed cover page and a scanned form (an
  image of text, no text layer) that only OCR can read;
* ``globex/rates/freight-rate-card-2026.pdf``: one page with a ruled rate table between prose;
* the DOCX, PPTX and XLSX files of ``generate_office.py`` (python-docx, python-pptx, openpyxl).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pymupdf as _pymupdf

pymupdf: Any = _pymupdf  # PyMuPDF is mostly unannotated
log = logging.getLogger("generate_corpus")

A4 = (595.0, 842.0)
MARGIN = 56.0
DATE = "D:20261102090000Z"  # fixed creation and modification date
CORPUS = Path(__file__).resolve().parent / "corpus"


def _finish(doc: Any, title: str, author: str) -> bytes:
    doc.set_metadata(
        {
            "title": title,
            "author": author,
            "subject": "",
            "keywords": "",
            "creator": "examples/generate_corpus.py",
            "producer": "Tessera example corpus",
            "creationDate": DATE,
            "modDate": DATE,
        }
    )
    data: bytes = doc.tobytes(garbage=3, deflate=True, no_new_id=True)
    return data


def _box(page: Any, rect: Any, text: str, size: float = 10.0, font: str = "helv") -> None:
    if page.insert_textbox(rect, text, fontsize=size, fontname=font, lineheight=1.25) < 0:
        raise ValueError(f"text does not fit {rect}: {text[:40]!r}")


def _running(page: Any, header: str, number: int, total: int) -> None:
    w, h = page.rect.width, page.rect.height
    page.insert_text((MARGIN, 32), header, fontsize=8)
    page.insert_text((w - MARGIN - 60, 32), "Internal", fontsize=8)
    page.draw_line((MARGIN, 38), (w - MARGIN, 38), width=0.5)
    page.insert_text((w / 2 - 22, h - 28), f"Page {number} of {total}", fontsize=8)


def _table(page: Any, top: float, rows: Sequence[Sequence[str]], widths: Sequence[float]) -> float:
    """A fully ruled grid, header row in bold; returns the y below it."""
    xs = [MARGIN]
    for width in widths:
        xs.append(xs[-1] + width)
    row_h, y = 18.0, top
    for k, row in enumerate(rows):
        for j, cell in enumerate(row):
            page.insert_text((xs[j] + 4, y + 12.5), cell, fontsize=9, fontname="hebo" if k == 0 else "helv")
        y += row_h
    for k in range(len(rows) + 1):
        page.draw_line((xs[0], top + k * row_h), (xs[-1], top + k * row_h), width=0.7)
    for x in xs:
        page.draw_line((x, top), (x, y), width=0.7)
    return y


# -- acme: reliability review (table, two columns) ---------------------------------------------

REVIEW_HEADER = "Acme Engineering - Reliability Review Q3 2026"
REVIEW_INTRO = (
    "This review covers July to September 2026 for the eight services the platform group runs. "
    "Each service has a quarterly availability objective; the error budget is the downtime the "
    "objective allows. A service that spends more than 75% of its budget freezes feature "
    "releases until its follow-up actions are closed."
)
SLO_ROWS = (
    ("Service", "Objective", "Measured", "Budget used", "Owner"),
    ("ledger-api", "99.95%", "99.97%", "41%", "Payments"),
    ("ledger-worker", "99.90%", "99.81%", "190%", "Payments"),
    ("auth-gateway", "99.99%", "99.99%", "62%", "Identity"),
    ("build-farm", "99.50%", "99.74%", "52%", "Developer Tools"),
    ("artifact-store", "99.90%", "99.93%", "70%", "Developer Tools"),
    ("status-page", "99.95%", "100.00%", "0%", "Platform"),
    ("search-indexer", "99.50%", "99.12%", "176%", "Platform"),
    ("notify-hub", "99.90%", "99.95%", "50%", "Platform"),
)
REVIEW_AFTER = (
    "Two services overspent their budget: ledger-worker, after the queue backlog of 14 August, "
    "and search-indexer, after a full disk on its build volume. Both are in a release freeze "
    "until the actions on page 2 are done."
)
LEFT_COLUMN = (
    "What went well. The on-call rotation answered every page within the five-minute target, "
    "and the median time to mitigate fell from 38 to 22 minutes. The new deploy pipeline rolled "
    "back two bad releases of auth-gateway automatically, before any customer noticed. Runbooks "
    "were linked from every alert, and the engineers on call reported that the links pointed to "
    "the right section in all but one case.\n\n"
    "The ledger-worker backlog of 14 August started when a batch of 1.2 million settlement "
    "messages arrived in one burst. The worker pool scaled out as designed, but every new worker "
    "opened its own database connections and the pool limit was reached after eleven minutes."
)
RIGHT_COLUMN = (
    "What we will change. Ledger workers will share a connection pooler, and the autoscaler will "
    "stop adding workers when the database reports more than 80% of its connections in use. "
    "Search-indexer gets an alert at 70% disk use on its build volume, and old index builds are "
    "deleted after three days instead of ten.\n\n"
    "Follow-up owners: connection pooler, Payments, due 15 October; disk alert and clean-up, "
    "Platform, due 30 September; game day for the settlement burst, Payments with the on-call "
    "team, due 12 November. The freeze on each service is lifted when its actions are closed."
)


def reliability_review() -> bytes:
    doc = pymupdf.open()
    w, h = A4
    page = doc.new_page(width=w, height=h)
    _running(page, REVIEW_HEADER, 1, 2)
    page.insert_text((MARGIN, 78), "Reliability Review, Third Quarter 2026", fontsize=18, fontname="hebo")
    _box(page, pymupdf.Rect(MARGIN, 96, w - MARGIN, 170), REVIEW_INTRO)
    page.insert_text((MARGIN, 192), "Service level objectives", fontsize=13, fontname="hebo")
    end = _table(page, 202, SLO_ROWS, (110.0, 70.0, 70.0, 80.0, 120.0))
    _box(page, pymupdf.Rect(MARGIN, end + 16, w - MARGIN, end + 90), REVIEW_AFTER)
    page = doc.new_page(width=w, height=h)
    _running(page, REVIEW_HEADER, 2, 2)
    page.insert_text((MARGIN, 78), "Incidents and follow-up actions", fontsize=13, fontname="hebo")
    mid = w / 2
    _box(page, pymupdf.Rect(MARGIN, 96, mid - 12, h - 70), LEFT_COLUMN)
    _box(page, pymupdf.Rect(mid + 12, 96, w - MARGIN, h - 70), RIGHT_COLUMN)
    return _finish(doc, "Reliability Review Q3 2026", "Acme Platform Group")


# -- acme: change approval with a scanned page (OCR) -------------------------------------------

COVER = (
    "This record holds the approval for change CHG-2291, the move of the ledger database to "
    "PostgreSQL 17. The signed approval form was scanned from paper and is attached as page 2; "
    "it has no text layer, so its text can only be read by OCR."
)
SCAN_LINES = (
    ("CHANGE APPROVAL FORM", 20.0),
    ("", 10.0),
    ("Change number: CHG-2291", 13.0),
    ("Title: Migrate the ledger database to PostgreSQL 17", 13.0),
    ("Requested by: Priya Nandakumar, Payments", 13.0),
    ("Approved by: Tomas Lindqvist, Head of Platform", 13.0),
    ("Maintenance window: Saturday 14 November 2026, 01:00 to 03:00 UTC", 13.0),
    ("Risk: medium. Customer impact: ledger read only for 20 minutes", 13.0),
    ("Rollback plan: restore snapshot ledger-2026-11-13 and repoint the DNS alias", 13.0),
    ("", 10.0),
    ("Signed in ink on 2 November 2026", 13.0),
)


def _scan_pixmap(width: float, height: float) -> Any:
    """The paper form as a scanner gives it: a grey picture of the text, 150 dpi."""
    src = pymupdf.open()
    page = src.new_page(width=width, height=height)
    y = 90.0
    for line, size in SCAN_LINES:
        if line:
            page.insert_text((70, y), line, fontsize=size, fontname="tiro")
        y += size * 2.0
    page.draw_line((70, y + 20), (300, y + 20), width=0.8)  # the signature line
    page.draw_rect(pymupdf.Rect(40, 50, width - 40, y + 60), width=1.0)
    return page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)


def change_approval() -> bytes:
    doc = pymupdf.open()
    w, h = A4
    page = doc.new_page(width=w, height=h)
    page.insert_text((MARGIN, 78), "Change Approval Record CHG-2291", fontsize=16, fontname="hebo")
    _box(page, pymupdf.Rect(MARGIN, 96, w - MARGIN, 200), COVER)
    page = doc.new_page(width=w, height=h)
    png = _scan_pixmap(w, h).tobytes("png")
    page.insert_image(page.rect, stream=png)
    return _finish(doc, "Change Approval CHG-2291", "Acme Change Advisory Board")


# -- globex: freight rate card ------------------------------------------------------------------

RATE_INTRO = (
    "These rates apply to bookings collected from 1 January to 31 December 2026. Prices are in "
    "euro, excluding VAT and the fuel surcharge, and are per pallet (up to 1.2 x 0.8 x 1.8 m and "
    "750 kg) or per parcel (up to 30 kg). Transit times are working days from collection."
)
RATE_ROWS = (
    ("Zone", "Destination", "Pallet (EUR)", "Parcel (EUR)", "Transit days"),
    ("Z1", "Domestic, mainland", "64.00", "7.90", "1"),
    ("Z2", "Benelux", "92.00", "11.50", "1-2"),
    ("Z3", "Germany, Austria", "108.00", "12.40", "2"),
    ("Z4", "France, Switzerland", "126.00", "14.80", "2-3"),
    ("Z5", "Nordics", "171.00", "19.20", "3-4"),
    ("Z6", "Iberia, Italy", "158.00", "17.60", "3-4"),
    ("Z7", "Poland, Czechia, Slovakia", "139.00", "15.30", "3"),
    ("Z8", "United Kingdom", "214.00", "24.90", "3-5"),
    ("Z9", "Islands and remote areas", "262.00", "31.00", "5-7"),
)
RATE_AFTER = (
    "Tail-lift delivery adds 18.00 per pallet; a second delivery attempt adds 9.50 per parcel. "
    "The fuel surcharge is set on the first working day of each month and published on the "
    "customer portal. Shipments to the United Kingdom also need the customs documents listed in "
    "the customs clearance policy."
)


def rate_card() -> bytes:
    doc = pymupdf.open()
    w, h = A4
    page = doc.new_page(width=w, height=h)
    page.insert_text((MARGIN, 70), "Globex Freight Rate Card 2026", fontsize=18, fontname="hebo")
    _box(page, pymupdf.Rect(MARGIN, 88, w - MARGIN, 160), RATE_INTRO)
    page.insert_text((MARGIN, 182), "Road freight by zone", fontsize=13, fontname="hebo")
    end = _table(page, 192, RATE_ROWS, (45.0, 160.0, 85.0, 85.0, 80.0))
    _box(page, pymupdf.Rect(MARGIN, end + 16, w - MARGIN, end + 100), RATE_AFTER)
    page.insert_text((MARGIN, h - 40), "Globex Logistics - Sales Operations", fontsize=8)
    return _finish(doc, "Freight Rate Card 2026", "Globex Sales Operations")


def _office() -> Any:
    """``generate_office.py`` beside this file (loaded by path: examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "generate_office", Path(__file__).with_name("generate_office.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FILES = {
    "acme/reports/reliability-review-2026-q3.pdf": reliability_review,
    "acme/archive/change-approval-chg-2291.pdf": change_approval,
    "globex/rates/freight-rate-card-2026.pdf": rate_card,
    **_office().OFFICE_FILES,
}
MAX_BYTES = 200_000


def generate(out: Path) -> list[Path]:
    """Write every generated file under ``out``; returns their paths."""
    written = []
    for rel, build in FILES.items():
        data = build()
        if len(data) > MAX_BYTES:
            raise ValueError(f"{rel} is {len(data)} bytes, over {MAX_BYTES}")
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        log.info("wrote %s (%d bytes)", path, len(data))
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--out", type=Path, default=CORPUS, help="corpus folder to write into (default: examples/corpus)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    generate(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
