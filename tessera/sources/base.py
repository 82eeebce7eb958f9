"""The connector protocol. A listing is trusted only with a positive verdict.

``complete``: every document was enumerated. ``empty``: the source positively confirmed it
holds nothing (``proof`` says how). Anything else raises :class:`SourceError` and the run
stops before publish, so an outage can never delete an index.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from tessera.types import SourceDocument


class Verdict(StrEnum):
    COMPLETE = "complete"
    EMPTY = "empty"


@dataclass(frozen=True)
class Listing:
    tenant: str
    verdict: Verdict
    documents: tuple[SourceDocument, ...]
    proof: str

    def __post_init__(self) -> None:
        if self.verdict is Verdict.EMPTY and self.documents:
            raise ValueError("an EMPTY listing cannot hold documents")
        if self.verdict is Verdict.COMPLETE and not self.documents:
            raise ValueError("a COMPLETE listing with no documents must be EMPTY with proof")


class SourceConnector(Protocol):
    def list(self) -> Listing:
        """Enumerate the tenant's documents, or raise SourceError."""
        ...

    def read(self, doc: SourceDocument) -> bytes:
        """The raw bytes of one document at the listed revision."""
        ...
