"""The parse cache on a chunking-profile change (example corpus, hash embedder).

Per tenant of the example config, and for a tenant of scanned (image-only) PDFs whose text
only OCR recovers: a first run parses every document; then the profile
changes (``target_tokens``) twice, once with the parse cache and once with it emptied, and
the documents parsed, those taken from the cache and the run's seconds are recorded side by side.

    python -m bench.parse_cache   # writes bench/results/parse_cache.json

Target (issue 19): a profile change on the example corpus parses 0 documents.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import isolated_config, median, write_result


def _run(cfg: Any, tenant: str, run_id: str) -> dict[str, Any]:
    from tessera.embedding.fake import HashEmbedder
    from tessera.pipeline.run import RunContext, run_tenant

    rc = RunContext(cfg, tenant, run_id, HashEmbedder())
    t0 = time.perf_counter()
    out = run_tenant(rc)
    total = time.perf_counter() - t0
    return {"seconds": round(total, 3), **{k: out["parse"][k] for k in ("parsed", "from_cache")}}


def _with_scans(cfg: Any, base: Path, n: int = 3) -> Any:
    """``cfg`` plus tenant ``scans``: ``n`` one-page image-only PDFs (OCR is their parse)."""
    import yaml

    from tessera.config import load_config
    from tests.pdf_fixtures import image_only_pdf

    src = base / "scans"
    src.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (src / f"scan-{i}.pdf").write_bytes(image_only_pdf(f"Scanned invoice number {4700 + i} payable soon"))
    data = {
        "store": {"uri": str(base / "scan-index"), "work_dir": str(base / "work")},
        "embedding": {"model": cfg.embedding.model, "sha256": cfg.embedding.sha256},
        "tenants": {"scans": {"source": {"kind": "folder", "path": str(src)},
                              "access": {"default": {"groups": ["staff"]}}}},
        "execution": {"executor": "inline"},
    }  # fmt: skip
    (base / "scans.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config(base / "scans.yaml")


def main() -> int:
    from tessera.pipeline.parse_cache import cache_dir

    base = Path(tempfile.mkdtemp(prefix="tessera-parse-cache-"))
    example = isolated_config(base)
    rows: dict[str, Any] = {}
    for cfg, tenant in [
        *((example, t) for t in sorted(example.tenants)),
        (_with_scans(example, base), "scans"),
    ]:
        first = _run(cfg, tenant, "first")
        with_cache, without = [], []
        for i, target in enumerate((90, 100, 110)):
            profile = replace(cfg, chunking=replace(cfg.chunking, target_tokens=target))
            with_cache.append(_run(profile, tenant, f"cached-{i}"))
            shutil.rmtree(cache_dir(cfg.store.work_dir, tenant))
            profile = replace(cfg, chunking=replace(cfg.chunking, target_tokens=target + 1))
            without.append(_run(profile, tenant, f"uncached-{i}"))
        rows[tenant] = {
            "first": first,
            "profile_change_cached": with_cache,
            "profile_change_uncached": without,
            "parsed_by_parser_cached": [r["parsed"] - r["from_cache"] for r in with_cache],
            "median_seconds": {
                "cached": median([r["seconds"] for r in with_cache]),
                "uncached": median([r["seconds"] for r in without]),
            },
        }
        print(tenant, rows[tenant]["median_seconds"], rows[tenant]["parsed_by_parser_cached"], flush=True)
    meets = all(n == 0 for r in rows.values() for n in r["parsed_by_parser_cached"])
    print(
        write_result(
            "parse_cache", {"tenants": rows, "target": "0 parsed on a profile change", "meets": meets}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
