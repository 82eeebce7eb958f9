"""The acceptance scenario of issue 20, end to end through the real search path: a tenant whose
``_access.yaml`` gives ``ledger.md`` to group ``finance``, its groups from a real slapd.

Add bob to ``finance`` in LDAP: bob finds the ledger within the bound (``refresh_seconds``).
Remove him: gone within the bound. Stop slapd: the last membership serves until
``grace_seconds`` after the last successful refresh, then every request of the tenant is 503
(the API) or ``DirectoryUnavailable`` (the Python API): fail closed, never open.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tessera.api import create_app
from tessera.client import open_tenant
from tessera.config import load_config
from tessera.embedding.fake import HashEmbedder
from tessera.search.directory import DirectoryUnavailable
from tessera.search.directory.membership import load_membership, membership_path
from tessera.search.identities import ReloadingIdentities
from tessera.search.principal import key_digest
from tests.apiserver import serve
from tests.ldapserver import GROUPS, ROOT_DN, ROOT_PW, USERS, LdapServer, ldap_server

REFRESH_S, GRACE_S = 1.0, 3.0
REFRESH_TAKES_S = 1.0  # one refresh on loopback (~10 ms), generously: a loaded 2-core machine
SLACK_S = 3.0  # request latency on a loaded 2-core machine on top of the stated bound
ACME: dict[str, str | bytes] = {
    "runbook.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool.\n",
    "ledger.md": "# Ledger\n\nQuarterly ledger totals and the audit of accounts payable.\n",
    "_access.yaml": "documents:\n  - match: ledger.md\n    groups: [finance]\n",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from tests.conftest import Workspace

    ws = Workspace(tmp_path_factory.mktemp("directory"))
    ws.tenant("acme", ACME, users={"ops": ["staff"]})
    ws.run("acme", "r1")
    ws.config()
    data = yaml.safe_load((ws.root / "tessera.yaml").read_text(encoding="utf-8"))
    data["store"]["uri"] = str(ws.root / "index")
    data["tenants"]["acme"]["source"]["path"] = str(ws.root / "corpus" / "acme")
    return data


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[LdapServer]:
    for server in ldap_server(tmp_path / "slapd"):
        server.seed(["alice", "bob"], {"finance": ["alice"], "staff": ["alice", "bob"]})
        yield server


@pytest.fixture
def cfg_path(
    corpus: dict[str, Any], slapd: LdapServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.setenv("TESSERA_TEST_LDAP_PW", ROOT_PW)
    data = {**corpus, "api_keys_file": "keys.yaml"}
    data["store"] = {**data["store"], "work_dir": str(tmp_path / "work")}
    data["tenants"] = {"acme": {**corpus["tenants"]["acme"], "directory": {
        "kind": "ldap", "url": slapd.url, "bind_dn": ROOT_DN, "password_env": "TESSERA_TEST_LDAP_PW",
        "user_base": USERS, "group_base": GROUPS, "refresh_seconds": REFRESH_S, "grace_seconds": GRACE_S,
    }}}  # fmt: skip
    keys = "".join(
        f"  - {{sha256: {key_digest(u + '-key')}, tenant: acme, user: {u}}}\n" for u in ("alice", "bob")
    )
    (tmp_path / "keys.yaml").write_text("keys:\n" + keys, encoding="utf-8")
    (tmp_path / "tessera.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return tmp_path / "tessera.yaml"


def until(check: Callable[[], bool], limit_s: float) -> float:
    """Seconds until ``check`` holds; fails past ``limit_s``."""
    t0 = time.monotonic()
    while not check():
        assert time.monotonic() - t0 < limit_s, "not within the bound"
        time.sleep(0.05)
    return time.monotonic() - t0


def first_seen(check: Callable[[], bool], bound_s: float) -> float:
    """When the first request that sees a change *started*, in seconds after the change:
    every request that started ``bound_s`` or more after it must see it (the stated bound,
    request latency excluded: a slow answer is not a late membership)."""
    t0 = time.monotonic()
    while True:
        started = time.monotonic() - t0
        if check():
            return started
        assert started < bound_s, f"a request {started:.2f} s after the change did not see it"
        time.sleep(0.05)


def test_group_change_reaches_search_within_the_bound_and_an_outage_fails_closed(
    slapd: LdapServer, cfg_path: Path
) -> None:
    cfg = load_config(cfg_path)
    reader = open_tenant(cfg, "acme", user="bob", embedders=[HashEmbedder()])
    with serve(create_app(cfg, HashEmbedder(), ReloadingIdentities.from_config(cfg))) as base:

        def docs(user: str) -> set[str] | int:
            r = httpx.get(f"{base}/search", params={"q": "ledger totals accounts", "k": 10},
                          headers={"X-API-Key": f"{user}-key"}, timeout=10)  # fmt: skip
            return {h["doc_id"] for h in r.json()["results"]} if r.status_code == 200 else r.status_code

        def python_docs() -> set[str]:
            return {h.doc_id for h in reader.search("ledger totals accounts", k=10)}

        assert "ledger.md" in docs("alice")  # type: ignore[operator]
        assert docs("bob") == {"runbook.md"}
        slapd.join("bob", "finance")
        took = first_seen(lambda: docs("bob") == {"ledger.md", "runbook.md"}, REFRESH_S + REFRESH_TAKES_S)
        print(f"\nDIRECTORY join: first seen by a request {took:.2f} s after (bound {REFRESH_S} s)")
        until(lambda: "ledger.md" in python_docs(), REFRESH_S + SLACK_S)  # a reader opened before
        slapd.leave("bob", "finance")
        took = first_seen(lambda: docs("bob") == {"runbook.md"}, REFRESH_S + REFRESH_TAKES_S)
        print(f"DIRECTORY removal: first seen by a request {took:.2f} s after (bound {REFRESH_S} s)")
        assert "ledger.md" not in python_docs()

        dcfg = cfg.tenants["acme"].directory
        assert dcfg is not None
        slapd.stop()
        last = load_membership(membership_path(cfg.store.work_dir, "acme"), "acme", dcfg)
        assert last is not None
        served = 0
        while time.time() < last.fetched_at + GRACE_S - 0.5:  # within the grace: last membership
            assert docs("bob") == {"runbook.md"} and "ledger.md" in docs("alice")  # type: ignore[operator]
            served += 1
            time.sleep(0.1)
        assert served > 0
        until(lambda: docs("alice") == 503, 0.5 + SLACK_S)
        age = time.time() - last.fetched_at
        print(f"DIRECTORY down: refused {age:.2f} s after the last refresh (grace {GRACE_S} s)")
        assert time.time() >= last.fetched_at + GRACE_S
        assert docs("bob") == 503
        with pytest.raises(DirectoryUnavailable):
            python_docs()
        ready = httpx.get(f"{base}/readyz", timeout=10)
        assert ready.status_code == 200  # the process and store are fine; the tenant is refused

        slapd.start()  # the directory is back: the next refresh serves again
        until(lambda: docs("alice") == {"ledger.md", "runbook.md"}, REFRESH_S + SLACK_S)
