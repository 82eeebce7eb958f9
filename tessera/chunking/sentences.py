r"""Language-aware sentence boundaries over a range of text, with exact offsets.

Contract of :func:`sentence_spans`: the spans are in document order, disjoint, non-empty,
free of surrounding whitespace, and together cover every non-whitespace character of the
range (what lies between two spans is whitespace). A sentence ends:

* after ``.``, ``?``, ``!``, an ellipsis (``...``/``…``) or a run of them, plus any closing
  quotes or brackets, when whitespace follows; after an ellipsis only when the next word does
  not start lowercase (``... and then``); after ``.`` whatever the case of the next word (an
  all-lowercase text still has sentences), but never after a known abbreviation (``Mr.``,
  ``e.g.``, ``U.S.``), a single-letter initial (``J. Smith``) or inside a number (``3.14``);
* after the CJK ``。！？``, Devanagari ``।``/``॥``, Arabic/Urdu ``؟``/``۔`` at once (these
  scripts do not put a space after the terminator);
* at a blank line (a paragraph break), and at a line break before a Markdown block
  marker (heading, list item, quote, table row);
* the same at an *escaped* line break: a serialized string (a JSON or CSV export, a Python
  ``repr`` of a chat log) writes its line breaks as the two characters ``\n`` (or ``\r\n``).
  A terminator followed by escaped line breaks ends a sentence, and so do two of them in a
  row (an escaped blank line), or one before a block marker. The escapes stay at the end of
  the sentence before them. Not before a lowercase letter: ``C:\new`` or a TeX
  ``\newline`` are not line breaks (the one cost: an escaped break before a lowercase word
  is not seen).

Pure and regex-driven: one ``finditer`` over the range, a constant check per candidate.
"""

from __future__ import annotations

import re

_CLOSERS = "\"'”’»)\\]}」』】）》›"
_TERMINATORS = ".?!…"
ESCAPED_BREAKS = r"(?:(?:\\r)?+\\n)++(?![a-z])"
r"""A run of escaped line breaks (the characters ``\n``, ``\r\n``) not before a lowercase letter."""
ESCAPED_BLANK_LINE = r"(?:(?:\\r)?+\\n){2,}+(?![a-z])"
"""Two or more escaped line breaks in a row: an escaped paragraph break."""
_LATIN = rf"[.?!…]++[{_CLOSERS}]*+(?:(?=\s|$)|{ESCAPED_BREAKS})"
r"""A run of terminators, its closers, then whitespace. Possessive and, in :data:`_CANDIDATE`,
only at the start of a run: ``(?:\.{2,}|…|[.?!])[.?!…]*`` (the same strings) backtracked
cubically on a run of dots not followed by a space (29 s for 1,000 dots)."""
_LATIN_AT = re.compile(_LATIN)
_CANDIDATE = re.compile(
    rf"(?P<latin>(?<![.?!…]){_LATIN})"
    rf"|(?P<cjk>[。！？｡।॥؟۔]+[{_CLOSERS}]*(?:{ESCAPED_BREAKS})?)"
    rf"|(?P<para>\n[ \t\r\f\v]*\n|{ESCAPED_BLANK_LINE})"
    r"|(?P<line>\n|(?:\\r)?+\\n)(?=[ \t]*(?:#{1,6}\s|[-*+]\s|\d{1,3}[.)]\s|>|\|))"
)
_WORD_BEFORE = re.compile(r"[\w.]*$")
_ABBREVIATIONS = """mr mrs ms mx dr prof sr jr st mt ft rev gen col capt lt sgt gov sen rep hon
    vs etc e.g i.e cf al approx dept est fig figs no nos vol vols pp ch sec art
    inc ltd co corp bros llc jan feb mar apr jun jul aug sep sept oct nov dec
    u.s u.k u.n e.u a.m p.m ph.d b.a m.a m.d d.c n.b viz ca"""
ABBREVIATIONS = frozenset(_ABBREVIATIONS.split())
_ENDS_SENTENCE_TOO = frozenset({"etc"})  # abbreviations that may also close a sentence


def _boundary_after_period(text: str, dot: int, after: int, end: int) -> bool:
    """Whether the ``.`` (or ellipsis) ending at ``after`` really closes a sentence."""
    nxt = after
    while nxt < end and text[nxt].isspace():
        nxt += 1
    lower_next = nxt < end and text[nxt].islower()
    if text[dot] != "." or (dot + 1 < len(text) and text[dot + 1] == "."):
        return not lower_next  # an ellipsis: "... and then" goes on, "... Then" ends
    word = _WORD_BEFORE.search(text, max(0, dot - 16), dot)
    token = word.group(0).lower() if word else ""
    if token in ABBREVIATIONS:
        return token in _ENDS_SENTENCE_TOO and not lower_next  # "etc. the" goes on
    return not (len(token) == 1 and token.isalpha())  # "J. Smith": an initial


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentences of ``text[start:end]`` as trimmed ``(start, end)`` offsets into ``text``."""
    end = len(text) if end is None else end
    cuts: list[int] = []
    pos = start
    if 0 < start < end and text[start - 1] in _TERMINATORS and text[start] in _TERMINATORS:
        # the range starts inside a run of terminators, where the lookbehind sees the run
        first = _LATIN_AT.match(text, start, end)
        if first is not None:
            if text[start] not in ".…" or _boundary_after_period(text, start, first.end(), end):
                cuts.append(first.end())
            pos = first.end()
    for m in _CANDIDATE.finditer(text, pos, end):
        kind = m.lastgroup
        if kind == "latin":
            term = m.start()
            if text[term] in ".…" and not _boundary_after_period(text, term, m.end(), end):
                continue
        cuts.append(m.end())
    out: list[tuple[int, int]] = []
    a = start
    for b in [*cuts, end]:
        s, e = a, b
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            out.append((s, e))
        a = b
    return out
