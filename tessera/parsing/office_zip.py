"""Opening an Office (OOXML) zip container safely: typed failures, size limits, safe XML.

Every DOCX, PPTX and XLSX parse and every structural citation lookup goes through
:class:`Package`. Failures are :class:`~tessera.errors.DocumentError` reasons:

* ``empty``: a 0-byte file;
* ``encrypted``: an OLE compound file (CFB) holding an ``EncryptedPackage`` stream, which is
  how Office stores a password-protected OOXML file;
* ``corrupt``: not a zip (a legacy binary ``.doc``/``.xls``/``.ppt`` CFB file included), a
  damaged zip, a missing main part, XML that does not parse, or XML with a DTD (OOXML parts
  never have one: refusing it stops entity expansion, "billion laughs", and external
  entities before any parse; the whole prolog is read, so comments before a DOCTYPE do not
  hide it, and a prolog over 1 MiB is refused);
* ``too_large``: too many zip entries, a part or the whole package over the uncompressed
  limits, or a part that inflates beyond its declared size or by an absurd ratio (zip bomb);
* ``macro_only`` (raised by the parsers): a package with a VBA project and no text.

XML is parsed with lxml with entity resolution, DTD loading and network access off and
``huge_tree`` off. Part reads are bounded: a part is inflated in blocks and refused as soon
as it passes its limit, whatever its header claims.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import Any

from lxml import etree

from tessera.errors import DocumentError

MAX_ENTRIES = 10_000
MAX_PART_BYTES = 256 << 20
"""Uncompressed size of one part (a 100k-row sheet is about 10-20 MB of XML)."""
MAX_TOTAL_BYTES = 1 << 30
MAX_RATIO = 200
"""Compression ratio refused for parts over :data:`RATIO_MIN_BYTES` (text XML is 5-30)."""
RATIO_MIN_BYTES = 8 << 20
_BLOCK = 1 << 16

_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED = "EncryptedPackage".encode("utf-16-le")
_PROLOG_MAX = 1 << 20
"""The most bytes of comments, processing instructions and whitespace read before the root
element; a longer prolog is refused (``corrupt``): no real part has one."""

REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"


def xml_parser() -> Any:
    """An lxml parser that never expands entities, loads a DTD or touches the network."""
    return etree.XMLParser(
        resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False, remove_blank_text=False
    )


class Package:
    """An opened OOXML package; ``doc_id`` names the document in errors."""

    def __init__(self, doc_id: str, raw: bytes) -> None:
        self.doc_id = doc_id
        if not raw:
            raise DocumentError(doc_id, "empty", "0-byte file")
        if raw.startswith(_CFB_MAGIC):
            if _ENCRYPTED in raw:
                raise DocumentError(doc_id, "encrypted", "password-protected (OLE EncryptedPackage)")
            raise DocumentError(doc_id, "corrupt", "an OLE compound file (legacy binary Office), not OOXML")
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(raw))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as e:
            raise DocumentError(doc_id, "corrupt", f"not a readable zip: {e}") from e
        if len(infos) > MAX_ENTRIES:
            raise DocumentError(doc_id, "too_large", f"{len(infos)} zip entries > {MAX_ENTRIES}")
        total = sum(i.file_size for i in infos)
        if total > MAX_TOTAL_BYTES:
            raise DocumentError(doc_id, "too_large", f"{total} bytes uncompressed > {MAX_TOTAL_BYTES}")
        self.infos = {i.filename: i for i in infos}
        self._read_total = 0

    def has(self, name: str) -> bool:
        return name in self.infos

    def names(self) -> list[str]:
        return list(self.infos)

    def stream(self, name: str) -> Iterator[bytes]:
        """The part's bytes in blocks, refused (``too_large``) past the limits as inflated."""
        info = self.infos.get(name)
        if info is None:
            raise DocumentError(self.doc_id, "corrupt", f"missing part {name}")
        limit = min(MAX_PART_BYTES, max(info.file_size, 0))
        read = 0
        try:
            with self.zip.open(info) as f:
                while block := f.read(_BLOCK):
                    read += len(block)
                    self._read_total += len(block)
                    if read > limit or self._read_total > MAX_TOTAL_BYTES:
                        raise DocumentError(
                            self.doc_id, "too_large", f"part {name} inflates past {limit} bytes"
                        )
                    if read > RATIO_MIN_BYTES and read > MAX_RATIO * max(info.compress_size, 1):
                        raise DocumentError(
                            self.doc_id, "too_large", f"part {name} inflates over {MAX_RATIO}x (zip bomb)"
                        )
                    yield block
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as e:
            raise DocumentError(self.doc_id, "corrupt", f"part {name}: {type(e).__name__}: {e}") from e
        if info.file_size > MAX_PART_BYTES:
            raise DocumentError(self.doc_id, "too_large", f"part {name}: {info.file_size} bytes")

    def read(self, name: str) -> bytes:
        return b"".join(self.stream(name))

    def xml(self, name: str) -> Any:
        """The part parsed as XML (an lxml root element), DTDs refused."""
        data = self.read(name)
        self.refuse_dtd(name, data)
        try:
            return etree.fromstring(data, xml_parser())
        except etree.XMLSyntaxError as e:
            raise DocumentError(self.doc_id, "corrupt", f"part {name}: bad XML: {e}") from e

    def refuse_dtd(self, name: str, head: bytes) -> None:
        """``corrupt`` when the prolog before the root element (``head`` holds it whole, or
        :data:`_PROLOG_MAX` bytes of it) declares a DTD, however many comments come first."""
        verdict = prolog_has_dtd(head)
        if verdict is None:
            raise DocumentError(self.doc_id, "corrupt", f"part {name}: no root element in its first bytes")
        if verdict:
            raise DocumentError(self.doc_id, "corrupt", f"part {name} has a DTD (entities are refused)")

    def iterparse(self, name: str, tags: tuple[str, ...]) -> Iterator[Any]:
        """``(event, element)`` for the end of each element in ``tags``, streamed: the part is
        never held whole (the caller clears what it has read)."""
        blocks = self.stream(name)
        first = b""
        for block in blocks:  # the whole prolog (bounded) before anything is parsed
            first += block
            if prolog_has_dtd(first) is not None or len(first) >= _PROLOG_MAX:
                break
        self.refuse_dtd(name, first)
        source = _Chained(first, blocks)
        try:
            yield from etree.iterparse(
                source, events=("end",), tag=tags, resolve_entities=False, load_dtd=False,
                no_network=True, huge_tree=False,
            )  # fmt: skip
        except etree.XMLSyntaxError as e:
            raise DocumentError(self.doc_id, "corrupt", f"part {name}: bad XML: {e}") from e

    def rels(self, part: str) -> dict[str, tuple[str, str]]:
        """``rId -> (type, target part name)`` of a part's relationships (none when absent)."""
        folder, _, base = part.rpartition("/")
        name = f"{folder}/_rels/{base}.rels" if folder else f"_rels/{base}.rels"
        if not self.has(name):
            return {}
        out = {}
        for rel in self.xml(name).iter(f"{{{PKG_REL}}}Relationship"):
            if rel.get("TargetMode") == "External":
                continue
            out[rel.get("Id", "")] = (rel.get("Type", ""), resolve(folder, rel.get("Target", "")))
        return out

    def main_part(self, suffix: str) -> str:
        """The package's main part (the officeDocument relationship), checked to end with
        ``suffix`` (``document.xml``...); ``corrupt`` when absent."""
        for kind, target in self.rels("").values():
            if kind.endswith("/officeDocument") and self.has(target):
                if not target.endswith(suffix):
                    raise DocumentError(self.doc_id, "corrupt", f"main part {target} is not a {suffix}")
                return target
        raise DocumentError(self.doc_id, "corrupt", f"no main {suffix} part")

    def has_macros(self) -> bool:
        return any(n.lower().endswith("vbaproject.bin") for n in self.infos)


