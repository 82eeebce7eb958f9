"""Duplicate chunks within a tenant: MinHash/LSH units, then exact and near duplicates across
documents end to end, with provenance fan-out under ACL, both near-duplicate policies and
deletes."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.api import HitModel
from tessera.chunking.dedup import (
    Entry,
    MinHasher,
    Outcome,
    Sketch,
    dedupe,
    jaccard,
    near_duplicates,
    rows_per_band,
    sketch,
    text_checksum,
)
from tessera.chunking.identity import MIN_DEDUP_WORDS, dedup_key
from tessera.chunking.profile import DedupConfig
from tessera.search import SearchHit, SearchOptions, principal_from_config, search
from tessera.search.collapse import collapse

VOCAB = re.findall(
    r"\w+",
    """
    river stone market garden window paper engine signal harbor winter copper lantern meadow
    orbit canvas ladder pepper silver thunder valley basket candle desert feather forest
    glacier hammer island jacket kettle lemon marble needle ocean pillow quartz ribbon saddle
    timber umbrella velvet wagon yarn anchor bridge cactus dolphin ember falcon goblet hazel
    ivory jungle kiosk lilac mirror nectar olive parrot quiver rocket spruce tunnel""",
)


def paragraph(seed: int, words: int = 100, keyword: str = "") -> str:
    rng = random.Random(seed)
    body = [rng.choice(VOCAB) for _ in range(words)]
    if keyword:
        body[::20] = [keyword] * len(body[::20])
    return " ".join(body).capitalize() + "."


def edit_one_word(text: str, index: int, word: str = "zeppelin") -> str:
    words = text.split(" ")
    words[index] = word
    return " ".join(words)


def true_jaccard(a: str, b: str, shingle: int = 5) -> float:
    h = MinHasher(shingle=shingle)
    sa, sb = h.shingles(a), h.shingles(b)
    return len(sa & sb) / len(sa | sb)


# ----------------------------------------------------------------------------- MinHash / LSH


def test_minhash_estimates_jaccard() -> None:
    h = MinHasher()
    long = paragraph(1, words=300)
    sig = h.signature(long)
    assert sig is not None and sig.shape == (64,)
    assert jaccard(sig, h.signature(long)) == 1.0  # type: ignore[arg-type]
    other = h.signature(paragraph(2, words=300))
    assert other is not None and jaccard(sig, other) <= 0.05  # disjoint shingles
    edited = edit_one_word(long, 150)
    assert true_jaccard(long, edited) >= 0.95
    assert jaccard(sig, h.signature(edited)) >= h.threshold  # type: ignore[arg-type]
    # the estimate tracks the true Jaccard over a range of overlaps
    for cut in (60, 150, 240):
        mixed = " ".join(long.split(" ")[:cut] + paragraph(3, words=300).split(" ")[cut:])
        est = jaccard(sig, h.signature(mixed))  # type: ignore[arg-type]
        assert abs(est - true_jaccard(long, mixed)) <= 0.15, cut
    assert h.signature("  ... --- ") is None and h.bands(None) == ()
    assert len(h.shingles("two words")) == 1  # shorter than a shingle: one shingle


def test_minhash_is_deterministic_and_band_keys_name_the_config() -> None:
    text = paragraph(7)
    a, b = MinHasher(), MinHasher()
    sa, sb = a.signature(text), b.signature(text)
    assert sa is not None and sb is not None and (sa == sb).all()
    assert a.bands(sa) == b.bands(sb) and len(a.bands(sa)) == 64 // a.rows
    other = MinHasher(shingle=4)
    assert not set(other.bands(other.signature(text))) & set(a.bands(sa))


@pytest.mark.parametrize(("perms", "threshold"), [(64, 0.9), (16, 0.5), (128, 0.8), (512, 1.0)])
def test_lsh_bands_find_pairs_at_the_threshold(perms: int, threshold: float) -> None:
    r = rows_per_band(perms, threshold)
    assert 1 <= r <= perms
    assert 1 - (1 - threshold**r) ** (perms // r) >= 0.995


def test_lsh_finds_planted_near_duplicates_among_many() -> None:
    cfg = DedupConfig()
    items = [Entry(f"p{i:03d}", f"doc{i:03d}", 0, paragraph(1000 + i, words=400)) for i in range(300)]
    planted = {7: 1, 42: 2, 199: 3, 250: 4, 299: 5}  # original -> edited copy number
    for orig, n in planted.items():
        text = edit_one_word(items[orig].text, 200)
        items.append(Entry(f"near{n}", f"zz{n}", 0, text))
    exact = Entry("exact", "zz-exact", 0, items[10].text)  # an exact copy is not "near"
    got = near_duplicates([*items, exact], cfg)
    assert got == {f"near{n}": f"p{orig:03d}" for orig, n in planted.items()}
    # canonical is the earliest (doc_id, position), whichever order the items come in
    assert near_duplicates(list(reversed(items)), cfg) == got


def test_dedupe_links_to_live_rows_and_counts() -> None:
    cfg = DedupConfig()
    base = paragraph(5, words=120)
    live = [Entry("L1", "a.md", 3, base, live=True, group="g-live")]
    staged = [
        Entry("S1", "b.md", 0, edit_one_word(base, 50)),  # near duplicate of the live row
        Entry("S2", "c.md", 0, paragraph(6, words=120)),
        Entry("S3", "d.md", 0, paragraph(6, words=120)),  # exact copy of S2
        Entry("S4", "e.md", 0, "# Guide"),  # too short to be duplicate content
        Entry("S5", "f.md", 0, "# Guide"),
    ]
    asked: list[set[str]] = []

    def fetch(keys: set[str]) -> list[Entry]:
        asked.append(keys)
        return live

    rep = dedupe(staged, cfg, fetch)
    assert len(asked) == 1 and set(MinHasher().bands(MinHasher().signature(base))) & asked[0]
    assert rep.outcomes["S1"].group == "g-live" and rep.outcomes["S1"].near_duplicate
    assert rep.outcomes["S2"].group == rep.outcomes["S3"].group == text_checksum(staged[1].text)
    assert not rep.outcomes["S2"].near_duplicate and not rep.outcomes["S3"].near_duplicate
    assert rep.outcomes["S5"] == Outcome(text_checksum("# Guide"), False, ())
    assert (rep.exact_duplicates, rep.near_duplicates, rep.live_candidates) == (1, 1, 1)


def test_collapse_folds_exact_copies_always_and_near_copies_by_policy() -> None:
    def row(i: str, text: str, group: str, flags: tuple[str, ...] = ()) -> dict[str, Any]:
        return {"id": i, "text": text, "dup_group": group, "flags": list(flags)}

    alpha, other = paragraph(21, words=30), paragraph(22, words=30)
    g = text_checksum(alpha)
    rows = [
        row("n", alpha + " Extra.", g, ("near_duplicate", "linked_duplicate")),
        row("a", alpha, g),
        row("b", alpha, g),
        row("x", other, text_checksum(other)),
    ]
    as_indexed = collapse(rows)
    assert [r["id"] for r in as_indexed] == ["n", "x"]
    got = [(s["id"], rel) for s, rel in as_indexed[0]["_sources"]]
    assert got == [("n", "self"), ("a", "near"), ("b", "near")]
    flagged = collapse(rows, "flag")
    assert [r["id"] for r in flagged] == ["n", "a", "x"]
    assert [(s["id"], rel) for s, rel in flagged[1]["_sources"]] == [("a", "self"), ("b", "exact")]
    unmarked = [row("n", alpha + " Extra.", g, ("near_duplicate",)), rows[1]]
    assert len(collapse(unmarked)) == 2 and len(collapse(unmarked, "drop")) == 1
    # a lone heading repeated across documents is not duplicate content: never folded
    heading = text_checksum("# Guide")
    assert len(collapse([row("h1", "# Guide", heading), row("h2", "# Guide", heading)], "drop")) == 2


# ----------------------------------------------------------------------------- end to end

SHARED = paragraph(11, keyword="warranty")  # in a.md and b.md, exactly
NEAR = paragraph(12, keyword="shipping")  # in a.md; c.md has it with one word changed
NEAR_EDIT = edit_one_word(NEAR, 50)
DOCS = {
    "a.md": f"{SHARED}\n\n{NEAR}\n\n{paragraph(13)}\n",
    "b.md": f"{paragraph(14)}\n\n{SHARED}\n",
    "c.md": f"{paragraph(15)}\n\n{NEAR_EDIT}\n",
    "_access.yaml": 'documents:\n  - match: "b.md"\n    groups: [bteam]\n',
}


@pytest.fixture
def dup_ws(ws: Any) -> Any:
    ws.chunking = {
        "max_tokens": 256,
        "target_tokens": 150,  # each ~100-token paragraph is one chunk, two are not
        "overlap_tokens": 0,
        "dedup": {"near_duplicates": "flag", "threshold": 0.8},
    }
    ws.tenant("acme", DOCS, users={"alice": ["staff"], "bob": ["bteam"], "boss": ["staff", "bteam"]})
    return ws


def _hits(ws: Any, user: str, query: str, **kw: Any) -> list[SearchHit]:
    cfg = ws.config()
    who = principal_from_config(cfg, "acme", user)
    return search(cfg.store.uri, ws.embedder, who, query, options=SearchOptions(**{"k": 10, **kw}))


def _with(hits: list[SearchHit], *texts: str) -> list[SearchHit]:
    return [h for h in hits if h.text in texts]


def _source_texts(ws: Any, hit: SearchHit) -> list[str]:
    """Each source's text, read from its file both by byte range and by code point range."""
    out = []
    for s in hit.sources:
        path = ws.root / "corpus" / "acme" / s.citation.doc_id
        by_bytes = path.read_bytes()[s.citation.byte_start : s.citation.byte_end].decode()
        assert by_bytes == path.read_text(encoding="utf-8")[s.start : s.end]
        out.append(by_bytes)
    return out


