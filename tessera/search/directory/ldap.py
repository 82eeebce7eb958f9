"""An LDAP directory on ldap3: every user under ``user_base`` and their groups under ``group_base``.

One refresh is one bind and two paged searches (``page_size`` entries a page, so a directory
larger than the server's size limit is still read whole); any error on any page raises
:class:`~tessera.search.directory.base.DirectoryError` and nothing partial is returned.

* Users: entries matching ``user_filter``; the name is ``user_attribute`` (``uid``).
* Groups: entries matching ``group_filter``; the name is ``group_attribute`` (``cn``); members
  in ``member_attribute``: ``member`` / ``uniqueMember`` hold DNs (matched to the users found,
  compared as normalized DNs), ``memberUid`` holds user names. A member that is not one of the
  users found (another subtree, a nested group, a deleted user) gives nobody anything.
* Names that are not valid principal names are skipped and logged, never half-matched.

No name that a caller supplies ever reaches a filter: filters come from the configuration and
the membership is looked up in the snapshot. :func:`user_filter` escapes a user name with
``escape_filter_chars`` for the one query that names a user (``groups_of``, for diagnostics).

The bind password is read from ``password_env`` or ``password_file`` at each refresh and never
logged; a refused bind is :class:`DirectoryAuthError`.
"""

from __future__ import annotations

import logging
import os
import re
import ssl
import time
from collections.abc import Iterable
from typing import Any

from ldap3 import SUBTREE, Connection, Server, Tls
from ldap3.core.exceptions import LDAPBindError, LDAPException, LDAPInvalidCredentialsResult
from ldap3.utils.conv import escape_filter_chars
from ldap3.utils.dn import safe_dn

from tessera.config import DirectoryConfig
from tessera.search.directory.base import DirectoryAuthError, DirectoryError, DirectorySnapshot

log = logging.getLogger(__name__)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")


def _dn(value: str) -> str:
    """A DN as compared: normalized by ldap3 (spaces, attribute case), then case-folded."""
    try:
        return str(safe_dn(value)).casefold()
    except LDAPException:
        return value.casefold()


def user_filter(cfg: DirectoryConfig, user: str) -> str:
    """The filter for one user by name, the name escaped (``*``, ``(``, ``)``, ``\\``, NUL)."""
    return f"(&{cfg.user_filter}({cfg.user_attribute}={escape_filter_chars(user)}))"


