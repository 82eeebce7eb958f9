"""Bad and hostile Office files: typed failures, never a crash.

Corrupt zips, password-protected files (an OLE compound file with ``EncryptedPackage``),
legacy binary files, macro-only packages, zip bombs, absurd sizes and XML entity tricks each
raise a :class:`DocumentError` with a reason the quarantine report names; the sandboxed
parse (``parse_document``) keeps the reason and the process keeps running.
"""

from __future__ import annotations

import io
import zipfile

import pytest
from lxml import etree

from tessera.errors import DocumentError
from tessera.parsing.dispatch import parse_document
from tessera.parsing.office_docx import DocxParser
from tessera.parsing.office_pptx import PptxParser
from tessera.parsing.office_xlsx import XlsxParser
from tessera.parsing.office_zip import MAX_RATIO, Package, xml_parser
from tests import office_fixtures as F

FORMATS = {
    "docx": (F.DOCX, F.docx_sample, F.empty_docx, "word/vbaProject.bin", "word/document.xml"),
    "pptx": (F.PPTX, F.pptx_sample, F.empty_pptx, "ppt/vbaProject.bin", "ppt/slides/slide1.xml"),
    "xlsx": (F.XLSX, F.xlsx_sample, F.empty_xlsx, "xl/vbaProject.bin", "xl/worksheets/sheet1.xml"),
}
PARSERS = {"docx": DocxParser, "pptx": PptxParser, "xlsx": XlsxParser}
MAIN = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml", "xlsx": "xl/workbook.xml"}


def _reason(fmt: str, raw: bytes) -> str:
    parser = PARSERS[fmt]()
    with pytest.raises(DocumentError) as e:
        parser.parse(F.source(f"bad.{fmt}", raw, FORMATS[fmt][0]), raw)
    return e.value.reason


