"""Names with a control character or a line or paragraph separator are refused by one regular
expression; it must be exactly Unicode's categories Cc, Zl and Zp, on every code point."""

from __future__ import annotations

import sys
import unicodedata

from tessera.sources.confine import name_refusal, printable

REFUSED = ("Cc", "Zl", "Zp")


def test_the_refused_characters_are_exactly_the_categories_on_every_code_point() -> None:
    wrong = [
        cp
        for cp in range(sys.maxunicode + 1)
        if (name_refusal(f"a{chr(cp)}b") is not None) != (unicodedata.category(chr(cp)) in REFUSED)
    ]
    assert wrong == []


def test_refusal_and_escaping_of_whole_names() -> None:
    for bad in ("a\nb.md", "\x00", "x\x7f.md", "x\x85y", "line\u2028sep.md", "para\u2029.md", "tab\t.md"):
        assert name_refusal(bad) == "control_char_name"
        shown = printable(bad)
        assert name_refusal(shown) is None and shown.isprintable()
    for good in (
        "report.md",
        "naïve café.md",
        "日本語.md",
        "emoji 😀.md",
        "zero\u200bwidth.md",
        "nbsp\xa0.md",
    ):
        assert name_refusal(good) is None and printable(good) == good
    assert printable("a\nb\u2028c\x1f") == "a\\nb\\u2028c\\x1f"
