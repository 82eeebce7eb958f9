"""HTML source text: charset detection, decoding with exact byte positions, entities.

The page is decoded once with the ``surrogateescape`` error handler, so every invalid byte
becomes one lone surrogate (U+DC80..U+DCFF) and the decoded string re-encodes to exactly the
original bytes. That makes the byte offset of any character a prefix length computation,
done incrementally by :class:`DecodedSource` while the parser emits text in document order.
"""

from __future__ import annotations

import bisect
import codecs
import html
import re
from dataclasses import dataclass, field
from html.entities import html5 as _HTML5

from tessera.errors import DocumentError


def words(names: str) -> frozenset[str]:
    """A set of tag or class names written as one space-separated string."""
    return frozenset(names.split())


SNIFF_BYTES = 16384
"""How far into the page ``<meta charset>`` is looked for (browsers use 1024; pages are sloppy)."""

HTML_SPACE = " \t\n\r\f"
_META_CHARSET = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:\-]+)""", re.I)
_XML_DECL = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:\-]+)""", re.I)
_INVALID = re.compile("[\udc80-\udcff]")
_WHATWG_ALIASES = {
    # WHATWG Encoding: these labels all mean windows-1252 on the web.
    **dict.fromkeys(
        (
            "ascii",
            "us-ascii",
            "iso-8859-1",
            "iso8859-1",
            "iso_8859-1",
            "latin1",
            "latin-1",
            "l1",
            "cp819",
            "ibm819",
            "windows-1252",
            "x-cp1252",
            "cp1252",
        ),
        "cp1252",
    ),
    **dict.fromkeys(("iso-8859-9", "iso8859-9", "latin5", "l5", "windows-1254"), "cp1254"),
    **dict.fromkeys(("tis-620", "iso-8859-11", "windows-874"), "cp874"),
    **dict.fromkeys(("shift_jis", "shift-jis", "sjis", "x-sjis", "ms_kanji", "windows-31j"), "cp932"),
    **dict.fromkeys(("euc-kr", "ks_c_5601-1987", "windows-949"), "cp949"),
    **dict.fromkeys(("gb2312", "gbk", "x-gbk", "gb_2312-80", "chinese"), "gb18030"),
    "big5": "big5hkscs",
}
# Codecs whose per-character byte widths are not additive, or not ASCII-compatible.
_UNSUPPORTED = re.compile(r"^(utf_16|utf_32|utf_7|iso2022|hz|idna|punycode|rot|mbcs|oem)")


@dataclass(frozen=True)
class Encoding:
    codec: str
    """Python codec name (``utf-8``, ``cp1252``, ...)."""
    source: str
    """Where it came from: ``bom``, ``meta``, ``default`` or ``guess``."""
    bom: int = 0
    """Bytes of byte-order mark skipped at the start."""


def _codec_for(label: str) -> str | None:
    label = label.strip().lower()
    name = _WHATWG_ALIASES.get(label, label)
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    if codec.startswith("utf_16") or codec.startswith("utf-16"):
        return "utf-8"  # WHATWG: a <meta> that says UTF-16 in an ASCII-readable page means UTF-8
    if _UNSUPPORTED.match(codec.replace("-", "_")):
        return None
    return "utf-8" if codec in ("utf-8", "utf_8") else codec


def detect_encoding(raw: bytes) -> Encoding:
    """The page's encoding: BOM, then ``<meta charset>`` / ``http-equiv``, then a guess.

    The guess is UTF-8 when the bytes are valid UTF-8 (or mostly so), windows-1252 otherwise.
    A declared legacy charset gives way to UTF-8 when the bytes are valid UTF-8 and not all
    ASCII (a page re-saved as UTF-8 with its old declaration left in).
    A UTF-16/32 page (by BOM) raises ``DocumentError("unsupported_encoding")``: its byte
    offsets are not ASCII-compatible and such pages are all but extinct.
    """
    if raw.startswith(b"\xef\xbb\xbf"):
        return Encoding("utf-8", "bom", 3)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError("?", "unsupported_encoding", "UTF-16/32 pages are not supported")
    head = raw[:SNIFF_BYTES]
    for pattern in (_XML_DECL, _META_CHARSET):
        m = pattern.search(head)
        if m:
            codec = _codec_for(m.group(1).decode("ascii"))
            if codec is not None and codec != "utf-8" and not raw.isascii() and _valid_utf8(raw):
                # legacy-encoded text is almost never valid UTF-8 with non-ASCII bytes: the
                # declaration is stale (a page re-saved as UTF-8)
                return Encoding("utf-8", "meta")
            if codec is not None:
                return Encoding(codec, "meta")
    if _valid_utf8(raw):
        return Encoding("utf-8", "default")
    return Encoding(_guess(raw), "guess")


