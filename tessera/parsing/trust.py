"""Trust signals of text: invisible characters and prompt-injection-like instructions.

Pure functions, shared by the parsers (to classify what they drop) and by
:func:`tessera.chunking.assemble.assemble` (to flag chunks ``hidden_text`` / ``untrusted``;
search leaves flagged chunks out unless asked for them).

**Invisible characters** (:func:`invisible_chars`): zero-width and format characters a reader
does not see but a model does (hidden prompts, "ASCII smuggling", Trojan Source):

* always: U+200B, U+2060-U+2064, U+180E, the bidi embeddings/overrides/isolates
  U+202A-U+202E and U+2066-U+2069 (and the deprecated U+206A-U+206F), U+FFF9-U+FFFB, the
  Unicode tag block U+E0000-U+E007F, the other format (``Cf``) characters of Egyptian,
  shorthand and musical notation, and the Hangul fillers U+3164/U+FFA0 (blank "letters");
* U+FEFF anywhere but at the start of a document;
* in context: ZWNJ/ZWJ (U+200C/U+200D) unless both neighbours are visible non-ASCII
  characters (Persian and Indic orthography, emoji ZWJ sequences); LRM/RLM/ALM
  (U+200E/U+200F/U+061C) unless the text holds right-to-left letters; tag characters
  inside an emoji subdivision flag (U+1F3F4, 2-6 tags, U+E007F) are part of a visible glyph;
  a variation selector right after another one (one selector styles a glyph, a run of them
  encodes data) counts.

Not counted: the soft hyphen U+00AD and the prepended concatenation marks (U+0600-U+0605,
U+06DD, U+070F, U+0890-U+0891, U+08E2, U+110BD, U+110CD), which are ``Cf`` but visible.

**Instruction-like text** (:func:`instruction_like`) is a deliberately conservative
heuristic: it looks for phrases that address a language model, not for the word
"instructions". The text is folded first (invisible characters removed, NFKC, casefold,
Markdown emphasis marks removed, whitespace collapsed), so ``ig\u200bnore`` or full-width
letters do not evade it. It matches:

* "ignore / disregard / forget / discard / neglect (all|any|the|your ...) (previous | prior |
  above | earlier | preceding | former | foregoing | original | initial) (instructions |
  prompts | directions | directives | guidelines | rules)";
* the same demand in German, French, Spanish, Italian, Portuguese, Dutch, Russian, Chinese and
  Japanese;
* a new identity for the model: "you are now (an unrestricted ...) AI / assistant / model /
  DAN", "you are now in DAN / jailbreak mode", "from now on you will act / respond ...",
  "pretend to be / act as an unrestricted ... AI";
* demands about the system prompt: "reveal / print / repeat ... your system prompt",
  "ignore / override the system prompt", "new system prompt", "system prompt:";
* chat-template markers: ``<|...|>`` tokens (``<|im_start|>``, ``<|eot_id|>``), ``[INST]``,
  ``<<SYS>>``, ``<start_of_turn>``;
* chat role lines: a line starting ``assistant:``, or ``user:``/``human:`` lines together
  with ``ai:`` lines (a scripted dialogue);
* a Base64 run of at least 24 characters that decodes to UTF-8 text which is itself
  instruction-like (one level of nesting more).

Ordinary prose about instructions ("follow the instructions above", "the previous
instructions were unclear") does not match. Known blind spots: paraphrases, homoglyphs from
other scripts, other encodings (hex, ROT13), and the remaining languages.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Sequence

from tessera.parsing.trust_phrases import MARKER, PATTERNS

# -- invisible characters -------------------------------------------------------------------

_ALWAYS = (
    "\u180e\u200b\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufff9-\ufffb\uffa0"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
_CONTEXTUAL = "\u061c\u200c-\u200f\ufeff"
_VS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
INVISIBLE = re.compile(f"[{_ALWAYS}{_CONTEXTUAL}]|(?<=[{_VS}])[{_VS}]")
"""Every candidate invisible character (context decides some of them: see the module doc)."""
_STRIP = re.compile(f"[{_ALWAYS}{_CONTEXTUAL}{_VS}]+")
_FLAG_TAGS = re.compile("\U0001f3f4[\U000e0020-\U000e007e]{2,6}\U000e007f")
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]")
_JOINERS = "\u200c\u200d"
_MARKS = "\u200e\u200f\u061c"


def _visible_non_ascii(ch: str) -> bool:
    return ord(ch) > 0x7F and not ch.isspace() and INVISIBLE.fullmatch(ch) is None


def invisible_positions(text: str, start_of_document: bool = True) -> list[int]:
    """Positions of the invisible characters of ``text`` (see the module doc for the rules).

    ``start_of_document``: whether ``text[0]`` is the first character of its document (a
    U+FEFF there is a byte-order mark, not hidden text).
    """
    if text.isascii():
        return []
    flags = [range(m.start() + 1, m.end()) for m in _FLAG_TAGS.finditer(text)] if "\U0001f3f4" in text else []
    in_flag = {i for r in flags for i in r}
    rtl: bool | None = None
    out: list[int] = []
    for m in INVISIBLE.finditer(text):
        i, ch = m.start(), m.group()
        if i in in_flag or (ch == "\ufeff" and i == 0 and start_of_document):
            continue
        if ch in _JOINERS:
            if 0 < i < len(text) - 1 and _visible_non_ascii(text[i - 1]) and _visible_non_ascii(text[i + 1]):
                continue
        elif ch in _MARKS:
            if rtl is None:
                rtl = _RTL.search(text) is not None
            if rtl:
                continue
        out.append(i)
    return out


def invisible_chars(text: str, start_of_document: bool = True) -> int:
    """How many invisible characters ``text`` holds (see the module doc for the rules)."""
    return len(invisible_positions(text, start_of_document))


# -- instruction-like text -------------------------------------------------------------------

_ROLE = re.compile(r"(?m)^[ \t>*#-]*(assistant|user|human|ai|system)\**[ \t]*:\**[ \t]*\S")
_SPACE = re.compile(r"\s+")
_B64 = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}(?:[ \t]*\r?\n[ \t>]*[A-Za-z0-9+/_-]{4,}={0,2})*")
MAX_B64_RUNS = 64
MAX_B64_CHARS = 1 << 20
MAX_DEPTH = 2


def fold(text: str) -> str:
    """``text`` without invisible chars, NFKC-normalized and casefolded."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", _STRIP.sub("", text))
    return text.casefold()


