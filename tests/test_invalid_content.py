"""Binary or garbage bytes in a text format are quarantined (``invalid_content``), never indexed.

The quarantined document keeps its published chunks, the other documents update, and text
that is merely imperfect (a BOM, a few stray bytes, a legacy 8-bit encoding) still parses.
"""

from __future__ import annotations

import gzip
import random
from typing import Any

import pytest

from tessera.errors import DocumentError
from tessera.parsing.code import PythonParser
from tessera.parsing.html import HtmlParser
from tessera.parsing.markdown import MarkdownParser
from tessera.parsing.validity import MAX_BAD_SHARE, check_text_bytes, check_utf8
from tessera.types import SourceDocument, sha256_hex
from tests.conftest import Workspace


def rand_bytes(n: int, seed: int, low: int = 0) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(low, 256) for _ in range(n))


def md_doc(title: str, marker: str) -> str:
    return f"# {title}\n\n{marker} The {title.lower()} guide, first section.\n\n## More\n\n{marker}b more.\n"


GOOD = {
    "a.md": md_doc("Alpha", "alphamarker"),
    "b.md": md_doc("Beta", "betamarker"),
    "c.md": md_doc("Gamma", "gammamarker"),
    "d.md": md_doc("Delta", "deltamarker"),
    "e.html": "<html><body><article><h1>Echo</h1><p>echomarker "
    + "An article paragraph of prose. " * 5
    + "</p></article></body></html>",
    "tool.py": 'def tool():\n    """Return the tool name (toolmarker)."""\n    return "tool"\n',
}
HOSTILE: dict[str, bytes] = {
    "a.md": rand_bytes(4096, 1),  # random binary (NULs among them)
    "b.md": b"\x89PNG\r\n\x1a\n" + rand_bytes(2048, 2),  # an image under a .md name
    "c.md": rand_bytes(4096, 3, low=1),  # random binary without a single NUL
    "tool.py": b'def tool():\n    return "tool"\n' + b"\x00" * 512,  # a NUL-filled tail
    "e.html": gzip.compress(GOOD["e.html"].encode(), mtime=0),  # a compressed page
}


def by_doc(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["doc_id"], []).append(r)
    return out


@pytest.mark.scenario("safety-deletion")
def test_binary_documents_are_quarantined_and_keep_their_chunks(ws: Workspace) -> None:
    src = ws.tenant("acme", dict(GOOD))
    ws.run("acme", "r1")
    before = by_doc(ws.rows("acme"))
    assert set(before) == set(GOOD)
    for name, data in HOSTILE.items():
        (src / name).write_bytes(data)
    (src / "d.md").write_text(md_doc("Delta", "deltanew"), encoding="utf-8")  # a legitimate update
    (src / "f.md").write_bytes(b"\xef\xbb\xbf# Foxtrot\n\nfoxmarker caf\xe9 has one stray byte \xff.\n")

    out = ws.run("acme", "r2")
    report = ws.context("acme", "r2").read("parse_report.json")
    reasons = {q["doc_id"]: q["reason"] for q in report["quarantined"]}
    assert reasons == dict.fromkeys(HOSTILE, "invalid_content")
    assert out["parse"]["quarantined"] == len(HOSTILE) and out["parse"]["parsed"] == 2
    assert sorted(out["publish"]["quarantined"]) == sorted(HOSTILE)

    after = by_doc(ws.rows("acme"))
    for name in HOSTILE:
        assert after[name] == before[name], f"{name}: the published chunks are kept unchanged"
    assert "deltanew" in " ".join(r["text"] for r in after["d.md"])
    assert "deltamarker" not in " ".join(r["text"] for r in after["d.md"])
    [fox] = [r for r in after["f.md"] if "foxmarker" in r["text"]]
    assert "\ufffd" in fox["text"]  # parsed: the stray bytes are replaced, not fatal
    assert report["warnings"]["f.md"] == ["invalid_utf8: 2 bytes replaced"]
    all_text = " ".join(r["text"] for rows in after.values() for r in rows)
    assert "\x00" not in all_text and "PNG" not in all_text

    for q in report["quarantined"]:  # the message says why, in counts, never the content
        assert q["message"].startswith(f"{q['doc_id']}: invalid_content: ")
        detail = q["message"].removeprefix(f"{q['doc_id']}: invalid_content: ")
        assert (
            len(detail) < 120 and "\ufffd" not in detail and "return" not in detail and "Echo" not in detail
        )

    # once the file is text again, it is indexed again
    (src / "a.md").write_text(md_doc("Alpha", "alphafixed"), encoding="utf-8")
    ws.run("acme", "r3")
    assert "alphafixed" in " ".join(r["text"] for r in by_doc(ws.rows("acme"))["a.md"])


# ----------------------------------------------------------------------------- parser level


def doc(name: str, content_type: str, raw: bytes) -> SourceDocument:
    return SourceDocument("acme", name, f"file:///{name}", sha256_hex(raw), content_type, (), ("staff",))


PARSERS = [
    ("x.md", "text/markdown", MarkdownParser()),
    ("x.py", "text/x-python", PythonParser()),
    ("x.html", "text/html", HtmlParser()),
]


