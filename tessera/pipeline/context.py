"""The context of one tenant run: configuration, embedder, store handles, workspace."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from tessera.chunking.base import ChunkContext
from tessera.chunking.tokens import TokenCounter, load_counter
from tessera.config import TesseraConfig
from tessera.embedding.base import Embedder
from tessera.embedding.batching import EmbedStats, RetryPolicy
from tessera.embedding.model_files import model_dir
from tessera.errors import ConfigError, InternalError, PublishError
from tessera.pipeline.listed import ListedDocuments
from tessera.pipeline.staging import LISTING
from tessera.search.fusion import split
from tessera.serde import doc_from_json, doc_json_text
from tessera.sources.base import SourceConnector
from tessera.sources.registry import connector_for
from tessera.store.blobs import BlobStore
from tessera.store.db import connect
from tessera.store.embedding_cache import EmbeddingCache, embed_with_cache
from tessera.store.index import TenantIndex
from tessera.store.memory import fix_mmap_threshold, limit_malloc_arenas, use_arrow_pool
from tessera.store.probe import require_conditional_put
from tessera.types import SourceDocument

SENTENCE_VECTORS = "sentence_vectors.npy"
SENTENCE_COUNTS = "sentence_counts.npy"
"""Workspace files of the embed step: stacked sentence vectors and each chunk's count."""


