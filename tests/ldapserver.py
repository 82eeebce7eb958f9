"""A real OpenLDAP server (Debian's ``slapd``) on loopback for the directory tests.

``make ldap`` installs it (``slapd ldap-utils``); tests skip with a clear reason only when the
``slapd`` binary is absent. Each server gets a throwaway folder: a generated ``slapd.conf``
(mdb backend, a rootdn with a password), its database, a free port on 127.0.0.1. Users and
groups are added and changed through ldap3 as the rootdn, as an administrator would.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ldap3 import MODIFY_ADD, MODIFY_DELETE, Connection, Server

SLAPD = shutil.which("slapd") or ("/usr/sbin/slapd" if os.path.exists("/usr/sbin/slapd") else None)
SUFFIX = "dc=example,dc=org"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PW = "admin-secret"
USERS = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"

_CONF = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/inetorgperson.schema
pidfile {dir}/slapd.pid
modulepath /usr/lib/ldap
moduleload back_mdb
sizelimit unlimited
database mdb
maxsize 33554432
suffix "{suffix}"
rootdn "{rootdn}"
rootpw {rootpw}
directory {dir}/db
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LdapServer:
    """One running slapd; ``url`` is ``ldap://127.0.0.1:PORT``; with ``tls_port``, also
    ``ldaps://127.0.0.1:TLS_PORT`` (and StartTLS on ``url``) with a self-signed certificate
    for 127.0.0.1 in ``folder / "cert.pem"``."""

    folder: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None
    tls_port: int | None = None

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def tls_url(self) -> str:
        return f"ldaps://127.0.0.1:{self.tls_port}"

    @property
    def cert(self) -> Path:
        return self.folder / "cert.pem"

    def _tls_conf(self) -> str:
        if self.tls_port is None:
            return ""
        if not self.cert.exists():
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                 "-keyout", str(self.folder / "key.pem"), "-out", str(self.cert),
                 "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                check=True, capture_output=True,
            )  # fmt: skip
        return f"TLSCertificateFile {self.cert}\nTLSCertificateKeyFile {self.folder / 'key.pem'}\n"

    def start(self) -> None:
        (self.folder / "db").mkdir(parents=True, exist_ok=True)
        conf = self.folder / "slapd.conf"
        text = _CONF.format(dir=self.folder, suffix=SUFFIX, rootdn=ROOT_DN, rootpw=ROOT_PW)
        conf.write_text(self._tls_conf() + text)
        assert SLAPD is not None
        urls = self.url + (f" {self.tls_url}" if self.tls_port is not None else "")
        # -d 0: stay in the foreground (a child we can stop) and log nothing
        self.proc = subprocess.Popen(
            [SLAPD, "-f", str(conf), "-h", urls, "-d", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"slapd exited with {self.proc.returncode}: {err[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("slapd did not listen within 15 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def admin(self) -> Connection:
        return Connection(Server(self.url), ROOT_DN, ROOT_PW, auto_bind=True, raise_exceptions=True)

    def seed(self, users: list[str], groups: dict[str, list[str]]) -> None:
        """The suffix, ``ou=people`` with one inetOrgPerson per user (password ``pw-<uid>``),
        ``ou=groups`` with one groupOfNames per group (members by DN)."""
        with self.admin() as c:
            c.add(SUFFIX, ["dcObject", "organization"], {"o": "Example", "dc": "example"})
            c.add(USERS, ["organizationalUnit"], {"ou": "people"})
            c.add(GROUPS, ["organizationalUnit"], {"ou": "groups"})
            for uid in users:
                self.add_user(uid, c)
            for name, members in groups.items():
                self.add_group(name, members, c)

    def add_user(self, uid: str, c: Connection | None = None) -> None:
        attrs = {"uid": uid, "cn": uid, "sn": uid, "userPassword": f"pw-{uid}"}
        with c or self.admin() as conn:
            conn.add(user_dn(uid), ["inetOrgPerson"], attrs)

    def add_group(self, name: str, members: list[str], c: Connection | None = None) -> None:
        # groupOfNames needs one member: the admin stands in for an empty group
        dns = [user_dn(m) for m in members] or [ROOT_DN]
        with c or self.admin() as conn:
            conn.add(group_dn(name), ["groupOfNames"], {"cn": name, "member": dns})

    def join(self, uid: str, group: str) -> None:
        with self.admin() as c:
            c.modify(group_dn(group), {"member": [(MODIFY_ADD, [user_dn(uid)])]})

    def leave(self, uid: str, group: str) -> None:
        with self.admin() as c:
            c.modify(group_dn(group), {"member": [(MODIFY_DELETE, [user_dn(uid)])]})

    def delete_user(self, uid: str) -> None:
        with self.admin() as c:
            c.delete(user_dn(uid))


def user_dn(uid: str) -> str:
    return f"uid={uid},{USERS}"


def group_dn(name: str) -> str:
    return f"cn={name},{GROUPS}"


def ldap_server(folder: Path, tls: bool = False) -> Iterator[LdapServer]:
    """A started server in ``folder``, stopped afterwards; skips when slapd is not installed
    (or, for ``tls``, openssl)."""
    if SLAPD is None:
        pytest.skip("slapd is not installed (run `make ldap` as root: Debian's slapd and ldap-utils)")
    if tls and shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate for the TLS test")
    server = LdapServer(folder, _free_port(), tls_port=_free_port() if tls else None)
    server.start()
    try:
        yield server
    finally:
        server.stop()
