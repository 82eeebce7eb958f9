"""Per-document access and effective dates from a source's ``_access.yaml`` files.

Fail closed, always:

* a policy file that is empty, unreadable, not UTF-8 or invalid raises :class:`PolicyError`
  naming it, and the listing fails. ``documents: []`` is how a file says "no rules here";
* a file that looks like a policy but is not named exactly ``_access.yaml`` (``_access.yml``,
  ``_ACCESS.yaml``) is refused: silently ignoring it would give its documents the default;
* a document whose ACL came from a policy file that has since disappeared is caught by the
  listing step (:func:`tessera.listing.diff`), which knows what the last publication used.

**Matching** uses exactly the rules that select files: names are compared without case and in
Unicode NFC (a rule for ``café.md`` covers its NFD twin), and
every extension of a content type stands for the others (``*.md`` matches ``Notes.MARKDOWN``),
because file selection is case-insensitive and by content type too. ``*`` crosses folders.

**Nested files.** ``dir/_access.yaml`` governs the documents below ``dir/``, its globs
relative to ``dir/``. The nearest policy file with a matching rule decides; inside one file
the first matching rule wins; a document no rule matches gets the tenant default. A rule
that sets only dates keeps the tenant default ACL.

**Precedence with the source's own permissions** (one test each in
``tests/sources/test_source_permissions.py``):

* S3: the object's ``tessera-*`` metadata or tags > the nearest matching rule > the tenant
  default (the object's writer states its ACL explicitly; :mod:`tessera.sources.s3_tags`);
* folder with ``posix_access``: a rule that sets readers or groups > the file's POSIX owner and
  group mapping > the tenant default (ownership is incidental: it never widens a document a
  policy restricts; :mod:`tessera.sources.posix`);
* dates always come from the metadata or tags if set, else from the rule, else unbounded.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cached_property
from pathlib import Path

import yaml

from tessera.config import AccessRule, parse_access_rule
from tessera.errors import ConfigError, PolicyError
from tessera.parsing.base import canonical_suffix, path_suffix
from tessera.types import ALWAYS, NEVER

POLICY_FILE = "_access.yaml"
DEFAULT_SOURCE = "default"
"""``acl_source`` of a document no policy rule matched."""


def _canonical(name: str) -> str:
    """A path or glob as matching sees it: case folded, extension canonical."""
    suffix = path_suffix(name)
    canon = canonical_suffix(suffix) if suffix and "*" not in suffix and "?" not in suffix else None
    if canon is not None:
        name = name[: -len(suffix)] + canon
    return unicodedata.normalize("NFC", name).casefold()


def policy_file_kind(rel: str) -> str:
    """``policy`` for a policy file, ``lookalike`` for a misnamed one, else ``""``."""
    base = rel.rsplit("/", 1)[-1]
    if base == POLICY_FILE:
        return "policy"
    if base.casefold() in {"_access.yaml", "_access.yml"}:
        return "lookalike"
    return ""


def refuse_lookalike(rel: str, where: str) -> None:
    raise PolicyError(
        where,
        f"{rel!r} looks like an access policy but is not named {POLICY_FILE!r}; it would be "
        "ignored and its documents would get the tenant default, so the listing fails (rename it)",
    )


@dataclass(frozen=True)
class PolicyRule:
    match: str
    access: AccessRule | None
    effective_from: datetime
    effective_to: datetime

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """The glob as ``fnmatch.fnmatchcase`` compiles it, on the canonical form, built once."""
        return re.compile(fnmatch.translate(_canonical(self.match)))

    def matches(self, rel_path: str) -> bool:
        return self.pattern.match(_canonical(rel_path)) is not None


@dataclass(frozen=True)
class Policy:
    default: AccessRule
    rules: tuple[PolicyRule, ...]

    def rule_for(self, rel_path: str) -> PolicyRule | None:
        if not self.rules:
            return None
        name = _canonical(rel_path)  # once per document, not once per rule
        return next((rule for rule in self.rules if rule.pattern.match(name) is not None), None)

    def resolve(self, rel_path: str) -> tuple[AccessRule, datetime, datetime]:
        """First matching rule wins (``*`` also crosses folders); else the tenant default."""
        rule = self.rule_for(rel_path)
        if rule is None:
            return self.default, ALWAYS, NEVER
        return rule.access or self.default, rule.effective_from, rule.effective_to


@dataclass(frozen=True)
class Decision:
    """What governs one document, and which file said so (``acl_source``)."""

    access: AccessRule
    effective_from: datetime
    effective_to: datetime
    source: str
    default_acl: bool = False
    """No rule set the ACL (none matched, or the one that did set only dates): the tenant
    default, which a source's own permissions (POSIX owners) may replace."""


