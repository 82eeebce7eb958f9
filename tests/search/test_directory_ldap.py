"""The LDAP directory against a real slapd on loopback: what a refresh reads, and the attacks
(filter injection through a name, a bad bind password, a directory that never answers, a
directory that suddenly loses most users, another tenant's groups)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tessera.config import DirectoryConfig, TesseraConfig, load_config
from tessera.search.directory import (
    DirectoryAuthError,
    DirectoryError,
    DirectorySuspicious,
    DirectoryUnavailable,
    directory_groups,
    refresh_tenant,
)
from tessera.search.directory.ldap import LdapDirectory, user_filter
from tessera.search.directory.membership import load_membership, membership_path
from tessera.search.principal import principal_from_config
from tests.ldapserver import GROUPS, ROOT_DN, ROOT_PW, SUFFIX, USERS, LdapServer, ldap_server


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[LdapServer]:
    for server in ldap_server(tmp_path / "slapd"):
        server.seed(["alice", "bob", "carol", "dave"], {"finance": ["alice"], "staff": ["alice", "bob"]})
        yield server


def directory(url: str, **kw: Any) -> dict[str, Any]:
    base = {"kind": "ldap", "url": url, "bind_dn": ROOT_DN, "password_env": "TESSERA_TEST_LDAP_PW"}
    return {**base, "user_base": USERS, "group_base": GROUPS, "refresh_seconds": 1, "grace_seconds": 2, **kw}


def config(
    root: Path, tenants: dict[str, dict[str, Any] | None], users: dict[str, list[str]] | None = None
) -> TesseraConfig:
    data = {
        "store": {"uri": "index", "work_dir": "work"},
        "embedding": {"model": "m", "package": "p"},
        "tenants": {
            t: {
                "source": {"kind": "folder", "path": "docs"},
                "access": {
                    "default": {"groups": ["staff"]},
                    "users": {u: {"groups": g} for u, g in (users or {}).items()},
                },
                **({"directory": d} if d else {}),
            }
            for t, d in tenants.items()
        },
    }
    (root / "tessera.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config(root / "tessera.yaml")


@pytest.fixture(autouse=True)
def password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESSERA_TEST_LDAP_PW", ROOT_PW)


def test_memberships_read_users_and_groups_with_paging(slapd: LdapServer) -> None:
    cfg = load_directory(slapd.url, page_size=1)  # one entry a page: every page must be read
    snap = LdapDirectory(cfg).memberships()
    assert dict(snap.users) == {
        "alice": ("finance", "staff"), "bob": ("staff",), "carol": (), "dave": ()
    }  # fmt: skip
    assert abs(snap.fetched_at - time.time()) < 30


def test_member_uid_groups(slapd: LdapServer) -> None:
    with slapd.admin() as c:
        c.add(f"ou=posix,{SUFFIX}", ["organizationalUnit"], {"ou": "posix"})
        c.add(
            f"cn=ops,ou=posix,{SUFFIX}",
            ["posixGroup"],
            {"cn": "ops", "gidNumber": 5000, "memberUid": ["carol", "ghost"]},
        )
    cfg = load_directory(
        slapd.url,
        group_base=f"ou=posix,{SUFFIX}",
        group_filter="(objectClass=posixGroup)",
        member_attribute="memberUid",
    )
    users = LdapDirectory(cfg).memberships().users
    assert users["carol"] == ("ops",) and "ghost" not in users  # a member who is no user gets nothing


def load_directory(url: str, **kw: Any) -> DirectoryConfig:
    from tessera.config_directory import parse_directory

    parsed = parse_directory(directory(url, **kw), "directory", Path("."))
    assert parsed is not None
    return parsed


def test_filter_injection_through_a_user_name(slapd: LdapServer, tmp_path: Path) -> None:
    """A name full of filter syntax is a literal: it matches no user, gets no group."""
    ldap = LdapDirectory(load_directory(slapd.url))
    assert ldap.groups_of("alice") == ("finance", "staff")
    for evil in ["*", "alice)(uid=*", "*)(|(uid=*", "alice)(cn=finance", "al*", "\\2a", "alice\x00"]:
        assert ldap.groups_of(evil) is None, evil
        flt = user_filter(ldap.cfg, evil)  # the template's three parentheses, no wildcard
        assert flt.count("(") == flt.count(")") == 3 and "*" not in flt and "\x00" not in flt
    cfg = config(tmp_path, {"acme": directory(slapd.url)})
    for evil in ["*", "alice)(uid=*"]:
        assert directory_groups(cfg, "acme", evil) is None
        assert principal_from_config(cfg, "acme", evil) is None
    assert principal_from_config(cfg, "acme", "alice") is not None


def test_bad_bind_password_is_typed_and_fails_closed(
    slapd: LdapServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESSERA_TEST_LDAP_PW", "wrong")
    cfg = config(tmp_path, {"acme": directory(slapd.url)}, users={"ops": ["finance"]})
    with pytest.raises(DirectoryAuthError, match="refused the bind") as e:
        refresh_tenant(cfg, "acme")
    assert "wrong" not in str(e.value)  # the password is never in a message
    with pytest.raises(DirectoryUnavailable, match="no membership has been read yet"):
        principal_from_config(cfg, "acme", "ops")  # not even the configured groups


def test_a_directory_that_never_answers_times_out(tmp_path: Path) -> None:
    """A listener that accepts and says nothing: the refresh gives up within its timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"ldap://127.0.0.1:{silent.getsockname()[1]}"
        cfg = config(tmp_path, {"acme": directory(url, timeout_seconds=1)})
        t0 = time.monotonic()
        with pytest.raises(DirectoryError):
            refresh_tenant(cfg, "acme")
        assert time.monotonic() - t0 < 10
        with pytest.raises(DirectoryUnavailable):
            directory_groups(cfg, "acme", "alice")


