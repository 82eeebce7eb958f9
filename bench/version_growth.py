"""C7, version growth: many publishes of one tenant, with maintenance on a schedule.

Each publish is a full tenant run (folder source, hash embedder) that changes one small
document, so it commits, tags ``run-<id>``, refreshes the indexes and logs the publication.
Every ``--maintain-every`` publishes, ``maintain_tenant`` compacts and prunes (the last 10
versions, the last 20 run tags and every operator tag kept). At each checkpoint it records
the open latency of the chunks table (a fresh connection, ``open_table`` and ``count_rows``)
and of the publications log, a vector query, the table's versions and files, and the time
of the maintenance pass. At the end: every kept tag resolves to the rows its run published,
and no data, index or transaction file is left that no remaining manifest references.

    python -m bench.version_growth --publishes 1000   # writes bench/results/version_growth.json

``tests/test_reliability_growth.py`` runs the same driver with 200 publishes.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lancedb
import yaml

from tessera.config import TesseraConfig, load_config
from tessera.embedding.fake import HashEmbedder
from tessera.pipeline.run import RunContext, run_tenant
from tessera.store.db import publications_table_name
from tessera.store.maintenance import maintain_tenant

MODEL_SHA = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
OPERATOR_TAG = "release-1"


def make_config(root: Path, tenant: str = "acme") -> TesseraConfig:
    """A project in ``root``: one tenant with two small documents, a local index."""
    src = root / "corpus" / tenant
    src.mkdir(parents=True, exist_ok=True)
    (src / "a.md").write_text("# A\n\nalpha 0\n", encoding="utf-8")
    (src / "b.md").write_text("# B\n\nThe unchanged document.\n", encoding="utf-8")
    source = {"kind": "folder", "path": f"corpus/{tenant}"}
    data: dict[str, Any] = {
        "store": {"uri": "index", "work_dir": "work"},
        "embedding": {"model": "sentence-transformers/all-MiniLM-L6-v2", "sha256": MODEL_SHA},
        "tenants": {tenant: {"source": source, "access": {"default": {"groups": ["staff"]}}}},
    }
    (root / "tessera.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config(root / "tessera.yaml")


def table_files(table_dir: Path) -> dict[str, int]:
    """Files of a local Lance table, and those no remaining manifest references.

    A manifest names its data and transaction files as strings and its indexes by their
    16-byte UUID, so a file that appears in no ``_versions/*.manifest`` is an orphan."""
    blob = b"\0".join(p.read_bytes() for p in (table_dir / "_versions").glob("*.manifest"))
    out: dict[str, int] = {"manifests": len(list((table_dir / "_versions").glob("*.manifest")))}
    for kind, pattern in (("data", "data/*"), ("transactions", "_transactions/*"), ("indices", "_indices/*")):
        paths = list(table_dir.glob(pattern))
        if kind == "indices":
            orphans = [p for p in paths if uuid.UUID(p.name).bytes not in blob]
        else:
            orphans = [p for p in paths if p.name.encode() not in blob]
        out[kind], out[f"orphan_{kind}"] = len(paths), len(orphans)
    return out


def _median_ms(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


def open_latency_ms(uri: str, name: str, repeats: int = 5) -> float:
    """A fresh connection, ``open_table`` and ``count_rows``: what a new reader pays."""
    return _median_ms(lambda: lancedb.connect(uri).open_table(name).count_rows(), repeats)


def query_latency_ms(uri: str, name: str, vector: list[float], repeats: int = 5) -> float:
    def query() -> None:
        lancedb.connect(uri).open_table(name).search(vector, vector_column_name="vector").limit(5).to_list()

    return _median_ms(query, repeats)


def texts_hash(table: Any) -> str:
    texts = sorted(table.to_arrow().column("text").to_pylist())
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()


def _live(rc: RunContext) -> Any:
    table = rc.index.table()
    if table is None:
        raise RuntimeError(f"{rc.index.name} does not exist")
    return table


@dataclass
class Growth:
    """What a growth run measured: one checkpoint per maintenance pass, and the final state."""

    publishes: int
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    published: dict[str, str] = field(default_factory=dict)  # run tag -> texts hash at publish
    tags_after: dict[str, int] = field(default_factory=dict)
    tags_resolving: dict[str, bool] = field(default_factory=dict)
    final_files: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def grow(
    root: Path,
    publishes: int,
    maintain_every: int,
    keep_versions: int = 10,
    keep_run_tags: int = 20,
    log: Callable[[str], None] = lambda _m: None,
) -> Growth:
    cfg = make_config(root)
    embedder = HashEmbedder()
    src = root / "corpus" / "acme"
    growth = Growth(publishes)
    start = time.monotonic()
    window: list[float] = []
    rc = RunContext(cfg, "acme", "inspect", embedder, sleep=lambda _s: None)
    name, uri = rc.index.name, cfg.store.uri
    table_dir = Path(uri) / f"{name}.lance"
    for i in range(1, publishes + 1):
        (src / "a.md").write_text(f"# A\n\nalpha {i}: publication number {i} of this tenant.\n", "utf-8")
        t0 = time.perf_counter()
        out = run_tenant(RunContext(cfg, "acme", f"p{i:04d}", embedder, sleep=lambda _s: None))
        window.append(time.perf_counter() - t0)
        if not out["publish"]["committed"]:
            raise RuntimeError(f"publish {i} did not commit")
        table = _live(rc)
        growth.published[out["publish"]["tag"]] = texts_hash(table)
        if i == 10:
            table.tags.create(OPERATOR_TAG, out["publish"]["version"])
        if i % maintain_every == 0 or i == publishes:
            point: dict[str, Any] = {"publishes": i, "run_s_mean": round(statistics.mean(window), 3)}
            window = []
            point["versions"] = len(table.list_versions())
            point["files_before"] = table_files(table_dir)
            point["open_ms"] = open_latency_ms(uri, name)
            point["publications_read_ms"] = _median_ms(
                lambda: lancedb.connect(uri).open_table(publications_table_name("acme")).to_arrow(), 3
            )
            point["query_ms"] = query_latency_ms(uri, name, [0.1] * embedder.identity.dimension)
            t0 = time.perf_counter()
            reports = maintain_tenant(rc.db, cfg.store.work_dir, "acme", None, keep_versions, keep_run_tags)
            report = next(r for r in reports if r.table == name)
            point["maintain_s"] = round(time.perf_counter() - t0, 3)
            point["versions_after"] = report.versions_after
            point["open_ms_after"] = open_latency_ms(uri, name)
            point["files_after"] = table_files(table_dir)
            growth.checkpoints.append(point)
            log(f"{i} publishes: {point}")
    table = _live(rc)
    growth.tags_after = {n: int(t["version"]) for n, t in table.tags.list().items()}
    for tag, version in growth.tags_after.items():
        view = lancedb.connect(uri).open_table(name)
        view.checkout(version)
        growth.tags_resolving[tag] = tag == OPERATOR_TAG or texts_hash(view) == growth.published.get(tag)
    growth.final_files = table_files(table_dir)
    growth.seconds = round(time.monotonic() - start, 1)
    return growth


def main(argv: list[str] | None = None) -> int:
    from dataclasses import asdict

    from bench.common import write_result

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--publishes", type=int, default=1000)
    p.add_argument("--maintain-every", type=int, default=100)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tessera-growth-") as tmp:
        growth = grow(Path(tmp), args.publishes, args.maintain_every, log=lambda m: print(m, flush=True))
    data = asdict(growth)
    data.pop("published")
    path = write_result("version_growth", {"maintain_every": args.maintain_every, **data})
    print(f"wrote {path} in {growth.seconds} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
