"""A LlamaIndex retriever over a tenant's index (``pip install -e .[llama-index]``).

from tessera.client import open_tenant
from tessera.integrations.llama_index import TesseraRetriever

acme = open_tenant("examples/tessera.yaml", "acme", user="alice")
nodes = TesseraRetriever(acme, k=3).retrieve("how do I page the on-call engineer")
nodes[0].node.metadata["citation"], nodes[0].score
"""

from __future__ import annotations

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from tessera.client import TenantReader
from tessera.integrations import hit_metadata


class TesseraRetriever(BaseRetriever):
    """``retrieve(query)`` returns the principal's top ``k`` chunks as scored TextNodes; the
    node text is the chunk's source text (untrusted data), the metadata its citation."""

    def __init__(self, reader: TenantReader, k: int = 5, mode: str = "hybrid") -> None:
        if k < 1:
            raise ValueError("k must be at least 1")
        super().__init__()
        self.reader, self.k, self.mode = reader, k, mode

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.reader.search(query_bundle.query_str, k=self.k, mode=self.mode)
        return [
            NodeWithScore(
                node=TextNode(id_=h.chunk_id, text=h.text, metadata=dict(hit_metadata(h))), score=h.score
            )
            for h in hits
        ]
