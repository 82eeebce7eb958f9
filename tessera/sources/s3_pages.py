"""Listing every key under an S3 prefix, page by page, with each object's cheap signature.

Any error on any page, or any doubt about completeness (a KeyCount that disagrees with the
page, a truncated page without a token, a repeated token, overlapping pages, a key outside
the prefix), raises :class:`SourceError`: nothing partial is returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from tessera.errors import SourceError

S3_ERRORS = (ClientError, BotoCoreError, OSError)


def error_code(e: Exception) -> str:
    if isinstance(e, ClientError):
        err = e.response.get("Error", {})
        return str(err.get("Code") or e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?"))
    return type(e).__name__


def not_found(e: Exception) -> bool:
    return isinstance(e, ClientError) and error_code(e) in {"404", "NoSuchKey", "NotFound"}


@dataclass(frozen=True)
class Listed:
    """One object as ListObjectsV2 showed it: ``signature`` (ETag, Size, LastModified and a
    VersionId where the store lists one) for the revision cache, and the ETag alone."""

    signature: str
    etag: str


@dataclass(frozen=True)
class Pages:
    """Every key under the prefix in listing order, and what the listing said of each.
    ``server_time``: the server's ``Date`` on the first page (0.0 when it sent none)."""

    keys: tuple[str, ...]
    objects: Mapping[str, Listed]
    pages: int
    server_time: float


def _listed(obj: dict[str, Any]) -> Listed:
    modified = obj.get("LastModified")
    when = modified.astimezone(UTC).isoformat() if isinstance(modified, datetime) else ""
    etag = str(obj.get("ETag") or "")
    return Listed(json.dumps([etag, obj.get("Size"), when, obj.get("VersionId") or ""]), etag)


def _server_time(page: dict[str, Any]) -> float:
    date = page.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    try:
        return parsedate_to_datetime(date).timestamp() if date else 0.0
    except (TypeError, ValueError):  # an unparsable Date: nothing counts as settled
        return 0.0


def list_pages(client: Any, bucket: str, prefix: str, page_size: int, where: str) -> Pages:
    """Every key under ``prefix``, all pages, or SourceError (``where`` names the prefix)."""
    keys: list[str] = []
    objects: dict[str, Listed] = {}
    seen_tokens: set[str] = set()
    token: str | None = None
    pages = 0
    server_time = 0.0
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": page_size}
        if token is not None:
            kwargs["ContinuationToken"] = token
        try:
            page = client.list_objects_v2(**kwargs)
        except S3_ERRORS as e:
            raise SourceError(f"listing {where} failed on page {pages + 1}: {error_code(e)}: {e}") from e
        pages += 1
        if pages == 1:
            server_time = _server_time(page)
        contents = page.get("Contents") or []
        count = page.get("KeyCount")
        if count is not None and count != len(contents):
            raise SourceError(
                f"pagination cut in {where}: page {pages} says KeyCount={count} "
                f"but holds {len(contents)} objects"
            )
        for obj in contents:
            key = obj["Key"]
            if not isinstance(key, str) or not key.startswith(prefix):
                raise SourceError(f"listing {where} returned a key outside the prefix: {key!r}")
            keys.append(key)
            objects[key] = _listed(obj)
        if not page.get("IsTruncated"):
            break
        token = page.get("NextContinuationToken")
        if not token:
            raise SourceError(
                f"pagination cut in {where}: page {pages} is truncated but carries no NextContinuationToken"
            )
        if token in seen_tokens:
            raise SourceError(f"pagination cut in {where}: page {pages} repeats a token")
        seen_tokens.add(token)
    if len(set(keys)) != len(keys):
        raise SourceError(f"pagination cut in {where}: pages overlap (a key listed twice)")
    return Pages(tuple(keys), objects, pages, server_time)
