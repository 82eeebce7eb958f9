"""A LangChain retriever over a tenant's index (``pip install -e .[langchain]``).


from tessera.client import open_tenant
from tessera.integrations.langchain import TesseraRetriever

acme = open_tenant("examples/tessera.yaml", "acme", user="alice")
docs = TesseraRetriever(reader=acme, k=3).invoke("how do I page the on-call engineer")
docs[0].metadata["citation"]  # tessera:acme/<chunk id>
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator

from tessera.client import TenantReader
from tessera.integrations import hit_metadata


class TesseraRetriever(BaseRetriever):
    """``invoke(query)`` returns the principal's top ``k`` chunks as Documents; the page
    content is the chunk's source text (untrusted data), the metadata its citation."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    reader: Any
    """A :class:`TenantReader` (typed ``Any`` for pydantic, which cannot build a schema for
    its protocol-typed embedder; the validator below checks the type)."""
    k: int = Field(default=5, ge=1)
    mode: str = "hybrid"

    @field_validator("reader")
    @classmethod
    def _a_reader(cls, value: Any) -> TenantReader:
        if not isinstance(value, TenantReader):
            raise ValueError(  # pydantic reports it as a ValidationError naming the field
                f"reader must be a tessera TenantReader (open_tenant), not {type(value).__name__}"
            )
        return value

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self.reader.search(query, k=self.k, mode=self.mode)
        return [Document(page_content=h.text, metadata=hit_metadata(h), id=h.chunk_id) for h in hits]