@pytest.mark.parametrize(
    "raw",
    [
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj",
        b"PK\x03\x04\x14\x00\x00\x00docx",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"GIF89a\x01\x00\x01\x00",
        b"\xff\xd8\xff\xe0\x00\x10JFIF",
        b"\x7fELF\x02\x01\x01",
        gzip.compress(b"# hello\n", mtime=0),
        b"RIFF\x24\x00\x00\x00WEBPVP8 ",
    ],
)
@pytest.mark.parametrize(("name", "content_type", "parser"), PARSERS)
def test_binary_signatures_are_refused_by_every_text_parser(
    raw: bytes, name: str, content_type: str, parser: Any
) -> None:
    with pytest.raises(DocumentError) as err:
        parser.parse(doc(name, content_type, raw), raw)
    assert err.value.reason == "invalid_content"
    assert "file signature" in str(err.value)


@pytest.mark.parametrize(("name", "content_type", "parser"), PARSERS[:2])
def test_random_bytes_are_refused_by_the_utf8_parsers(name: str, content_type: str, parser: Any) -> None:
    for seed in range(5):
        raw = rand_bytes(1000, seed, low=1)
        with pytest.raises(DocumentError) as err:
            parser.parse(doc(name, content_type, raw), raw)
        assert err.value.reason == "invalid_content" and "invalid UTF-8" in str(err.value)
    utf16 = "# text\n".encode("utf-16")
    with pytest.raises(DocumentError, match="UTF-16"):
        parser.parse(doc(name, content_type, utf16), utf16)


def test_utf16_html_keeps_its_own_reason() -> None:
    raw = "<p>hello</p>".encode("utf-16")
    with pytest.raises(DocumentError) as err:
        HtmlParser().parse(doc("x.html", "text/html", raw), raw)
    assert err.value.reason == "unsupported_encoding"


@pytest.mark.parametrize(
    "raw",
    [
        b"\xef\xbb\xbf# Title\n\nbody text\n",  # UTF-8 BOM
        b"# Caf\xe9\n\nbad \xff\xfe bytes\n",  # three stray bytes
        (
            "# Les r\u00e9sum\u00e9s\n\n"
            + "L'\u00e9t\u00e9 \u00e0 Paris, c'est tr\u00e8s agr\u00e9able. " * 40
        ).encode("cp1252"),  # a legacy 8-bit French text: many invalid UTF-8 bytes, still text
        "\u201cSmart quotes\u201d \u2013 and \u20ac prices.\n".encode("cp1252") * 30,
        b"# Log\n\n```\n" + b"\x1b[31mERROR\x1b[0m failed\n" * 30 + b"```\n",  # ANSI colours
        b"one NUL \x00 in a page of text\n" * 3,
        "\ufffd literal replacement characters \ufffd\ufffd are text\n".encode() * 10,
        "caf\u00e9 \u6771\u4eac \U0001f600 \u0434\u0430\u043d\u043d\u044b\u0435\n".encode() * 20,
        b"",
    ],
)
def test_imperfect_text_still_parses(raw: bytes) -> None:
    check_utf8("x.md", raw)
    check_text_bytes("x.md", raw)
    parsed = MarkdownParser().parse(doc("x.md", "text/markdown", raw), raw)
    assert parsed.offsets.text_len == len(parsed.text)


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"words " * 100 + b"\x00" * 4, "4 NUL bytes"),
        (b"words\x01\x02\x03" * 50, "control characters"),
        (b"# Title\n\n" + rand_bytes(600, 9, low=1), "invalid UTF-8"),
    ],
)
def test_garbage_is_refused_with_counts_not_content(raw: bytes, needle: str) -> None:
    with pytest.raises(DocumentError) as err:
        check_utf8("x.md", raw)  # the parser's checks, then the pipeline's
        check_text_bytes("x.md", raw)
    message = str(err.value)
    assert err.value.reason == "invalid_content" and needle in message
    assert any(ch.isdigit() for ch in message)
    assert "words" not in message and "Title" not in message and "\x01" not in message


def test_threshold_is_a_share_and_a_minimum_count() -> None:
    prose = b"plain words in a sentence. " * 40  # 1080 bytes
    few = prose + b"\x01\x02\x03"  # three control bytes: below the minimum
    check_text_bytes("x.md", few)
    share = int(len(prose) * MAX_BAD_SHARE)
    check_text_bytes("x.md", prose + b"\x01" * (share - 1))  # at most the share
    with pytest.raises(DocumentError):
        check_text_bytes("x.md", prose + b"\x01" * (share + 5))
    stray = prose + b"\xff\xfe\xfd"  # three stray invalid bytes
    check_utf8("x.md", stray)
    with pytest.raises(DocumentError):
        check_utf8("x.md", prose + rand_bytes(1000, 4, low=0x80))  # high-byte soup: not mostly ASCII


def test_the_sandboxed_code_parser_keeps_the_reason() -> None:
    from tessera.parsing.dispatch import parse_document

    raw = b"\x7fELF\x02\x01\x01\x00" + rand_bytes(256, 5)
    with pytest.raises(DocumentError) as err:
        parse_document(doc("x.py", "text/x-python", raw), raw)  # runs in the sandbox worker
    assert err.value.reason == "invalid_content" and "ELF" in str(err.value)