def test_exact_and_near_duplicates_across_documents(dup_ws: Any) -> None:
    assert true_jaccard(NEAR, NEAR_EDIT) >= 0.85  # the planted edit really is a near duplicate
    out = dup_ws.run("acme", "r1")
    assert out["chunk"]["exact_duplicates"] == 1 and out["chunk"]["near_duplicates"] == 1
    rows = dup_ws.rows("acme")
    shared = [r for r in rows if r["text"] == SHARED]
    assert sorted(r["doc_id"] for r in shared) == ["a.md", "b.md"]  # rows stay per source
    assert {r["dup_group"] for r in shared} == {text_checksum(SHARED)}
    assert shared[0]["vector"] == shared[1]["vector"]
    assert out["embed"]["texts"] - out["embed"]["unique"] == 1  # the shared text: embedded once
    (near_row,) = [r for r in rows if r["text"] == NEAR_EDIT]
    assert near_row["doc_id"] == "c.md" and "near_duplicate" in near_row["flags"]
    assert "linked_duplicate" not in near_row["flags"]
    assert near_row["dup_group"] == text_checksum(NEAR) and len(near_row["dup_bands"]) > 0
    assert all("near_duplicate" not in r["flags"] for r in rows if r["text"] != NEAR_EDIT)

    # boss reads everything: one hit for the shared paragraph, both documents in its sources
    for mode in ("hybrid", "lexical", "dense"):
        (hit,) = _with(_hits(dup_ws, "boss", SHARED, mode=mode), SHARED)
        assert sorted(s.citation.doc_id for s in hit.sources) == ["a.md", "b.md"]
        assert hit.sources[0].citation.chunk_id == hit.chunk_id and hit.sources[0].relation == "self"
        assert {s.relation for s in hit.sources[1:]} == {"exact"}
        assert _source_texts(dup_ws, hit) == [SHARED, SHARED]
    api = HitModel.of(hit)
    assert sorted(s.doc_id for s in api.sources) == ["a.md", "b.md"]
    assert api.model_dump()["sources"][0]["chunk_id"] == hit.chunk_id

    # flag policy: the near duplicate is its own hit, flagged
    near_hits = _with(_hits(dup_ws, "boss", NEAR), NEAR, NEAR_EDIT)
    assert sorted(h.doc_id for h in near_hits) == ["a.md", "c.md"]
    (c_hit,) = [h for h in near_hits if h.doc_id == "c.md"]
    assert "near_duplicate" in c_hit.flags and len(c_hit.sources) == 1
    assert c_hit.dup_group == text_checksum(NEAR)

    # ACL: each principal's sources name only documents it may read
    (bob_hit,) = _with(_hits(dup_ws, "bob", SHARED), SHARED)
    assert bob_hit.doc_id == "b.md" and [s.citation.doc_id for s in bob_hit.sources] == ["b.md"]
    (alice_hit,) = _with(_hits(dup_ws, "alice", SHARED), SHARED)
    assert [s.citation.doc_id for s in alice_hit.sources] == ["a.md"]
    for h in _hits(dup_ws, "bob", f"{SHARED} {NEAR}"):
        assert {s.citation.doc_id for s in h.sources} == {"b.md"}


