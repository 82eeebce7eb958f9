"""The retrieval contract: isolation under adversarial ranking, fail-closed filters, hybrid
modes, small-to-big expansion, citations and ``show``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tessera.errors import AccessDenied, ConfigError, InvalidArgument, ModelIdentityError
from tessera.search import Principal, SearchOptions, principal_from_config, search, show
from tessera.search.expand import merge_text, parse_expand
from tessera.search.query import Fusion, rrf
from tessera.store.indexes import index_state

OWN = "Quarterly revenue forecast for the widget division, reviewed by finance."
TWIN = "Quarterly revenue forecast revenue forecast quarterly widget division finance forecast."
POLICY = """documents:
  - match: "exec/*"
    groups: [exec]
  - match: "future.md"
    groups: [team]
    effective_from: "2999-01-01T00:00:00Z"
  - match: "old.md"
    groups: [team]
    effective_to: "2001-01-01T00:00:00Z"
"""


@pytest.fixture
def arena(ws: Any) -> Any:
    """Tenant A: one own doc, 30 forbidden near-duplicates; tenant B: 30 near-duplicates."""
    files: dict[str, str] = {"own.md": f"# Forecast\n\n{OWN}\n", "_access.yaml": POLICY}
    files.update({f"exec/twin{i:02d}.md": f"# Forecast {i}\n\n{TWIN} copy {i}\n" for i in range(30)})
    files["future.md"] = f"# Future\n\n{TWIN} future\n"
    files["old.md"] = f"# Old\n\n{TWIN} old\n"
    ws.tenant("acme", files, groups=["team"], users={"u": ["team"], "boss": ["team", "exec"], "nobody": []})
    ws.tenant("bco", {f"b{i:02d}.md": f"# Forecast\n\n{TWIN} b {i}\n" for i in range(30)}, groups=["team"],
              users={"u": ["team"]})  # fmt: skip
    ws.run("acme", "r1")
    ws.run("bco", "r1")
    return ws


def _search(ws: Any, user: str, query: str, **kw: Any) -> list[Any]:
    cfg = ws.config()
    return search(
        cfg.store.uri,
        ws.embedder,
        principal_from_config(cfg, "acme", user),
        query,
        options=SearchOptions(**kw),
    )


def test_indexes_are_built_at_publish(arena: Any) -> None:
    state = index_state(arena.table("acme"))
    assert {"embedding_text", "readers", "groups", "effective_from_us", "effective_to_us"} <= set(state)
    assert all(unindexed == 0 for _, unindexed in state.values())


@pytest.mark.parametrize("indexed", [True, False], ids=["indexes", "no-indexes"])
@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
@pytest.mark.scenario("F1")
def test_no_foreign_rows_and_no_starvation(arena: Any, mode: str, indexed: bool) -> None:
    if not indexed:
        table = arena.table("acme")
        for idx in table.list_indices():
            table.drop_index(idx.name)
        assert index_state(arena.table("acme")) == {}
    for k in range(1, 51):
        hits = _search(arena, "u", "quarterly revenue forecast widget division", k=k, mode=mode)
        docs = {h.doc_id for h in hits}
        assert docs == {"own.md"}, (k, mode, docs)  # forbidden twins outrank it, yet never appear
    boss = {h.doc_id for h in _search(arena, "boss", "quarterly revenue forecast", k=50, mode=mode)}
    assert "own.md" in boss and len(boss) == 31  # the control: the twins do exist and rank


@pytest.mark.scenario("F2")
def test_fail_closed(arena: Any) -> None:
    cfg = arena.config()
    uri = cfg.store.uri
    assert _search(arena, "nobody", "forecast") == []  # a user with empty claims
    assert principal_from_config(cfg, "acme", "stranger") is None
    assert search(uri, arena.embedder, None, "forecast") == []
    assert search(uri, arena.embedder, Principal("acme", "", ("team",)), "forecast") == []
    for q in ["' OR 1=1 --", 'forecast" OR "x', "readers:*", "(((", "array_has_any(readers, ['u'])"]:
        for mode in ("dense", "lexical", "hybrid"):
            assert {h.doc_id for h in _search(arena, "u", q, k=20, mode=mode)} <= {"own.md"}
    # future-effective and superseded documents appear only inside their window
    assert not {"future.md", "old.md"} & {h.doc_id for h in _search(arena, "u", "twin future old", k=50)}
    past = datetime(2000, 6, 1, tzinfo=UTC)
    assert "old.md" in {h.doc_id for h in _search(arena, "u", "forecast old", k=50, as_of=past)}
    with pytest.raises(ModelIdentityError):
        _search(arena, "u", "forecast", model_version="someone-else-v9")


@pytest.mark.scenario("F3")
def test_revoked_reader_loses_every_path(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": "# A\n\nsecret plans for the merger\n"}, users={"u": ["staff"]})
    ws.run("acme", "r1")
    hit = _search(ws, "u", "secret plans merger")[0]
    (src / "_access.yaml").write_text(
        'documents:\n  - match: "a.md"\n    groups: [board]\n', encoding="utf-8"
    )
    out = ws.run("acme", "r2")
    assert out["listing"]["meta_only"] == 1 and out["embed"]["embedded"] == 0
    cfg = ws.config()
    u = principal_from_config(cfg, "acme", "u")
    for mode in ("dense", "lexical", "hybrid"):
        assert _search(ws, "u", "secret plans merger", mode=mode, expand="neighbors:2") == []
    with pytest.raises(AccessDenied):
        show(cfg.store.uri, ws.embedder, u, str(hit.citation))


def test_citation_and_show_give_the_exact_source_slice(ws: Any) -> None:
    doc = "# Guide\n\nIntro para.\n\n## Caf\u00e9 setup\n\nUse the espresso machine carefully.\r\n"
    ws.tenant("acme", {"g.md": doc.encode()}, users={"u": ["staff"], "v": []})
    ws.tenant("bco", {"b.md": "# B\n\nespresso elsewhere\n"}, users={"w": ["staff"]})
    ws.run("acme", "r1")
    ws.run("bco", "r1")
    hit = _search(ws, "u", "espresso machine", mode="lexical")[0]
    c = hit.citation
    raw = doc.encode()
    assert str(c) == f"tessera:acme/{hit.chunk_id}" and c.revision == c.revision.lower()
    assert raw[c.byte_start : c.byte_end].decode().replace("\r\n", "\n") == hit.text
    cfg = ws.config()
    sl = show(cfg.store.uri, ws.embedder, principal_from_config(cfg, "acme", "u"), str(c))
    assert sl.text == raw[c.byte_start : c.byte_end].decode() and sl.chunk_text == hit.text
    assert (
        show(cfg.store.uri, ws.embedder, principal_from_config(cfg, "acme", "u"), hit.chunk_id).text
        == sl.text
    )
    for who, cite in [("v", str(c)), ("u", f"tessera:bco/{hit.chunk_id}")]:
        with pytest.raises(AccessDenied):
            show(cfg.store.uri, ws.embedder, principal_from_config(cfg, "acme", who), cite)
    other = principal_from_config(cfg, "bco", "w")
    with pytest.raises(AccessDenied):  # fetching another tenant's chunk id by id: not found
        show(cfg.store.uri, ws.embedder, other, hit.chunk_id)


def test_expansion_parent_neighbors_dedup_and_budget(ws: Any) -> None:
    paras = "\n\n".join(
        f"Paragraph {i} talks about topic{i} in some detail with filler words." for i in range(12)
    )
    ws.chunking = {"max_tokens": 64, "target_tokens": 32, "overlap_tokens": 0}
    ws.tenant("acme", {"a.md": f"# Title\n\n## Section\n\n{paras}\n\n## Other\n\nUnrelated closing text.\n"})
    ws.run("acme", "r1")
    rows = [r for r in ws.rows("acme") if r["heading_path"] == ["Title", "Section"]]
    assert len(rows) >= 4
    plain = _search(ws, "alice", "topic5", k=1, mode="lexical")
    parent = _search(ws, "alice", "topic5", k=1, mode="lexical", expand="parent")
    assert (
        len(parent[0].chunk_ids) == len(rows)
        and "Paragraph 0" in parent[0].text
        and "Paragraph 11" in parent[0].text
    )
    assert plain[0].text in parent[0].text and "Unrelated" not in parent[0].text
    nb = _search(ws, "alice", "topic5", k=1, mode="lexical", expand="neighbors:1")
    assert 2 <= len(nb[0].chunk_ids) <= 3 and plain[0].text in nb[0].text
    both = _search(ws, "alice", "topic5 topic6", k=2, mode="lexical", expand="parent")
    assert len(both) == 1  # two hits in one section: one merged, deduplicated result
    budget = _search(
        ws, "alice", "topic5 closing", k=5, mode="lexical", expand="neighbors:1", token_budget=40
    )
    assert sum(h.tokens for h in budget) <= 40
    with pytest.raises(ValueError):
        parse_expand("children")


def test_rrf_and_merge_helpers() -> None:
    a = [{"id": "x"}, {"id": "y"}]
    b = [{"id": "y"}, {"id": "z"}]
    assert [r["id"] for r in rrf([a, b], 3, (1.0, 1.0), 60)] == ["y", "x", "z"]  # plain RRF
    # the product's fusion weighs BM25 (the second list) 1.25 with K = 20: its second row now
    # outranks the dense list's first; the scores are the weighted sums
    fused = rrf([a, b], 3)
    assert [r["id"] for r in fused] == ["y", "z", "x"]
    assert fused[0]["_score"] == pytest.approx(1 / 22 + 1.25 / 21)
    assert fused[1]["_score"] == pytest.approx(1.25 / 22) and fused[2]["_score"] == pytest.approx(1 / 21)
    tie = rrf([[{"id": "b"}], [{"id": "a"}]], 2, (1.0, 1.0))  # an exact tie: by id, not list order
    assert [r["id"] for r in tie] == ["a", "b"]
    with pytest.raises(InvalidArgument, match="weights"):
        rrf([a, b, a], 3)  # one weight per list
    with pytest.raises(InvalidArgument, match="lexical_weight"):
        Fusion(lexical_weight=0.0)
    with pytest.raises(InvalidArgument, match="rrf_k"):
        Fusion(rrf_k=-1)
    units = [{"start": 0, "end": 10, "text": "0123456789"}, {"start": 5, "end": 15, "text": "56789abcde"},
             {"start": 20, "end": 22, "text": "XY"}]  # fmt: skip
    assert merge_text(units) == (0, 22, "0123456789abcde\n\nXY")


def test_vector_index_is_built_and_kept_only_with_recall(tmp_path: Any) -> None:
    import lancedb

    from tessera.store.indexes import ensure_indexes, vector_recall
    from tessera.store.schema import sentence_column
    from tests.vector_fixtures import clustered_rows

    rows, vec = clustered_rows()
    # a second vector column (sentence vectors) must not confuse the index or its recall check
    sentences = sentence_column([None if i % 3 == 0 else vec[i : i + 2] for i in range(600)], 16)
    table = lancedb.connect(str(tmp_path)).create_table(
        "t", data=rows.append_column("sentence_vectors", sentences)
    )
    done = ensure_indexes(table, vector_min_rows=500)
    assert done["vector"].startswith(("created", "dropped")) and "sentence_vectors" not in done
    state = index_state(table)
    assert ("vector" in state) == done["vector"].startswith("created")
    if "vector" in state:
        assert vector_recall(table) >= 0.95
    assert ensure_indexes(table, vector_min_rows=500) == {}  # nothing stale: nothing rebuilt


@pytest.mark.scenario("F2")
def test_claims_with_filter_syntax_match_nothing(arena: Any) -> None:
    """Claims are escaped literals: quotes and filter syntax in a user or group never widen."""
    uri = arena.config().store.uri
    attacks = [
        Principal("acme", "x' OR '1'='1", ()),
        Principal("acme", "nobody", ("team') OR true OR ('",)),
        Principal("acme", "nobody", ("exec'] ) OR array_has_any(groups, ['team",)),
        Principal("acme", "u\\", ("\\' OR 1=1 --",)),
    ]
    for who in attacks:
        for mode in ("dense", "lexical", "hybrid"):
            assert search(uri, arena.embedder, who, "forecast", options=SearchOptions(k=50, mode=mode)) == []
    with pytest.raises(ConfigError, match="invalid tenant id"):  # validated, never interpolated
        search(uri, arena.embedder, Principal("acme' OR tenant='bco", "u", ("team",)), "forecast")
    assert {h.doc_id for h in _search(arena, "u", "quarterly revenue forecast")} == {"own.md"}
