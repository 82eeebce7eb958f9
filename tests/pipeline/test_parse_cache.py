"""The parse cache (tessera.pipeline.parse_cache): a profile change parses nothing again;
new bytes, a new parser version, a damaged or foreign entry always parse again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tessera.pipeline.work as work
from tessera.parsing.markdown import MarkdownParser
from tessera.pipeline.parse_cache import PARSE_CACHE

FILES = {
    "a.md": "# Alpha\n\nalpha text about merger plans.\n\n## More\n\nalpha details.\n",
    "b.md": "# Beta\n\nbeta onboarding guide.\n",
    "c.md": "# Gamma\n\ngamma roadmap for everyone.\n",
}


def _cache(ws: Any) -> Path:
    return ws.root / "work" / "acme" / PARSE_CACHE


def _texts(ws: Any) -> dict[str, list[tuple[str, int, int]]]:
    out: dict[str, list[tuple[str, int, int]]] = {}
    for r in ws.rows("acme"):
        out.setdefault(r["doc_id"], []).append((r["text"], r["byte_start"], r["byte_end"]))
    return {d: sorted(v) for d, v in out.items()}


def _refuse_parsing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []

    def counting(doc: Any, raw: bytes) -> Any:
        parsed.append(doc.doc_id)
        return real(doc, raw)

    real = work.parse_document
    monkeypatch.setattr(work, "parse_document", counting)
    return parsed


def test_a_profile_change_parses_nothing_again(ws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ws.tenant("acme", FILES)
    first = ws.run("acme", "r1")
    assert first["parse"]["parsed"] == 3 and first["parse"]["from_cache"] == 0
    assert len(list(_cache(ws).glob("*.json"))) == 3
    parsed = _refuse_parsing(monkeypatch)
    ws.chunking["target_tokens"] = 60  # a new profile: every document is chunked again
    out = ws.run("acme", "r2")
    assert out["listing"]["changed"] == 3 and out["parse"]["from_cache"] == 3 and parsed == []
    assert out["chunk"]["chunks"] > 0 and out["publish"]["committed"]
    # the cached parse gives exactly what parsing gives: same texts and byte ranges as a
    # fresh project that parses everything with the same profile
    cached_rows = _texts(ws)
    for target in (61, 60):  # back to the same profile, parsing everything fresh
        for entry in _cache(ws).glob("*.json"):
            entry.unlink()
        ws.chunking["target_tokens"] = target
        fresh = ws.run("acme", f"fresh-{target}")
        assert fresh["parse"]["from_cache"] == 0
    assert sorted(parsed) == ["a.md", "a.md", "b.md", "b.md", "c.md", "c.md"]
    assert _texts(ws) == cached_rows


def test_new_bytes_and_a_new_parser_version_parse_again(ws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    src = ws.tenant("acme", FILES)
    ws.run("acme", "r1")
    parsed = _refuse_parsing(monkeypatch)
    (src / "b.md").write_text("# Beta\n\nbeta onboarding guide, second edition.\n", encoding="utf-8")
    out = ws.run("acme", "r2")
    assert parsed == ["b.md"] and out["parse"]["from_cache"] == 0
    assert len(list(_cache(ws).glob("*.json"))) == 3  # b.md's old entry was replaced, not kept
    monkeypatch.setattr(MarkdownParser, "version", MarkdownParser.version + "-next")
    ws.chunking["target_tokens"] = 60
    out = ws.run("acme", "r3")
    assert sorted(parsed) == ["a.md", "b.md", "b.md", "c.md"] and out["parse"]["from_cache"] == 0


def test_damaged_or_foreign_entries_are_misses(ws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ws.tenant("acme", FILES)
    ws.run("acme", "r1")
    entries = {p.name: p for p in _cache(ws).glob("*.json")}
    names = sorted(entries)
    entries[names[0]].write_text("{not json", encoding="utf-8")  # damaged
    entries[names[1]].write_text(entries[names[2]].read_text("utf-8"), encoding="utf-8")  # another doc's
    parsed = _refuse_parsing(monkeypatch)
    ws.chunking["target_tokens"] = 60
    out = ws.run("acme", "r2")
    assert len(parsed) == 2 and out["parse"]["from_cache"] == 1
    assert out["publish"]["committed"] and {r["doc_id"] for r in ws.rows("acme")} == set(FILES)
    ws.chunking["target_tokens"] = 61
    again = ws.run("acme", "r3")  # the bad entries were rewritten by the parse
    assert again["parse"]["from_cache"] == 3 and len(parsed) == 2


def test_removed_and_quarantined_documents_leave_no_entry(ws: Any) -> None:
    src = ws.tenant("acme", {**FILES, "bad.md": b"\x00\x01\x02binary\xff\xfe" * 50})
    out = ws.run("acme", "r1")
    assert out["parse"]["quarantined"] == 1
    assert len(list(_cache(ws).glob("*.json"))) == 3  # only successful parses are cached
    (src / "c.md").unlink()
    out = ws.run("acme", "r2")
    assert out["parse"]["cache_forgotten"] == 1
    assert len(list(_cache(ws).glob("*.json"))) == 2


def test_a_new_parser_version_reparses_exactly_its_documents(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bump the Markdown parser: its documents (and only they) are parsed again, the rows
    record the new version, and the next run is a no-op (no re-parse loop)."""
    html = "<html><body><article><p>html page about the merger and plans.</p></article></body></html>"
    ws.tenant("acme", {**FILES, "page.html": html})
    ws.run("acme", "r1")
    parsed = _refuse_parsing(monkeypatch)
    monkeypatch.setattr(MarkdownParser, "version", MarkdownParser.version + "-next")
    out = ws.run("acme", "r2")
    assert out["listing"]["changed"] == 3 and sorted(parsed) == ["a.md", "b.md", "c.md"]
    assert out["parse"]["from_cache"] == 0  # a new parser version is a new cache key
    rows = ws.rows("acme")
    assert {r["parser_version"] for r in rows if r["doc_id"].endswith(".md")} == {MarkdownParser.version}
    assert out["publish"]["committed"] and out["publish"]["updated"] > 0  # same chunks, new version
    again = ws.run("acme", "r3")
    assert again["listing"]["changed"] == 0 and again["publish"]["committed"] is False
    assert sorted(parsed) == ["a.md", "b.md", "c.md"]


