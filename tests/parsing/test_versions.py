"""Parser and chunker versions: declared in one place, the same as the classes say, and asked
without importing a parser or chunker that is not loaded yet (a no-op run parses and chunks
nothing, so it should import neither); a loaded one, and a plug-in, are asked themselves."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tessera.chunking import registry as chunking
from tessera.chunking import versions as chunker_versions
from tessera.parsing import base as parsing
from tessera.parsing import versions as parser_versions
from tessera.registry import load_target, target_available


def test_every_builtin_parser_declares_the_version_its_class_has() -> None:
    assert set(parser_versions.BUILTIN) == set(parsing._BUILTIN)
    checked = 0
    for content_type, (target, _) in parsing._BUILTIN.items():
        if not target_available(target):
            continue
        cls: Any = load_target(target)
        assert parser_versions.BUILTIN[content_type]() == cls.version, content_type
        assert parsing.get_parser(content_type).version == cls.version
        checked += 1
    assert checked >= 4  # markdown, html, python, pdf at least: the check is not vacuous


def test_every_builtin_chunker_declares_the_version_its_class_has() -> None:
    assert set(chunker_versions.BUILTIN) == set(chunking.BUILTIN)
    for name, target in chunking.BUILTIN.items():
        cls: Any = load_target(target)
        assert chunker_versions.BUILTIN[name] == cls.version == chunking.get_chunker(name).version


_PROBE = """
import json, sys
from tessera.chunking.registry import chunker_versions
from tessera.parsing.base import ParserVersions, installed_version
before = set(sys.modules)
versions = {ct: installed_version(ct) for ct in sys.argv[1:]}
parsers = ParserVersions()
changed = parsers.changed("text/markdown", "markdown-it-py/0.0.1+tessera.1")
same = parsers.changed("text/markdown", versions["text/markdown"])
chunkers = chunker_versions()
loaded = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in
    ("markdown_it", "tree_sitter", "tree_sitter_python", "pymupdf", "fitz", "pdfplumber")
    or m.startswith(("tessera.parsing.", "tessera.chunking.")))
print(json.dumps({"versions": versions, "changed": changed, "same": same, "chunkers": chunkers,
                  "loaded": loaded}))
"""


def test_asking_versions_imports_no_parser_or_chunker() -> None:
    types = ["text/markdown", "text/html", "text/x-python", "application/pdf"]
    out = subprocess.run([sys.executable, "-c", _PROBE, *types], capture_output=True, text=True, check=True)
    probe = json.loads(out.stdout)
    assert probe["loaded"] == []
    # the answers are the installed parsers' and chunkers' own (this process imported them)
    assert probe["versions"] == {ct: parsing.get_parser(ct).version for ct in types}
    assert probe["changed"] is True and probe["same"] is False
    names = chunking.available_chunkers()
    assert probe["chunkers"] == {name: chunking.get_chunker(name).version for name in names}


def test_a_loaded_parser_is_asked_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a parser's module is loaded, its class answers: a patched or reloaded class is
    what parses, so its version is what the rows record and the listing compares."""
    from tessera.parsing.markdown import MarkdownParser

    monkeypatch.setattr(MarkdownParser, "version", MarkdownParser.version + "-next")
    assert parsing.installed_version("text/markdown") == MarkdownParser.version
    assert parsing.ParserVersions().changed("text/markdown", parser_versions.MARKDOWN)


def test_unknown_and_plugin_parsers(monkeypatch: pytest.MonkeyPatch) -> None:
    """No parser: no version (the parse step quarantines the document, the listing does not
    reparse it forever). A plug-in, which has no declared version, is built and asked."""
    monkeypatch.setattr(parsing.PARSERS, "_entries", dict(parsing.PARSERS._entries))
    monkeypatch.setattr(parsing.EXTENSIONS, "_entries", dict(parsing.EXTENSIONS._entries))
    monkeypatch.setattr(parsing, "_CANONICAL", dict(parsing._CANONICAL))
    assert parsing.installed_version("application/x-unheard-of") is None
    assert not parsing.ParserVersions().changed("application/x-unheard-of", "any/1")

    class Plugin:
        name, version, content_types = "plug", "plug/7", ("text/x-plug",)

        def parse(self, doc: Any, raw: bytes) -> Any:
            raise NotImplementedError

    parsing.register_parser("text/x-plug", Plugin, (".plug",))
    assert parsing.installed_version("text/x-plug") == "plug/7"
    assert parsing.ParserVersions().changed("text/x-plug", "plug/6")


def test_the_builtins_with_offset_hooks_are_declared() -> None:
    """The offset checks skip importing a built-in that has no ``slice_matches`` or
    ``source_encoding``; the declared set must be exactly the built-ins that have one."""
    hooked = {
        ct
        for ct, (target, _) in parsing._BUILTIN.items()
        if target_available(target)
        and any(hasattr(load_target(target), h) for h in ("slice_matches", "source_encoding"))
    }
    assert hooked == set(parsing._HOOKED) == {"text/html"}
    raw = b"<p>caf&eacute; &amp; bar</p>"
    assert parsing.slice_matches("text/html", raw, 3, 24, "café & bar")  # the hook: markup compared
    assert not parsing.slice_matches("text/markdown", raw, 3, 24, "café & bar")  # the plain rule
    assert parsing.slice_matches("text/markdown", b"# T\r\nbody", 0, 10, "# T\nbody")


_VERIFY_PROBE = """
import sys
from tessera.parsing.slices import source_slice_matches
row = {"content_type": "text/markdown", "byte_start": 2, "byte_end": 7, "text": "Title"}
ok = source_slice_matches(b"# Title", row)
print(ok, "markdown_it" in sys.modules, "tessera.parsing.markdown" in sys.modules)
"""


def test_checking_a_markdown_range_imports_no_parser() -> None:
    out = subprocess.run([sys.executable, "-c", _VERIFY_PROBE], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "False"]
