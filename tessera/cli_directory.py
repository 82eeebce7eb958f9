"""``tessera directory refresh|show``: a tenant's directory membership, for operators.

* ``refresh [--tenant T] [--accept-drop]``: read the directory now and persist the membership
  (every tenant with a directory by default). A refresh refused because too many users
  vanished (``max_drop_fraction``) is accepted with ``--accept-drop``, after checking.
* ``show --tenant T --user U [--live]``: the groups search uses for ``U`` now (from the
  persisted membership, its age and the bound), or with ``--live`` as the directory answers
  this moment (one escaped per-user query).

Exit code 0 on success, 1 when a refresh failed or the user is unknown.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from tessera.config import TesseraConfig
from tessera.errors import ConfigError, InvalidArgument


def _refresh(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from tessera.search.directory import DirectoryError, refresh_tenant

    tenants = [args.tenant] if args.tenant else sorted(t for t, c in cfg.tenants.items() if c.directory)
    if not tenants:
        raise ConfigError("tenants", "no tenant has a directory")
    failed = 0
    for tenant in tenants:
        try:
            snap = refresh_tenant(cfg, tenant, accept_drop=args.accept_drop)
        except DirectoryError as e:
            failed += 1
            print(f"{tenant}: refresh failed: {e}")
            continue
        print(
            f"{tenant}: {len(snap.users)} users, {len({g for gs in snap.users.values() for g in gs})} groups"
        )
    return 1 if failed else 0


def _show(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from tessera.search.directory.base import open_directory
    from tessera.search.directory.ldap import LdapDirectory
    from tessera.search.directory.membership import load_membership, membership_path
    from tessera.search.principal import principal_from_config

    dcfg = cfg.tenant(args.tenant).directory
    if dcfg is None:
        raise InvalidArgument("--tenant", f"tenant {args.tenant!r} has no directory")
    if args.live:
        directory = open_directory(dcfg)
        groups = directory.groups_of(args.user) if isinstance(directory, LdapDirectory) else None
        found = "unknown to the directory" if groups is None else ", ".join(groups) or "(no groups)"
        print(f"{args.user}: {found}")
        return 0 if groups is not None else 1
    who = principal_from_config(cfg, args.tenant, args.user)  # refreshes when due; fails closed
    snap = load_membership(membership_path(cfg.store.work_dir, args.tenant), args.tenant, dcfg)
    age = f"{time.time() - snap.fetched_at:.0f} s old" if snap else "none"
    print(
        f"membership: {age} (refresh_seconds {dcfg.refresh_seconds:g}, grace_seconds {dcfg.grace_seconds:g})"
    )
    if who is None:
        print(f"{args.user}: not a user of tenant {args.tenant!r}")
        return 1
    print(f"{args.user}: {', '.join(who.groups) or '(no groups)'}")
    return 0


def add_parser(sub: Any) -> None:
    d = sub.add_parser("directory", help="a tenant's users and groups from its directory (LDAP)")
    cmds = d.add_subparsers(dest="directory_cmd", required=True)
    r = cmds.add_parser("refresh", help="read the directory now and persist the membership")
    r.add_argument("--tenant", help="one tenant (default: every tenant with a directory)")
    r.add_argument("--accept-drop", action="store_true", help="accept an answer that lost many users")
    r.set_defaults(func=_refresh)
    s = cmds.add_parser("show", help="a user's groups as search sees them")
    s.add_argument("--tenant", required=True, help="the tenant whose directory is asked")
    s.add_argument("--user", required=True, help="the user name, as the directory knows it")
    s.add_argument("--live", action="store_true", help="ask the directory now instead")
    s.set_defaults(func=_show)
