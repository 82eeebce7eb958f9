"""A tenant's documents from a local git repository (working clone or bare) at one commit.

Nothing is checked out or cloned: the ref is resolved once per listing to a commit, its tree is
listed with ``git ls-tree`` and blobs are read with ``git cat-file``, so uncommitted edits in a
working tree never reach the index and every document of a listing comes from one commit.

With a :class:`~tessera.sources.revision_cache.RevisionCache`, a blob whose id the cache knows
takes its sha256 revision from it (a blob id names its content, so no settling is needed);
only the other blobs are read. The cached blobs are still checked to exist
(``cat-file --batch-check``, headers only), so a missing object fails as it always did.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, unquote

from tessera.config import AccessRule, TenantConfig
from tessera.errors import ConfigError, PolicyError, SourceError
from tessera.parsing.base import parser_for_path
from tessera.sources.base import DocumentFailure, Listing, Verdict, document_at
from tessera.sources.confine import name_refusal
from tessera.sources.policy import PolicyTree, build_tree, policy_file_kind, refuse_lookalike
from tessera.sources.revision_cache import CachedRevision, CacheSession, RevisionCache, begin
from tessera.types import SourceDocument, sha256_hex

_URI_RE = re.compile(r"git\+file://(?P<repo>[^@#]+)@(?P<blob>[0-9a-f]{40}|[0-9a-f]{64})#(?P<path>.+)")
"""``git+file://<repo>@<blob oid>#<path>``: the blob, not the commit, so that the uri (which is
part of the metadata hash) changes only when the content does; the proof names the commit."""
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"
_BATCH_BYTES = 32 << 20  # blob bytes per ``cat-file --batch`` call


class GitConnector:
    def __init__(
        self,
        tenant: str,
        repo: Path,
        ref: str,
        subdir: str,
        default_access: AccessRule,
        timeout: float = 30.0,
        cache: RevisionCache | None = None,
    ) -> None:
        if not ref or ref.startswith("-") or re.search(r"[\s\x00]", ref):
            raise ConfigError("source.ref", f"invalid git ref {ref!r}")
        subdir = subdir.strip("/")
        if subdir and any(p in ("", ".", "..") for p in subdir.split("/")):
            raise ConfigError("source.subdir", f"invalid subdir {subdir!r}")
        self.tenant = tenant
        self.repo = repo
        self.root = repo.resolve()
        self.ref = ref
        self.subdir = subdir
        self.default_access = default_access
        self.timeout = timeout
        self.cache = cache
        self.commit: str | None = None  # what the last listing resolved ``ref`` to
        # a working clone by its folder; anything else as a git dir (bare repositories work even
        # under safe.bareRepository=explicit, and a plain folder is "not a git repository")
        dot_git = (self.root / ".git").exists()
        self._where = ["git", "-C" if dot_git else "--git-dir", str(self.root)]

    @classmethod
    def from_config(cls, t: TenantConfig, cache: RevisionCache | None = None) -> GitConnector:
        s = t.source
        if s.repo is None:
            raise ConfigError(f"tenants.{t.tenant_id}.source.repo", "a git source needs a repo")
        return cls(t.tenant_id, s.repo, s.ref, s.subdir, t.default_access, s.timeout_seconds, cache)

    def _run(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}  # no GIT_DIR etc.
        env.update(
            GIT_TERMINAL_PROMPT="0",
            GIT_OPTIONAL_LOCKS="0",
            GIT_NO_LAZY_FETCH="1",  # a partial clone must not reach the network
            GIT_CEILING_DIRECTORIES=str(self.root.parent),  # never discover a repo above the root
            LC_ALL="C",
        )
        try:
            return subprocess.run(
                [*self._where, *args],
                input=stdin,
                capture_output=True,
                timeout=self.timeout,
                check=False,
                env=env,
            )
        except subprocess.TimeoutExpired as e:
            raise SourceError(f"git {args[0]} in {self.repo} timed out after {self.timeout}s") from e
        except OSError as e:  # git not installed, or not runnable
            raise SourceError(f"cannot run git {args[0]} in {self.repo}: {e}") from e

    def _git(self, *args: str, stdin: bytes | None = None, what: str = "") -> bytes:
        proc = self._run(*args, stdin=stdin)
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip() or "(no message)"
            what = what or f"git {' '.join(args[:2])} in {self.repo} failed"
            raise SourceError(f"{what} (exit {proc.returncode}): {err}")
        return proc.stdout

    def _path(self, rel: str) -> str:
        return f"{self.subdir}/{rel}" if self.subdir else rel

    def _uri(self, blob: str, rel: str) -> str:
        return f"git+file://{quote(self.root.as_posix())}@{blob}#{quote(self._path(rel))}"

    def _resolve(self) -> tuple[str, datetime]:
        if self.repo.is_symlink():
            raise SourceError(
                f"git repository {self.repo} is a symbolic link; links are never followed, "
                f"configure the repository it points to ({self.root}) instead"
            )
        if not self.root.is_dir():
            raise SourceError(f"git repository {self.repo} does not exist or is not a folder")
        out = self._git(
            "rev-parse",
            "--verify",
            f"{self.ref}^{{commit}}",
            what=f"cannot resolve ref {self.ref!r} to a commit in {self.repo}",
        )
        commit = out.decode("ascii").strip()
        ts = self._git("show", "-s", "--no-show-signature", "--format=%ct", commit, "--")
        return commit, datetime.fromtimestamp(int(ts.strip()), tz=UTC)

    def _blobs(self, oids: list[str]) -> dict[str, bytes | None]:
        """Blob bytes by oid, one ``cat-file --batch`` process per batch; None when missing."""
        out = self._git("cat-file", "--batch", stdin="".join(f"{o}\n" for o in oids).encode())
        blobs: dict[str, bytes | None] = {}
        pos = 0
        try:
            for oid in oids:
                nl = out.index(b"\n", pos)
                header = out[pos:nl].split()
                if len(header) == 3 and header[1] == b"blob":  # "<oid> blob <size>\n<bytes>\n"
                    size = int(header[2])
                    blobs[oid] = out[nl + 1 : nl + 1 + size]
                    pos = nl + 2 + size
                else:  # "<oid> missing"
                    blobs[oid] = None
                    pos = nl + 1
        except ValueError as e:
            raise SourceError(f"git cat-file --batch in {self.repo} returned truncated output") from e
        return blobs

    def _present(self, oids: list[str]) -> set[str]:
        """Which of ``oids`` are blobs in the repository, from object headers only."""
        if not oids:
            return set()
        out = self._git(
            "cat-file", "--batch-check", "--buffer", stdin="".join(f"{o}\n" for o in oids).encode()
        )
        lines = out.decode("ascii", "replace").splitlines()
        if len(lines) != len(oids):
            raise SourceError(f"git cat-file --batch-check in {self.repo} returned truncated output")
        return {oid for oid, line in zip(oids, lines, strict=True) if line.split()[1:2] == ["blob"]}

    def _read_blobs(self, wanted: list[tuple[str, str, int]]) -> dict[str, bytes | None]:
        """The bytes of the blobs in ``wanted``, one ``cat-file --batch`` per ~_BATCH_BYTES."""
        blobs: dict[str, bytes | None] = {}
        batch: dict[str, None] = {}  # unique oids
        total = 0
        for _, oid, size in wanted:
            if batch and total + size > _BATCH_BYTES:
                blobs.update(self._blobs(list(batch)))
                batch, total = {}, 0
            batch[oid] = None
            total += size
        if batch:
            blobs.update(self._blobs(list(batch)))
        return blobs

    def _revisions(
        self, wanted: list[tuple[str, str, int]], session: CacheSession
    ) -> dict[str, CachedRevision | None]:
        """Each blob's revision by oid (None: missing): cached ones checked to exist, others read."""
        known = {oid: hit for _, oid, _ in wanted if (hit := session.get(oid, "blob")) is not None}
        present = self._present(list(known))
        out: dict[str, CachedRevision | None] = {o: e for o, e in known.items() if o in present}
        out.update(dict.fromkeys(set(known) - present))
        for oid, raw in self._read_blobs([w for w in wanted if w[1] not in known]).items():
            if raw is None:
                out[oid] = None
                continue
            entry = CachedRevision("blob", sha256_hex(raw), len(raw), lfs=raw.startswith(_LFS_POINTER))
            session.put(oid, entry)  # a blob id names its content: no settling needed
            out[oid] = entry
        return out

    def _entries(self, tree: str, label: str) -> tuple[list[tuple[str, str, int]], Counter[str], PolicyTree]:
        """Supported blobs (rel path, oid, size), counts of skipped entries, the policy files."""
        wanted: list[tuple[str, str, int]] = []
        skipped: Counter[str] = Counter()
        policies: dict[str, bytes] = {}
        for entry in self._git("ls-tree", "-r", "-z", "-l", "--full-tree", tree).split(b"\0"):
            if not entry:
                continue
            meta, _, name = entry.partition(b"\t")  # "<mode> <type> <oid> <size>\t<path>"
            mode, kind, oid, size = meta.decode("ascii").split()
            try:
                rel = name.decode("utf-8")
            except UnicodeDecodeError:
                skipped["non-utf8 name"] += 1
                continue
            policy = policy_file_kind(rel)
            if name_refusal(rel) is not None:  # a control character or line separator in a name
                skipped["control_char_name"] += 1
            elif mode == "120000":
                if policy:  # a linked policy would come from outside: fail closed, never skip
                    raise PolicyError(f"{label}:{self._path(rel)}", "an access policy may not be a symlink")
                skipped["symlink"] += 1
            elif kind == "commit":
                skipped["submodule"] += 1
            elif kind != "blob":
                skipped["other"] += 1
            elif any(part.startswith(".") for part in rel.split("/")):
                skipped["hidden"] += 1
            elif policy == "lookalike":
                refuse_lookalike(rel, f"{label}:{self._path(rel)}")
            elif policy == "policy":
                policies[rel] = self._git("cat-file", "blob", oid)
                skipped["policy"] += 1
            elif parser_for_path(rel) is None:
                skipped["unsupported"] += 1
            else:
                wanted.append((rel, oid, int(size) if size.isdigit() else 0))  # "BAD": missing blob
        where = f"{label}:{self.subdir}" if self.subdir else label
        return wanted, skipped, build_tree(self.default_access, policies, where)

    def list(self) -> Listing:
        commit, when = self._resolve()
        where = f"commit {commit[:12]} (ref {self.ref}) of {self.repo}"
        tree = commit
        if self.subdir:
            tree = f"{commit}:{self.subdir}"
            kind = self._run("cat-file", "-t", tree)
            if kind.returncode != 0 or kind.stdout.strip() != b"tree":
                err = kind.stderr.decode("utf-8", "replace").strip()
                raise SourceError(f"subdir {self.subdir!r} is not a folder in {where}: {err}")
        wanted, skipped, policy = self._entries(tree, f"{self.repo}@{commit[:12]}")
        session = begin(self.cache, f"git {self.root.as_posix()}")
        revisions = self._revisions(wanted, session)
        docs: list[SourceDocument] = []
        failed: list[DocumentFailure] = []
        for rel, oid, _ in wanted:
            entry = revisions[oid]
            if entry is None:
                failed.append(DocumentFailure(rel, "missing_object", f"blob {oid} is missing in {where}"))
                continue
            if entry.lfs:
                failed.append(DocumentFailure(rel, "lfs_pointer", f"{rel} is a Git LFS pointer in {where}"))
                continue
            d = policy.decide(rel)
            uri, effective = self._uri(oid, rel), (d.effective_from, d.effective_to)
            docs.append(
                document_at(
                    self.tenant, rel, entry.revision, entry.size, uri, d.access, effective, when, d.source
                )
            )
        self.commit = commit
        others = ", ".join(f"{n} {k}" for k, n in sorted(skipped.items())) or "none"
        scope = f"ls-tree of '{self.subdir}/'" if self.subdir else "ls-tree of the root"
        if not docs and not failed:
            proof = f"{where} resolved; {scope} listed 0 supported blobs (other entries: {others})"
            listing = Listing(self.tenant, Verdict.EMPTY, (), proof, (), policy.files)
        else:
            proof = (
                f"{where}: {scope} listed {len(docs) + len(failed)} supported blobs (other entries: {others})"
            )
            listing = Listing(self.tenant, Verdict.COMPLETE, tuple(docs), proof, tuple(failed), policy.files)
        session.commit()
        return listing

    def read(self, doc: SourceDocument) -> bytes:
        """The bytes of the blob the document was listed with (named in its uri)."""
        m = _URI_RE.fullmatch(doc.uri)
        if m is None or unquote(m["repo"]) != self.root.as_posix():
            raise SourceError(f"{doc.uri!r} does not name a blob of {self.repo}")
        path = unquote(m["path"])
        if path != self._path(doc.doc_id):
            raise SourceError(f"{doc.uri!r} does not match document {doc.doc_id!r}")
        raw = self._git("cat-file", "blob", m["blob"], what=f"cannot read {doc.uri}")
        if sha256_hex(raw) != doc.revision:
            raise SourceError(f"{doc.uri} does not match the listed revision of {doc.doc_id!r}")
        return raw
