"""Tessera from Python: search a tenant as a user, show a citation's exact source, trace it,
then the same through LangChain and LlamaIndex. Run it after ``make run``:

    .venv/bin/python examples/python_api.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tessera.client import open_tenant

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=str(HERE / "tessera.yaml"), help="tessera.yaml")
    p.add_argument("--tenant", default="acme", help="the tenant to open")
    p.add_argument("--user", default="alice", help="a user of the tenant's directory")
    p.add_argument("--query", default="how do I page the on-call engineer", help="the question")
    p.add_argument("--fake-embedder", action="store_true", help="the hash embedder (tests)")
    args = p.parse_args(argv)
    embedders = None
    if args.fake_embedder:
        from tessera.embedding.fake import HashEmbedder

        embedders = [HashEmbedder()]

    acme = open_tenant(args.config, args.tenant, user=args.user, embedders=embedders)
    hits = acme.search(args.query, k=3)
    for hit in hits:
        print(f"{hit.score:.4f}  {hit.doc_id}  {hit.citation.locator()}  {hit.citation}")
    if not hits:
        print("no results")
        return 0
    exact = acme.show(str(hits[0].citation))  # the source bytes the citation names
    print(f"\nshow {exact.citation}:\n{exact.text[:300]}")
    trace = acme.lineage(str(hits[0].citation)).as_dict()
    made = f"parser {trace['parser_version']}, chunker {trace['chunker_version']}, run {trace['run_id']}"
    print(f"\nlineage: {made}")

    from tessera.integrations.langchain import TesseraRetriever as LangChainRetriever

    docs = LangChainRetriever(reader=acme, k=3).invoke(args.query)
    print("\nLangChain:", [d.metadata["citation"] for d in docs])

    from tessera.integrations.llama_index import TesseraRetriever as LlamaIndexRetriever

    nodes = LlamaIndexRetriever(acme, k=3).retrieve(args.query)
    print("LlamaIndex:", [(n.node.metadata["citation"], round(n.score or 0.0, 4)) for n in nodes])
    return 0


if __name__ == "__main__":
    sys.exit(main())
