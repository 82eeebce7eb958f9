"""Source connectors: a listing of SourceDocuments that ends with a verdict."""

from tessera.sources.base import DocumentFailure, Listing, SourceConnector, Verdict
from tessera.sources.folder import FolderConnector

__all__ = ["DocumentFailure", "FolderConnector", "Listing", "SourceConnector", "Verdict"]