def _bad(fmt: str) -> dict[str, tuple[bytes, str]]:
    _ct, sample, empty, vba, part = FORMATS[fmt]
    good, main = sample(), MAIN[fmt]
    return {
        "empty": (b"", "empty"),
        "truncated zip": (good[: len(good) // 2], "corrupt"),
        "not a zip": (b"PK\x03\x04 this is not really a zip file" * 10, "corrupt"),
        "encrypted": (F.encrypted(), "encrypted"),
        "legacy binary": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(2000), "corrupt"),
        "macro only": (F.macro_only(empty, vba), "macro_only"),
        "main part missing": (F.fixed(good, drop=(main,)), "corrupt"),
        "bad xml": (F.fixed(good, {main: b"<not-closed><oops>"}), "corrupt"),
        "bad content xml": (F.fixed(good, {part: b"<not-closed><oops>"}), "corrupt"),
    }


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_bad_files_fail_with_a_typed_reason(fmt: str) -> None:
    for name, (raw, reason) in _bad(fmt).items():
        assert _reason(fmt, raw) == reason, name


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_macros_next_to_text_are_only_a_warning(fmt: str) -> None:
    ct, sample, _empty, vba, _main = FORMATS[fmt]
    raw = F.fixed(sample(), {vba: b"VBA"})
    parsed = PARSERS[fmt]().parse(F.source(f"m.{fmt}", raw, ct), raw)
    assert parsed.text and "macros: a VBA project is present (not run, not indexed)" in parsed.warnings


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE w:document [
 <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
]>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:body><w:p><w:r><w:t>&d;&d;&d;&d;&d;&d;</w:t></w:r></w:p></w:body></w:document>"""

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/hostname">]>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:body><w:p><w:r><w:t>leak: &x;</w:t></w:r></w:p></w:body></w:document>"""


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("body", [BILLION_LAUGHS, XXE], ids=["billion-laughs", "xxe"])
def test_xml_with_a_dtd_is_refused_before_parsing(fmt: str, body: bytes) -> None:
    _ct, sample, _empty, _vba, main = FORMATS[fmt]
    assert _reason(fmt, F.fixed(sample(), {main: body})) == "corrupt"


def _padded(body: bytes, pad: bytes) -> bytes:
    """``body`` with ``pad`` (comments, instructions, whitespace) after its XML declaration."""
    end = body.index(b"?>") + 2
    return body[:end] + pad + body[end:]


PADDING = b"\n<!-- " + b"x" * 9000 + b" -->\n<?pi " + b"y" * 5000 + b"?>\n" + b" " * 3000


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("body", [BILLION_LAUGHS, XXE], ids=["billion-laughs", "xxe"])
def test_a_dtd_behind_a_long_prolog_is_refused_too(fmt: str, body: bytes) -> None:
    """Comments and instructions may precede a DOCTYPE: the whole prolog is read, not a prefix."""
    _ct, sample, _empty, _vba, main = FORMATS[fmt]
    assert _reason(fmt, F.fixed(sample(), {main: _padded(body, PADDING)})) == "corrupt"


def test_a_dtd_in_a_streamed_sheet_is_refused_and_a_long_comment_is_not() -> None:
    sheet = "xl/worksheets/sheet1.xml"
    raw = F.xlsx_rows(3)
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        good = z.read(sheet)
    dtd = b'<!DOCTYPE worksheet [<!ENTITY x SYSTEM "file:///etc/hostname">]>\n'
    assert _reason("xlsx", F.fixed(raw, {sheet: _padded(good, PADDING + dtd)})) == "corrupt"
    kept = F.fixed(raw, {sheet: _padded(good, PADDING)})  # a long comment alone is legitimate
    parsed = PARSERS["xlsx"]().parse(F.source("ok.xlsx", kept, FORMATS["xlsx"][0]), kept)
    assert "item 4" in parsed.text


def test_the_xml_parser_never_expands_or_fetches_entities() -> None:
    """Even past the DTD check, lxml is set never to resolve entities nor touch the network."""
    root = etree.fromstring(XXE, xml_parser())
    text = "".join(root.itertext())
    assert "leak:" in text and len(text) < 20  # &x; left unresolved
    try:  # libxml2 refuses the amplification outright, or leaves the entities unexpanded
        root = etree.fromstring(BILLION_LAUGHS, xml_parser())
    except etree.XMLSyntaxError as e:
        assert "amplification" in str(e) or "entit" in str(e).lower()
    else:
        assert len("".join(root.itertext())) < 100


def test_a_zip_bomb_is_refused_as_it_inflates() -> None:
    """A 64 MB part of one repeated byte compresses about 1000:1: refused once it passes
    the ratio (past 8 MiB), without inflating the rest."""
    body = b"<w:document xmlns:w='http://schemas.openxmlformats.org/wordprocessingml/2006/main'><w:body>"
    bomb = body + b" " * (64 << 20) + b"</w:body></w:document>"
    raw = F.fixed(F.docx_sample(), {"word/document.xml": bomb})
    assert len(raw) < (64 << 20) // MAX_RATIO
    pkg = Package("bomb.docx", raw)
    with pytest.raises(DocumentError) as e:
        pkg.read("word/document.xml")
    assert e.value.reason == "too_large" and "zip bomb" in str(e.value)
    assert pkg._read_total < 16 << 20  # refused at 200x its 64 KiB compressed size
    assert _reason("docx", raw) == "too_large"


def test_a_part_that_inflates_past_its_declared_size_is_cut() -> None:
    """A header that lies about the size: reading stops at the declared size."""
    good = F.docx_sample()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info.filename))
    data = bytearray(out.getvalue())
    # shrink the declared uncompressed size of word/document.xml in the central directory
    name = b"word/document.xml"
    at = data.rfind(b"PK\x01\x02", 0, data.rfind(name))
    data[at + 24 : at + 28] = (100).to_bytes(4, "little")
    assert _reason("docx", bytes(data)) in ("corrupt", "too_large")


def test_too_many_entries() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for k in range(10_001):
            z.writestr(f"x/{k}", b"")
    assert _reason("xlsx", out.getvalue()) == "too_large"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_the_sandboxed_parse_keeps_the_reason(fmt: str) -> None:
    """Through ``parse_document`` (the pipeline's path: a sandboxed child process) a bad file
    is the same typed failure, and the next good file parses in the same worker."""
    ct, sample, _empty, _vba, _main = FORMATS[fmt]
    for raw, reason in ((F.encrypted(), "encrypted"), (sample()[:300], "corrupt")):
        with pytest.raises(DocumentError) as e:
            parse_document(F.source(f"bad.{fmt}", raw, ct), raw)
        assert e.value.reason == reason
    good = sample()
    parsed = parse_document(F.source(f"good.{fmt}", good, ct), good)
    assert parsed.structure is not None and parsed.text
