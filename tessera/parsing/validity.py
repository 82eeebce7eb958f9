"""Is this text at all? Binary or garbage bytes in a text format are quarantined.

A text parser (Markdown, HTML, source code) given a binary file would index replacement
characters and control codes in place of the document's good chunks. These checks raise
``DocumentError(doc_id, "invalid_content", ...)`` instead, so the document is quarantined and
its published chunks stay. The message names the reason and the counts, never the text.

Two layers, because a parser's own contract is that any *valid UTF-8 string* parses (control
characters and literal U+FFFD included: the parsers' property tests rely on it):

* in the parsers, before any decoding work (:func:`check_raw`, :func:`check_utf8`): a known
  binary signature at byte 0 (PDF, ZIP/Office, PNG, GIF, JPEG, WebP, ELF, gzip, xz, zstd,
  7-Zip, RAR, OLE2); a UTF-16/32 byte-order mark where only UTF-8 is read (Markdown, code;
  HTML reports its own ``unsupported_encoding``); and for UTF-8 formats, more than
  :data:`MAX_BAD_SHARE` (and at least :data:`MIN_BAD`) of the characters being undecodable
  bytes, unless the file reads as legacy 8-bit text (its windows-1252 reading has few control
  characters and is mostly ASCII: the parser then replaces and reports the bytes as before);
* in the pipeline (:func:`check_text_bytes`, called by ``parse_step`` for every ``text/*``
  document): :data:`MIN_BAD` or more NUL bytes, or more than :data:`MAX_BAD_SHARE` (and at
  least :data:`MIN_BAD`) control bytes: C0 controls other than tab, newline, vertical tab,
  form feed and carriage return, DEL, UTF-8-encoded C1 controls. ESC starting an ANSI
  sequence (``ESC[``, ``ESC]``: pasted terminal output) is not counted. These are byte-level
  counts, so they hold for any ASCII-compatible encoding.

Accepted: a UTF-8 BOM, a few stray invalid bytes or a single NUL in otherwise good text, and
legacy-encoded (windows-1252, Latin-1) text.
"""

from __future__ import annotations

import re

from tessera.errors import DocumentError

MAX_BAD_SHARE = 0.02
MIN_BAD = 4
MIN_ASCII_SHARE = 0.8
"""Share of ASCII bytes in a file whose invalid UTF-8 is read as legacy 8-bit text."""
SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "PDF"),
    (b"PK\x03\x04", "ZIP"),
    (b"PK\x05\x06", "ZIP"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x7fELF", "ELF"),
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip"),
    (b"Rar!\x1a\x07", "RAR"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "OLE2"),
)
_WEBP = re.compile(rb"RIFF....WEBP", re.S)
_UTF16_32 = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_HIGH = bytes(range(0x80, 0x100))
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]|\x1b(?![\[\]])|\xc2[\x80-\x9f]")
_REPLACEMENT = "\ufffd"
_REPLACEMENT_UTF8 = _REPLACEMENT.encode("utf-8")


def _refuse(doc_id: str, message: str) -> DocumentError:
    return DocumentError(doc_id, "invalid_content", message)


def _too_many(bad: int, total: int) -> bool:
    return bad >= MIN_BAD and bad > MAX_BAD_SHARE * total


def _share(bad: int, total: int) -> str:
    return f"{bad} of {total} ({bad / max(total, 1):.1%})"


def signature(raw: bytes) -> str | None:
    """The name of the binary format ``raw`` starts with, if any."""
    for magic, name in SIGNATURES:
        if raw.startswith(magic):
            return name
    return "WebP" if _WEBP.match(raw, 0, 12) else None


def check_raw(doc_id: str, raw: bytes, utf16_ok: bool = True) -> None:
    """Refuse a binary signature, and a UTF-16/32 byte-order mark unless ``utf16_ok``."""
    name = signature(raw)
    if name is not None:
        raise _refuse(doc_id, f"binary content: {name} file signature at byte 0 ({len(raw)} bytes)")
    if not utf16_ok and raw.startswith(_UTF16_32):
        raise _refuse(doc_id, "UTF-16/32 byte-order mark: only UTF-8 text is supported")


def check_utf8(doc_id: str, raw: bytes) -> None:
    """The parser-side checks of a UTF-8 format (Markdown, source code)."""
    check_raw(doc_id, raw, utf16_ok=False)
    if raw.isascii():
        return
    text = raw.decode("utf-8", "replace")
    bad = text.count(_REPLACEMENT) - raw.count(_REPLACEMENT_UTF8)  # literal U+FFFD is text
    if not _too_many(bad, len(text)):
        return
    ascii_bytes = len(raw.translate(None, _HIGH))
    controls = len(_CONTROL.findall(raw)) + raw.decode("cp1252", "replace").count(_REPLACEMENT)
    if ascii_bytes >= MIN_ASCII_SHARE * len(raw) and not _too_many(controls, len(raw)):
        return  # legacy 8-bit text: the parser replaces and reports the invalid bytes
    raise _refuse(doc_id, f"not text: {_share(bad, len(text))} characters are invalid UTF-8")


def check_text_bytes(doc_id: str, raw: bytes) -> None:
    """The pipeline-side checks of any text document: NUL and control bytes (module doc)."""
    if raw.startswith(_UTF16_32):
        return  # its parser refuses or decodes it by name
    nul = raw.count(b"\x00")
    if nul >= MIN_BAD:
        raise _refuse(doc_id, f"binary content: {nul} NUL bytes in {len(raw)} bytes")
    controls = len(_CONTROL.findall(raw))
    if _too_many(controls, len(raw)):
        raise _refuse(doc_id, f"not text: {_share(controls, len(raw))} bytes are control characters")
