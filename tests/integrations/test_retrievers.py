"""The LangChain and LlamaIndex retrievers, through each framework's own retriever interface:
the principal's hits only, with citations that ``show`` turns into the exact source slice."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever as LangChainRetriever
from llama_index.core.retrievers import BaseRetriever as LlamaRetriever
from llama_index.core.schema import QueryBundle
from pydantic import ValidationError

from tessera.client import open_tenant
from tessera.integrations import langchain as lc
from tessera.integrations import llama_index as li
from tests.test_client import ACME


@pytest.fixture
def readers(ws: Any) -> dict[str, Any]:
    ws.tenant("acme", ACME, users={"alice": ["staff"], "hank": ["staff", "hr"]})
    ws.run("acme", "r1")
    path = ws.root / "tessera.yaml"
    return {u: open_tenant(path, "acme", user=u, embedders=[ws.embedder]) for u in ("alice", "hank")}


QUERY = "salary bands for engineers, and paging the on-call engineer"


def test_langchain_documents_carry_exact_citations(readers: dict[str, Any]) -> None:
    alice = lc.TesseraRetriever(reader=readers["alice"], k=5)
    assert isinstance(alice, LangChainRetriever)
    docs = alice.invoke(QUERY)
    assert docs and {d.metadata["doc_id"] for d in docs} == {"runbook.md"}  # never the hr document
    for d in docs:
        shown = readers["alice"].show(d.metadata["citation"])
        assert d.page_content == shown.chunk_text and d.id == d.metadata["chunk_id"]
        assert d.metadata["citation"].startswith("tessera:acme/") and d.metadata["trust"]
    hank = lc.TesseraRetriever(reader=readers["hank"], k=5, mode="lexical")
    assert "secret.md" in {d.metadata["doc_id"] for d in hank.invoke(QUERY)}
    assert [len(x) for x in alice.batch([QUERY, "pager tool"])] == [
        len(docs),
        len(alice.invoke("pager tool")),
    ]
    with pytest.raises(ValidationError):
        lc.TesseraRetriever(reader=readers["alice"], k=0)
    with pytest.raises(ValidationError, match="TenantReader"):
        lc.TesseraRetriever(reader=object())


def test_llama_index_nodes_carry_exact_citations(readers: dict[str, Any]) -> None:
    alice = li.TesseraRetriever(readers["alice"], k=5)
    assert isinstance(alice, LlamaRetriever)
    nodes = alice.retrieve(QUERY)
    assert nodes and {n.node.metadata["doc_id"] for n in nodes} == {"runbook.md"}
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True)
    for n in nodes:
        assert n.node.get_content() == readers["alice"].show(n.node.metadata["citation"]).chunk_text
        assert n.node.node_id == n.node.metadata["chunk_id"]
    assert [n.node.node_id for n in alice.retrieve(QueryBundle(QUERY))] == [n.node.node_id for n in nodes]
    hank = li.TesseraRetriever(readers["hank"], k=5)
    assert "secret.md" in {n.node.metadata["doc_id"] for n in hank.retrieve(QUERY)}
    with pytest.raises(ValueError, match="at least 1"):
        li.TesseraRetriever(readers["alice"], k=0)
