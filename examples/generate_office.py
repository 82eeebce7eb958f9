"""The example corpus's Office files, written with python-docx, python-pptx and openpyxl.

Loaded by ``generate_corpus.py`` (which writes every generated file). The output is
deterministic: the libraries stamp the save time into ``docProps/core.xml`` and the zip
entries, so :func:`fixed_zip` rewrites each package with fixed created/modified dates and
fixed entry timestamps, in the library's entry order. Everything in the documents is invented.

* ``acme/handbook/onboarding-checklist.docx``: headings from paragraph styles, a bulleted
  list, a table with a header row;
* ``acme/reports/platform-roadmap-2027.pptx``: three slides with titles, a bullet body, a
  table and speaker notes;
* ``globex/rates/surcharge-table-2026.xlsx``: a 60-row surcharge sheet (long enough to be
  split, its header row repeated in every part) and a small fuel-index sheet.
"""

from __future__ import annotations

import io
import re
import zipfile
from datetime import datetime

import docx
import openpyxl
import pptx
from pptx.util import Inches

WHEN = datetime(2026, 11, 2, 9, 0, 0)
STAMP = "2026-11-02T09:00:00Z"
_CORE_DATE = re.compile(rb"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:\2>)")


def fixed_zip(data: bytes) -> bytes:
    """The package rewritten with fixed dates: entry timestamps and core-property dates."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                body = _CORE_DATE.sub(lambda m: m[1] + STAMP.encode() + m[3], body)
            entry = zipfile.ZipInfo(info.filename, date_time=WHEN.timetuple()[:6])
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o600 << 16
            dst.writestr(entry, body, compresslevel=6)
    return out.getvalue()


ONBOARDING_STEPS = (
    "Collect your laptop and hardware token from the IT desk on the ground floor.",
    "Enrol the token in the identity portal before your first deploy.",
    "Join the #eng-onboarding channel and introduce yourself to your buddy.",
    "Read the deploy runbook and shadow one production deploy in week one.",
)
ONBOARDING_TABLE = (
    ("Week", "Goal", "Owner"),
    ("1", "Laptop, token and repository access working", "IT desk"),
    ("2", "First change merged behind a feature flag", "Buddy"),
    ("3", "First on-call shadow shift completed", "Team lead"),
    ("4", "Onboarding retro with the engineering manager", "Manager"),
)


def onboarding_checklist() -> bytes:
    d = docx.Document()
    d.core_properties.author = "Acme People Team"
    d.core_properties.title = "Engineering Onboarding Checklist"
    d.core_properties.created = d.core_properties.modified = WHEN
    d.add_heading("Engineering Onboarding Checklist", 0)
    d.add_paragraph(
        "Welcome to Acme Engineering. This checklist covers your first month: what to set up, "
        "who to ask, and when you are expected to take your first on-call shadow shift."
    )
    d.add_heading("First day", 1)
    for step in ONBOARDING_STEPS:
        d.add_paragraph(step, style="List Bullet")
    d.add_heading("First month milestones", 1)
    table = d.add_table(rows=len(ONBOARDING_TABLE), cols=3)
    for i, row in enumerate(ONBOARDING_TABLE):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    d.add_paragraph(
        "Questions about the checklist go to your buddy first and to the People Team second; "
        "hardware problems go straight to the IT desk."
    )
    buf = io.BytesIO()
    d.save(buf)
    return fixed_zip(buf.getvalue())


ROADMAP_TABLE = (
    ("Quarter", "Theme", "Exit criterion"),
    ("Q1 2027", "Ledger sharding", "Four shards in production, no cross-shard writes"),
    ("Q2 2027", "Search indexer rewrite", "Reindex of all tenants in under two hours"),
    ("Q3 2027", "Regional failover", "Quarterly failover drill passes in both regions"),
)


def platform_roadmap() -> bytes:
    prs = pptx.Presentation()
    prs.core_properties.author = "Acme Platform Team"
    prs.core_properties.title = "Platform Roadmap 2027"
    prs.core_properties.created = prs.core_properties.modified = WHEN
    prs.core_properties.last_modified_by = "Acme Platform Team"
    title = prs.slides.add_slide(prs.slide_layouts[0])
    title.shapes.title.text = "Platform Roadmap 2027"
    title.placeholders[1].text = "Acme Platform Team - planning review, November 2026"
    goals = prs.slides.add_slide(prs.slide_layouts[1])
    goals.shapes.title.text = "Goals for 2027"
    goals.placeholders[1].text = (
        "Cut ledger p99 write latency below 40 ms\n"
        "Reindex every tenant in under two hours\n"
        "Survive the loss of one region without paging the whole team"
    )
    goals.notes_slide.notes_text_frame.text = (
        "Stress that the latency goal is measured at the ledger API, not inside the database."
    )
    plan = prs.slides.add_slide(prs.slide_layouts[5])
    plan.shapes.title.text = "Quarter by quarter"
    shape = plan.shapes.add_table(len(ROADMAP_TABLE), 3, Inches(0.5), Inches(1.8), Inches(9), Inches(2.5))
    for i, row in enumerate(ROADMAP_TABLE):
        for j, value in enumerate(row):
            shape.table.cell(i, j).text = value
    plan.notes_slide.notes_text_frame.text = "Regional failover depends on the sharding work landing in Q1."
    buf = io.BytesIO()
    prs.save(buf)
    return fixed_zip(buf.getvalue())


ZONES = ("United Kingdom", "Ireland", "France", "Germany", "Netherlands", "Spain")
KINDS = ("Parcel", "Pallet", "Oversize")


def surcharge_table() -> bytes:
    wb = openpyxl.Workbook()
    wb.properties.creator = "Globex Sales Operations"
    wb.properties.title = "Surcharge Table 2026"
    wb.properties.created = wb.properties.modified = WHEN
    ws = wb.active
    assert ws is not None
    ws.title = "Surcharges"
    ws.append(["Code", "Zone", "Shipment", "Surcharge EUR", "Valid from"])
    n = 0
    for zone in ZONES:
        for kind in KINDS:
            for tier in range(1, 5):
                n += 1
                ws.append(
                    [
                        f"S{n:03d}",
                        zone,
                        f"{kind} tier {tier}",
                        round(1.25 * tier + 0.5 * n % 7, 2),
                        WHEN.date(),
                    ]
                )
    fuel = wb.create_sheet("Fuel index")
    fuel.append(["Month", "Index", "Note"])
    for month, index in (("2026-01", 101.2), ("2026-02", 99.8), ("2026-03", 103.4)):
        fuel.append([month, index, "published on the first working day"])
    buf = io.BytesIO()
    wb.save(buf)
    return fixed_zip(buf.getvalue())


OFFICE_FILES = {
    "acme/handbook/onboarding-checklist.docx": onboarding_checklist,
    "acme/reports/platform-roadmap-2027.pptx": platform_roadmap,
    "globex/rates/surcharge-table-2026.xlsx": surcharge_table,
}
