"""An S3 bucket (or S3-compatible store) under a prefix. Only a proven root lists as empty.

The root is proven by ``head_bucket`` (prefix ``""``) or, under a prefix, by the zero-byte marker
``{prefix}.tessera-root`` that operators create when provisioning a tenant. The marker must
also appear in the listing itself (a list that omits it answered an empty or cut page), and an
empty bucket root proves its emptiness only with a listed marker. Pagination is
checked page by page; any error on any page, or any doubt about completeness, raises
:class:`SourceError` and nothing partial is returned.

Per-object access (:mod:`tessera.sources.s3_tags`): user metadata and object tags
``tessera-readers`` / ``tessera-groups`` replace the ACL, ``tessera-effective-from`` / ``-to``
replace the dates; whatever they leave unset comes from the nearest ``_access.yaml`` rule
(:mod:`tessera.sources.policy`), else the tenant default. Tags are fetched only for new or
changed objects and every ``tags_refresh_seconds``; a failed fetch quarantines the document
(``tag_error``). Keys that are not plain relative paths (``..``, ``//``, control characters)
are skipped by name, never turned into document ids. Invalid or unknown ``tessera-*`` metadata quarantines
the document (``bad_metadata``) instead of falling back to a broader ACL.

With a :class:`~tessera.sources.revision_cache.RevisionCache`, an object whose listed ETag,
Size and LastModified are unchanged takes its revision, LastModified and ``tessera-*`` metadata
from the cache and is not downloaded (a metadata edit is a copy, which changes LastModified).
A read is cached only when the object's ETag equals the listed one and its LastModified is
over ``settle_seconds`` older than the server's ``Date`` on the listing. Policies are read
every time.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.config import Config

from tessera.config import AccessRule, TenantConfig
from tessera.errors import ConfigError, PolicyError, SourceError
from tessera.parsing.base import parser_for_path
from tessera.sources.base import DocumentFailure, Listing, Verdict, document_at
from tessera.sources.policy import (
    PolicyTree,
    build_tree,
    parse_policy,
    policy_file_kind,
    refuse_lookalike,
)
from tessera.sources.revision_cache import CachedRevision, CacheSession, RevisionCache, begin
from tessera.sources.s3_pages import S3_ERRORS, Listed, Pages, error_code, list_pages, not_found
from tessera.sources.s3_tags import METADATA_SOURCE as METADATA_SOURCE
from tessera.sources.s3_tags import (
    TAG_PREFIX,
    TAGS_REFRESH_S,
    TagError,
    fetch_tags,
    object_access,
    tags_stale,
)
from tessera.types import ALWAYS, SourceDocument, sha256_hex

log = logging.getLogger(__name__)
ROOT_MARKER = ".tessera-root"
_UNSAFE = re.compile(r"(^|/)\.{1,2}(/|$)|//|^/|\\|[\x00-\x1f\x7f]")


def _unsafe(rel: str) -> bool:
    """A key that is not a plain relative path: ``..`` or ``.`` segments, empty segments,
    a leading slash, a backslash, or control characters."""
    return _UNSAFE.search(rel) is not None


_ERRORS = S3_ERRORS
_code = error_code
_not_found = not_found


class S3Connector:
    def __init__(
        self,
        tenant: str,
        bucket: str,
        prefix: str,
        default_access: AccessRule,
        client: Any,
        page_size: int = 1000,
        cache: RevisionCache | None = None,
        tags: bool = True,
        tags_refresh_s: float = TAGS_REFRESH_S,
    ) -> None:
        if not 1 <= page_size <= 1000:
            raise ValueError(f"page_size must be in [1, 1000], got {page_size}")
        self.tenant = tenant
        self.bucket = bucket
        # A prefix names a folder: "acme" must not also match "acme-other/...".
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self.default_access = default_access
        self.client = client
        self.page_size = page_size
        self.cache = cache
        self.tags = tags
        self.tags_refresh_s = tags_refresh_s

    @classmethod
    def from_config(cls, t: TenantConfig, cache: RevisionCache | None = None) -> S3Connector:
        src = t.source
        config = Config(
            connect_timeout=src.timeout_seconds,
            read_timeout=src.timeout_seconds,
            retries={"max_attempts": 2, "mode": "standard"},
        )
        client = boto3.client("s3", endpoint_url=src.endpoint_url, region_name=src.region, config=config)
        return cls(
            t.tenant_id,
            src.bucket,
            src.prefix,
            t.default_access,
            client,
            cache=cache,
            tags=src.tags,
            tags_refresh_s=src.tags_refresh_seconds,
        )

    def _where(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key or self.prefix}"

    def _prove_root(self) -> str:
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except _ERRORS as e:
            what = "does not exist" if _not_found(e) else f"cannot be reached ({_code(e)}: {e})"
            raise SourceError(f"bucket {self.bucket!r} {what}; listing is not trusted") from e
        proof = f"bucket {self.bucket} exists (head_bucket 200)"
        if not self.prefix:
            return proof + "; the bucket is the root"
        marker = self.prefix + ROOT_MARKER
        try:
            self.client.head_object(Bucket=self.bucket, Key=marker)
        except _ERRORS as e:
            if _not_found(e):
                raise SourceError(
                    f"root marker {self._where(marker)} is missing: the prefix is not provisioned "
                    "(or was removed), so an empty listing cannot be trusted"
                ) from e
            raise SourceError(f"cannot check root marker {self._where(marker)}: {_code(e)}: {e}") from e
        return f"{proof}; prefix {self.prefix!r} root marker present"

    def _get(self, key: str) -> tuple[bytes, dict[str, Any]]:
        response = self.client.get_object(Bucket=self.bucket, Key=key)
        raw: bytes = response["Body"].read()
        return raw, response

    def _load_policies(self, keys: list[str]) -> PolicyTree:
        """Every ``_access.yaml`` under the prefix (nested ones govern their sub-prefix)."""
        files: dict[str, bytes] = {}
        for key in keys:
            rel = key[len(self.prefix) :]
            kind = policy_file_kind(rel)
            if kind == "lookalike":
                refuse_lookalike(rel, self._where(key))
            if kind != "policy" or _unsafe(rel):
                continue
            try:
                files[rel], _ = self._get(key)
            except _ERRORS as e:
                raise PolicyError(
                    self._where(key), f"cannot read access policy {self._where(key)}: {_code(e)}: {e}"
                ) from e
        for rel, raw in files.items():  # name the object in the error, whatever the rule
            try:
                parse_policy(raw, self.default_access, self._where(self.prefix + rel))
            except PolicyError as e:
                where = self._where(self.prefix + rel)
                raise PolicyError(e.key, f"access policy {where} is invalid: {e}") from e
        return build_tree(self.default_access, files, self._where().rstrip("/"))

    def _revision(
        self, key: str, rel: str, listed: Listed, now: float, session: CacheSession
    ) -> CachedRevision | DocumentFailure:
        """What a GetObject of ``key`` establishes: from the cache if its listed signature is
        unchanged, else downloaded (and cached when the read is of the listed, settled object)."""
        sig = listed.signature
        hit = session.get(key, sig)
        if hit is not None and not (self.tags and tags_stale(hit.metadata, time.time(), self.tags_refresh_s)):
            return hit
        if hit is not None:  # unchanged, but its tags are due (a tag edit keeps ETag and LastModified)
            try:
                tags = fetch_tags(self.client, self.bucket, key, time.time())
            except TagError as e:
                return DocumentFailure(rel, "tag_error", f"{self._where(key)}: {e}")
            kept = {k: v for k, v in hit.metadata.items() if not k.startswith(TAG_PREFIX)}
            entry = replace(hit, metadata={**kept, **tags})
            session.put(key, entry)
            return entry
        try:
            raw, response = self._get(key)
        except _ERRORS as e:
            if _not_found(e):  # deleted between list and get: quarantine, never delete
                return DocumentFailure(rel, "download_error", f"{self._where(key)}: {e}")
            raise SourceError(f"cannot download {self._where(key)}: {_code(e)}: {e}") from e
        meta = {k: v for k, v in (response.get("Metadata") or {}).items() if k.lower().startswith("tessera-")}
        if self.tags:
            try:
                meta.update(fetch_tags(self.client, self.bucket, key, time.time()))
            except TagError as e:  # never served with a broader ACL than the tags may set
                return DocumentFailure(rel, "tag_error", f"{self._where(key)}: {e}")
        modified = response.get("LastModified")
        when = modified.astimezone(UTC).isoformat() if isinstance(modified, datetime) else ""
        entry = CachedRevision(sig, sha256_hex(raw), len(raw), when, meta)
        changed = modified.timestamp() if isinstance(modified, datetime) else float("inf")
        same = str(response.get("ETag") or "").strip('"') == listed.etag.strip('"')  # the listed object
        if same and session.settled(changed, now):
            session.put(key, entry)
        return entry

    def _document(
        self, key: str, rel: str, policy: PolicyTree, pages: Pages, session: CacheSession
    ) -> SourceDocument | DocumentFailure:
        entry = self._revision(key, rel, pages.objects[key], pages.server_time, session)
        if isinstance(entry, DocumentFailure):
            return entry
        try:
            access, start, end, source = object_access(rel, entry.metadata, policy, self.tags)
        except ConfigError as e:
            return DocumentFailure(rel, "bad_metadata", f"{self._where(key)}: {e}")
        when = datetime.fromisoformat(entry.modified) if entry.modified else ALWAYS
        where = self._where(key)
        return document_at(
            self.tenant, rel, entry.revision, entry.size, where, access, (start, end), when, source
        )

    def _indexable(self, key: str, skipped: list[tuple[str, str]]) -> str | None:
        rel = key[len(self.prefix) :]
        if not rel or key.endswith("/") or policy_file_kind(rel):
            return None
        if _unsafe(rel):  # "..", "./", "//", a backslash or a control character: never a document id
            skipped.append((rel.encode("unicode_escape").decode("ascii"), "unsafe_key"))
            return None
        if any(part.startswith(".") for part in rel.split("/")) or parser_for_path(rel) is None:
            return None  # hidden (the root marker too) or no parser
        return rel

    def list(self) -> Listing:
        proof = self._prove_root()
        listed = list_pages(self.client, self.bucket, self.prefix, self.page_size, self._where())
        keys, pages = list(listed.keys), listed.pages
        marker = self.prefix + ROOT_MARKER
        if self.prefix and marker not in keys:  # it lies under the prefix: a complete list shows it
            raise SourceError(
                f"listing {self._where()} omitted the root marker {ROOT_MARKER} that head_object found: "
                "the listing is incomplete (an empty or cut page answered 200), so it is not trusted"
            )
        policy = self._load_policies(keys)
        skipped: list[tuple[str, str]] = []
        entries = [(k, rel) for k in keys if (rel := self._indexable(k, skipped)) is not None]
        if skipped:
            log.warning("s3 source %s: skipped %d unsafe keys", self._where(), len(skipped))
        session = begin(self.cache, f"{self.client.meta.endpoint_url} {self._where()}")
        docs: list[SourceDocument] = []
        failed: list[DocumentFailure] = []
        for key, rel in entries:
            result = self._document(key, rel, policy, listed, session)
            if isinstance(result, DocumentFailure):
                failed.append(result)
            else:
                docs.append(result)
        proof += (
            f"; {pages} page{'s' if pages != 1 else ''} listed, {len(keys)} objects, IsTruncated=false; "
            f"{len(docs)} documents, {len(failed)} failed, {len(keys) - len(entries)} other objects skipped"
            + (f" ({len(skipped)} unsafe keys)" if skipped else "")
        )
        extra = (policy.files, tuple(skipped))
        if not docs and not failed:  # a bucket root proves emptiness only with its marker listed
            listing = Listing(self.tenant, Verdict.EMPTY, (), proof, (), *extra, marker in keys)
        else:
            listing = Listing(self.tenant, Verdict.COMPLETE, tuple(docs), proof, tuple(failed), *extra)
        session.commit()
        return listing

    def read(self, doc: SourceDocument) -> bytes:
        key = self.prefix + doc.doc_id
        try:
            raw, _ = self._get(key)
        except _ERRORS as e:
            raise SourceError(f"cannot download {self._where(key)}: {_code(e)}: {e}") from e
        if sha256_hex(raw) != doc.revision:
            raise SourceError(f"{self._where(key)} changed during the run (revision mismatch)")
        return raw