def _roles(folded: str) -> bool:
    roles = {m.group(1) for m in _ROLE.finditer(folded)}
    return "assistant" in roles or (bool(roles & {"user", "human"}) and "ai" in roles)


def _decoded_runs(text: str) -> list[str]:
    out: list[str] = []
    for k, m in enumerate(_B64.finditer(text)):
        if k >= MAX_B64_RUNS:
            break
        run = m.group()
        if len(run) > MAX_B64_CHARS:
            continue
        for candidate in (_SPACE.sub("", run), run.split()[0]):
            decoded = _b64_text(candidate)
            if decoded is not None:
                out.append(decoded)
                break
    return out


def _b64_text(run: str) -> str | None:
    body = run.rstrip("=").replace("-", "+").replace("_", "/")
    if len(body) % 4 == 1:
        body = body[:-1]
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
        decoded = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(1 for c in decoded if c.isprintable() or c in "\n\r\t")
    return decoded if decoded and printable >= 0.9 * len(decoded) else None


def instruction_like(text: str, _depth: int = 0) -> bool:
    """Whether ``text`` reads like instructions addressed to a language model (see the module doc)."""
    if not text:
        return False
    base = fold(text)
    if "<" in base and MARKER.search(base) is not None:
        return True
    # Markdown emphasis marks out ("**ignore** _all_ previous"), whitespace collapsed
    folded = base.replace("*", "").replace("`", "").replace("~", "").replace("_", " ")
    flat = " ".join(folded.split())
    if any(any(a in flat for a in anchors) and p.search(flat) for anchors, p in PATTERNS) or _roles(folded):
        return True
    if _depth >= MAX_DEPTH:
        return False
    return any(instruction_like(d, _depth + 1) for d in _decoded_runs(text))


def instruction_pieces(pieces: Sequence[str]) -> int:
    """How many dropped pieces read like instructions; 1 when only their joined text does (an
    instruction split over several pieces, e.g. PDF spans)."""
    n = sum(1 for t in pieces if instruction_like(t))
    return n if n or len(pieces) < 2 else int(instruction_like(" ".join(pieces)))


# -- chunk flags ---------------------------------------------------------------------------


def overlaps(spans: Sequence[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``[start, end)`` overlaps any of the half-open ``spans`` (sorted or not)."""
    return any(a < end and start < b for a, b in spans)


def chunk_flags(text: str, start: int, end: int, hidden_spans: Sequence[tuple[int, int]]) -> tuple[str, ...]:
    """Trust flags of the chunk ``text == parsed.text[start:end]``.

    ``hidden_text``: it holds invisible characters or overlaps a range the parser kept but a
    reader would not see; ``untrusted``: it reads like instructions to a model.
    """
    flags: tuple[str, ...] = ()
    if invisible_chars(text, start_of_document=start == 0) or overlaps(hidden_spans, start, end):
        flags += ("hidden_text",)
    if instruction_like(text):
        flags += ("untrusted",)
    return flags
