"""Readers and groups from a file's POSIX owner and group (folder ``posix_access``).

    source:
      kind: folder
      path: /srv/docs
      posix_access:
        owners: {alice: alice, "1002": [bob]}   # owner name or uid -> readers
        groups: {finance: finance, "2001": hr}  # group name or gid -> groups

The owner and group come from the walk's own ``lstat`` (no extra call per file; ``chown``
changes the ctime, so the revision cache sees it). A uid or gid is looked up once per listing
(``pwd`` / ``grp``); one with no name (a container, an NFS export) is matched by its number.

**Precedence** (folder sources): an ``_access.yaml`` rule that sets readers or groups wins;
else a listed owner or group gives the union of what its entries grant (``acl_source``
``posix``); else the tenant default. Ownership never widens a document a policy file
restricts, and a file whose owner and group are both unlisted gets no POSIX ACL.
"""

from __future__ import annotations

import grp
import pwd
from dataclasses import dataclass, field

from tessera.config import AccessRule
from tessera.config_source import PosixAccess

POSIX_SOURCE = "posix"


@dataclass
class PosixMapper:
    """One listing's mapping (caches the uid and gid names it looked up)."""

    access: PosixAccess
    _users: dict[int, str] = field(default_factory=dict)
    _groups: dict[int, str] = field(default_factory=dict)

    def _user(self, uid: int) -> str:
        if uid not in self._users:
            try:
                self._users[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                self._users[uid] = str(uid)
        return self._users[uid]

    def _group(self, gid: int) -> str:
        if gid not in self._groups:
            try:
                self._groups[gid] = grp.getgrgid(gid).gr_name
            except KeyError:
                self._groups[gid] = str(gid)
        return self._groups[gid]

    def rule(self, uid: int, gid: int) -> AccessRule | None:
        """What the file's owner and group grant; None when neither is listed."""
        owners, groups = self.access.owners, self.access.groups
        readers = owners.get(self._user(uid)) or owners.get(str(uid)) or ()
        names = groups.get(self._group(gid)) or groups.get(str(gid)) or ()
        if not readers and not names:
            return None
        return AccessRule(readers=tuple(sorted(set(readers))), groups=tuple(sorted(set(names))))
