"""A tenant's published index: one LanceDB table per tenant and model version.

Publishing reconciles the changed documents in ONE ``merge_insert`` commit: conditional
update of changed rows, insert of new rows, and delete of stale rows scoped to the changed
or removed doc ids. When none of those documents has a live row (a first build, or documents
new to the tenant) the commit is a streamed append instead: ``merge_insert`` holds its whole
source in memory (+560 MB for 40,000 rows), an append (:mod:`tessera.store.append`) a bounded
buffer. On a table of ``SCOPED_MIN_ROWS`` rows or more the commit is one Lance transaction
that reads only the scope (:mod:`tessera.store.scoped_merge`), relabels included:
``merge_insert`` joins the whole table, its delete all of it. Nothing changed means nothing
committed. Each commit is tagged with its run id and logged in the tenant's
``publications__{tenant}`` table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tessera.errors import PublishError, TransientStoreError
from tessera.store.append import append_rows
from tessera.store.db import (
    chunks_table_name,
    connect,
    create_or_open,
    is_transient_store_error,
    open_table,
    publications_table_name,
    sql_str,
    tag_for_run,
)
from tessera.store.health import open_checked, read_guard
from tessera.store.indexes import UNCHECKED, VECTOR_INDEX_MIN_ROWS, check_vector_index, ensure_indexes
from tessera.store.manifest import DocState as DocState
from tessera.store.manifest import commit_key, read_manifest
from tessera.store.memory import release_memory
from tessera.store.publishing import PublishResult as PublishResult
from tessera.store.publishing import StreamedRows as StreamedRows
from tessera.store.restore import RestoreGuard, RestorePlan, check_plan, plan_restore
from tessera.store.retry import COMMIT_ATTEMPTS, retrying
from tessera.store.schema import chunk_schema
from tessera.store.scoped_merge import SCOPED_MIN_ROWS, scoped_merge

_PUB_SCHEMA = pa.schema(
    [
        pa.field("tenant", pa.string(), nullable=False),
        pa.field("model_version", pa.string(), nullable=False),
        pa.field("table_version", pa.int64(), nullable=False),
        pa.field("kind", pa.string()),
        pa.field("tag", pa.string()),
        pa.field("run_id", pa.string()),
        pa.field("inserted", pa.int64()),
        pa.field("updated", pa.int64()),
        pa.field("deleted", pa.int64()),
        pa.field("docs_changed", pa.int64()),
        pa.field("docs_removed", pa.int64()),
        pa.field("rows", pa.int64()),
        pa.field("config_hash", pa.string()),
        pa.field("published_at_us", pa.int64()),
    ]
)


def _in_list(values: list[str]) -> str:
    return ", ".join(sql_str(v) for v in values)


def document_revisions(table: Any) -> dict[str, str]:
    """``doc_id -> revision`` of every document a chunks table holds."""
    data = table.search().select(["doc_id", "revision"]).limit(None).to_arrow()
    return dict(zip(data.column("doc_id").to_pylist(), data.column("revision").to_pylist(), strict=True))


NEVER_VECTOR = 2**62
"""``vector_min_rows`` of an index phase that builds no vector index."""


class TenantIndex:
    def __init__(self, db: Any, tenant: str, model_key: str, dimension: int) -> None:
        self.db = db
        self.tenant = tenant
        self.model_key = model_key
        self.dimension = dimension
        self.name = chunks_table_name(tenant, model_key)
        self.schema = chunk_schema(dimension)
        self.last_indexes: dict[str, str] = {}

    def table(self) -> Any | None:
        """The live table (None before the first build). :class:`StoreDamaged` when it is
        unreadable, gone while publications name it, or went back behind them."""
        return open_checked(self.db, self.tenant, self.model_key)

    def ensure(self) -> Any:
        table = self.table()
        if table is None:
            table = self.db.create_table(self.name, schema=self.schema)
            table.set_unenforced_primary_key("id")
        elif table.schema.field("vector").type != self.schema.field("vector").type:
            raise PublishError(f"{self.name} holds vectors of another dimension; refusing to mix models")
        else:
            missing = [f for f in self.schema if f.name not in table.schema.names]
            if any(not f.nullable for f in missing):
                raise PublishError(f"{self.name} lacks required columns {[f.name for f in missing]}")
            if missing:  # a table from an older release: add the new nullable columns (all null)
                table.add_columns(missing)
        return table

    def version(self) -> int | None:
        table = self.table()
        return None if table is None else int(table.version)

    def manifest(self) -> dict[str, DocState]:
        """What is live, per document, read from the table itself (the source of truth)."""
        table = self.table()
        if table is None:
            return {}
        with read_guard(self.db, self.tenant, self.model_key):  # a damaged file is StoreDamaged
            return read_manifest(table)

    def planned_state(self) -> tuple[dict[str, DocState], Callable[[], str]]:
        """The manifest, and a function giving the :func:`commit_key` of the commit it was read
        from, asked only by a plan that publishes something (the key opens the Lance dataset:
        the first open imports ``lance``, 30 ms of a 10,000-document no-op that needs no key).

        The handle reads one version, named by number; the key is of that number (or ""). A
        table dropped and built again to the same number between the read and the ask would
        be another commit under the same number: that takes a purge and as many commits."""
        table = self.table()
        if table is None:
            return {}, lambda: ""
        with read_guard(self.db, self.tenant, self.model_key):
            live = read_manifest(table)
        version = int(table.version)

        def key() -> str:
            with read_guard(self.db, self.tenant, self.model_key):
                found = commit_key(table)
            return found if found.startswith(f"{self.name}@{version}:") else ""

        return live, key

    def commit_key(self) -> str:
        """The :func:`commit_key` of the live version ("" before the first build)."""
        table = self.table()
        with read_guard(self.db, self.tenant, self.model_key):
            return commit_key(table)

    def document_ids(self) -> set[str]:
        """The documents the live table holds: one column read, deduplicated in Arrow (the
        :meth:`manifest` reads six columns and builds a state per document: 290 MB for a
        cutover's "is the new table complete" question at 400,000 rows)."""
        table = self.table()
        if table is None:
            return set()
        with read_guard(self.db, self.tenant, self.model_key):
            data = table.search().select(["doc_id"]).limit(None).to_arrow()
        return set(pc.unique(data.column("doc_id")).to_pylist())

    def publish(
        self, rows: pa.Table | StreamedRows, scope: set[str], run_id: str, config_hash: str
    ) -> PublishResult:
        """Replace the rows of the documents in ``scope`` by ``rows``, in one commit. A stream
        is read batch by batch into the commit, never whole into memory."""
        if not scope:
            return PublishResult(committed=False, version=self.version())
        rows = rows if isinstance(rows, StreamedRows) else StreamedRows.of(rows)
        if rows.doc_ids - scope:
            raise PublishError("staged rows contain documents outside the publish scope")
        table = self.ensure()
        tag = self._free_tag(table, run_id)
        try:
            inserted, updated, deleted = retrying(lambda: self._merge(table, rows, scope))
        except Exception as e:
            if is_transient_store_error(e):
                raise TransientStoreError(
                    f"commit to {self.name} failed after {COMMIT_ATTEMPTS} attempts, the store is "
                    f"throttling or unreachable (retry the run): {e}"
                ) from e
            raise PublishError(f"commit to {self.name} failed: {e}") from e
        if inserted is None:  # e.g. documents without chunks: nothing to delete, no commit
            return PublishResult(committed=False, version=int(table.version))
        release_memory()  # what the commit's writer freed, before the index builds allocate
        self._refresh_indexes(table)
        result = PublishResult(True, int(table.version), inserted, updated, deleted, tag=tag)
        self._record(table, "publish", result, run_id, config_hash)
        return result

    def _merge(self, table: Any, rows: StreamedRows, scope: set[str]) -> tuple[Any, int, int]:
        """One commit: ``rows`` replace the rows of the documents in ``scope`` (``whole`` rows:
        no delete). Idempotent, so a retry after a throttled request cannot publish twice (the
        second pass matches every checksum). ``(None, 0, 0)`` when there is nothing to commit."""
        # an empty table (a first build) is not asked with the scope's IN list: DataFusion
        # planning one of 100,000 ids took 140 MB; the list is made here, and freed with this
        # frame before the index builds (1.7 MB of text at 100,000 short ids)
        total = int(table.count_rows())
        if not total:
            return self._append(table, rows)
        where = f"doc_id IN ({_in_list(sorted(scope))})"
        before = int(table.count_rows(where))
        if rows.num_rows == 0:
            if before == 0 or rows.whole:
                return None, 0, 0
            table.delete(where)
            return 0, 0, before
        if before == 0:
            return self._append(table, rows)
        if total >= SCOPED_MIN_ROWS:  # merge_insert joins the whole table (the by-source delete all of it)
            return scoped_merge(table, rows.open().cast(self.schema), where, whole=rows.whole)
        merge = (
            table.merge_insert("id")
            .when_matched_update_all(
                # a new parser version that yields the same chunk records itself on the row
                where="target.checksum != source.checksum OR target.meta_hash != source.meta_hash "
                "OR target.parser_version != source.parser_version"
            )
            .when_not_matched_insert_all()
        )
        merge = merge if rows.whole else merge.when_not_matched_by_source_delete(where)
        res = merge.execute(rows.open().cast(self.schema))
        return res.num_inserted_rows, res.num_updated_rows, res.num_deleted_rows

    def _append(self, table: Any, rows: StreamedRows) -> tuple[Any, int, int]:
        """Nothing to update or delete: an append streams (a retry after it committed sees the
        rows and merges, which matches every checksum: no second copy)."""
        if rows.num_rows == 0:
            return None, 0, 0
        append_rows(table, rows.open().cast(self.schema))
        return rows.num_rows, 0, 0

    @staticmethod
    def _free_tag(table: Any, run_id: str) -> str:
        """The run's tag, refused *before* any commit when that run id already published."""
        tag = tag_for_run(run_id)
        if tag in table.tags.list():
            raise PublishError(f"run id {run_id!r} already published version {table.tags.get_version(tag)}")
        return tag

    def _refresh_indexes(self, table: Any) -> None:
        """Indexes are part of the published version; a failure names the live version. A
        throttled store is retried (a build is idempotent: a missing index is built, a present
        one updated); one that keeps throttling is a retryable :class:`TransientStoreError`
        (`tessera doctor` reports what is left unindexed; the next commit builds it)."""

        unchecked = [False]

        def attempt() -> dict[str, str]:
            try:
                return self._build_indexes(unchecked)
            except PublishError as e:
                if e.__cause__ is not None and is_transient_store_error(e.__cause__):
                    raise e.__cause__ from None  # the store's own error, retried below (no cycle)
                raise

        try:
            self.last_indexes = retrying(attempt)
            table.checkout_latest()  # the version with the new indexes (built on another handle)
        except PublishError as e:
            raise PublishError(f"version {table.version} of {self.name} is live, but {e}") from e
        except Exception as e:
            if is_transient_store_error(e):
                raise TransientStoreError(
                    f"version {table.version} of {self.name} is live, but building its indexes failed "
                    f"after {COMMIT_ATTEMPTS} attempts, the store is throttling (retry the run): {e}"
                ) from e
            raise

    def _build_indexes(self, unchecked: list[bool]) -> dict[str, str]:
        """``ensure_indexes`` in three phases: the text and scalar indexes, the vector index,
        and the new vector index's recall check, each on a handle of a connection of its own
        that is dropped with its caches before the next phase, the freed memory handed back.
        On the shared connection every new index stayed cached for the life of the process,
        under the next build (at 100,000 documents the publish ended at 1,000 MB RSS), and the
        recall check's scan ran on top of the build's cache (+430 MB at 400,000 rows).

        ``unchecked[0]`` is set while a built vector index awaits its check, so an attempt
        retried after a throttled check still checks it (the build itself is then a no-op)."""
        done: dict[str, str] = {}

        def phase(work: Callable[[Any], dict[str, str]]) -> None:
            own = connect(str(self.db.uri), fresh=True).open_table(self.name)
            try:
                done.update(work(own))
            finally:
                del own
                release_memory()

        phase(lambda t: ensure_indexes(t, NEVER_VECTOR))
        phase(lambda t: ensure_indexes(t, VECTOR_INDEX_MIN_ROWS, check_recall=False))
        unchecked[0] = unchecked[0] or done.get("vector") == UNCHECKED
        if unchecked[0]:
            phase(lambda t: {"vector": check_vector_index(t)})
            unchecked[0] = False
        return done

    def _record(self, table: Any, kind: str, result: PublishResult, run_id: str, config_hash: str) -> None:
        """Tag and log a commit; a failure here names the version that is already live."""
        try:
            table.tags.create(result.tag, result.version)
            self._log(kind, result, run_id, config_hash, int(table.count_rows()))
        except Exception as e:
            error = TransientStoreError if is_transient_store_error(e) else PublishError
            raise error(
                f"version {result.version} of {self.name} is live, but tagging or logging it failed: {e}"
            ) from e

    def plan_restore(
        self,
        version: int,
        guard: RestoreGuard | None = None,
        allow_untagged: bool = False,
        allow_mass_delete: bool = False,
    ) -> RestorePlan:
        """What restoring ``version`` would change, and why it would be refused (nothing written)."""
        table = self.table()
        if table is None:
            raise PublishError(f"tenant {self.tenant!r} has no index for model {self.model_key}")
        return plan_restore(
            table, self.table, self.tenant, self.name, self.publications(), version,
            guard or RestoreGuard(), allow_untagged, allow_mass_delete,
        )  # fmt: skip

    def restore(
        self,
        version: int,
        run_id: str,
        guard: RestoreGuard | None = None,
        allow_untagged: bool = False,
        allow_mass_delete: bool = False,
    ) -> PublishResult:
        """Make a publication current again, as a new version (history is kept).

        Refused (:class:`RestoreBlocked`, nothing changed) for an untagged internal version
        unless ``allow_untagged``, and beyond the guard unless ``allow_mass_delete``. Callers
        hold the tenant lock (the CLI does), so no run publishes in between."""
        plan = self.plan_restore(version, guard, allow_untagged, allow_mass_delete)
        check_plan(plan)
        table = self.table()
        assert table is not None
        tag = self._free_tag(table, run_id)
        table.restore(version)
        self._refresh_indexes(table)
        changed = len(plan.added) + len(plan.changed)
        result = PublishResult(
            True, int(table.version), docs_changed=changed, docs_removed=len(plan.removed), tag=tag
        )
        self._record(table, "restore", result, run_id, f"restore-of-{version}")
        return result

    def _log(self, kind: str, r: PublishResult, run_id: str, config_hash: str, rows: int) -> None:
        entry = asdict(r)
        record = pa.table(
            {
                "tenant": [self.tenant],
                "model_version": [self.model_key],
                "table_version": [r.version],
                "kind": [kind],
                "tag": [r.tag],
                "run_id": [run_id],
                "inserted": [entry["inserted"]],
                "updated": [entry["updated"]],
                "deleted": [entry["deleted"]],
                "docs_changed": [entry["docs_changed"]],
                "docs_removed": [entry["docs_removed"]],
                "rows": [rows],
                "config_hash": [config_hash],
                "published_at_us": [int(time.time() * 1e6)],
            },
            schema=_PUB_SCHEMA,
        )
        name = publications_table_name(self.tenant)
        table = create_or_open(self.db, name, record, _PUB_SCHEMA)
        if table is not None:
            table.add(record)

    def publications(self) -> list[dict[str, Any]]:
        table = open_table(self.db, publications_table_name(self.tenant))
        if table is None:
            return []
        rows: list[dict[str, Any]] = table.to_arrow().to_pylist()
        return sorted(
            (r for r in rows if r["model_version"] == self.model_key), key=lambda r: r["table_version"]
        )
