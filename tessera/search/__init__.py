"""Retrieval: principals, fail-closed filters and queries."""

from tessera.search.principal import Principal, principal_from_config
from tessera.search.query import SearchHit, search

__all__ = ["Principal", "SearchHit", "principal_from_config", "search"]
