"""Chunking throughput (MB/s of UTF-8 text) of ``token`` and ``recursive`` against their peers.

* ``token`` (250-token windows, 125 overlap) vs Chonkie's ``TokenChunker`` on the same
  ``tokenizers.Tokenizer`` (the model's ``tokenizer.json``, truncation and padding off).
* ``recursive`` (128 tokens, no overlap) vs LangChain's
  ``RecursiveCharacterTextSplitter.from_huggingface_tokenizer`` (the model's tokenizer via
  ``transformers.AutoTokenizer``).

Ours = the full ``Chunker.chunk`` call: exact offsets, every chunk's exact token count as
the real tokenizer counts its embedding text (``token`` derives it from the one encode where
that is provably the same, see ``tessera.chunking.token``), ids and provenance. Peers =
their plain split calls. Same texts, same process, runs alternated, medians reported with
ratios ours/peer. Texts: the Chroma corpora in
``../shared/data/chroma/corpora`` when present (read in place), else generated prose. A peer
that cannot be imported is skipped.
"""

from __future__ import annotations

import importlib.metadata
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import ROOT, median, peak_rss_mb, write_result
from tessera.chunking.base import ChunkContext
from tessera.chunking.registry import get_chunker
from tessera.chunking.token import configured_inflation
from tessera.chunking.tokens import load_counter
from tessera.config import ChunkingConfig, EmbeddingConfig
from tessera.embedding.model_files import model_dir
from tessera.parsing.markdown import MarkdownParser
from tessera.types import ParsedDocument, SourceDocument, sha256_hex

CORPORA = ROOT.parent / "shared" / "data" / "chroma" / "corpora"
MODEL = EmbeddingConfig(model="sentence-transformers/all-MiniLM-L6-v2")
ROUNDS = {"token": 7, "recursive": 5}
TARGETS = {"token": 1.0, "recursive": 5.0}
Docs = list[tuple[SourceDocument, ParsedDocument]]


def corpus() -> tuple[str, Docs]:
    """The documents, parsed once (parsing is not timed); the source it came from."""
    paths = sorted(CORPORA.glob("*.md")) if CORPORA.is_dir() else []
    raws = [(p.name, p.read_bytes()) for p in paths] or [("generated.md", _generated().encode())]
    out = []
    for name, raw in raws:
        doc = SourceDocument("bench", name, f"file:///{name}", sha256_hex(raw), "text/markdown", (), ())
        out.append((doc, MarkdownParser().parse(doc, raw)))
    return ("../shared/data/chroma/corpora" if paths else "generated"), out  # relative to the repo root


def _generated(size: int = 200_000) -> str:
    rng = random.Random(7)
    vocab = ["the", "of", "and", "to", "index", "tenant", "chunk", "vector"]
    vocab += ["ledger", "deploy", "rollback", "latency", "model", "token"]
    paras, total = [], 0
    while total < size:
        sents = [
            " ".join(rng.choice(vocab) for _ in range(rng.randint(5, 25))).capitalize() + "."
            for _ in range(5)
        ]
        paras.append(" ".join(sents))
        total += len(paras[-1]) + 2
    return "\n\n".join(paras)


def _ours(docs: Docs, strategy: str, size: int, overlap: int) -> tuple[Callable[[], int], ChunkContext]:
    ctx = ChunkContext(ChunkingConfig(strategy, 256, size, overlap), load_counter(model_dir(MODEL)), "bench")
    chunker = get_chunker(strategy)
    return lambda: sum(len(chunker.chunk(d, p, ctx)) for d, p in docs), ctx


def _chonkie(docs: Docs, size: int, overlap: int) -> tuple[Callable[[], int], Any] | None:
    try:
        from chonkie import TokenChunker
        from tokenizers import Tokenizer
    except ImportError:
        return None
    tok = Tokenizer.from_file(str(model_dir(MODEL) / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    chunker = TokenChunker(tok, chunk_size=size, chunk_overlap=overlap)  # type: ignore[arg-type,unused-ignore]
    return lambda: sum(len(chunker.chunk(p.text)) for _, p in docs), chunker


def _langchain(docs: Docs, size: int, overlap: int) -> tuple[Callable[[], int], Any] | None:
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter
        from transformers import AutoTokenizer
    except ImportError:
        return None
    hf = AutoTokenizer.from_pretrained(str(model_dir(MODEL)))
    splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        hf, chunk_size=size, chunk_overlap=overlap
    )
    return lambda: sum(len(splitter.split_text(p.text)) for _, p in docs), splitter


def _race(nbytes: int, ours: Callable[[], int], peer: Callable[[], int], rounds: int) -> dict[str, Any]:
    """Alternate the two (order flipped every round), after one untimed warm-up each."""
    n_ours, n_peer = ours(), peer()
    times: dict[str, list[float]] = {"ours": [], "peer": []}
    for r in range(rounds):
        for who in ("ours", "peer") if r % 2 == 0 else ("peer", "ours"):
            t0 = time.perf_counter()
            (ours if who == "ours" else peer)()
            times[who].append(time.perf_counter() - t0)
    mb = nbytes / 1e6
    o, p = median(times["ours"]), median(times["peer"])
    return {
        "chunks": {"ours": n_ours, "peer": n_peer},
        "seconds": {k: [round(x, 4) for x in v] for k, v in times.items()},
        "mb_per_s_median": {"ours": round(mb / o, 3), "peer": round(mb / p, 3)},
        "ratio_ours_over_peer": round(p / o, 3),
    }


def _chonkie_exact(docs: Docs, chunker: Any) -> float:
    """Share of Chonkie chunks whose text is the source slice at their offsets."""
    hits = total = 0
    for _, p in docs:
        for c in chunker.chunk(p.text):
            total += 1
            hits += p.text[c.start_index : c.end_index] == c.text
    return round(hits / total, 4) if total else 1.0


def _version(pkg: str) -> str:
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def main() -> int:
    source, docs = corpus()
    nbytes = sum(len(p.text.encode("utf-8")) for _, p in docs)
    result: dict[str, Any] = {
        "corpus": source,
        "documents": [d.doc_id for d, _ in docs],
        "bytes": nbytes,
        "versions": {
            p: _version(p) for p in ("tokenizers", "chonkie", "langchain-text-splitters", "transformers")
        },
    }
    runs = [
        ("token", 250, 125, _chonkie, "chonkie.TokenChunker"),
        ("recursive", 128, 0, _langchain, "langchain"),
    ]
    for strategy, size, overlap, make_peer, peer_name in runs:
        ours, ctx = _ours(docs, strategy, size, overlap)
        entry: dict[str, Any] = {
            "size": size,
            "overlap": overlap,
            "peer": peer_name,
            "target_ratio": TARGETS[strategy],
        }
        peer = make_peer(docs, size, overlap)
        if peer is None:
            entry["skipped"] = f"{peer_name} is not importable"
            entry["ours_chunks"] = ours()
        else:
            entry.update(_race(nbytes, ours, peer[0], ROUNDS[strategy]))
            if strategy == "token":
                entry["peer_exact_offsets_share"] = _chonkie_exact(docs, peer[1])
            entry["meets_target"] = entry["ratio_ours_over_peer"] >= TARGETS[strategy]
        entry["inflation"] = {
            "nominal": round(configured_inflation(ctx), 4),
            "measured": round(ctx.stats.inflation, 4),
        }
        result[strategy] = entry
        print(strategy, entry, flush=True)
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(write_result("chunk_throughput", result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