def test_adopting_replaces_only_the_documents_own_older_entries(tmp_path: Path) -> None:
    from tessera.pipeline import parse_cache

    cache, pending = tmp_path / "cache", tmp_path / "pending"
    cache.mkdir()
    pending.mkdir()
    part_a, part_b = parse_cache._doc_part("a.md"), parse_cache._doc_part("b.md")
    (cache / f"{part_a}.old.json").write_text("{}")
    (cache / f"{part_b}.keep.json").write_text("{}")
    (cache / ".tmp-not-an-entry.json").write_text("{}")
    (pending / f"{part_a}.new.json").write_text('{"new": 1}')
    assert parse_cache.adopt(pending, cache) == 1
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [f"{part_a}.new.json", f"{part_b}.keep.json", ".tmp-not-an-entry.json"]
    )
    assert (cache / f"{part_a}.new.json").read_text() == '{"new": 1}'
    assert parse_cache.forget(cache, ["b.md", "gone.md"]) == 1
    assert not (cache / f"{part_b}.keep.json").exists() and (cache / f"{part_a}.new.json").exists()
    assert parse_cache.forget(tmp_path / "missing", ["a.md"]) == 0


@pytest.mark.parametrize("rename_fails", [False, True], ids=["renamed", "one-by-one"])
def test_a_first_adoption_moves_only_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rename_fails: bool
) -> None:
    """A tenant's first cache is the pending folder renamed, without what is not an entry (a
    worker's temporary link, a link, a folder); where the rename fails, the same entries move
    one by one. Either way the next adoption replaces a document's older entry."""
    import os

    from tessera.pipeline import parse_cache

    cache, pending = tmp_path / "tenant" / "cache", tmp_path / "run" / "pending"
    pending.mkdir(parents=True)
    part_a, part_b = parse_cache._doc_part("a.md"), parse_cache._doc_part("b.md")
    (pending / f"{part_a}.one.json").write_text('{"a": 1}')
    (pending / f"{part_b}.one.json").write_text('{"b": 1}')
    (pending / f".{part_a}.two.json.tmp").write_text("{}")  # a worker's unfinished link
    (tmp_path / "outside.json").write_text('{"secret": 1}')
    (pending / f"{part_a}.link.json").symlink_to(tmp_path / "outside.json")
    (pending / "nested.json").mkdir()
    (pending / "nested.json" / "x.json").write_text("{}")
    if rename_fails:
        real_rename = os.rename

        def refuse(src: Any, dst: Any) -> None:
            if Path(src) == pending:
                raise OSError(18, "Invalid cross-device link")
            real_rename(src, dst)

        monkeypatch.setattr(os, "rename", refuse)
    folder = os.stat(pending).st_ino
    assert parse_cache.adopt(pending, cache) == 2
    assert (os.stat(cache).st_ino == folder) is not rename_fails  # the pending folder itself, renamed
    assert pending.exists() is rename_fails
    assert sorted(p.name for p in cache.iterdir()) == sorted([f"{part_a}.one.json", f"{part_b}.one.json"])
    assert (cache / f"{part_a}.one.json").read_text() == '{"a": 1}'
    assert (tmp_path / "outside.json").read_text() == '{"secret": 1}'  # a link's target is never touched
    later = tmp_path / "run2" / "pending"
    later.mkdir(parents=True)
    (later / f"{part_a}.two.json").write_text('{"a": 2}')
    assert parse_cache.adopt(later, cache) == 1  # the cache exists: entry by entry
    assert sorted(p.name for p in cache.iterdir()) == sorted([f"{part_a}.two.json", f"{part_b}.one.json"])
    assert parse_cache.adopt(tmp_path / "missing", cache) == 0


