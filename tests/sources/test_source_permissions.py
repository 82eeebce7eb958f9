"""Document permissions from the source itself, and their precedence over ``_access.yaml`` and
the tenant default: S3 object tags (moto's real server) next to metadata, and the folder
source's POSIX owner and group mapping. One test per precedence rule.

    S3:     metadata / tags  >  nearest matching _access.yaml rule  >  tenant default
    folder: _access.yaml rule that sets an ACL  >  POSIX owner/group mapping  >  tenant default
"""

from __future__ import annotations

import grp
import json
import os
import pwd
from pathlib import Path
from typing import Any

import pytest

from tessera.config import AccessRule
from tessera.config_source import PosixAccess, parse_posix
from tessera.errors import ConfigError
from tessera.sources.folder import FolderConnector
from tessera.sources.s3 import S3Connector
from tessera.types import SourceDocument
from tests.s3server import MotoS3, client, create_user_key, set_auth
from tests.sources.helpers import DEFAULT, cache
from tests.test_s3_source import admin, moto, new_bucket  # noqa: F401  (fixtures)

POLICY = b"documents:\n  - match: 'ruled*'\n    groups: [legal]\n"


def s3(endpoint: str, bucket: str, tmp: Path | None = None, **kw: Any) -> S3Connector:
    c = cache(tmp) if tmp is not None else None
    creds = {k: kw.pop(k) for k in ("aws_access_key_id", "aws_secret_access_key") if k in kw}
    return S3Connector("acme", bucket, "acme/", DEFAULT, client(endpoint, **creds), cache=c, **kw)


class Doc:
    """A listed document with its ACL as one AccessRule."""

    def __init__(self, d: SourceDocument) -> None:
        self.doc = d
        self.access = AccessRule(readers=d.readers, groups=d.groups)
        self.acl_source, self.effective_to = d.acl_source, d.effective_to

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Doc) and other.doc == self.doc


def by_id(docs: tuple[SourceDocument, ...]) -> dict[str, Doc]:
    return {d.doc_id: Doc(d) for d in docs}


def tag(admin: Any, bucket: str, key: str, tags: dict[str, str]) -> None:  # noqa: F811
    tagset = [{"Key": k, "Value": v} for k, v in tags.items()]
    admin.put_object_tagging(Bucket=bucket, Key=key, Tagging={"TagSet": tagset})


@pytest.fixture
def bucket(admin: Any) -> str:  # noqa: F811
    files: dict[str, bytes | tuple[bytes, dict[str, str]]] = {
        "acme/.tessera-root": b"",
        "acme/_access.yaml": POLICY,
        "acme/plain.md": b"# plain\n",
        "acme/ruled.md": b"# ruled\n",
        "acme/ruled-meta.md": (b"# ruled, metadata\n", {"tessera-readers": "dave"}),
        "acme/ruled-tags.md": b"# ruled, tags\n",
        "acme/both.md": (b"# both agree\n", {"tessera-groups": "finance,hr"}),
        "acme/clash.md": (b"# both disagree\n", {"tessera-groups": "finance"}),
        "acme/dated.md": b"# dated by tag\n",
    }
    name = new_bucket(admin, files)
    tag(admin, name, "acme/ruled-tags.md", {"tessera-groups": "finance hr", "team": "x"})
    tag(admin, name, "acme/both.md", {"tessera-groups": "hr finance"})
    tag(admin, name, "acme/clash.md", {"tessera-groups": "everyone"})
    tag(admin, name, "acme/dated.md", {"tessera-effective-to": "2020-01-01T00:00:00Z"})
    return name


def test_s3_precedence_metadata_and_tags_over_policy_over_default(
    moto: MotoS3,  # noqa: F811
    bucket: str,
) -> None:
    listing = s3(moto.endpoint, bucket).list()
    docs = by_id(listing.documents)
    # no metadata, no tags, no rule: the tenant default
    assert (docs["plain.md"].access, docs["plain.md"].acl_source) == (DEFAULT, "default")
    # a matching _access.yaml rule beats the default
    assert (
        docs["ruled.md"].access == AccessRule(groups=("legal",))
        and docs["ruled.md"].acl_source == "_access.yaml"
    )
    # metadata beats the rule
    assert docs["ruled-meta.md"].access == AccessRule(readers=("dave",))
    assert docs["ruled-meta.md"].acl_source == "s3-metadata"
    # tags beat the rule too (space-separated: S3 tag values hold no commas)
    assert docs["ruled-tags.md"].access == AccessRule(groups=("finance", "hr"))
    assert docs["ruled-tags.md"].acl_source == "s3-tags"
    # metadata and tags that agree are one ACL; a tag that sets only a date keeps the default ACL
    assert docs["both.md"].access == AccessRule(groups=("finance", "hr"))
    assert docs["dated.md"].access == DEFAULT and docs["dated.md"].effective_to.year == 2020
    # disagreeing metadata and tags: quarantined, never the broader of the two
    assert "clash.md" not in docs
    assert [(f.doc_id, f.reason) for f in listing.failed] == [("clash.md", "bad_metadata")]


