"""Per-object access from S3 object tags, next to user metadata.

Tags ``tessera-readers`` / ``tessera-groups`` (names separated by spaces or commas: S3 tag
values may not hold commas, S3-compatible stores may), ``tessera-effective-from`` /
``tessera-effective-to`` (ISO-8601) mean what the metadata keys of the same names mean. A key
set in both the metadata and the tags must say the same thing there, or the document is
quarantined (``bad_metadata``): two writers disagreeing is never resolved to the broader.

**Cost.** Tags come from ``GetObjectTagging``, called only when the object is read (new or
changed: the revision cache misses) and, because a tag edit changes neither the ETag nor
LastModified, again for an unchanged object once its cached tags are ``tags_refresh_seconds``
old (default a day): a listing costs O(changes + objects / refresh period), never a call per
object per listing. The bound from a tag edit on an unchanged object to its effect is
``tags_refresh_seconds`` plus one run (a metadata edit is a copy: seen at the next listing).

**Failure.** A tag fetch that fails (access denied, throttled, unreachable) quarantines that
document (``tag_error``): its published chunks keep their previous ACL, nothing is deleted,
and nothing is widened to the policy or the tenant default.

Cached with the revision (``CachedRevision.metadata``): tag ``K`` as ``tag:K``, the fetch time
as ``tags-at`` (Unix seconds).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from tessera.config import AccessRule, parse_access_rule
from tessera.errors import ConfigError
from tessera.sources.policy import PolicyTree, _date

TAG_PREFIX = "tag:"
TAGS_AT = "tags-at"
TAGS_SOURCE = "s3-tags"
METADATA_SOURCE = "s3-metadata"
TAGS_REFRESH_S = 86_400.0
_ACL_KEYS = ("tessera-readers", "tessera-groups")
META_KEYS = {"tessera-readers", "tessera-groups", "tessera-effective-from", "tessera-effective-to"}


class TagError(Exception):
    """GetObjectTagging failed for one object (the caller quarantines it)."""


def fetch_tags(client: Any, bucket: str, key: str, now: float) -> dict[str, str]:
    """The object's ``tessera-*`` tags, as cached (``tag:`` keys and ``tags-at``)."""
    from tessera.sources.s3_pages import S3_ERRORS, error_code

    try:
        response = client.get_object_tagging(Bucket=bucket, Key=key)
    except S3_ERRORS as e:
        raise TagError(f"GetObjectTagging failed: {error_code(e)}: {e}") from e
    tags = {
        f"{TAG_PREFIX}{t['Key'].lower()}": str(t.get("Value", ""))
        for t in response.get("TagSet") or []
        if str(t.get("Key", "")).lower().startswith("tessera-")
    }
    return {**tags, TAGS_AT: f"{now:.3f}"}


def tags_stale(metadata: dict[str, str], now: float, refresh_s: float) -> bool:
    """Whether cached tags must be fetched again (never fetched, or ``refresh_s`` old)."""
    try:
        return now - float(metadata[TAGS_AT]) >= refresh_s
    except (KeyError, ValueError):
        return True


def _names(value: str, tag: bool) -> str:
    parts = re.split(r"[,\s]+" if tag else r",", value)
    return ",".join(sorted({p.strip() for p in parts if p.strip()}))


def merged(metadata: dict[str, str]) -> tuple[dict[str, str], str]:
    """The ``tessera-*`` settings of metadata and tags together (names comma-joined), and
    which of them set the ACL (``s3-metadata``, ``s3-tags`` or ``""``). ConfigError on a key
    the two set differently."""
    meta = {k.lower(): v for k, v in metadata.items() if k.lower().startswith("tessera-")}
    tags = {k[len(TAG_PREFIX) :]: v for k, v in metadata.items() if k.startswith(TAG_PREFIX)}
    out = {k: _names(v, False) if k in _ACL_KEYS else v.strip() for k, v in meta.items()}
    for k, v in tags.items():
        value = _names(v, True) if k in _ACL_KEYS else v.strip()
        if k in out and out[k] != value:
            raise ConfigError(k, "the object's metadata and tags disagree (fail closed)")
        out[k] = value
    if any(k in meta for k in _ACL_KEYS):
        return out, METADATA_SOURCE
    return out, TAGS_SOURCE if any(k in tags for k in _ACL_KEYS) else ""


def object_access(
    rel: str, metadata: dict[str, str], policy: PolicyTree, tags: bool = True
) -> tuple[AccessRule, datetime, datetime, str]:
    """ACL, dates and ``acl_source`` of one object: what its metadata and tags set, the rest
    from the nearest matching ``_access.yaml`` rule, else the tenant default. ConfigError
    (the caller quarantines the document) on an unknown, empty or conflicting setting."""
    d = policy.decide(rel)
    access, start, end, source = d.access, d.effective_from, d.effective_to, d.source
    if not tags:
        metadata = {k: v for k, v in metadata.items() if not k.startswith(TAG_PREFIX)}
    ours, setter = merged(metadata)
    unknown = sorted(set(ours) - META_KEYS)
    if unknown:
        raise ConfigError(unknown[0], "unknown tessera metadata key")
    if setter:
        names = {k: [n for n in ours[f"tessera-{k}"].split(",") if n] for k in ("readers", "groups")
                 if f"tessera-{k}" in ours}  # fmt: skip
        access = parse_access_rule(names, "tessera")
        if not access.readers and not access.groups:
            raise ConfigError("tessera-readers", "names no reader or group (fail closed)")
        source = setter
    start = _date(ours.get("tessera-effective-from"), "tessera-effective-from", start)
    end = _date(ours.get("tessera-effective-to"), "tessera-effective-to", end)
    if end <= start:
        raise ConfigError("tessera-effective-to", "must be after tessera-effective-from")
    return access, start, end, source