@pytest.mark.parametrize("links", [True, False], ids=["hard-link", "no-links-copy"])
def test_entries_are_the_staged_parse_and_outlive_it(
    ws: Any, monkeypatch: pytest.MonkeyPatch, links: bool
) -> None:
    """An entry is the staged parse's bytes, written once: replacing, damaging or deleting the
    run's staged parses before the publish adopts the entries never changes them (a hard link
    shares the file, and the staged file is only ever replaced), and a file system without
    hard links gets copies."""
    import os

    from tessera.pipeline import parse_cache

    if not links:

        def no_link(src: Any, dst: Any) -> None:
            raise OSError(1, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_link)
    seen: dict[str, bytes] = {}
    real_adopt = parse_cache.adopt

    def attacked_adopt(pending: Path, folder: Path) -> int:
        if seen:  # the first run's only: the later runs take every parse from the cache
            return real_adopt(pending, folder)
        staged = {p.name: p for p in (pending.parent / "parsed").glob("*/*.json")}
        entries = {p.name.split(".", 1)[0] + ".json": p for p in pending.glob("*.json")}
        assert sorted(entries) == sorted(staged)
        seen.update({n: p.read_bytes() for n, p in entries.items()})
        assert seen == {n: p.read_bytes() for n, p in staged.items()}
        assert all((os.stat(entries[n]).st_ino == os.stat(staged[n]).st_ino) is links for n in staged)
        for p in staged.values():  # rewritten the way the step writes them, then deleted
            tmp = p.with_name(f".{p.name}.tmp")
            tmp.write_text('{"damaged": true}', encoding="utf-8")
            tmp.replace(p)
        assert {n: p.read_bytes() for n, p in entries.items()} == seen
        for p in staged.values():
            p.unlink()
        return real_adopt(pending, folder)

    monkeypatch.setattr(parse_cache, "adopt", attacked_adopt)
    ws.tenant("acme", FILES)
    assert ws.run("acme", "r1")["parse"]["parsed"] == 3 and len(seen) == 3
    cached = {p.name.split(".", 1)[0] + ".json": p.read_bytes() for p in _cache(ws).glob("*.json")}
    assert cached == seen
    # and the entries serve the next runs: nothing parsed again, the same rows as before
    rows = _texts(ws)
    parsed = _refuse_parsing(monkeypatch)
    ws.chunking["target_tokens"] = 60
    out = ws.run("acme", "r2")
    assert out["parse"]["from_cache"] == 3 and parsed == [] and out["publish"]["committed"]
    ws.chunking["target_tokens"] = 120
    back = ws.run("acme", "r3")
    assert back["parse"]["from_cache"] == 3 and parsed == [] and _texts(ws) == rows