def test_drop_policy_folds_near_duplicates_and_deletes_keep_the_other_copy(dup_ws: Any) -> None:
    dup_ws.run("acme", "r1")
    dup_ws.chunking["dedup"] = {"near_duplicates": "drop", "threshold": 0.8}
    out = dup_ws.run("acme", "r2")  # a new chunking config: every document is re-chunked
    assert out["embed"]["embedded"] == 0 and out["chunk"]["near_duplicates"] == 1
    (near_row,) = [r for r in dup_ws.rows("acme") if r["text"] == NEAR_EDIT]
    assert {"near_duplicate", "linked_duplicate"} <= set(near_row["flags"])

    (hit,) = _with(_hits(dup_ws, "boss", NEAR), NEAR, NEAR_EDIT)
    assert sorted(s.citation.doc_id for s in hit.sources) == ["a.md", "c.md"]
    (near_src,) = [s for s in hit.sources if s.citation.doc_id != hit.doc_id]
    assert near_src.relation == "near"
    assert sorted(_source_texts(dup_ws, hit)) == sorted([NEAR, NEAR_EDIT])
    # the caller may still ask to see near duplicates separately
    assert len(_with(_hits(dup_ws, "boss", NEAR, near_duplicates="flag"), NEAR, NEAR_EDIT)) == 2
    # k distinct results survive the folding
    assert len(_hits(dup_ws, "boss", NEAR, k=5)) == len({r["dup_group"] for r in dup_ws.rows("acme")}) == 5

    (dup_ws.root / "corpus" / "acme" / "a.md").unlink()
    dup_ws.run("acme", "r3")
    assert {r["doc_id"] for r in dup_ws.rows("acme")} == {"b.md", "c.md"}
    (b_hit,) = _with(_hits(dup_ws, "boss", SHARED), SHARED)
    assert b_hit.doc_id == "b.md" and [s.citation.doc_id for s in b_hit.sources] == ["b.md"]
    (c_hit,) = _with(_hits(dup_ws, "boss", NEAR), NEAR, NEAR_EDIT)
    assert c_hit.doc_id == "c.md" and [s.citation.doc_id for s in c_hit.sources] == ["c.md"]


