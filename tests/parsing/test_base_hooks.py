"""One parser per registered factory and process (``get_parser``): its optional hooks
(``slice_matches``, ``source_encoding``) and its parses come from the same instance, never
from a parser built per row or per document, and always from the factory registered now; a
reused parser parses every document as a fresh one does."""

from __future__ import annotations

import pytest

from tessera.parsing import base
from tessera.parsing.base import slice_matches, source_encoding
from tessera.parsing.markdown import MarkdownParser


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    for reg in (base.PARSERS, base.EXTENSIONS):
        reg.names()
        monkeypatch.setattr(reg, "_entries", dict(reg._entries))
    monkeypatch.setattr(base, "_CANONICAL", dict(base._CANONICAL))
    monkeypatch.setattr(base, "_BUILT", {})


class Upper:
    """Text is the upper-cased source; counts its builds."""

    name, version, content_types = "upper", "1", ("text/x-upper",)
    built = 0

    def __init__(self) -> None:
        type(self).built += 1

    def parse(self, doc: object, raw: bytes) -> object:
        raise NotImplementedError

    def slice_matches(self, raw: bytes, byte_start: int, byte_end: int, text: str) -> bool:
        return raw[byte_start:byte_end].decode().upper() == text


def test_a_hook_is_read_from_one_parser_per_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Upper, "built", 0)
    base.register_parser("text/x-upper", Upper, (".upper",))
    raw = b"hello world"
    assert all(slice_matches("text/x-upper", raw, 0, 5, "HELLO") for _ in range(50))
    assert not slice_matches("text/x-upper", raw, 0, 5, "hello")  # the hook still decides
    assert Upper.built == 1


def test_a_parser_without_the_hook_is_built_once_and_parses_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []

    class Counted(MarkdownParser):
        def __init__(self) -> None:
            built.append(1)
            super().__init__()

    base.register_parser("text/x-counted", Counted, (".counted",))
    raw = "\ufeffline one\r\nline two".encode()
    assert slice_matches("text/x-counted", raw, 0, len(raw), "line one\nline two")  # the text rule
    assert not slice_matches("text/x-counted", raw, 0, len(raw), "line one")
    assert source_encoding("text/x-counted", raw) == "utf-8"
    assert base.get_parser("text/x-counted") is base.get_parser("text/x-counted")
    assert built == [1]


def test_the_factory_registered_now_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    base.register_parser("text/x-upper", Upper, (".upper",))
    assert slice_matches("text/x-upper", b"abc", 0, 3, "ABC")

    class Lower(Upper):
        def slice_matches(self, raw: bytes, byte_start: int, byte_end: int, text: str) -> bool:
            return raw[byte_start:byte_end].decode().lower() == text

    monkeypatch.setitem(base.PARSERS._entries, "text/x-upper", Lower)  # a reloaded plug-in
    assert slice_matches("text/x-upper", b"ABC", 0, 3, "abc")
    assert not slice_matches("text/x-upper", b"abc", 0, 3, "ABC")


def test_unknown_types_and_parsers_that_cannot_be_built_use_the_text_rule() -> None:
    from tessera.errors import DocumentError

    def broken() -> object:
        raise DocumentError("?", "unsupported_type", "native library missing")

    base.register_parser("text/x-broken", broken, (".broken",))  # type: ignore[arg-type]
    for ct in ("text/x-nobody", "text/x-broken", None):
        assert slice_matches(ct, b"plain", 0, 5, "plain")
        assert not slice_matches(ct, b"plain", 0, 5, "other")


def test_builtin_html_hook_still_compares_as_html() -> None:
    raw = b"<p>a &amp; b</p>"
    assert slice_matches("text/html", raw, 0, len(raw), "a & b")
    assert not slice_matches("text/html", raw, 0, len(raw), "a &amp; b")


MARKDOWN = [
    b"# Title\n\nSome *text* and a [link](http://x).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
    b"plain line\n\n- item one\n- item two\n\n```python\nprint(1)\n```\n",
    b"# Big\n\n" + b"word *emphasis* `code` " * 4000,  # past INLINE_CHECK_BYTES: the checked renderer
    b"",
    b"> quote\n>\n> # heading in a quote\n",
]
HTML = [
    b"<html><body><nav>menu</nav><article><h1>T</h1><p>a &amp; b</p></article></body></html>",
    b"<p>one</p><p>two <b>bold</b></p>",
]


@pytest.mark.parametrize(("content_type", "sources"), [("text/markdown", MARKDOWN), ("text/html", HTML)])
def test_a_reused_parser_parses_every_document_as_a_fresh_one(
    content_type: str, sources: list[bytes]
) -> None:
    from tessera.types import SourceDocument

    def doc(i: int) -> SourceDocument:
        return SourceDocument("acme", f"d{i}", f"file:///d{i}", "r" * 64, content_type, ("alice",), ())

    shared = base.get_parser(content_type)
    reused = [shared.parse(doc(i), raw) for i, raw in enumerate(sources * 2)]  # twice, interleaved
    fresh = [base.PARSERS.get(content_type)().parse(doc(i), raw) for i, raw in enumerate(sources * 2)]
    assert reused == fresh
    assert base.get_parser(content_type) is shared