class LdapDirectory:
    """The ``ldap`` directory kind (see the module docstring)."""

    def __init__(self, cfg: DirectoryConfig) -> None:
        self.cfg = cfg

    def _password(self) -> str | None:
        cfg = self.cfg
        if not cfg.bind_dn:
            return None
        if cfg.password_env:
            value = os.environ.get(cfg.password_env)
            if not value:
                raise DirectoryAuthError(f"environment variable {cfg.password_env} is not set")
            return value
        assert cfg.password_file is not None
        try:
            return cfg.password_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise DirectoryAuthError(f"cannot read password_file {cfg.password_file}: {e}") from e

    def _connect(self) -> Connection:
        cfg = self.cfg
        tls = None
        if cfg.url.startswith("ldaps://") or cfg.start_tls:
            ca = str(cfg.ca_file) if cfg.ca_file else None
            tls = Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=ca)
        server = Server(
            cfg.url, use_ssl=cfg.url.startswith("ldaps://"), tls=tls, connect_timeout=cfg.timeout_seconds
        )
        conn = Connection(
            server,
            user=cfg.bind_dn or None,
            password=self._password(),
            read_only=True,
            receive_timeout=max(1, round(cfg.timeout_seconds)),
            raise_exceptions=True,
        )
        try:
            conn.open()
            if cfg.start_tls:
                conn.start_tls()
            conn.bind()
        except (LDAPBindError, LDAPInvalidCredentialsResult) as e:
            _close(conn)
            who = cfg.bind_dn or "anonymous"
            raise DirectoryAuthError(f"{cfg.url} refused the bind as {who!r}: {type(e).__name__}") from e
        except LDAPException as e:
            _close(conn)
            raise DirectoryError(f"cannot reach {cfg.url}: {type(e).__name__}: {e}") from e
        return conn

    def _search(self, conn: Connection, base: str, flt: str, attrs: list[str]) -> list[dict[str, Any]]:
        try:
            found: Iterable[dict[str, Any]] = conn.extend.standard.paged_search(
                base, flt, SUBTREE, attributes=attrs, paged_size=self.cfg.page_size, generator=False
            )
            return [e for e in found if e.get("type") == "searchResEntry"]
        except LDAPException as e:
            what = f"{type(e).__name__}: {e}"
            raise DirectoryError(f"search of {base!r} on {self.cfg.url} failed: {what}") from e

    def memberships(self) -> DirectorySnapshot:
        cfg = self.cfg
        started = time.time()
        conn = self._connect()
        try:
            people = self._search(conn, cfg.user_base, cfg.user_filter, [cfg.user_attribute])
            groups = self._search(
                conn, cfg.group_base, cfg.group_filter, [cfg.group_attribute, cfg.member_attribute]
            )
        finally:
            _close(conn)
        by_dn: dict[str, str] = {}
        users: dict[str, set[str]] = {}
        for entry in people:
            name = _one(entry, cfg.user_attribute)
            if name is None:
                continue
            by_dn[_dn(entry["dn"])] = name
            users.setdefault(name, set())
        for entry in groups:
            group = _one(entry, cfg.group_attribute)
            if group is None:
                continue
            for member in _values(entry, cfg.member_attribute):
                user = member if cfg.member_attribute == "memberUid" else by_dn.get(_dn(member))
                if user is not None and user in users:
                    users[user].add(group)
        log.info("directory %s: %d users, %d groups read", cfg.url, len(users), len(groups))
        return DirectorySnapshot({u: tuple(sorted(g)) for u, g in sorted(users.items())}, started)

    def groups_of(self, user: str) -> tuple[str, ...] | None:
        """One user's groups, asked of the directory now (diagnostics); None if the directory
        does not know exactly one such user. The name is escaped in both filters."""
        cfg = self.cfg
        conn = self._connect()
        try:
            found = self._search(conn, cfg.user_base, user_filter(cfg, user), [cfg.user_attribute])
            matches = [e for e in found if _one(e, cfg.user_attribute) == user]
            if len(matches) != 1:
                return None
            key = user if cfg.member_attribute == "memberUid" else str(matches[0]["dn"])
            flt = f"(&{cfg.group_filter}({cfg.member_attribute}={escape_filter_chars(key)}))"
            groups = self._search(conn, cfg.group_base, flt, [cfg.group_attribute])
        finally:
            _close(conn)
        return tuple(sorted({g for e in groups if (g := _one(e, cfg.group_attribute)) is not None}))


def _close(conn: Connection) -> None:
    """Unbind, whatever state a failure left the socket in (ldap3 raises from ``unbind`` on a
    socket a failed TLS handshake already closed: it must not hide the error being raised)."""
    try:
        conn.unbind()
    except (LDAPException, OSError) as e:
        log.debug("unbind after a failure: %s", e)


def _values(entry: dict[str, Any], attribute: str) -> list[str]:
    attrs = entry.get("attributes") or {}
    value: object = next((v for k, v in attrs.items() if k.casefold() == attribute.casefold()), [])
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def _one(entry: dict[str, Any], attribute: str) -> str | None:
    """The entry's single valid name in ``attribute``; None (logged) for none, several or bad."""
    values = _values(entry, attribute)
    if len(values) != 1 or not _NAME.fullmatch(values[0]):
        log.warning("directory entry %s: %s %r is not one valid name", entry.get("dn"), attribute, values)
        return None
    return values[0]