def test_a_directory_that_loses_most_users_is_refused(slapd: LdapServer, tmp_path: Path) -> None:
    cfg = config(tmp_path, {"acme": directory(slapd.url, refresh_seconds=1, grace_seconds=60)})
    refresh_tenant(cfg, "acme")
    for uid in ("bob", "carol", "dave"):
        slapd.delete_user(uid)
    with pytest.raises(DirectorySuspicious, match="75% lost"):
        refresh_tenant(cfg, "acme")
    dcfg = cfg.tenants["acme"].directory
    assert dcfg is not None
    kept = load_membership(membership_path(cfg.store.work_dir, "acme"), "acme", dcfg)
    assert kept is not None and set(kept.users) == {"alice", "bob", "carol", "dave"}
    # one user leaving is normal
    slapd.add_user("bob"), slapd.add_user("carol")
    refresh_tenant(cfg, "acme")


def test_groups_never_cross_tenants(slapd: LdapServer, tmp_path: Path) -> None:
    """Each tenant reads its own subtree into its own file; a file copied from another tenant
    (or written for another directory) is ignored, never trusted."""
    with slapd.admin() as c:
        c.add(f"ou=globex,{SUFFIX}", ["organizationalUnit"], {"ou": "globex"})
        c.add(
            f"cn=interns,ou=globex,{SUFFIX}",
            ["groupOfNames"],
            {"cn": "interns", "member": [f"uid=bob,{USERS}"]},
        )
    cfg = config(
        tmp_path,
        {
            "acme": directory(slapd.url),
            "globex": directory(slapd.url, group_base=f"ou=globex,{SUFFIX}"),
            "initech": None,
        },
        users={"bob": ["staff"]},
    )
    acme = principal_from_config(cfg, "acme", "alice")
    assert acme is not None and acme.groups == ("finance", "staff")
    globex = principal_from_config(cfg, "globex", "alice")
    assert globex is not None and globex.groups == ()  # known to the directory; no acme groups
    bob = principal_from_config(cfg, "globex", "bob")
    assert bob is not None and bob.groups == ("interns", "staff")
    initech = principal_from_config(cfg, "initech", "bob")
    assert initech is not None and initech.groups == ("staff",)  # no directory: config only
    assert principal_from_config(cfg, "initech", "alice") is None
    # acme's membership copied over globex's: refused (another tenant), globex refreshes its own
    work = cfg.store.work_dir
    membership_path(work, "globex").write_bytes(membership_path(work, "acme").read_bytes())
    globex_dir = cfg.tenants["globex"].directory
    assert globex_dir is not None
    assert load_membership(membership_path(work, "globex"), "globex", globex_dir) is None


def test_an_outage_serves_the_last_membership_and_is_not_hammered(
    slapd: LdapServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With the clock injected: within the grace the last membership answers and the directory
    is tried at most once per refresh_seconds; past the grace every lookup is refused."""
    cfg = config(tmp_path, {"acme": directory(slapd.url, refresh_seconds=10, grace_seconds=60)})
    fetched = refresh_tenant(cfg, "acme").fetched_at
    slapd.stop()
    with caplog.at_level("ERROR", logger="tessera.search.directory.membership"):
        for step in range(100):  # 100 lookups between 10 s and 15 s old: one attempt
            assert directory_groups(cfg, "acme", "alice", now=fetched + 10 + step * 0.05) == (
                "finance",
                "staff",
            )
        assert len([r for r in caplog.records if "refresh of 'acme' failed" in r.message]) == 1
        assert directory_groups(cfg, "acme", "bob", now=fetched + 21) == ("staff",)  # a second attempt
        assert len([r for r in caplog.records if "refresh of 'acme' failed" in r.message]) == 2
    assert directory_groups(cfg, "acme", "alice", now=fetched + 59.9) == ("finance", "staff")
    for who in ("alice", "nobody"):
        with pytest.raises(DirectoryUnavailable, match="past grace_seconds=60"):
            directory_groups(cfg, "acme", who, now=fetched + 60.5)
    slapd.start()  # back: a refresh (the sensor's, an operator's) serves again
    refresh_tenant(cfg, "acme")
    assert directory_groups(cfg, "acme", "alice") == ("finance", "staff")


def test_tls_verifies_the_certificate(tmp_path: Path) -> None:
    """ldaps:// and StartTLS against slapd's self-signed certificate: trusted through
    ``ca_file``, refused without it (never downgraded to an unverified connection)."""
    for server in ldap_server(tmp_path / "tls", tls=True):
        server.seed(["alice"], {"finance": ["alice"]})
        ca = str(server.cert)
        ldaps = LdapDirectory(load_directory(server.tls_url, ca_file=ca)).memberships()
        assert ldaps.users["alice"] == ("finance",)
        start = LdapDirectory(load_directory(server.url, start_tls=True, ca_file=ca)).memberships()
        assert start.users["alice"] == ("finance",)
        for untrusted in (load_directory(server.tls_url), load_directory(server.url, start_tls=True)):
            with pytest.raises(DirectoryError):
                LdapDirectory(untrusted).memberships()
