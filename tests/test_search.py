"""Search filters on a real LanceDB index: ACL, effective dates, escaping, no starvation, offsets."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tessera.errors import ConfigError
from tessera.search import Principal, principal_from_config, search
from tessera.search.principal import access_filter
from tessera.store.schema import micros


def write_policy(src: Path, rules: list[dict[str, Any]]) -> None:
    (src / "_access.yaml").write_text(yaml.safe_dump({"documents": rules}), encoding="utf-8")


def doc(title: str, body: str) -> str:
    return f"# {title}\n\n{body}\n"


def docs_for(
    ws: Any, principal: Principal | None, query: str = "policy handbook", k: int = 50, **kw: Any
) -> list[str]:
    return [h.doc_id for h in search(ws.config().store.uri, ws.embedder, principal, query, k=k, **kw)]


def user(ws: Any, name: str, tenant: str = "acme") -> Principal:
    p = principal_from_config(ws.config(), tenant, name)
    assert p is not None, name
    return p


# ----------------------------------------------------------------------------- ACL


@pytest.fixture
def acl_ws(ws: Any) -> Any:
    src = ws.tenant(
        "acme",
        {
            "public.md": doc("Public policy", "The public policy handbook for all staff."),
            "legal.md": doc("Legal policy", "The legal policy handbook for the legal team."),
            "personal.md": doc("Personal policy", "The personal policy handbook written for carol."),
        },
        groups=["staff"],
        users={"alice": ["staff"], "bob": ["legal"], "carol": [], "dave": ["legal", "staff"], "legal": []},
    )
    write_policy(
        src, [{"match": "legal.md", "groups": ["legal"]}, {"match": "personal.md", "readers": ["carol"]}]
    )
    ws.run("acme", "r1")
    return ws


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("alice", {"public.md"}),
        ("bob", {"legal.md"}),
        ("carol", {"personal.md"}),
        ("dave", {"public.md", "legal.md"}),
    ],
)
def test_acl_user_sees_exactly_what_they_may_read(acl_ws: Any, name: str, expected: set[str]) -> None:
    principal = user(acl_ws, name)
    for k in (1, 3, 50):
        got = docs_for(acl_ws, principal, k=k)
        assert got, (name, k)
        assert set(got) <= expected
    assert set(docs_for(acl_ws, principal)) == expected
    # even a query that is the forbidden document's exact text does not surface it
    for forbidden in {"public.md", "legal.md", "personal.md"} - expected:
        text = (acl_ws.root / "corpus" / "acme" / forbidden).read_text(encoding="utf-8")
        assert forbidden not in docs_for(acl_ws, principal, text, k=50)


def test_unknown_user_gets_nothing(acl_ws: Any) -> None:
    cfg = acl_ws.config()
    assert principal_from_config(cfg, "acme", "mallory") is None
    assert principal_from_config(cfg, "acme", "Alice") is None  # names are exact
    assert docs_for(acl_ws, None) == []
    assert docs_for(acl_ws, Principal("acme", "", ("staff",))) == []
    assert access_filter(None, datetime.now(UTC)) is None
    # a known user with no groups and no reader grants sees nothing
    assert docs_for(acl_ws, Principal("acme", "nobody", ())) == []


def test_user_named_like_a_group_is_not_a_member(acl_ws: Any) -> None:
    # readers and groups are separate namespaces: user "legal" is not in group "legal"
    assert docs_for(acl_ws, user(acl_ws, "legal")) == []
    assert docs_for(acl_ws, Principal("acme", "staff", ())) == []


def test_principal_groups_come_from_config(acl_ws: Any) -> None:
    p = user(acl_ws, "dave")
    assert p == Principal("acme", "dave", ("legal", "staff"))
    assert user(acl_ws, "carol").groups == ()


# ----------------------------------------------------------------------------- effective dates


def test_effective_dates_filter_by_default_and_as_of(ws: Any) -> None:
    src = ws.tenant(
        "acme",
        {
            "current.md": doc("Current policy", "The current policy handbook."),
            "future.md": doc("Future policy", "The future policy handbook."),
            "past.md": doc("Past policy", "The past policy handbook."),
        },
    )
    write_policy(
        src,
        [
            {"match": "future.md", "effective_from": "2999-01-01T00:00:00Z"},
            {
                "match": "past.md",
                "effective_from": "1990-01-01T00:00:00Z",
                "effective_to": "2000-01-01T00:00:00Z",
            },
        ],
    )
    ws.run("acme", "r1")
    alice = user(ws, "alice")

    assert set(docs_for(ws, alice)) == {"current.md"}
    assert set(docs_for(ws, alice, as_of=datetime(3000, 6, 1, tzinfo=UTC))) == {"current.md", "future.md"}
    assert set(docs_for(ws, alice, as_of=datetime(1995, 6, 1, tzinfo=UTC))) == {"current.md", "past.md"}
    # windows are half-open: [effective_from, effective_to)
    assert "future.md" in docs_for(ws, alice, as_of=datetime(2999, 1, 1, tzinfo=UTC))
    just_before = datetime(2999, 1, 1, tzinfo=UTC) - timedelta(seconds=1)
    assert "future.md" not in docs_for(ws, alice, as_of=just_before)
    assert "past.md" in docs_for(ws, alice, as_of=datetime(1990, 1, 1, tzinfo=UTC))
    assert "past.md" not in docs_for(ws, alice, as_of=datetime(2000, 1, 1, tzinfo=UTC))
    assert "past.md" in docs_for(ws, alice, as_of=datetime(2000, 1, 1, tzinfo=UTC) - timedelta(seconds=1))
    # the dates are stored on the rows
    rows = {r["doc_id"]: r for r in ws.rows("acme")}
    assert rows["past.md"]["effective_to_us"] == micros(datetime(2000, 1, 1, tzinfo=UTC))
    assert rows["future.md"]["effective_from_us"] == micros(datetime(2999, 1, 1, tzinfo=UTC))


# ----------------------------------------------------------------------------- filter injection


def test_config_refuses_quoted_principal_names(ws: Any) -> None:
    ws.tenant("acme", {"a.md": doc("A", "text")}, users={"o'brien": ["staff"]})
    with pytest.raises(ConfigError, match="users"):
        ws.config()
    ws.tenant("acme", {"a.md": doc("A", "text")}, users={"alice": ["x') OR true --"]})
    with pytest.raises(ConfigError, match="groups"):
        ws.config()
    ws.tenant("acme", {"a.md": doc("A", "text")}, groups=["x') OR true --"])
    with pytest.raises(ConfigError, match="default"):
        ws.config()


def test_policy_refuses_quoted_acl_values(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": doc("A", "text")})
    write_policy(src, [{"match": "a.md", "readers": ["o'brien"]}])
    with pytest.raises(ConfigError):
        ws.run("acme", "r1")
    assert ws.table("acme") is None


def test_access_filter_escapes_quotes(ws: Any) -> None:
    now = datetime(2024, 1, 1, tzinfo=UTC)
    f = access_filter(Principal("acme", "o'brien", ("x') OR true --", "staff")), now)
    assert f is not None
    assert "'o''brien'" in f
    assert "'x'') OR true --'" in f
    assert "'staff'" in f
    # the only unescaped quotes are the literal delimiters: removing the literals leaves no quote
    stripped = f.replace("'o''brien'", "").replace("'x'') OR true --'", "").replace("'staff'", "")
    stripped = stripped.replace("'acme'", "").replace("'hidden_text'", "").replace("'untrusted'", "")
    assert "'" not in stripped


def test_injection_attempts_do_not_widen_access(acl_ws: Any) -> None:
    # principals built outside the config (e.g. by another identity provider): quotes are data
    assert docs_for(acl_ws, Principal("acme", "o'brien", ("x') OR true --",))) == []
    assert docs_for(acl_ws, Principal("acme", "carol' OR 'a'='a", ())) == []
    assert docs_for(acl_ws, Principal("acme", "x", ("legal') OR array_has_any(groups, ['staff",))) == []
    assert set(docs_for(acl_ws, Principal("acme", "o'brien", ("staff",)))) == {"public.md"}
    assert set(docs_for(acl_ws, Principal("acme", "o'brien", ("x') OR true --", "legal")))) == {"legal.md"}


@pytest.mark.parametrize("bad", ["bob\x00", "bob\n", "line\r", "tab\tname", "\x1f"])
def test_control_characters_are_refused(acl_ws: Any, bad: str) -> None:
    now = datetime.now(UTC)
    with pytest.raises(ValueError, match="control characters"):
        access_filter(Principal("acme", bad, ("staff",)), now)
    with pytest.raises(ValueError, match="control characters"):
        access_filter(Principal("acme", "alice", ("staff", bad)), now)
    with pytest.raises(ValueError):
        docs_for(acl_ws, Principal("acme", bad, ("staff",)))


def test_tenant_in_principal_cannot_escape(acl_ws: Any) -> None:
    with pytest.raises(ConfigError):
        docs_for(acl_ws, Principal("acme' OR tenant != 'x", "alice", ("staff",)))
    # a valid but foreign tenant id has no table: nothing, not an error
    assert docs_for(acl_ws, Principal("globex", "alice", ("staff",))) == []


def test_k_is_bounded(acl_ws: Any) -> None:
    alice = user(acl_ws, "alice")
    for k in (0, -1, 1001):
        with pytest.raises(ValueError):
            docs_for(acl_ws, alice, k=k)


# ----------------------------------------------------------------------------- no starvation


def test_foreign_near_duplicates_do_not_starve_own_documents(ws: Any) -> None:
    query = "quarterly revenue forecast for the northern region sales pipeline"
    files = {f"secret-{i:02d}.md": doc(f"Forecast {i}", f"{query} version {i}.") for i in range(40)}
    files["mine.md"] = doc("Notes", "Staff notes: the revenue numbers are shared at the all hands meeting.")
    src = ws.tenant("acme", files, groups=["staff"], users={"alice": ["staff"], "boss": ["secret", "staff"]})
    write_policy(src, [{"match": "secret-*", "groups": ["secret"]}])
    ws.run("acme", "r1")
    alice, boss = user(ws, "alice"), user(ws, "boss")

    # the forbidden documents really outrank alice's own document
    boss_hits = docs_for(ws, boss, query, k=10)
    assert len(boss_hits) == 10 and all(d.startswith("secret-") for d in boss_hits)
    assert "mine.md" in docs_for(ws, boss, query, k=50)

    own_rows = [r for r in ws.rows("acme") if r["doc_id"] == "mine.md"]
    for k in range(1, 11):
        got = docs_for(ws, alice, query, k=k)
        assert got[0] == "mine.md", k
        assert set(got) == {"mine.md"}
        assert len(got) == min(k, len(own_rows))


# ----------------------------------------------------------------------------- hit provenance


def test_hits_carry_exact_source_coordinates(ws: Any) -> None:
    content = (
        "# Café menu\n\n"
        "Crème brûlée costs 5 € — a naïve 🍰 delight.\n\n"
        "## Drinks\n\n"
        "Thé vert and café crème are served until noon.\n\n"
        "### Cold\n\n"
        "Iced tea, limonade, and jus d'orange pressé.\n"
    )
    src = ws.tenant("acme", {"menu.md": content.encode("utf-8")})
    ws.run("acme", "r1")
    raw = (src / "menu.md").read_bytes()
    alice = user(ws, "alice")
    hits = search(ws.config().store.uri, ws.embedder, alice, "thé vert café crème", k=50)

    assert len(hits) == len(ws.rows("acme")) >= 3
    assert hits[0].heading_path == ("Café menu", "Drinks")
    assert hits[0].anchor == "drinks"
    assert hits == sorted(hits, key=lambda h: -h.score)
    for h in hits:
        assert h.doc_id == "menu.md"
        assert h.revision == hashlib.sha256(raw).hexdigest()
        assert h.uri == (src / "menu.md").resolve().as_uri()
        assert raw[h.byte_start : h.byte_end].decode("utf-8") == h.text
        assert content[h.start : h.end] == h.text
    paths = {h.text.splitlines()[-1]: h.heading_path for h in hits}
    assert paths["Iced tea, limonade, and jus d'orange pressé."] == ("Café menu", "Drinks", "Cold")
    assert paths["Crème brûlée costs 5 € — a naïve 🍰 delight."] == ("Café menu",)


def test_hits_of_a_crlf_file_map_to_its_bytes(ws: Any) -> None:
    content = "# Título\r\n\r\nLínea uno.\r\nLínea dos.\r\n\r\n## Más\r\n\r\nÚltima línea.\r\n"
    src = ws.tenant("acme", {"crlf.md": content.encode("utf-8")})
    ws.run("acme", "r1")
    raw = (src / "crlf.md").read_bytes()
    hits = search(ws.config().store.uri, ws.embedder, user(ws, "alice"), "línea", k=50)
    assert len(hits) >= 2
    for h in hits:
        assert "\r" not in h.text
        assert raw[h.byte_start : h.byte_end].decode("utf-8").replace("\r\n", "\n") == h.text
