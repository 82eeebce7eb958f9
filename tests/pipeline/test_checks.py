"""The staged-row checks (``check_rows``), counted by Arrow kernels, report exactly what the
row-by-row rules report: repeated ids (naming the first one repeated), rows of other tenants,
rows no reader or group may read (empty or null lists alike), and vectors of another width."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.pipeline.checks import check_rows

NAMES = st.one_of(st.none(), st.lists(st.sampled_from(["alice", "staff"]), max_size=2))
ROWS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d", "e"]),
        st.sampled_from(["acme", "acme", "evil", "zeta"]),
        NAMES,
        NAMES,
    ),
    max_size=12,
)


def reference(rows: list[tuple[Any, ...]], tenant: str, width: int, dimension: int) -> list[str]:
    """The rules one row at a time."""
    problems: list[str] = []
    if not rows:
        return problems
    dupes = [i for i, n in Counter(r[0] for r in rows).items() if n > 1]
    if dupes:
        problems.append(f"{len(dupes)} duplicate chunk ids, e.g. {dupes[0]}")
    foreign = {r[1] for r in rows if r[1] != tenant}
    if foreign:
        problems.append(f"rows of other tenants: {sorted(foreign)}")
    no_acl = sum(1 for r in rows if not r[2] and not r[3])
    if no_acl:
        problems.append(f"{no_acl} rows without any reader or group")
    if width != dimension:
        problems.append(
            f"vector type fixed_size_list<item: float>[{width}] does not have dimension {dimension}"
        )
    return problems


def table(rows: list[tuple[Any, ...]], width: int, chunks: int) -> pa.Table:
    strs = pa.list_(pa.string())
    cols = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    t = pa.table(
        {
            "id": pa.array(cols[0], pa.string()),
            "tenant": pa.array(cols[1], pa.string()),
            "readers": pa.array(cols[2], strs),
            "groups": pa.array(cols[3], strs),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array([0.5] * (width * len(rows)), pa.float32()), width
            ),
        }
    )
    if chunks > 1 and t.num_rows > 1:  # staged batches arrive as tables of several chunks
        cut = t.num_rows // 2
        t = pa.concat_tables([t.slice(0, cut), t.slice(cut)])
    return t


@settings(max_examples=200, deadline=None)
@given(ROWS, st.sampled_from([4, 8]), st.sampled_from([1, 2]))
def test_the_arrow_checks_report_what_the_row_rules_report(
    rows: list[tuple[Any, ...]], width: int, chunks: int
) -> None:
    assert check_rows(table(rows, width, chunks), "acme", 4) == reference(rows, "acme", width, 4)


def test_each_rule_fires_alone_and_clean_rows_pass() -> None:
    clean = [("a", "acme", ["alice"], None), ("b", "acme", None, ["staff"]), ("c", "acme", [], ["staff"])]
    assert check_rows(table(clean, 4, 1), "acme", 4) == []
    assert check_rows(table([*clean, ("a", "acme", ["alice"], [])], 4, 1), "acme", 4) == [
        "1 duplicate chunk ids, e.g. a"
    ]
    assert check_rows(table([*clean, ("d", "evil", ["alice"], [])], 4, 1), "acme", 4) == [
        "rows of other tenants: ['evil']"
    ]
    assert check_rows(
        table([*clean, ("d", "acme", [], None), ("e", "acme", None, None)], 4, 1), "acme", 4
    ) == ["2 rows without any reader or group"]
    assert check_rows(table(clean, 4, 1), "acme", 8) == [
        "vector type fixed_size_list<item: float>[4] does not have dimension 8"
    ]
    assert check_rows(table([], 4, 1), "acme", 8) == []  # nothing staged: nothing to refuse


KEYS = st.lists(
    st.tuples(
        st.sampled_from(["c1", "c2", "c3", "c4", None]),
        st.sampled_from(["a.md", "b.md", "c.md", None]),
        st.sampled_from(["r1", "r2", None]),
    ),
    max_size=14,
)


def _listing(revisions: dict[str, str]) -> dict[str, Any]:
    from tessera.types import SourceDocument

    return {
        d: SourceDocument("acme", d, f"file:///{d}", r, "text/markdown", (), ("staff",))
        for d, r in revisions.items()
    }


@settings(max_examples=200, deadline=None)
@given(
    KEYS,
    st.dictionaries(st.sampled_from(["a.md", "b.md", "c.md"]), st.sampled_from(["r1", "r2"])),
    st.sets(st.sampled_from(["a.md", "b.md", "c.md"])),
    st.integers(1, 16),
)
def test_the_published_key_checks_count_what_the_row_rules_count(
    rows: list[tuple[Any, ...]], revisions: dict[str, str], quarantined: set[str], chunks: int
) -> None:
    """Stale rows (per row: its document unlisted, or listed at another revision, and not
    quarantined; null ids and documents included), duplicate ids (nulls repeat too), and the
    sampled positions are the rows ``sample`` picks from the id list."""
    from tessera.pipeline.checks import KeyPass, sample, sample_positions

    keys = pa.table(
        {n: pa.array([r[i] for r in rows], pa.string()) for i, n in enumerate(["id", "doc_id", "revision"])}
    )
    batches = keys.to_batches(max_chunksize=chunks)
    listing = _listing(revisions)
    expected = sum(
        1 for _, d, r in rows if d not in quarantined and (d not in listing or listing[d].revision != r)
    )
    ids = [r[0] for r in rows]
    picked = sample_positions(len(ids), 3, "7")
    tally = KeyPass(revisions, quarantined, picked)
    for batch in batches:
        tally.add(batch)
    assert (tally.rows, tally.stale) == (len(rows), expected)
    assert tally.sampled_ids() == sorted({ids[p] for p in picked if ids[p] is not None})
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    want = [f"{len(dupes)} duplicate chunk ids, e.g. {dupes[0]}"] if dupes else []
    assert tally.duplicates(lambda: batches) == want

    class Colliding(KeyPass):
        id_hash = staticmethod(lambda i: len(i or ""))  # "c1" and "c2" share a hash: ids decide

    colliding = Colliding(revisions, quarantined, picked)
    for batch in batches:
        colliding.add(batch)
    assert colliding.duplicates(lambda: batches) == want
    for n in (0, 1, 3, 20):
        assert [ids[p] for p in sample_positions(len(ids), n, "7")] == sample(ids, n, "7")