def test_incremental_run_links_new_chunks_to_live_rows(dup_ws: Any) -> None:
    dup_ws.run("acme", "r1")
    src = dup_ws.root / "corpus" / "acme"
    (src / "d.md").write_text(f"{edit_one_word(NEAR, 30)}\n\n{SHARED}\n", encoding="utf-8")
    out = dup_ws.run("acme", "r2")
    assert out["chunk"]["chunks"] == 2  # only d.md was chunked
    assert out["chunk"]["dedup_live_candidates"] >= 2  # a.md's rows, found by band keys
    assert out["chunk"]["exact_duplicates"] == 1 and out["chunk"]["near_duplicates"] == 1
    assert out["embed"]["cache_hits"] == 1  # the shared paragraph reused its vector
    d_rows = {r["text"]: r for r in dup_ws.rows("acme") if r["doc_id"] == "d.md"}
    assert d_rows[SHARED]["dup_group"] == text_checksum(SHARED) and not d_rows[SHARED]["flags"]
    (near_d,) = [r for t, r in d_rows.items() if t != SHARED]
    assert near_d["dup_group"] == text_checksum(NEAR) and "near_duplicate" in near_d["flags"]
    (hit,) = _with(_hits(dup_ws, "boss", SHARED), SHARED)
    assert sorted(s.citation.doc_id for s in hit.sources) == ["a.md", "b.md", "d.md"]


