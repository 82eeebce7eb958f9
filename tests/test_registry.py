"""One registry helper for every strategy: a name is taken once, built-ins included, and a
legitimate new name registers and is served."""

from __future__ import annotations

import pytest

from tessera.chunking import registry as chunking
from tessera.chunking.structural import StructuralChunker
from tessera.errors import ConfigError
from tessera.parsing import base as parsing
from tessera.parsing.markdown import MarkdownParser
from tessera.registry import DuplicateRegistration, Registry, UnknownName


@pytest.fixture(autouse=True)
def isolated_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plug-ins these tests register vanish afterwards: every chunker's version is part of
    the chunking config hash, so a leftover test chunker would change every later chunk id."""
    from tessera.parsing.code_languages import LANGUAGES
    from tessera.sources.registry import CONNECTORS

    for reg in (chunking.CHUNKERS, parsing.PARSERS, parsing.EXTENSIONS, LANGUAGES, CONNECTORS):
        reg.names()  # built-ins loaded first, so the restored copy holds them
        monkeypatch.setattr(reg, "_entries", dict(reg._entries))
    monkeypatch.setattr(parsing, "_CANONICAL", dict(parsing._CANONICAL))


def test_a_name_is_taken_once() -> None:
    r: Registry[int] = Registry("widget")
    r.register("a", 1)
    with pytest.raises(DuplicateRegistration, match="widget 'a' is already registered"):
        r.register("a", 2)
    assert r.get("a") == 1  # the first registration stands
    with pytest.raises(UnknownName, match=r"no widget named 'b'; known: \['a'\]"):
        r.get("b")


def test_builtins_load_lazily_and_cannot_be_replaced() -> None:
    loaded: list[str] = []

    def wrap(target: str) -> str:
        loaded.append(target)
        return target.upper()

    r: Registry[str] = Registry("thing", {"json": "json:dumps", "gone": "no_such_module_x:f"}, wrap)
    with pytest.raises(DuplicateRegistration):
        r.register("json", "mine")  # before the built-ins are even loaded
    assert loaded == []
    assert r.names() == ["json"]  # a built-in whose module is absent is simply not there
    assert r.get("json") == "JSON:DUMPS"
    assert loaded == ["json:dumps"]
    r.register("yaml", "mine")
    assert "yaml" in r and r.names() == ["json", "yaml"]


def test_a_chunker_cannot_replace_a_builtin_or_another_plugin() -> None:
    with pytest.raises(DuplicateRegistration):
        chunking.register_chunker("structural", StructuralChunker)
    assert chunking.get_chunker("structural").name == "structural"
    chunking.register_chunker("test-plugin-structural", StructuralChunker)
    with pytest.raises(DuplicateRegistration):
        chunking.register_chunker("test-plugin-structural", StructuralChunker)
    assert isinstance(chunking.get_chunker("test-plugin-structural"), StructuralChunker)
    with pytest.raises(ConfigError, match=r"chunking\.strategy"):
        chunking.get_chunker("no-such-chunker")


def test_a_parser_cannot_take_a_builtin_type_or_extension() -> None:
    with pytest.raises(DuplicateRegistration):
        parsing.register_parser("text/markdown", MarkdownParser, (".mdx",))
    with pytest.raises(DuplicateRegistration, match=r"'\.md'"):
        parsing.register_parser("text/x-other-markdown", MarkdownParser, (".MD",))
    assert parsing.parser_for_path("a/b.md") == "text/markdown"
    assert "text/x-other-markdown" not in parsing.PARSERS  # a refused plug-in left nothing behind
    parsing.register_parser("text/x-test-notes", MarkdownParser, (".testnotes",))
    assert parsing.parser_for_path("x.TESTNOTES") == "text/x-test-notes"
    assert parsing.canonical_suffix(".TestNotes") == ".testnotes"
    assert parsing.get_parser("text/x-test-notes").name == MarkdownParser().name


def test_a_code_language_is_registered_once() -> None:
    from dataclasses import replace

    from tessera.parsing.code_languages import PYTHON, language_for, register_language

    with pytest.raises(DuplicateRegistration):
        register_language(replace(PYTHON, extensions=(".pyw",)))
    assert language_for("x.pyw") is None  # the refused one serves nothing
    register_language(replace(PYTHON, name="test-python-stub", extensions=(".pystub",)))
    found = language_for("pkg/mod.pystub")
    assert found is not None and found.name == "test-python-stub"
    assert language_for("text/x-python") is PYTHON


def test_a_source_kind_is_registered_once() -> None:
    from tessera.sources.memory import MemoryConnector
    from tessera.sources.registry import CONNECTORS, register_connector

    with pytest.raises(DuplicateRegistration):
        register_connector("folder", lambda t: MemoryConnector(t.tenant_id, {}, t.default_access))
    register_connector("test-memory", lambda t: MemoryConnector(t.tenant_id, {}, t.default_access))
    assert "test-memory" in CONNECTORS and "folder" in CONNECTORS
    with pytest.raises(DuplicateRegistration):
        register_connector("test-memory", lambda t: MemoryConnector(t.tenant_id, {}, t.default_access))


def test_registrations_do_not_leak_between_tests() -> None:
    assert "test-plugin-structural" not in chunking.CHUNKERS  # registered by the tests above
    assert parsing.parser_for_path("x.testnotes") is None
