"""Users and groups from a directory (LDAP), merged into principals with a stated bound.

* :mod:`.base`: the ``Directory`` protocol, its snapshot, typed errors and the kind registry.
* :mod:`.ldap`: the LDAP directory (ldap3; paged searches, bind password from env or file).
* :mod:`.membership`: the persisted membership, its refresh and the outage grace (fail closed).
"""

from tessera.search.directory.base import (
    Directory,
    DirectoryAuthError,
    DirectoryError,
    DirectorySnapshot,
    DirectorySuspicious,
    DirectoryUnavailable,
)
from tessera.search.directory.membership import directory_groups, refresh_tenant

__all__ = [
    "Directory",
    "DirectoryAuthError",
    "DirectoryError",
    "DirectorySnapshot",
    "DirectorySuspicious",
    "DirectoryUnavailable",
    "directory_groups",
    "refresh_tenant",
]