def test_sources_list_every_readable_copy_beyond_the_ranking_cutoff(ws: Any) -> None:
    files: dict[str, str | bytes] = {
        f"copy{i:02d}.md": f"{paragraph(100 + i)}\n\n{SHARED}\n" for i in range(12)
    }
    files["_access.yaml"] = 'documents:\n  - match: "copy0[0-3].md"\n    groups: [bteam]\n'
    ws.chunking = {"max_tokens": 256, "target_tokens": 150, "overlap_tokens": 0}  # SHARED is one chunk
    ws.tenant("acme", files, users={"alice": ["staff"], "bob": ["bteam"], "boss": ["staff", "bteam"]})
    out = ws.run("acme", "r1")
    assert out["chunk"]["exact_duplicates"] == 11 and out["embed"]["texts"] - out["embed"]["unique"] == 11
    for user, expected in [("boss", 12), ("alice", 8), ("bob", 4)]:
        (hit,) = _hits(ws, user, SHARED, k=1, mode="lexical")
        assert hit.text == SHARED and len(hit.sources) == expected, user
        assert len({s.citation.doc_id for s in hit.sources}) == expected
        assert set(_source_texts(ws, hit)) == {SHARED}
    bob_docs = {s.citation.doc_id for s in _hits(ws, "bob", SHARED, k=1)[0].sources}
    assert bob_docs == {f"copy0{i}.md" for i in range(4)}