@dataclass
class DecodedSource:
    """The decoded page and the char -> byte mapping of the original bytes.

    ``text`` is the page after its BOM, decoded with ``surrogateescape``; ``base`` is the
    byte where it starts. :meth:`byte` is amortized O(1) for increasing positions.
    """

    text: str
    base: int
    encoding: Encoding
    invalid: int
    one_byte: bool
    """Every char is one source byte (ASCII pages, single-byte codecs)."""
    utf8: bool
    max_replaced: int = 1_000_000
    """Bound on chars that are not verbatim copies (entities, whitespace runs, legacy-encoded
    letters): each costs an offset-map anchor, so this bounds the parser's memory."""
    replaced: int = 0
    _ci: int = 0
    _bi: int = 0
    _checkpoints: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])

    @classmethod
    def decode(cls, raw: bytes, enc: Encoding) -> DecodedSource:
        body = raw[enc.bom :]
        codec = enc.codec
        try:
            text = body.decode(codec, "surrogateescape")
            exact = codec in ("utf-8", "cp1252") or text.encode(codec, "surrogateescape") == body
        except (UnicodeError, LookupError):
            exact = False
        if not exact:  # a declared codec that cannot map every byte back: guess instead
            codec = _guess(body)
            text = body.decode(codec, "surrogateescape")
            enc = Encoding(codec, "guess", enc.bom)
        invalid = len(_INVALID.findall(text)) if (codec != "utf-8" or not _valid_utf8(body)) else 0
        return cls(
            text=text,
            base=enc.bom,
            encoding=enc,
            invalid=invalid,
            one_byte=len(text) == len(body),
            utf8=codec == "utf-8",
        )

    def count_replaced(self, n: int) -> None:
        self.replaced += n
        if self.replaced > self.max_replaced:
            raise DocumentError(
                "?",
                "too_large",
                f"more than {self.max_replaced} entities, whitespace runs or re-encoded chars",
            )

    def width(self, s: str) -> int:
        """Source bytes of a run of decoded chars."""
        if self.one_byte:
            return len(s)
        if self.utf8:
            return len(s.encode("utf-8", "surrogateescape"))
        return len(s.encode(self.encoding.codec, "surrogateescape"))

    def byte(self, i: int) -> int:
        """Source byte offset of decoded char ``i`` (``len(text)``: end of the page)."""
        if self.one_byte:
            return self.base + i
        if i < self._ci:
            k = bisect.bisect_right(self._checkpoints, (i, 1 << 62)) - 1
            self._ci, self._bi = self._checkpoints[k]
        self._bi += self.width(self.text[self._ci : i])
        self._ci = i
        if i - self._checkpoints[-1][0] >= 65536:
            self._checkpoints.append((i, self._bi))
        return self.base + self._bi


def _valid_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _guess(body: bytes) -> str:
    if _valid_utf8(body):
        return "utf-8"
    text = body.decode("utf-8", "surrogateescape")
    invalid = len(_INVALID.findall(text))
    multibyte = sum(1 for ch in text if ord(ch) > 0x7F) - invalid
    return "utf-8" if multibyte >= invalid else "cp1252"


# --- entities -------------------------------------------------------------------------------

_NUMERIC = re.compile(r"&#(?:[xX]([0-9a-fA-F]+)|([0-9]+));?")
_NAMED = re.compile(r"&([A-Za-z][A-Za-z0-9]*)(;?)")
_LEGACY = sorted((k for k in _HTML5 if not k.endswith(";")), key=len, reverse=True)


def decode_entity(text: str, pos: int) -> tuple[str, int]:
    """Character reference at ``text[pos] == "&"``: (decoded text, source chars consumed).

    Follows HTML5: numeric references (invalid code points become U+FFFD, C1 controls the
    windows-1252 characters), named references with ``;``, and the legacy names that may go
    without it (``&amp``, ``&copy``), matched by longest prefix. ``("", 0)``: not a reference.
    """
    m = _NUMERIC.match(text, pos)
    if m:
        digits = m.group(1) or m.group(2)
        if len(digits) > 12:  # far beyond U+10FFFF: html.unescape would still say U+FFFD
            return "\ufffd", m.end() - pos
        return html.unescape(m.group(0)), m.end() - pos
    m = _NAMED.match(text, pos)
    if not m:
        return "", 0
    name = m.group(1)
    if m.group(2) and name + ";" in _HTML5:
        return _HTML5[name + ";"], m.end() - pos
    for legacy in _LEGACY:
        if name.startswith(legacy):
            return _HTML5[legacy], 1 + len(legacy)
    return "", 0


_AMP = re.compile(r"&")


def unescape_attr(value: str) -> str:
    return html.unescape(value) if "&" in value else value


# --- source_text ----------------------------------------------------------------------------

