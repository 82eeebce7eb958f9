"""The directory's configuration (errors name the bad key) and its scheduled refresh: the
Dagster sensor refreshes what is due, against a real slapd, and reports a failed tenant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance, build_sensor_context

from pipelines.directory import directory_refresh_sensor
from resources.config import TesseraConfigResource
from tessera.config_directory import parse_directory
from tessera.errors import ConfigError
from tessera.search.directory.membership import load_membership, membership_path
from tests.ldapserver import ROOT_PW, LdapServer, ldap_server
from tests.search.test_directory_ldap import config, directory


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[LdapServer]:
    for server in ldap_server(tmp_path / "slapd"):
        server.seed(["alice", "bob"], {"finance": ["alice"]})
        yield server


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"password": "hunter2"}, "d.password"),
        ({"url": "http://ldap"}, "d.url"),
        ({"kind": "ad"}, "d.kind"),
        ({"member_attribute": "members"}, "d.member_attribute"),
        ({"grace_seconds": 0.5, "refresh_seconds": 1}, "d.grace_seconds"),
        ({"refresh_seconds": 0}, "d.refresh_seconds"),
        ({"user_filter": "objectClass=person"}, "d.user_filter"),
        ({"group_filter": "(cn=a))("}, "d.group_filter"),
        ({"password_env": ""}, "d.password_env"),
        ({"password_file": "/run/pw"}, "d.password_env"),
        ({"start_tls": True, "url": "ldaps://ldap"}, "d.start_tls"),
        ({"page_size": 0}, "d.page_size"),
        ({"colour": "blue"}, "d.colour"),
    ],
)
def test_bad_directory_config_names_the_key(change: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_directory({**directory("ldap://127.0.0.1:1"), **change}, "d", Path("."))
    assert e.value.key == key


def test_directory_key_validated_on_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        config(tmp_path, {"acme": {**directory("ldap://h"), "grace_seconds": "long"}})
    assert e.value.key == "tenants.acme.directory.grace_seconds"


def test_sensor_refreshes_what_is_due_and_reports_failures(
    slapd: LdapServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESSERA_TEST_LDAP_PW", ROOT_PW)
    cfg = config(
        tmp_path,
        {
            "acme": directory(slapd.url, refresh_seconds=60, grace_seconds=120),
            "globex": directory("ldap://127.0.0.1:1", timeout_seconds=1),
            "initech": None,
        },
    )
    ctx = build_sensor_context(
        instance=DagsterInstance.ephemeral(),
        resources={"tessera_config": TesseraConfigResource(config_path=str(cfg.path))},
    )
    skip = directory_refresh_sensor(ctx)
    assert "refreshed: acme (2 users)" in str(skip.skip_message) and "failed: globex" in str(
        skip.skip_message
    )
    acme = cfg.tenants["acme"].directory
    assert acme is not None
    snap = load_membership(membership_path(cfg.store.work_dir, "acme"), "acme", acme)
    assert snap is not None and snap.users["alice"] == ("finance",)
    slapd.join("bob", "finance")
    again = directory_refresh_sensor(ctx)  # not due: refresh_seconds is 60
    assert "none due" in str(again.skip_message)


def test_cli_refresh_show_and_accept_drop(
    slapd: LdapServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tessera.cli import main

    monkeypatch.setenv("TESSERA_TEST_LDAP_PW", ROOT_PW)
    cfg = config(tmp_path, {"acme": directory(slapd.url, refresh_seconds=60, grace_seconds=120)})
    path = str(cfg.path)
    assert main(["--config", path, "directory", "refresh"]) == 0
    assert "acme: 2 users, 1 groups" in capsys.readouterr().out
    assert main(["--config", path, "directory", "show", "--tenant", "acme", "--user", "alice"]) == 0
    assert "alice: finance" in capsys.readouterr().out
    slapd.join("bob", "finance")
    assert main(["--config", path, "directory", "show", "--tenant", "acme", "--user", "bob", "--live"]) == 0
    assert "bob: finance" in capsys.readouterr().out
    assert main(["--config", path, "directory", "show", "--tenant", "acme", "--user", "*", "--live"]) == 1
    slapd.delete_user("alice")
    slapd.delete_user("bob")
    assert main(["--config", path, "directory", "refresh", "--tenant", "acme"]) == 1
    assert "lost" in capsys.readouterr().out
    assert main(["--config", path, "directory", "refresh", "--tenant", "acme", "--accept-drop"]) == 0
    assert "acme: 0 users" in capsys.readouterr().out


def test_password_from_a_file_and_a_missing_secret(slapd: LdapServer, tmp_path: Path) -> None:
    from tessera.search.directory import DirectoryAuthError, refresh_tenant

    (tmp_path / "ldap.pw").write_text(ROOT_PW + "\n", encoding="utf-8")
    with_file = {**directory(slapd.url), "password_env": "", "password_file": "ldap.pw"}
    del with_file["password_env"]
    cfg = config(
        tmp_path, {"acme": with_file, "globex": directory(slapd.url, password_env="TESSERA_UNSET_PW")}
    )
    assert refresh_tenant(cfg, "acme").users["alice"] == ("finance",)
    with pytest.raises(DirectoryAuthError, match="TESSERA_UNSET_PW is not set"):
        refresh_tenant(cfg, "globex")
