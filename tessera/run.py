"""One tenant run as plain Python: list -> plan -> parse -> chunk -> embed -> stage/check -> publish.

Each step reads and writes a run workspace (``{work_dir}/{tenant}/{run_id}``) and returns a
small JSON-able summary, so Dagster assets pass manifests, never payloads. ``run_tenant``
chains the steps for the CLI and the tests.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections import Counter
from dataclasses import asdict, replace
from typing import Any

import numpy as np
import pyarrow as pa

from tessera.checks import check_offsets, check_published, check_rows
from tessera.chunking.dedup import Entry, dedupe
from tessera.chunking.probes import sentence_probes
from tessera.chunking.registry import chunker_for
from tessera.cutover import cutover_step
from tessera.errors import (
    ChunkingError,
    DocumentError,
    MassDeletionBlocked,
    PublishError,
    QualityGateBlocked,
    StalePlanError,
)
from tessera.listing import block_message, guard_status, list_step, plan_fingerprint
from tessera.parsing.base import parse_document
from tessera.quality import GateResult, quality_gate
from tessera.run_context import SENTENCE_COUNTS, SENTENCE_VECTORS, RunContext
from tessera.serde import (
    chunk_from_json,
    chunk_to_json,
    doc_from_json,
    parsed_from_json,
    parsed_to_json,
)
from tessera.store.lock import tenant_lock
from tessera.store.schema import band_candidates, build_rows, text_checksum
from tessera.types import Chunk, SourceDocument

__all__ = [
    "RunContext",
    "chunk_step",
    "embed_step",
    "list_step",
    "parse_step",
    "publish_step",
    "run_tenant",
    "verify_step",
]


log = logging.getLogger(__name__)
PLAN_ATTEMPTS = 3


def _doc_file(doc_id: str) -> str:
    return hashlib.sha256(doc_id.encode()).hexdigest()[:32] + ".json"


def _listing(rc: RunContext) -> tuple[dict[str, Any], dict[str, SourceDocument]]:
    data = rc.read("listing.json")
    return data, {d["doc_id"]: doc_from_json(d) for d in data["documents"]}


def parse_step(rc: RunContext) -> dict[str, Any]:
    """Parse changed documents; a failing document is quarantined (its old rows stay).

    The report keeps, per document, its warnings and its trust counts (hidden content the
    parser dropped, how much of it read like instructions, hidden ranges it kept). Text
    documents made of binary bytes are quarantined as ``invalid_content`` before parsing."""
    from tessera.parsing.validity import check_text_bytes

    data, docs = _listing(rc)
    out_dir = rc.workspace / "parsed"
    out_dir.mkdir(parents=True, exist_ok=True)
    parsed, quarantined, warnings, trust = [], [], {}, {}
    for doc_id in data["to_parse"]:
        doc = docs[doc_id]
        try:
            raw = rc.blobs.get(rc.tenant, doc.revision)
            if doc.content_type.startswith("text/"):
                check_text_bytes(doc_id, raw)
            result = parse_document(doc, raw)
        except DocumentError as e:
            quarantined.append({"doc_id": doc_id, "reason": e.reason, "message": str(e)})
            continue
        except Exception as e:  # a parser bug quarantines the document, it never deletes it
            quarantined.append({"doc_id": doc_id, "reason": "parser_crash", "message": repr(e)})
            continue
        (out_dir / _doc_file(doc_id)).write_text(json.dumps(parsed_to_json(result)), encoding="utf-8")
        parsed.append(doc_id)
        if not result.text.strip() and not any(w.startswith("no_text") for w in result.warnings):
            result = replace(result, warnings=(*result.warnings, "no_text: the document yielded no text"))
        if result.warnings:
            warnings[doc_id] = list(result.warnings)
        t = result.trust
        if t.hidden_dropped or t.instructions_dropped or t.hidden_spans:
            trust[doc_id] = {
                "hidden_dropped": t.hidden_dropped,
                "instructions_dropped": t.instructions_dropped,
                "hidden_kept": len(t.hidden_spans),
            }
    report = {"parsed": parsed, "quarantined": quarantined, "warnings": warnings, "trust": trust}
    rc.write("parse_report.json", report)
    counts = ("hidden_dropped", "instructions_dropped", "hidden_kept")
    return {
        "parsed": len(parsed),
        "quarantined": len(quarantined),
        "warnings": sum(map(len, warnings.values())),
        **{k: sum(c[k] for c in trust.values()) for k in counts},
    }


def chunk_step(rc: RunContext) -> dict[str, Any]:
    """Chunk the parsed documents, then mark duplicates against the run and the live rows."""
    data, docs = _listing(rc)
    report = rc.read("parse_report.json")
    strategy = rc.config.chunking.strategy
    chunks: list[Chunk] = []
    quarantined: list[dict[str, str]] = []
    for doc_id in report["parsed"]:
        parsed = parsed_from_json(
            json.loads((rc.workspace / "parsed" / _doc_file(doc_id)).read_text("utf-8"))
        )
        try:
            chunker = chunker_for(docs[doc_id].content_type, strategy)
            chunks.extend(chunker.chunk(docs[doc_id], parsed, rc.chunk_context))
        except ChunkingError as e:  # the document is quarantined; its published chunks stay
            quarantined.append({"doc_id": doc_id, "reason": "chunking_error", "message": str(e)})
    dd = rc.config.chunking.dedup
    replaced = (set(report["parsed"]) - {q["doc_id"] for q in quarantined}) | set(data["removed"])

    def live(keys: set[str]) -> list[Entry]:  # rows of other documents sharing a band key
        rows = band_candidates(rc.index.table(), keys, replaced)
        return [
            Entry(r["id"], r["doc_id"], r["position"], r["text"] or "", True, r["dup_group"]) for r in rows
        ]

    dups = dedupe([Entry(c.id, c.doc_id, c.position, c.text) for c in chunks], dd, live)
    mark = ("near_duplicate", "linked_duplicate") if dd.near_duplicates == "drop" else ("near_duplicate",)
    lines: list[str] = []
    flags: dict[str, int] = {}
    for c in chunks:
        out = dups.outcomes[c.id]
        if out.near_duplicate:
            c = replace(c, flags=tuple(dict.fromkeys(c.flags + mark)))
        line = {**chunk_to_json(c), "dedup": {"group": out.group, "bands": list(out.bands)}}
        lines.append(json.dumps(line, ensure_ascii=False))
        for f in c.flags:  # "rows:3-9" and "part:2/5" count under their name
            name = f.split(":", 1)[0]
            flags[name] = flags.get(name, 0) + 1
    (rc.workspace / "chunks.jsonl").write_text("\n".join(lines), encoding="utf-8")
    # never silent: a document that yields no chunk is named (and counts as lost for the deletion guard)
    empty = sorted(set(report["parsed"]) - {q["doc_id"] for q in quarantined} - {c.doc_id for c in chunks})
    for doc_id in empty:
        log.warning(
            "%s/%s yielded no chunks (%s)", rc.tenant, doc_id, "; ".join(report["warnings"].get(doc_id, []))
        )
    rc.write("chunk_report.json", {"quarantined": quarantined, "empty": empty})
    tokens = [c.token_count for c in chunks]
    return {
        "chunks": len(lines),
        "quarantined": len(quarantined),
        "empty_documents": len(empty),
        "max_tokens": max(tokens, default=0),
        "mean_tokens": round(float(np.mean(tokens)), 1) if tokens else 0.0,
        "flags": flags,
        "exact_duplicates": dups.exact_duplicates,
        "near_duplicates": dups.near_duplicates,
        "dedup_live_candidates": dups.live_candidates,
        "strategy": rc.config.chunking.strategy,
        "config_hash": rc.chunk_context.config_hash[:16],
        **rc.chunk_context.stats.as_dict(),  # inflation from overlap; the semantic chunker's embedding cost
    }


def _staged(rc: RunContext) -> tuple[list[Chunk], list[tuple[str, list[str]]]]:
    """The staged chunks and, per chunk, its ``(dup_group, dup_bands)``."""
    chunks: list[Chunk] = []
    dedup: list[tuple[str, list[str]]] = []
    # split("\n"), not splitlines(): a chunk's text may hold U+2028, U+0085, \x1c (kept raw by json)
    for line in (rc.workspace / "chunks.jsonl").read_text("utf-8").split("\n"):
        if line:
            data = json.loads(line)
            info = data.pop("dedup", None) or {}
            chunks.append(chunk_from_json(data))
            dedup.append((info.get("group") or text_checksum(chunks[-1].text), info.get("bands", [])))
    return chunks, dedup


def _chunks(rc: RunContext) -> list[Chunk]:
    return _staged(rc)[0]


def embed_step(rc: RunContext) -> dict[str, Any]:
    """Vectors for every staged chunk, and with ``sentence_vectors`` for every sentence probe
    (``tessera.chunking.probes``): cache hits reused, misses embedded in retried batches."""
    chunks = _chunks(rc)
    vectors, stats = rc.embed_cached([c.embedding_text for c in chunks])
    np.save(rc.workspace / "vectors.npy", vectors)
    summary: dict[str, Any] = asdict(stats)
    summary.pop("failures")
    summary["model_version"] = rc.embedder.identity.key
    if rc.config.chunking.sentence_vectors:
        probes = [sentence_probes(c.text, c.embedding_text, c.kind) for c in chunks]
        flat, sstats = rc.embed_cached([p for ps in probes for p in ps])
        np.save(rc.workspace / SENTENCE_VECTORS, flat)
        np.save(rc.workspace / SENTENCE_COUNTS, np.asarray([len(p) for p in probes], np.int64))
        summary["sentences"] = {
            key: getattr(sstats, key)
            for key in ("texts", "unique", "cache_hits", "embedded", "batches", "retries")
        }
        summary["sentences"]["seconds"] = round(sstats.seconds, 3)
    else:  # a re-executed step of a run whose profile had them: publish none
        for name in (SENTENCE_VECTORS, SENTENCE_COUNTS):
            (rc.workspace / name).unlink(missing_ok=True)
    return summary


def candidate_scope(rc: RunContext) -> set[str]:
    """Documents this run would replace or remove: changed and parsed, plus removed."""
    data = rc.read("listing.json")
    return (set(data["to_parse"]) - _quarantined(rc)) | set(data["removed"])


def gate_step(rc: RunContext) -> GateResult:
    """The tenant's quality gate on the staged version (see :mod:`tessera.quality`)."""
    done = rc.workspace / "quality_gate.json"
    if done.exists():  # already decided for this staged version (the Dagster check ran it)
        return GateResult(**rc.read("quality_gate.json"))
    scope = candidate_scope(rc)
    result = quality_gate(rc, scope, _chunks(rc)) if scope else GateResult("skipped", "nothing changes")
    rc.write("quality_gate.json", result.as_dict())
    return result