@dataclass(frozen=True)
class PolicyTree:
    """Every policy file of a source, by folder (``""`` is the root)."""

    default: AccessRule
    policies: Mapping[str, Policy]

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted(policy_path(folder) for folder in self.policies))

    def decide(self, rel_path: str) -> Decision:
        parts = rel_path.split("/")[:-1]
        for depth in range(len(parts), -1, -1):
            folder = "/".join(parts[:depth])
            policy = self.policies.get(folder)
            if policy is None:
                continue
            rule = policy.rule_for(rel_path[len(folder) + 1 :] if folder else rel_path)
            if rule is not None:
                return Decision(
                    rule.access or self.default,
                    rule.effective_from,
                    rule.effective_to,
                    policy_path(folder),
                    rule.access is None,
                )
        return Decision(self.default, ALWAYS, NEVER, DEFAULT_SOURCE, True)


def policy_path(folder: str) -> str:
    return f"{folder}/{POLICY_FILE}" if folder else POLICY_FILE


def policy_folder(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def _date(value: object, key: str, default: datetime) -> datetime:
    if value is None:
        return default
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):  # unquoted YAML dates load as date: midnight UTC
        dt = datetime(value.year, value.month, value.day, tzinfo=UTC)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as e:
            raise ConfigError(key, f"not an ISO-8601 date: {value!r}") from e
    else:
        raise ConfigError(key, f"expected an ISO-8601 string, got {value!r}")
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def load_policy(root: Path, default: AccessRule) -> Policy:
    """The ``_access.yaml`` at the top of a folder (tenant default only when there is none).

    The file is read without following links (:mod:`tessera.sources.confine`)."""
    from tessera.errors import SourceError
    from tessera.sources.confine import read_confined

    path = root / POLICY_FILE
    if not path.exists() and not path.is_symlink():
        return Policy(default, ())
    try:
        raw, _ = read_confined(root, POLICY_FILE)
    except SourceError as e:
        raise PolicyError(str(path), f"cannot read access policy: {e}") from e
    return parse_policy(raw, default, str(path))


def parse_policy(raw: bytes, default: AccessRule, name: str = POLICY_FILE) -> Policy:
    """Parse policy bytes (from a folder, an S3 object or a git blob); ``name`` labels errors."""
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as e:
        raise PolicyError(name, f"cannot read access policy: {e}") from e
    if data is None:
        raise PolicyError(
            name,
            "the access policy is empty; an empty policy would give every document the tenant "
            "default (fail closed). Write 'documents: []' to state that no rule applies",
        )
    if not isinstance(data, dict) or set(data) != {"documents"} or not isinstance(data["documents"], list):
        raise PolicyError(name, "expected a mapping with one key, 'documents', holding a list of rules")
    try:
        return Policy(default, tuple(_rules(data["documents"], name.rsplit("/", 1)[-1])))
    except PolicyError:
        raise
    except ConfigError as e:
        raise PolicyError(e.key, str(e).split(": ", 1)[-1]) from e


def _rules(items: list[object], label: str) -> list[PolicyRule]:
    rules: list[PolicyRule] = []
    for k, item in enumerate(items):
        key = f"{label}.documents[{k}]"
        if not isinstance(item, dict) or not isinstance(item.get("match"), str) or not item["match"]:
            raise PolicyError(f"{key}.match", "each rule needs a 'match' glob")
        unknown = set(item) - {"match", "readers", "groups", "effective_from", "effective_to"}
        if unknown:
            raise PolicyError(f"{key}.{sorted(unknown)[0]}", "unknown key")
        has_acl = "readers" in item or "groups" in item
        access = parse_access_rule({k2: item[k2] for k2 in ("readers", "groups") if k2 in item}, key)
        if has_acl and not access.readers and not access.groups:
            raise PolicyError(key, "an access rule must name at least one reader or group (fail closed)")
        start = _date(item.get("effective_from"), f"{key}.effective_from", ALWAYS)
        end = _date(item.get("effective_to"), f"{key}.effective_to", NEVER)
        if end <= start:
            raise PolicyError(f"{key}.effective_to", "must be after effective_from")
        rules.append(PolicyRule(item["match"], access if has_acl else None, start, end))
    return rules


def build_tree(default: AccessRule, files: Mapping[str, bytes], label: str) -> PolicyTree:
    """A tree from policy file bytes by relative path (``a/_access.yaml``); ``label`` prefixes
    the names in errors (the folder, bucket or commit)."""
    policies = {
        policy_folder(rel): parse_policy(raw, default, f"{label}/{rel}" if label else rel)
        for rel, raw in files.items()
    }
    return PolicyTree(default, policies)