def test_tags_are_fetched_only_for_new_changed_or_due_objects(
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    bucket: str,
    tmp_path: Path,
) -> None:
    def tag_calls(conn: S3Connector) -> list[str]:
        keys: list[str] = []
        conn.client.meta.events.register(
            "before-parameter-build.s3.GetObjectTagging", lambda params, **_: keys.append(params["Key"])
        )
        return keys

    first = s3(moto.endpoint, bucket, tmp_path)
    calls = tag_calls(first)
    first.list()
    assert len(calls) == 7  # every document once
    again = s3(moto.endpoint, bucket, tmp_path)
    calls = tag_calls(again)
    unchanged = again.list()
    assert calls == []  # a no-op listing fetches no tags
    # a tag edit keeps ETag and LastModified: it is seen once the cached tags are due
    tag(admin, bucket, "acme/ruled-tags.md", {"tessera-readers": "erin"})
    assert by_id(s3(moto.endpoint, bucket, tmp_path).list().documents) == by_id(unchanged.documents)
    due = s3(moto.endpoint, bucket, tmp_path, tags_refresh_s=0.0)
    calls = tag_calls(due)
    docs = by_id(due.list().documents)
    assert len(calls) == 7 and docs["ruled-tags.md"].access == AccessRule(readers=("erin",))
    # a changed object is read again, its tags with it
    admin.put_object(Bucket=bucket, Key="acme/plain.md", Body=b"# plain, edited\n")
    changed = s3(moto.endpoint, bucket, tmp_path)
    calls = tag_calls(changed)
    changed.list()
    assert calls == ["acme/plain.md"]


def test_a_failed_tag_fetch_quarantines_never_opens(moto: MotoS3, bucket: str) -> None:  # noqa: F811
    """An indexer that may read objects but not their tags: every document is quarantined
    (``tag_error``), none falls back to the policy or the tenant default."""
    iam = client(moto.endpoint, "iam")
    key_id, secret = create_user_key(moto.endpoint, "no-tags")
    deny = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Deny", "Action": "s3:GetObjectTagging", "Resource": "*"}],
    }
    iam.put_user_policy(UserName="no-tags", PolicyName="no-tags", PolicyDocument=json.dumps(deny))
    set_auth(moto.endpoint, True)
    try:
        conn = s3(moto.endpoint, bucket, aws_access_key_id=key_id, aws_secret_access_key=secret)
        listing = conn.list()
    finally:
        set_auth(moto.endpoint, False)
    assert listing.documents == ()
    assert {f.reason for f in listing.failed} == {"tag_error"} and len(listing.failed) == 7
    # tags off: the same credentials list, from metadata and policies alone
    assert len(s3(moto.endpoint, bucket, tags=False).list().documents) == 7


# folder: POSIX owner and group ----------------------------------------------------------


def posix_tree(root: Path) -> None:
    root.mkdir()
    (root / "_access.yaml").write_text("documents:\n  - match: 'ruled*'\n    groups: [legal]\n"
                                       "  - match: 'dated*'\n    effective_to: 2099-01-01\n")  # fmt: skip
    for name in ("owned.md", "ruled.md", "dated.md"):
        (root / name).write_text(f"# {name}\n")


def test_folder_precedence_policy_over_posix_over_default(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    posix_tree(root)
    st = os.stat(root / "owned.md")
    me = pwd.getpwuid(st.st_uid).pw_name
    mapping = PosixAccess(owners={me: ("alice",)}, groups={str(st.st_gid): ("finance",)})
    docs = by_id(FolderConnector("acme", root, DEFAULT, posix=mapping).list().documents)
    # the owner (by name) and the group (by number) both grant: their union, acl_source posix
    assert docs["owned.md"].access == AccessRule(readers=("alice",), groups=("finance",))
    assert docs["owned.md"].acl_source == "posix"
    # a rule that sets an ACL wins over ownership: ownership never widens a restricted file
    assert docs["ruled.md"].access == AccessRule(groups=("legal",))
    # a rule that sets only dates: ownership gives the ACL, the rule stays the source (its dates)
    assert docs["dated.md"].access == AccessRule(readers=("alice",), groups=("finance",))
    assert docs["dated.md"].acl_source == "_access.yaml" and docs["dated.md"].effective_to.year == 2099
    # an owner and group nobody listed: the tenant default
    other = PosixAccess(owners={"nobody-listed": ("x",)}, groups={})
    plain = by_id(FolderConnector("acme", root, DEFAULT, posix=other).list().documents)
    assert plain["owned.md"].access == DEFAULT and plain["owned.md"].acl_source == "default"
    # without posix_access: exactly as before
    assert by_id(FolderConnector("acme", root, DEFAULT).list().documents)["owned.md"].access == DEFAULT


def test_folder_group_by_name_and_a_chown_is_seen(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    posix_tree(root)
    st = os.stat(root / "owned.md")
    group = grp.getgrgid(st.st_gid).gr_name
    mapping = PosixAccess(owners={}, groups={group: ("finance",), "4242": ("hr",)})
    conn = FolderConnector("acme", root, DEFAULT, cache(tmp_path / "state"), posix=mapping)
    assert by_id(conn.list().documents)["owned.md"].access == AccessRule(groups=("finance",))
    if os.geteuid() != 0:
        pytest.skip("chown to another group needs root")
    os.chown(root / "owned.md", st.st_uid, 4242)  # a gid with no name: matched by number
    assert by_id(conn.list().documents)["owned.md"].access == AccessRule(groups=("hr",))


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"owners": {"alice": []}}, "p.owners.alice"),
        ({"groups": {"1000": ["bad name"]}}, "p.groups.1000"),
        ({"others": {}}, "p.others"),
        ({}, "p"),
        ("alice", "p"),
    ],
)
def test_posix_access_config_names_the_bad_key(data: object, key: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_posix(data, "p")
    assert e.value.key == key