def _quarantined(rc: RunContext) -> set[str]:
    """Documents that failed to download, parse or chunk: neither updated nor deleted."""
    failed = rc.read("listing.json").get("quarantined", []) + rc.read("parse_report.json")["quarantined"]
    if (rc.workspace / "chunk_report.json").exists():
        failed = failed + rc.read("chunk_report.json")["quarantined"]
    return {q["doc_id"] for q in failed}


def publish_step(rc: RunContext) -> dict[str, Any]:
    """Stage rows, check them, then reconcile the changed documents in one commit.

    A re-execution of a publish that already committed this plan (a Dagster run retry after the
    worker died past the commit) returns the recorded summary instead of publishing twice."""
    data, docs = _listing(rc)
    done = rc.workspace / "publish.json"
    if done.exists():
        recorded: dict[str, Any] = rc.read("publish.json")
        if recorded.get("planned_from") == data.get("planned_from"):  # this execution commits nothing
            return {**recorded, "committed": False, "already_published": recorded.get("version")}
    chunks, dedup = _staged(rc)
    vectors = np.load(rc.workspace / "vectors.npy")
    ident = rc.embedder.identity
    sentences = rc.staged_sentences(len(chunks))
    rows = build_rows(chunks, docs, vectors, ident.key, rc.run_id, ident.dimension, dedup, sentences)
    problems = check_rows(rows, rc.tenant, ident.dimension)
    problems += check_offsets(
        rows.select(
            ["id", "tenant", "revision", "byte_start", "byte_end", "text", "pages", "content_type"]
        ).to_pylist()[:50],
        rc.blobs,
    )
    if problems:
        raise PublishError(f"staged rows failed checks: {problems[:5]}")
    quarantined = _quarantined(rc)
    replaced = set(data["to_parse"]) - quarantined
    new_chunks = dict.fromkeys(replaced, 0) | Counter(c.doc_id for c in chunks if c.doc_id in replaced)
    deletion = guard_status(rc, new_chunks)
    if deletion["blocked"]:
        raise MassDeletionBlocked(block_message(deletion), deletion)
    gate = gate_step(rc)
    if gate.status == "blocked":
        raise QualityGateBlocked(f"quality gate: {gate.reason}", gate.as_dict())
    with tenant_lock(rc.config.store.work_dir / "_locks", rc.tenant):
        live = rc.index.manifest()
        scope = replaced | set(data["removed"])
        # Re-check under the lock: drop documents another run already brought up to date.
        cfg_hash = rc.chunk_context.config_hash
        for doc_id in list(scope):
            doc, state = docs.get(doc_id), live.get(doc_id)
            if (doc is None and state is None) or (
                doc is not None
                and state is not None
                and (state.revision, state.meta_hash, state.config_hash)
                == (doc.revision, doc.meta_hash, cfg_hash)
            ):
                scope.discard(doc_id)
        # Fencing: whatever is left is published only against the state this run planned from,
        # so an older run can never publish over a newer one; otherwise re-plan (run_tenant).
        if scope and data.get("planned_from") and plan_fingerprint(live) != data["planned_from"]:
            raise StalePlanError(
                f"the live index of {rc.tenant!r} changed after this run planned (another run published "
                "or a restore ran); nothing was published: list and plan again"
            )
        keep = [i for i, d in enumerate(rows.column("doc_id").to_pylist()) if d in scope]
        result = rc.index.publish(rows.take(pa.array(keep, pa.int64())), scope, rc.run_id, cfg_hash)
    summary = {
        **asdict(result),
        "docs_changed": len(scope - set(data["removed"])),
        "docs_removed": len(set(data["removed"]) & scope),
        "quarantined": sorted(quarantined),
        "table": rc.index.name,
        "planned_from": data.get("planned_from", ""),
    }
    rc.write("publish.json", summary)
    for heavy in ("parsed", "chunks.jsonl", "vectors.npy", SENTENCE_VECTORS, SENTENCE_COUNTS):
        path = rc.workspace / heavy
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return summary