def test_a_rebuild_skips_the_live_band_lookup(dup_ws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every live document is replaced (a new profile): no live row can be a candidate, so the
    band lookup (a scan of the live table's band column) is not run; dedup inside the run
    still finds every copy. An incremental run still looks up live rows."""
    import tessera.pipeline.steps as steps

    dup_ws.run("acme", "r1")
    dup_ws.chunking["target_tokens"] = 140  # a new profile: every document is chunked again

    def refuse(_table: Any, keys: set[str], _exclude: set[str]) -> list[dict[str, Any]]:
        if keys:
            raise AssertionError("band lookup on a rebuild")
        return []

    with monkeypatch.context() as m:
        m.setattr(steps, "band_candidates", refuse)
        out = dup_ws.run("acme", "r2")
    assert out["chunk"]["chunks"] > 0 and out["listing"]["changed"] == 3
    assert out["chunk"]["exact_duplicates"] == 1 and out["chunk"]["near_duplicates"] == 1
    assert out["chunk"]["dedup_live_candidates"] == 0
    (dup_ws.root / "corpus" / "acme" / "d.md").write_text(f"{edit_one_word(NEAR, 30)}\n", encoding="utf-8")
    with monkeypatch.context() as m, pytest.raises(AssertionError, match="band lookup"):
        m.setattr(steps, "band_candidates", refuse)
        dup_ws.run("acme", "r3")


# ----------------------------------------------------------------------------- sketches


def _reference_clusters(sigs: list[Any], hasher: MinHasher) -> list[frozenset[int]]:
    """The components of the first release's dict-of-band-keys clustering (same pairs compared)."""
    parent = list(range(len(sigs)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    buckets: dict[str, list[int]] = {}
    for i, sig in enumerate(sigs):
        if sig is not None:
            for key in hasher.bands(sig):
                buckets.setdefault(key, []).append(i)
    for members in buckets.values():
        for n in range(1, len(members)):
            for j in members[max(0, n - 256) : n]:
                if jaccard(sigs[j], sigs[members[n]]) >= hasher.threshold:
                    parent[find(j)] = find(members[n])
    groups: dict[int, set[int]] = {}
    for i in range(len(sigs)):
        groups.setdefault(find(i), set()).add(i)
    return sorted(frozenset(g) for g in groups.values() if len(g) > 1)  # type: ignore[type-var]


def _components(roots: list[int]) -> list[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for i, r in enumerate(roots):
        groups.setdefault(r, set()).add(i)
    return sorted(frozenset(g) for g in groups.values() if len(g) > 1)  # type: ignore[type-var]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3)), min_size=2, max_size=60))
def test_numpy_clusters_equal_the_reference(plan: list[tuple[int, int]]) -> None:
    """Texts built from 41 bases with 0-3 edits each: many near copies, some chains."""
    from tessera.chunking.dedup import _clusters

    hasher = MinHasher(threshold=0.8)
    texts = []
    for base, edits in plan:
        text = paragraph(base, words=60)
        for e in range(edits):
            text = edit_one_word(text, 10 + 15 * e)
        texts.append(text)
    sigs = [hasher.signature(t) for t in texts]
    assert _components(_clusters(sigs, hasher)) == _reference_clusters(sigs, hasher)
    sketched = [sketch(t, hasher).signature for t in texts]  # uint32, as the workers send them
    assert _components(_clusters(sketched, hasher)) == _reference_clusters(sigs, hasher)


def test_dedupe_with_sketches_equals_dedupe_with_texts() -> None:
    """The worker's sketches (no text) give exactly the outcomes of the texts themselves,
    live candidates included; short texts, exact and near copies, empty texts."""
    cfg = DedupConfig(threshold=0.8)
    hasher = MinHasher.of(cfg)
    texts = [paragraph(i, words=80) for i in range(30)]
    texts += [edit_one_word(texts[3], 40), texts[5], "# Guide", "", "ok then", texts[7]]
    staged = [Entry(f"s{i:02d}", f"d{i % 7}", i, t) for i, t in enumerate(texts)]
    sketched = [Entry(e.id, e.doc_id, e.position, "", sketch=sketch(e.text, hasher)) for e in staged]
    live_rows = [Entry("L1", "live.md", 0, edit_one_word(texts[9], 20), True, "g-live")]

    def fetch(keys: set[str]) -> list[Entry]:
        return [e for e in live_rows if set(hasher.bands(hasher.signature(e.text))) & keys]

    a, b = dedupe(staged, cfg, fetch), dedupe(sketched, cfg, fetch)
    assert a == b
    assert a.near_duplicates >= 2 and a.exact_duplicates >= 2 and a.live_candidates == 1
    assert a.outcomes["s09"].group == "g-live"  # anchored to the live row's group
    assert sketch("# Guide", hasher) == Sketch(text_checksum("# Guide"), False)


def test_spilled_columns_give_the_outcomes_of_entries(tmp_path: Any) -> None:
    """What the run holds (columns, signatures spilled to a file, outcomes by ordinal) gives
    exactly the outcomes of the entry API, live candidates and their groups included."""
    from tessera.chunking.dedup_columns import SketchColumns, dedupe_columns, live_columns

    cfg = DedupConfig(threshold=0.8)
    hasher = MinHasher.of(cfg)
    texts = [paragraph(i, words=80) for i in range(40)]
    texts += [edit_one_word(texts[3], 40), texts[5], "# Guide", "", edit_one_word(texts[9], 60), texts[7]]
    staged = [Entry(f"s{i:02d}", f"d{i % 9}", i, t) for i, t in enumerate(texts)]
    live_rows = [Entry("L1", "live.md", 0, edit_one_word(texts[9], 20), True, "g-live")]
    expected = dedupe(staged, cfg, lambda _keys: live_rows)

    spill = tmp_path / "sigs.u32"
    cols = SketchColumns(hasher, spill)
    for i in range(0, len(staged), 7):  # batch by batch, as the chunk workers return them
        part = staged[i : i + 7]
        cols.add([e.doc_id for e in part], [e.position for e in part], [sketch(e.text, hasher) for e in part])
    got = cols.close()
    assert spill.stat().st_size == len(staged) * hasher.permutations * 4
    live = live_columns([(e.doc_id, e.position, e.text) for e in live_rows], hasher)
    rep = dedupe_columns(got, hasher, live, ["g-live"])
    assert rep.exact_duplicates == expected.exact_duplicates and len(rep.near) == expected.near_duplicates
    for i, e in enumerate(staged):
        o = expected.outcomes[e.id]
        assert rep.outcome(i) == (o.group, o.near_duplicate, o.bands)
    assert rep.outcome(len(texts) - 2)[:2] == ("g-live", True)  # near the live row: its group
    assert not SketchColumns(hasher, tmp_path / "empty.u32").close().band_keys()


def test_the_live_candidates_order_changes_no_outcome() -> None:
    """The live band lookup hands its rows in row id order (``band_candidates``), which says
    nothing about the documents: live near copies of one staged text, in several documents and
    groups, give the same outcomes in every order (the canonical is the first by document and
    position)."""
    import itertools

    from tessera.chunking.dedup_columns import SketchColumns, dedupe_columns, live_columns

    hasher = MinHasher.of(DedupConfig(threshold=0.8))
    base, other = paragraph(11, words=80), paragraph(12, words=80)
    texts = [base, edit_one_word(base, 50), other, edit_one_word(other, 7)]
    cols = SketchColumns(hasher)
    names, positions = [f"s{i}" for i in range(len(texts))], list(range(len(texts)))
    cols.add(names, positions, [sketch(t, hasher) for t in texts])
    staged = cols.close()
    live = [
        ("b.md", 4, edit_one_word(base, 30), "g-b4"),
        ("a.md", 9, edit_one_word(base, 60), "g-a9"),
        ("a.md", 2, edit_one_word(base, 10), "g-a2"),
        ("c.md", 0, edit_one_word(other, 70), "g-c0"),
    ]
    outcomes = set()
    for order in itertools.permutations(live):
        rows = live_columns([(d, p, t) for d, p, t, _ in order], hasher)
        rep = dedupe_columns(staged, hasher, rows, [g for *_, g in order])
        outcomes.add((tuple(rep.outcome(i) for i in range(len(texts))), rep.exact_duplicates))
    assert len(outcomes) == 1
    ((got, _),) = outcomes
    assert got[0][:2] == ("g-a2", True)  # a.md before b.md, its position 2 before 9
    assert got[2][:2] == ("g-c0", True)


def test_a_pickled_sketch_batch_gives_the_columns_of_its_sketches(tmp_path: Any) -> None:
    """What a chunk worker sends back (one :class:`SketchBatch`, pickled across the process
    boundary) adds exactly the columns its sketches add one by one: short, unsigned, signed and
    empty texts alike; a batch signed with another width, or with too few document ids, is
    refused rather than added beside the run's columns."""
    import pickle

    import numpy as np

    from tessera.chunking.dedup_columns import SketchColumns
    from tessera.chunking.minhash import SketchBatch

    hasher = MinHasher.of(DedupConfig(threshold=0.8))
    texts = [paragraph(i, words=60) for i in range(9)] + ["# Guide", "", "!!! ???", paragraph(2, words=60)]
    sketches = [sketch(t, hasher) for t in texts]
    batch = pickle.loads(pickle.dumps(SketchBatch.of(sketches, hasher)))
    docs, positions = [f"d{i % 4}" for i in range(len(texts))], list(range(len(texts)))
    by_batch, by_sketch = SketchColumns(hasher, tmp_path / "a.u32"), SketchColumns(hasher)
    by_batch.add(docs[:5], positions[:5], SketchBatch.of(sketches[:5], hasher))
    by_batch.add(docs[5:], positions[5:], pickle.loads(pickle.dumps(SketchBatch.of(sketches[5:], hasher))))
    by_batch.add([], [], SketchBatch.of([], hasher))
    by_sketch.add(docs, positions, sketches)
    a, b = by_batch.close(), by_sketch.close()
    for name in ("checksum", "keyed", "signed", "bands", "doc", "position"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    every = np.arange(len(texts))
    assert np.array_equal(a.signatures(every), b.signatures(every))
    assert a.band_keys() == b.band_keys() and len(a.band_keys()) > 0
    assert batch.signed.sum() == sum(s.signature is not None for s in sketches) < len(texts)
    assert [bytes(c).hex() for c in batch.checksum] == [s.checksum for s in sketches]

    for other in (MinHasher(permutations=32, threshold=0.8), MinHasher(permutations=64, threshold=0.5)):
        assert (other.permutations, other.band_count) != (hasher.permutations, hasher.band_count)
        foreign = SketchBatch.of([sketch(t, other) for t in texts], other)
        with pytest.raises(ValueError, match="this run signs with 64 minima"):
            SketchColumns(hasher).add(docs, positions, foreign)
    with pytest.raises(ValueError, match="for 2 documents"):
        SketchColumns(hasher).add(docs[:2], positions, batch)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab é1_-. \n\t#")), max_size=60))
def test_the_duplicate_key_counts_words_as_every_word_of_the_text_would(text: str) -> None:
    """``dedup_key`` stops counting at ``MIN_DEDUP_WORDS``; whether a text has a key must not
    change with that (short texts, word boundaries of every kind, unicode word characters)."""
    enough = len(re.findall(r"\w+", text)) >= MIN_DEDUP_WORDS
    assert dedup_key(text) == (text_checksum(text) if enough else None)


def test_without_live_rows_the_staged_columns_are_clustered_as_they_are(tmp_path: Any) -> None:
    """A run that replaces every document has no live candidates: the outcomes are the entry
    API's, whether the chunks came in one batch or many, and the merge clusters the staged
    columns themselves (a copy of each was 120 bytes a chunk more at the chunk step's peak);
    with live rows the merged columns are new arrays, the staged ones untouched."""
    from tessera.chunking.dedup_columns import SketchColumns, dedupe_columns, live_columns, merge

    cfg = DedupConfig(threshold=0.8)
    hasher = MinHasher.of(cfg)
    texts = [paragraph(i, words=80) for i in range(30)]
    texts += [edit_one_word(texts[3], 40), texts[5], "# Guide", "", texts[7], edit_one_word(texts[11], 50)]
    staged = [Entry(f"s{i:02d}", f"d{i % 5}", i, t) for i, t in enumerate(texts)]
    expected = dedupe(staged, cfg, lambda _keys: [])
    assert expected.near_duplicates >= 2 and expected.exact_duplicates >= 2
    for size in (len(staged), 4):
        cols = SketchColumns(hasher, tmp_path / f"sigs-{size}.u32")
        for i in range(0, len(staged), size):
            part = staged[i : i + size]
            sketches = [sketch(e.text, hasher) for e in part]
            cols.add([e.doc_id for e in part], [e.position for e in part], sketches)
        got = cols.close()
        before = [a.copy() for a in (got.checksum, got.keyed, got.signed, got.bands, got.position)]
        m = merge(got, hasher)
        assert m.checksum is got.checksum and m.keyed is got.keyed and m.n_live == 0
        rep = dedupe_columns(got, hasher)
        assert rep.exact_duplicates == expected.exact_duplicates and len(rep.near) == expected.near_duplicates
        for i, e in enumerate(staged):
            o = expected.outcomes[e.id]
            assert rep.outcome(i) == (o.group, o.near_duplicate, o.bands)
        live = live_columns([("live.md", 0, edit_one_word(texts[9], 20))], hasher)
        with_live = merge(got, hasher, live)
        assert with_live.checksum is not got.checksum and len(with_live.checksum) == len(staged) + 1
        after = (got.checksum, got.keyed, got.signed, got.bands, got.position)
        assert all((a == b).all() for a, b in zip(before, after, strict=True))