def prolog_has_dtd(data: bytes) -> bool | None:
    """Whether the XML prolog of ``data`` (declaration, comments, processing instructions,
    whitespace) holds a ``<!DOCTYPE``; None when ``data`` ends (or passes :data:`_PROLOG_MAX`)
    before the root element starts. UTF-16 parts (a BOM) are read as such."""
    head = data[:_PROLOG_MAX]
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = head[2:].decode("utf-16-le" if head[:2] == b"\xff\xfe" else "utf-16-be", errors="replace")
    else:
        text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    i = 0
    while True:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        if i >= len(text):
            return None
        if text.startswith("<?", i):
            close = "?>"
        elif text.startswith("<!--", i):
            close = "-->"
        else:  # "<!": a DOCTYPE (or markup no prolog may hold): refused; else the root element
            return text.startswith("<!", i)
        end = text.find(close, i + 2)
        if end < 0:
            return None
        i = end + len(close)


def resolve(folder: str, target: str) -> str:
    """A relationship target relative to ``folder`` as a part name (``../x`` resolved)."""
    if target.startswith("/"):
        return target.lstrip("/")
    parts = [p for p in folder.split("/") if p]
    for piece in target.split("/"):
        if piece == "..":
            if parts:
                parts.pop()
        elif piece and piece != ".":
            parts.append(piece)
    return "/".join(parts)


class _Chained(io.RawIOBase):
    """A read-only file over a first block and an iterator of further blocks."""

    def __init__(self, first: bytes, rest: Iterator[bytes]) -> None:
        self._buf, self._rest = first, rest

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._buf:
            nxt = next(self._rest, None)
            if nxt is None:
                return b""
            self._buf = nxt
        n = len(self._buf) if size is None or size < 0 else size
        out, self._buf = self._buf[:n], self._buf[n:]
        return out
