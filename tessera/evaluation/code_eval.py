"""Intact-definition evaluation of code chunking on the ``requests`` package.

``requests.ast_manifest.json`` maps each file to its definitions (``qualname``, ``kind``,
``start_char``/``end_char`` code point offsets including decorators, ``def_line``). A
definition is *intact* when its text (whitespace-trimmed) lies whole inside one chunk, or
when every chunk overlapping it is flagged ``split_definition``, repeats the first line of
its signature (a trailing comment aside) in ``embedding_text``, and together they cover
every non-whitespace character of it. Definitions that fit the budget are those whose bare
text has at most ``max_tokens`` tokens (special tokens included); the target for them is
100 %.

With ``--queries`` it also embeds every chunk with the real model and searches with each
docstring of ``requests.docstring_queries.jsonl`` (the query is the docstring of the function
that answers it): hit@k and MRR of the first chunk that overlaps the answering function.

The manifest must describe the package: by default it is ``<PACKAGE_DIR>.ast_manifest.json``
beside the package folder (``../shared/data/code/requests.ast_manifest.json`` for the default
package). A manifest that lists files the package does not have is refused with
:class:`~tessera.errors.InvalidArgument` naming ``--manifest`` (before, another package's
manifest was used silently and the run crashed on the first missing file).

Usage: ``python -m tessera.evaluation.code_eval [PACKAGE_DIR] [MANIFEST] [--queries [FILE]]
[--json]``.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tessera.chunking.base import ChunkContext
from tessera.chunking.code import CodeChunker
from tessera.chunking.tokens import TokenCounter, load_counter
from tessera.chunking.windows import trim
from tessera.config import ChunkingConfig, EmbeddingConfig
from tessera.embedding.model_files import model_dir
from tessera.errors import InvalidArgument, TesseraError
from tessera.parsing.code import PythonParser
from tessera.types import Chunk, SourceDocument, sha256_hex

if TYPE_CHECKING:
    from tessera.embedding.base import Embedder

DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "code"
DEFAULT_PACKAGE = DATA_DIR / "requests"
DEFAULT_MANIFEST = DATA_DIR / "requests.ast_manifest.json"
DEFAULT_QUERIES = DATA_DIR / "requests.docstring_queries.jsonl"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_COMMENT = re.compile(r"\s+#[^\"']*$")  # a trailing comment is not part of the signature


def _doc(doc_id: str, raw: bytes) -> SourceDocument:
    return SourceDocument(
        tenant="eval",
        doc_id=doc_id,
        uri=f"file:///{doc_id}",
        revision=sha256_hex(raw),
        content_type="text/x-python",
        readers=(),
        groups=(),
    )


def intact(text: str, chunks: list[Chunk], start: int, end: int, signature: str) -> str:
    """``"whole"``, ``"split"`` or the reason the definition ``[start, end)`` is not intact."""
    s, e = trim(text, start, end)
    if any(c.start <= s and e <= c.end for c in chunks):
        return "whole"
    parts = sorted((c for c in chunks if c.start < e and s < c.end), key=lambda c: c.start)
    if not parts:
        return "missing"
    if any("split_definition" not in c.flags for c in parts):
        return "cut"
    bare = _COMMENT.sub("", signature)
    if any(signature not in c.embedding_text and bare not in c.embedding_text for c in parts):
        return "signature_not_repeated"
    pos = s
    for c in parts:
        if text[pos : max(pos, c.start)].strip():
            return "gap"
        pos = max(pos, c.end)
    return "gap" if text[pos:e].strip() else "split"


def default_manifest(package_dir: Path) -> Path:
    """``<package>.ast_manifest.json`` beside the package folder."""
    return package_dir.parent / f"{package_dir.name}.ast_manifest.json"


def check_manifest(package_dir: Path, manifest: Path, key: str = "--manifest") -> dict[str, Any]:
    """The manifest's entries, after checking that it describes ``package_dir``.

    Raises :class:`InvalidArgument` (``key``) when the manifest is missing or unreadable, is not
    a mapping of files to definitions, or lists files that the package folder does not have.
    """
    if not manifest.is_file():
        raise InvalidArgument(
            key, f"no manifest {str(manifest)!r} for package {str(package_dir)!r}; pass --manifest PATH"
        )
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidArgument(key, f"{str(manifest)!r} is not a readable JSON manifest: {e}") from e
    if not isinstance(data, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("defs"), list) for v in data.values()
    ):
        raise InvalidArgument(key, f"{str(manifest)!r} is not a map of file -> {{'defs': [...]}}")
    missing = sorted(name for name in data if not (package_dir / name).is_file())
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise InvalidArgument(
            key,
            f"manifest {str(manifest)!r} does not match package {str(package_dir)!r}: "
            f"{len(missing)} of its {len(data)} files are missing there ({shown})",
        )
    return data


def evaluate_code(
    package_dir: Path,
    manifest: Path,
    max_tokens: int = 256,
    target_tokens: int = 200,
    counter: TokenCounter | None = None,
) -> dict[str, Any]:
    """Share of intact definitions, overall, for those that fit the budget, and by kind.

    Raises :class:`InvalidArgument` when ``manifest`` does not describe ``package_dir``."""
    data = check_manifest(package_dir, manifest)
    if counter is None:
        counter = load_counter(model_dir(EmbeddingConfig(model=MODEL)))
    ctx = ChunkContext(ChunkingConfig("code", max_tokens, target_tokens, 0), counter, "eval")
    parser, chunker = PythonParser(), CodeChunker()
    total: Counter[str] = Counter()
    fits: Counter[str] = Counter()
    kinds: dict[str, Counter[str]] = {}
    flags: Counter[str] = Counter()
    failures: list[dict[str, Any]] = []
    n_chunks = n_tokens = 0
    t0 = time.perf_counter()
    for name in sorted(data):
        entry = data[name]
        raw = (package_dir / name).read_bytes()
        doc = _doc(f"{package_dir.name}/{name}", raw)
        if sha256_hex(raw) != entry.get("sha256", sha256_hex(raw)):
            failures.append({"file": name, "reason": "sha256 differs from the manifest"})
        try:
            parsed = parser.parse(doc, raw)
            chunks = chunker.chunk(doc, parsed, ctx)
        except TesseraError as err:
            failures.append({"file": name, "reason": f"{type(err).__name__}: {err}"})
            continue
        n_chunks += len(chunks)
        n_tokens += sum(c.token_count for c in chunks)
        for c in chunks:
            flags.update(f for f in c.flags if not f.startswith("part:"))
        text = parsed.text
        lines = text.split("\n")
        for d in entry["defs"]:
            s, e = d["start_char"], d["end_char"]
            signature = lines[d["def_line"] - 1].strip()
            verdict = intact(text, chunks, s, e, signature)
            ok = verdict in ("whole", "split")
            small = ctx.tokens(text[slice(*trim(text, s, e))]) <= max_tokens
            for counts, cond in ((total, True), (fits, small)):
                if cond:
                    counts["definitions"] += 1
                    counts["intact"] += ok
                    counts[verdict] += 1
            by_kind = kinds.setdefault(d["kind"], Counter())
            by_kind["definitions"] += 1
            by_kind["intact"] += ok
            if not ok:
                failures.append({"file": name, "qualname": d["qualname"], "fits": small, "reason": verdict})

    def summary(c: Counter[str]) -> dict[str, Any]:
        out: dict[str, Any] = dict(c)
        out["share"] = round(c["intact"] / c["definitions"], 4) if c["definitions"] else None
        return out

    return {
        "package": str(package_dir),
        "files": len(data),
        "max_tokens": max_tokens,
        "target_tokens": target_tokens,
        "chunks": n_chunks,
        "mean_tokens": round(n_tokens / n_chunks, 1) if n_chunks else 0.0,
        "flags": dict(flags),
        "overall": summary(total),
        "fitting": summary(fits),
        "by_kind": {k: summary(v) for k, v in sorted(kinds.items())},
        "failures": failures,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def evaluate_queries(
    package_dir: Path,
    queries: Path,
    embedder: Embedder | None = None,
    max_tokens: int = 256,
    target_tokens: int = 200,
    counter: TokenCounter | None = None,
    ks: tuple[int, ...] = (1, 5, 10),
) -> dict[str, Any]:
    """Dense retrieval over the chunks of every ``.py`` file: is the answering function's
    chunk found? Uses the real model unless an embedder is given."""
    import numpy as np

    if counter is None:
        counter = load_counter(model_dir(EmbeddingConfig(model=MODEL)))
    if embedder is None:
        from tessera.embedding.sentence import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(EmbeddingConfig(model=MODEL))
    ctx = ChunkContext(ChunkingConfig("code", max_tokens, target_tokens, 0), counter, "eval")
    chunks: list[Chunk] = []
    texts: dict[str, str] = {}
    for path in sorted(package_dir.glob("*.py")):
        raw = path.read_bytes()
        doc = _doc(f"{package_dir.name}/{path.name}", raw)
        parsed = PythonParser().parse(doc, raw)
        texts[doc.doc_id] = parsed.text
        chunks.extend(CodeChunker().chunk(doc, parsed, ctx))
    t0 = time.perf_counter()
    vectors = np.vstack(
        [
            embedder.embed_documents([c.embedding_text for c in chunks[k : k + 32]])
            for k in range(0, len(chunks), 32)
        ]
    )
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines() if line.strip()]
    hits = Counter[int]()
    reciprocal = 0.0
    whole = 0
    for row in rows:
        doc_id = f"{package_dir.name}/{row['file']}"
        s, e = trim(texts.get(doc_id, ""), row["start_char"], row["end_char"])
        answers = {k for k, c in enumerate(chunks) if c.doc_id == doc_id and c.start < e and s < c.end}
        whole += any(chunks[k].start <= s and e <= chunks[k].end for k in answers)
        order = np.argsort(-(vectors @ embedder.embed_query(row["query"])), kind="stable")
        rank = next((r + 1 for r, k in enumerate(order.tolist()) if k in answers), 0)
        reciprocal += 1.0 / rank if rank else 0.0
        for k in ks:
            hits[k] += 0 < rank <= k
    n = max(1, len(rows))
    return {
        "queries": len(rows),
        "chunks": len(chunks),
        "model": embedder.identity.name,
        **{f"hit@{k}": round(hits[k] / n, 4) for k in ks},
        "mrr": round(reciprocal / n, 4),
        "answer_in_one_chunk": round(whole / n, 4),
        "seconds": round(time.perf_counter() - t0, 2),
    }


def format_summary(result: dict[str, Any]) -> str:
    o, f = result["overall"], result["fitting"]
    rows = [
        f"files {result['files']}, chunks {result['chunks']} (mean {result['mean_tokens']} tokens), "
        f"budget {result['max_tokens']}/{result['target_tokens']}, {result['seconds']} s",
        f"intact overall: {o['intact']}/{o['definitions']} = {o['share']:.1%} "
        f"(whole {o.get('whole', 0)}, split {o.get('split', 0)})",
        f"intact of those that fit: {f['intact']}/{f['definitions']} = {f['share']:.1%}",
    ]
    for kind, k in result["by_kind"].items():
        rows.append(f"  {kind}: {k['intact']}/{k['definitions']} = {k['share']:.1%}")
    rows.append(f"flags: {result['flags']}")
    if "retrieval" in result:
        rows.append(f"retrieval: {result['retrieval']}")
    for fail in result["failures"][:20]:
        rows.append(f"  not intact: {fail}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="code_eval", description=__doc__.split("\n", 1)[0])
    ap.add_argument("package_dir", nargs="?", type=Path, default=DEFAULT_PACKAGE)
    ap.add_argument(
        "manifest", nargs="?", type=Path, default=None, help="default: <PACKAGE_DIR>.ast_manifest.json"
    )
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--target-tokens", type=int, default=200)
    ap.add_argument("--queries", nargs="?", type=Path, const=DEFAULT_QUERIES, default=None)
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    args = ap.parse_args(argv)
    if not args.package_dir.is_dir():
        raise InvalidArgument("--data", f"{str(args.package_dir)!r} is not a folder")
    if args.manifest is None:
        args.manifest = default_manifest(args.package_dir)
    result = evaluate_code(args.package_dir, args.manifest, args.max_tokens, args.target_tokens)
    if args.queries is not None:
        result["retrieval"] = evaluate_queries(
            args.package_dir, args.queries, None, args.max_tokens, args.target_tokens
        )
    print(json.dumps(result, indent=2) if args.json else format_summary(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