_SPACE_RUN = re.compile(r"[ \t\n\r\f\u00a0]+")
# A quote opens a value only after ``=``, as in the tree builder's tokenizer (HTML5): in
# ``<em class="a<b class="c" d="e">`` the tag ends at the first ``>`` after ``d="e"``.
_MARKUP = re.compile(
    r"<!--.*?(?:-->|\Z)|<![^>]*(?:>|\Z)|<\?[^>]*(?:>|\Z)"
    r"|</?([A-Za-z][^\t\n\f\r />]*)"
    r"(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:\"[^\"]*(?:\"|\Z)|'[^']*(?:'|\Z))|[^>])*(?:>|\Z)",
    re.S,
)


def _decode_slice(raw: bytes, start: int, end: int, encoding: str) -> str:
    """Decode a byte slice as the parser does: U+FFFD for each invalid byte and for NUL."""
    text = raw[start:end].decode(encoding, "surrogateescape")
    return _INVALID.sub("\ufffd", text).replace("\x00", "\ufffd")


def _decode_entities(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _AMP.finditer(text):
        if m.start() < pos:
            continue
        decoded, n = decode_entity(text, m.start())
        if n:
            out.append(text[pos : m.start()])
            out.append(decoded)
            pos = m.start() + n
    out.append(text[pos:])
    return "".join(out)


def source_text(
    raw: bytes,
    start: int,
    end: int,
    encoding: str,
    *,
    strip_markup: bool = False,
    inline: frozenset[str] = frozenset(),
) -> str:
    """Decode ``raw[start:end]`` as ``encoding``, decode entities, collapse whitespace.

    Invalid bytes become U+FFFD. With ``strip_markup`` tags and comments are removed first
    (before entities are decoded, so ``&lt;b&gt;`` stays text): a tag whose name is in
    ``inline`` vanishes, any other tag stands for a space. No-break spaces collapse like
    spaces. Leading and trailing whitespace is stripped.
    """
    text = _decode_slice(raw, start, end, encoding)
    if strip_markup:

        def repl(m: re.Match[str]) -> str:
            name = (m.group(1) or "").lower()
            return "" if name in inline else " "

        text = _MARKUP.sub(repl, text)
    return _SPACE_RUN.sub(" ", _decode_entities(text)).strip()


_TABLE_OPEN = (b"<table", b"<TABLE", b"<Table")
_TABLE_CLOSE = (b"</table", b"</TABLE", b"</Table")


def slice_matches(raw: bytes, byte_start: int, byte_end: int, text: str, encoding: str) -> bool:
    """Whether chunk ``text`` can come from ``raw[byte_start:byte_end]`` of an HTML page.

    Parser-independent and never false for a correct chunk: with markup and whitespace
    removed and entities decoded, the chunk's chars must be a subsequence of the slice's
    chars that starts with the slice's first char and ends with its last (dropped
    boilerplate inside the range is allowed). Table text is looser: pipes and the ``---``
    rule are not in the source (nor the ``\\`` that escapes a cell's ``|``), and cells
    spanning several positions repeat text from rows above; so a chunk that fails the strict
    rule and has table rows, or starts inside a ``<table>``, only needs each of its words to
    occur between the start of that table and ``byte_end``. The strict rule comes first: a
    paragraph inside a layout table may join a word across a dropped inline element
    (``a<a class="popup">x</a>--``), which the word rule would reject.
    """
    if not 0 <= byte_start <= byte_end <= len(raw):
        return False
    if _subsequence(raw, byte_start, byte_end, text, encoding):
        return True
    table = max(raw.rfind(tag, 0, byte_start + 1) for tag in _TABLE_OPEN)
    in_table = table >= 0 and table > max(raw.rfind(tag, 0, byte_start + 1) for tag in _TABLE_CLOSE)
    lines = [line.strip() for line in text.split("\n")]
    if in_table or any(line.startswith("|") or line.endswith("|") for line in lines):
        source = _content_chars(raw, table if in_table else byte_start, byte_end, encoding)
        words = (w.replace("\\|", "|") for w in text.split())  # a cell's pipe is escaped in the text
        return all(w in source for w in words if w.strip("|-"))  # pipes and rule are not text
    return False


def _subsequence(raw: bytes, byte_start: int, byte_end: int, text: str, encoding: str) -> bool:
    """The strict rule: the chunk's chars are a subsequence of the slice's, first and last aligned."""
    if byte_start == byte_end:
        return False
    source = _content_chars(raw, byte_start, byte_end, encoding)
    chars = "".join(text.split())
    if not chars or chars[0] != source[:1] or chars[-1] != source[-1:]:
        return False
    rest = iter(source)
    return all(c in rest for c in chars)


def _content_chars(raw: bytes, start: int, end: int, encoding: str) -> str:
    """The text of a byte range with markup and whitespace removed and entities decoded."""
    return "".join(_decode_entities(_MARKUP.sub("", _decode_slice(raw, start, end, encoding))).split())
