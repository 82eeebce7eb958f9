"""``tessera search`` and ``tessera show``: retrieval as a user, audited before any output.

``search --json`` prints the hits in the HTTP API's schema (``tessera.api_schema.HitModel``):
the same query by the same principal gives the same JSON from both. The human form ends with a
legend saying what the score is (in hybrid mode, reciprocal-rank fusion: about 0.016 to 0.033).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tessera.boundary import expand_option, int_option, time_option
from tessera.cli_model import make_embedders
from tessera.config import TesseraConfig
from tessera.errors import AccessDenied, ConfigError, InvalidArgument
from tessera.search import SearchHit, SearchOptions, principal_from_config, search, show
from tessera.search.citations import parse_citation
from tessera.search.principal import IdentityStore, Principal, read_identity_file
from tessera.search.query import MAX_K, check_query, for_tenant

SCORE_LEGEND = {
    "hybrid": "score: reciprocal-rank fusion, 1/(60+rank) summed over dense and lexical; higher is better",
    "dense": "score: cosine similarity of the query and the chunk embeddings; higher is better",
    "lexical": "score: BM25 full-text relevance of the query terms; higher is better",
}


def print_hits(hits: Sequence[SearchHit], mode: str = "hybrid") -> None:
    """The human form: rank, score, document#anchor, heading path, locator, snippet, citation."""
    if not hits:
        print("no results")
        return
    digits = 4 if mode == "hybrid" else 3  # fused scores lie close together, about 0.016 to 0.033
    for n, h in enumerate(hits, 1):
        crumb = " > ".join(h.heading_path) or "(top)"
        snippet = " ".join(h.text.split())[:160]
        print(f"{n}. {h.score:.{digits}f}  {h.doc_id}#{h.anchor}  [{crumb}]  {h.citation.locator()}")
        print(f"   {snippet}")
        print(f"   cite {h.citation}")
        for src in h.sources[1:]:  # the same content elsewhere (exact copies, folded near duplicates)
            c = src.citation
            print(f"   also ({src.relation}) {c.doc_id} {c.locator()}  cite {c}")
    print(f"({SCORE_LEGEND.get(mode, SCORE_LEGEND['hybrid'])})")


def principal_of(args: argparse.Namespace, cfg: TesseraConfig) -> Principal | None:
    """From ``--identity FILE`` (an API key, resolved server-side) or the operator's
    ``--tenant/--user`` (looked up in the tenant's user directory)."""
    if args.identity:
        if cfg.api_keys_file is None:
            raise ConfigError("api_keys_file", "--identity needs api_keys_file in the configuration")
        store = IdentityStore.load(cfg, cfg.api_keys_file)
        return store.principal(read_identity_file(Path(args.identity)))
    if not args.tenant or not args.user:
        raise InvalidArgument("--identity", "give --identity FILE, or --tenant and --user")
    return principal_from_config(cfg, args.tenant, args.user)


def cmd_search(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from tessera.search.audit import AuditLog, search_record

    check_query(args.query)
    opts = SearchOptions(
        k=args.k,
        mode=args.mode,
        as_of=args.as_of,
        model_version=args.model_version,
        expand=args.expand,
        token_budget=args.budget,
        include_flagged=args.include_flagged,
    )  # every option checked before anything is read
    principal = principal_of(args, cfg)
    embedders = make_embedders(cfg, args.fake_embedder)
    embedder = embedders[0] if principal is None else for_tenant(cfg.store.uri, principal.tenant, embedders)
    counter = None
    if args.expand or args.budget:
        from tessera.chunking.tokens import load_counter
        from tessera.embedding.model_files import model_dir

        counter = load_counter(model_dir(cfg.embedding))
    hits = search(cfg.store.uri, embedder, principal, args.query, options=opts, counter=counter)
    tenant, user = (principal.tenant, principal.user) if principal else (args.tenant, args.user)
    ids = [h.chunk_id for h in hits]
    record = search_record("cli", tenant, user, args.query, args.mode, args.k, ids, principal is not None)
    AuditLog(cfg.store.work_dir).append(record)  # before any output: AuditError fails the search
    if args.json:
        from tessera.api_schema import hits_json

        print(json.dumps(hits_json(list(hits)), indent=2, ensure_ascii=False))
    else:
        print_hits(hits, args.mode)
    return 0


def cmd_show(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from tessera.search.audit import AuditLog, fetch_record

    parse_citation(args.citation)  # a malformed citation is InvalidArgument: its syntax is public
    embedder = make_embedders(cfg, args.fake_embedder)[0]
    principal = principal_of(args, cfg)
    tenant, user = (principal.tenant, principal.user) if principal else (args.tenant, args.user)
    audit = AuditLog(cfg.store.work_dir)
    try:
        sl = show(cfg.store.uri, embedder, principal, args.citation)
    except AccessDenied:  # absent or unreadable: the same line either way
        audit.append(fetch_record("cli", "show", tenant, user, args.citation, None))
        print("tessera: not found", file=sys.stderr)
        return 1
    audit.append(fetch_record("cli", "show", tenant, user, args.citation, sl.citation.chunk_id))
    if args.json:
        from tessera.api_schema import ChunkResponse

        print(json.dumps(ChunkResponse.of(sl).model_dump(mode="json"), indent=2, ensure_ascii=False))
        return 0
    c = sl.citation
    print(f"# {c}  {c.uri}  revision {c.revision[:16]}  {c.locator()}  #{c.anchor}")
    print(sl.text)
    return 0


def _who(p: argparse.ArgumentParser) -> None:
    p.add_argument("--identity", help="identity file holding your api_key (resolved via api_keys_file)")
    p.add_argument("--tenant", help="operator mode: the tenant (with --user)")
    p.add_argument("--user", help="operator mode: a user of the tenant's directory")


def add_parsers(sub: Any) -> None:
    s = sub.add_parser("search", help="search as a user; filters apply before ranking")
    _who(s)
    s.add_argument("--k", type=int_option(1, MAX_K), default=5, help=f"how many hits (1-{MAX_K}; default 5)")
    s.add_argument(
        "--mode",
        choices=["dense", "lexical", "hybrid"],
        default="hybrid",
        help="ranking: dense vectors, lexical BM25, or both fused by reciprocal rank (default)",
    )
    s.add_argument("--expand", type=expand_option, help="parent or neighbors:N (small-to-big, re-authorized)")
    s.add_argument("--budget", type=int_option(1), help="token budget of the final context")
    s.add_argument("--include-flagged", action="store_true", help="also return chunks flagged at parse time")
    s.add_argument("--as-of", type=time_option, help="ISO-8601 time for effective dates (default: now, UTC)")
    s.add_argument("--model-version", help="refuse to answer unless the index uses this model version")
    s.add_argument("--json", action="store_true", help="print the hits as JSON (the HTTP API's hit schema)")
    s.add_argument("query", help="the question or keywords")
    s.set_defaults(func=cmd_search)
    sh = sub.add_parser("show", help="print the exact source slice of a citation (authorized)")
    _who(sh)
    sh.add_argument("citation", help="tessera:<tenant>/<chunk id>, or a chunk id")
    sh.add_argument(
        "--json", action="store_true", help="print the chunk as JSON (as GET /chunks/{id} answers)"
    )
    sh.set_defaults(func=cmd_show)
