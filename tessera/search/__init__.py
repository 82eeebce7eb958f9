"""Retrieval: principals, fail-closed filters, hybrid queries, expansion and citations."""

from tessera.search.citations import Citation, SourceSlice, show
from tessera.search.principal import IdentityStore, Principal, access_filter, principal_from_config
from tessera.search.query import SearchHit, SearchOptions, search

__all__ = [
    "Citation",
    "IdentityStore",
    "Principal",
    "SearchHit",
    "SearchOptions",
    "SourceSlice",
    "access_filter",
    "principal_from_config",
    "search",
    "show",
]