def verify_step(rc: RunContext, sample_size: int = 25) -> tuple[list[str], dict[str, int]]:
    """Checks on the live table against this run's listing (the asset check calls this)."""
    _, docs = _listing(rc)
    table = rc.index.table()
    if table is None:
        return ([] if not docs else ["no published table"]), {"rows": 0}
    quarantined = _quarantined(rc)
    return check_published(
        table, rc.tenant, rc.embedder.identity.dimension, docs, quarantined, rc.blobs, sample_size
    )


def run_tenant(rc: RunContext) -> dict[str, Any]:
    """All steps in order; the first failure stops the run before anything is published.

    A publish refused because another writer changed the live index after this run planned
    (:class:`StalePlanError`) lists and plans again, up to ``PLAN_ATTEMPTS`` times.

    Last, the tenant's active model moves to this run's model when it is verified and complete
    (the first build, or the end of a backfill after a model change)."""
    for attempt in range(1, PLAN_ATTEMPTS + 1):
        out = {
            "listing": list_step(rc),
            "parse": parse_step(rc),
            "chunk": chunk_step(rc),
            "embed": embed_step(rc),
        }
        try:
            out["publish"] = publish_step(rc)
            break
        except StalePlanError:
            if attempt == PLAN_ATTEMPTS:
                raise
            log.warning(
                "tenant %s: the live index changed while run %s planned; re-planning", rc.tenant, rc.run_id
            )
            (rc.workspace / "quality_gate.json").unlink(missing_ok=True)
    out["cutover"] = cutover_step(rc, verify_step(rc)[0], rc.serving)
    return out