@dataclass
class RunContext:
    """Everything one tenant run needs; build it once per run."""

    config: TesseraConfig
    tenant: str
    run_id: str
    embedder: Embedder
    connector: SourceConnector | None = None
    counter: TokenCounter | None = None
    workspace_id: str = ""
    allow_mass_delete: bool = False
    serving: tuple[Embedder, ...] = ()  # models that may be active (embedding.previous), for cutover
    sleep: Callable[[float], None] = time.sleep
    stats: dict[str, Any] = field(default_factory=dict)
    doc_scope: frozenset[str] | None = None
    """The only documents this run plans, publishes and clears from the failure queue
    (``tessera retry``); nothing is removed. None: the whole tenant (``tessera run``, Dagster)."""
    _listing: tuple[tuple[int, int, int], dict[str, Any] | str, ListedDocuments] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """The listing file's identity, the listing without its documents (decoded, or as the
    JSON text :meth:`write_listing` keeps until a step asks for it), and its documents."""

    def __post_init__(self) -> None:
        self.config.tenant(self.tenant)  # validates
        limit_malloc_arenas(self.config.execution.malloc_arenas)  # before Lance's threads multiply
        fix_mmap_threshold(self.config.execution.mmap_threshold)
        use_arrow_pool(self.config.execution.arrow_pool)
        if self.doc_scope is not None and not (self.doc_scope and all(self.doc_scope)):
            raise ConfigError("doc_scope", "a restricted run names at least one document, none empty")
        if self.connector is None:
            # the revision cache lives with the tenant's run workspaces (a purge removes both)
            self.connector = connector_for(self.config.tenant(self.tenant), self.config.store.work_dir)
        if self.counter is None:
            self.counter = load_counter(model_dir(self.config.embedding))
        limit = self.embedder.identity.max_seq_length
        if self.config.chunking.max_tokens > limit:
            raise ConfigError(
                "chunking.max_tokens",
                f"{self.config.chunking.max_tokens} exceeds the model's max_seq_length {limit}: "
                "chunks would be silently truncated",
            )

    @property
    def workspace(self) -> Path:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in self.workspace_id or self.run_id)
        return self.config.store.work_dir / self.tenant / safe

    @cached_property
    def db(self) -> Any:
        # C5: a run refuses an s3:// store that ignores conditional PUTs (probed once per process).
        require_conditional_put(self.config.store.uri)
        return connect(self.config.store.uri)

    @cached_property
    def index(self) -> TenantIndex:
        ident = self.embedder.identity
        return TenantIndex(self.db, self.tenant, ident.key, ident.dimension)

    @cached_property
    def blobs(self) -> BlobStore:
        return BlobStore(self.config.store.uri)

    @cached_property
    def chunk_context(self) -> ChunkContext:
        assert self.counter is not None
        return ChunkContext(
            config=self.config.chunking,
            counter=self.counter,
            model_hash=self.embedder.identity.hash,
            document_prefix=self.embedder.identity.document_prefix,
            embed=lambda texts: self.embed_cached(texts)[0],  # the semantic chunker's sentences
        )

    def embed_cached(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> tuple[Any, EmbedStats]:
        """Vectors through the tenant's embedding cache: misses embedded in retried batches;
        ``progress`` is told how many texts each batch (and the cache) settled."""
        return embed_with_cache(
            self.embedder,
            self.embedding_cache(),
            list(texts),
            self.config.embedding.batch_size,
            self.retry_policy(),
            sleep=self.sleep,
            progress=progress,
        )

    def embedding_cache(self) -> EmbeddingCache:
        """The tenant's embedding cache for the run's model."""
        return EmbeddingCache(self.db, self.tenant, self.embedder.identity)

    def retry_policy(self) -> RetryPolicy:
        """How a failed embedding batch is retried (``embedding.max_retries``, ``backoff_seconds``)."""
        cfg = self.config.embedding
        return RetryPolicy(max_retries=cfg.max_retries, backoff_seconds=cfg.backoff_seconds)

    def staged_sentences(self, chunks: int) -> list[Any] | None:
        """Each staged chunk's sentence vectors (None per chunk without), as the embed step
        wrote them; None when it wrote none (``sentence_vectors`` off)."""
        if not (self.workspace / SENTENCE_COUNTS).exists():
            return None
        counts = np.load(self.workspace / SENTENCE_COUNTS)
        if len(counts) != chunks:
            raise PublishError(f"{len(counts)} sentence vector counts for {chunks} staged chunks")
        return split(np.load(self.workspace / SENTENCE_VECTORS), [int(n) for n in counts])

    def write(self, name: str, data: Any) -> None:
        with self._replacing(name) as f:
            f.write(json.dumps(data, ensure_ascii=False))

    @contextmanager
    def _replacing(self, name: str) -> Iterator[TextIO]:
        """A text file that replaces workspace file ``name`` atomically once written."""
        if name == LISTING:
            self._listing = None
        self.workspace.mkdir(parents=True, exist_ok=True)
        tmp = self.workspace / f".{name}.tmp"
        with tmp.open("w", encoding="utf-8") as f:
            yield f
        tmp.replace(self.workspace / name)

    def write_listing(self, data: dict[str, Any], documents: list[SourceDocument]) -> None:
        """Write ``listing.json``: ``data`` with a ``documents`` list, each document as
        :func:`~tessera.serde.doc_json_text` gives it, and keep it for this context's later
        steps (the documents as columns, the rest as its JSON text until a step first asks for
        it), so a run in one process does not read back what it just wrote (about a fifth of a
        10,000-document no-op).

        The file is written a document at a time: a list of every document's JSON dict and one
        string of the whole file took a 100,000-document listing from 267 to 429 MB."""
        if "documents" in data:
            raise InternalError("write_listing takes the documents apart, not in data")
        encode = json.JSONEncoder(ensure_ascii=False).encode
        with self._replacing(LISTING) as f:
            f.write('{"documents": [')
            for i, doc in enumerate(documents):
                f.write((", " if i else "") + doc_json_text(doc))
            f.write("]")
            for key, value in data.items():
                f.write(f", {encode(key)}: {encode(value)}")
            f.write("}")
        st = (self.workspace / LISTING).stat()
        # The rest is kept as one string and decoded when a step first asks for it. Decoded
        # here, its lists of document ids (``to_parse``: every document of a full run) were
        # allocated among the listing step's own short-lived objects, which Python's allocator
        # cannot hand back while one small object in each of its 1 MB arenas lives: at 100,000
        # documents the 6.4 MB of ``to_parse`` kept 76 arenas, 79 MB, for the whole run.
        rest = json.dumps(data)
        self._listing = ((st.st_size, st.st_mtime_ns, st.st_ino), rest, ListedDocuments(documents))

    def listing(self) -> tuple[dict[str, Any], ListedDocuments]:
        """``listing.json`` without its ``documents`` list, and its documents by id, decoded once
        per version of the file: the steps of a run in this context share it; this context's own
        write of the listing, or a changed size, modification time or inode, decodes it again.
        The documents are held once, as columns (:class:`ListedDocuments`; the decoded JSON list
        beside them cost 1.4 KB a document for the whole run: 140 MB at 100,000)."""
        path = self.workspace / LISTING
        try:
            st = path.stat()
        except FileNotFoundError:
            raise PublishError(f"{path} is missing: run the upstream step first") from None
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        if self._listing is None or self._listing[0] != key:
            data = self.read(LISTING)
            self._listing = (key, data, ListedDocuments(doc_from_json(d) for d in data.pop("documents")))
        key, rest, docs = self._listing
        if isinstance(rest, str):
            rest = json.loads(rest)
            self._listing = (key, rest, docs)
        return rest, docs

    def read(self, name: str) -> Any:
        path = self.workspace / name
        if not path.exists():
            raise PublishError(f"{path} is missing: run the upstream step first")
        return json.loads(path.read_text(encoding="utf-8"))
