"""Retriever adapters for RAG frameworks (optional extras), over :mod:`tessera.client`.

- ``pip install -e .[langchain]``: :class:`tessera.integrations.langchain.TesseraRetriever`
- ``pip install -e .[llama-index]``: :class:`tessera.integrations.llama_index.TesseraRetriever`

Each returns the hits of :meth:`TenantReader.search` (the principal's filters, effective dates,
duplicate folding, the audit log) with the citation and exact source range in the metadata
(:func:`hit_metadata`), so an answer can cite ``tessera:<tenant>/<chunk id>`` and
``tessera show`` (or :meth:`TenantReader.show`) returns the exact slice.
"""

from __future__ import annotations

from tessera.search import SearchHit

Metadata = dict[str, str | int | float]


def hit_metadata(hit: SearchHit) -> Metadata:
    """Flat metadata of one hit (scalars only, as both frameworks' stores expect)."""
    c = hit.citation
    return {
        "citation": str(c),
        "locator": c.locator(),
        "chunk_id": hit.chunk_id,
        "doc_id": hit.doc_id,
        "uri": hit.uri,
        "revision": hit.revision,
        "anchor": hit.anchor,
        "heading_path": " > ".join(hit.heading_path),
        "byte_start": hit.byte_start,
        "byte_end": hit.byte_end,
        "score": hit.score,
        "copies": len(hit.sources),
        "trust": hit.trust,
    }
