"""What is in shared_buffers, per relation: three methods, one snapshot shape.

- `extension`: the lab's pg_cachelab extension, one pass aggregating per relation in the server.
- `pg_buffercache`: the contrib view grouped by relation (every version; one row per buffer
  inside the server, so it costs ~100x more on large shared_buffers).
- `summary`: pg_buffercache_summary() (16+) and pg_buffercache_usage_counts() (17+): totals
  only, no relations.

The SQL lives here with the pure functions that turn its rows into a `CacheSnapshot`; running
it is one `collect()` call.
"""

import time
from dataclasses import asdict, dataclass, field

import psycopg
from psycopg import sql

from pgcachelab.clusters.client import one_row

METHODS = ("extension", "pg_buffercache", "summary")
USAGE_COUNTS = 6  # 0..BM_MAX_USAGE_COUNT
FORK_NAMES = {0: "main", 1: "fsm", 2: "vm", 3: "init"}
RELATION_KINDS = {
    "r": "table",
    "i": "index",
    "t": "toast",
    "m": "materialized view",
    "S": "sequence",
    "p": "partitioned table",
    "I": "partitioned index",
}
# pg_cachelab's modes, cheapest first after the default (method_costs.EXTENSION_MODE_COSTS)
MODES = ("consistent", "fast", "semiconsistent", "snapshot")
# The connection of the lab's cache sampler (experiments/cache_sampler.py). Workloads that wait
# for the other sessions of the database to end (cache-wash waits for the statistics of
# pgbench's sessions) leave this one out by its name.
SAMPLER_APPLICATION_NAME = "pgcachelab-sampler"

# Per relation fork: the same columns from either source, so one naming query serves both.
_EXTENSION_ROWS = "select * from pg_cachelab_relations({mode})"
_VIEW_ROWS = """
select reldatabase, reltablespace, relfilenode, relforknumber,
       count(*) as buffers,
       count(*) filter (where isdirty) as dirty,
       count(*) filter (where pinning_backends > 0) as pinned,
       count(*) filter (where usagecount = 0) as usage_count_0,
       count(*) filter (where usagecount = 1) as usage_count_1,
       count(*) filter (where usagecount = 2) as usage_count_2,
       count(*) filter (where usagecount = 3) as usage_count_3,
       count(*) filter (where usagecount = 4) as usage_count_4,
       count(*) filter (where usagecount = 5) as usage_count_5
from pg_buffercache
where relfilenode is not null
group by reldatabase, reltablespace, relfilenode, relforknumber
"""
# Names come from the current database only: pg_filenode_relation() maps relfilenumbers of
# this database and the shared catalogs (reldatabase 0), including mapped catalogs whose
# pg_class.relfilenode is 0. Other databases' rows stay unnamed, with their database's name.
_NAMED_ROWS = """
with cached as ({rows}),
     here as (select oid from pg_database where datname = current_database())
select c.reldatabase, c.reltablespace, c.relfilenode, c.relforknumber,
       c.buffers, c.dirty, c.pinned,
       c.usage_count_0, c.usage_count_1, c.usage_count_2,
       c.usage_count_3, c.usage_count_4, c.usage_count_5,
       d.datname, n.nspname, r.relname, r.relkind::text,
       case when r.oid is not null then pg_relation_size(r.oid, case c.relforknumber
            when 0 then 'main' when 1 then 'fsm' when 2 then 'vm' else 'init' end) end,
       case when r.oid is not null then pg_relation_filepath(r.oid) end
from cached c
left join pg_database d on d.oid = c.reldatabase
left join pg_class r on c.reldatabase in (0, (select oid from here))
     and r.oid = pg_filenode_relation(c.reltablespace, c.relfilenode)
left join pg_namespace n on n.oid = r.relnamespace
"""
_SERVER_FACTS = """
select current_setting('block_size')::int8,
       (select setting::int8 from pg_settings where name = 'shared_buffers'),
       current_database(),
       current_setting('server_version_num')::int
"""
_SUMMARY = """
select buffers_used, buffers_unused, buffers_dirty, buffers_pinned from pg_buffercache_summary()
"""
_USAGE_COUNTS = "select usage_count, buffers from pg_buffercache_usage_counts()"


@dataclass
class RelationCache:
    """One relation fork's share of shared_buffers (and of the OS page cache, when known)."""

    database: str | None
    database_oid: int
    tablespace_oid: int
    relfilenode: int
    fork: str
    buffers: int
    dirty: int
    pinned: int
    usage_counts: list[int]
    schema: str | None = None
    name: str | None = None
    kind: str | None = None
    size_bytes: int | None = None
    file_path: str | None = None  # relative to the data directory, main fork
    os_cached_bytes: int | None = None

    @property
    def qualified_name(self) -> str:
        if self.name is None:
            where = self.database or f"database {self.database_oid}"
            return f"relfilenode {self.relfilenode} ({where})"
        suffix = "" if self.fork == "main" else f" ({self.fork})"
        return f"{self.schema}.{self.name}{suffix}"


@dataclass
class CacheSnapshot:
    """shared_buffers at one moment: totals, and per relation fork unless method is summary."""

    method: str
    mode: str | None
    block_size: int
    buffers_total: int
    buffers_used: int
    buffers_dirty: int
    buffers_pinned: int
    usage_counts: list[int] | None
    relations: list[RelationCache] = field(default_factory=list)
    database: str | None = None
    elapsed_ms: float | None = None
    os_cache_note: str | None = None
    server_version_num: int | None = None  # what the method costs depends on it (method_costs)

    @property
    def buffers_free(self) -> int:
        return self.buffers_total - self.buffers_used

    def to_dict(self) -> dict:
        data = asdict(self)
        data["buffers_free"] = self.buffers_free
        return data


# -- pure: rows to snapshots -----------------------------------------------------------------


def relation_kind(relkind: str | None, schema: str | None) -> str | None:
    """'table', 'index', 'toast' (a toast table or its index), ... from pg_class.relkind."""
    if relkind is None:
        return None
    if schema == "pg_toast" or relkind == "t":
        return "toast"
    return RELATION_KINDS.get(relkind, relkind)


def relation_from_row(row: tuple) -> RelationCache:
    """One row of the naming query (see _NAMED_ROWS for the column order)."""
    (database_oid, tablespace_oid, relfilenode, fork_number, buffers, dirty, pinned, *rest) = row
    usage_counts = [int(count) for count in rest[:USAGE_COUNTS]]
    database, schema, name, relkind, size_bytes, file_path = rest[USAGE_COUNTS:]
    return RelationCache(
        database=database,
        database_oid=int(database_oid),
        tablespace_oid=int(tablespace_oid),
        relfilenode=int(relfilenode),
        fork=FORK_NAMES.get(int(fork_number), str(fork_number)),
        buffers=int(buffers),
        dirty=int(dirty),
        pinned=int(pinned),
        usage_counts=usage_counts,
        schema=schema,
        name=name,
        kind=relation_kind(relkind, schema),
        size_bytes=None if size_bytes is None else int(size_bytes),
        file_path=file_path,
    )


def snapshot_from_relations(
    method: str, mode: str | None, facts: tuple, rows: list[tuple]
) -> CacheSnapshot:
    """A per-relation snapshot; the totals are the sums, so they agree with the rows exactly."""
    block_size, buffers_total, database, _ = facts
    relations = sorted(
        (relation_from_row(row) for row in rows), key=lambda r: (-r.buffers, r.relfilenode, r.fork)
    )
    usage_counts = [sum(r.usage_counts[i] for r in relations) for i in range(USAGE_COUNTS)]
    return CacheSnapshot(
        method=method,
        mode=mode,
        block_size=int(block_size),
        buffers_total=int(buffers_total),
        buffers_used=sum(r.buffers for r in relations),
        buffers_dirty=sum(r.dirty for r in relations),
        buffers_pinned=sum(r.pinned for r in relations),
        usage_counts=usage_counts,
        relations=relations,
        database=database,
    )


def snapshot_from_summary(
    facts: tuple, summary_row: tuple, usage_rows: list[tuple] | None
) -> CacheSnapshot:
    """Totals from pg_buffercache_summary(), and the histogram from usage_counts() (17+)."""
    block_size, buffers_total, database, _ = facts
    used, unused, dirty, pinned = (int(value) for value in summary_row)
    usage_counts = None
    if usage_rows is not None:
        usage_counts = [0] * USAGE_COUNTS
        for usage_count, buffers in usage_rows:
            usage_counts[min(int(usage_count), USAGE_COUNTS - 1)] += int(buffers)
    return CacheSnapshot(
        method="summary",
        mode=None,
        block_size=int(block_size),
        buffers_total=used + unused if used + unused else int(buffers_total),
        buffers_used=used,
        buffers_dirty=dirty,
        buffers_pinned=pinned,
        usage_counts=usage_counts,
        database=database,
    )


def choose_method(requested: str, available: dict[str, bool]) -> str | None:
    """The method to use: the requested one if available; for 'auto' the cheapest per-relation
    one (the extension, else the grouped view). None when nothing fits."""
    if requested != "auto":
        return requested if available.get(requested) else None
    for method in ("extension", "pg_buffercache"):
        if available.get(method):
            return method
    return None


# -- running the SQL -------------------------------------------------------------------------


def _installed_extensions(conn: psycopg.Connection) -> dict[str, str]:
    return dict(conn.execute("select extname, extversion from pg_extension").fetchall())


def available_methods(conn: psycopg.Connection) -> dict[str, bool]:
    """Which methods work in the connected database (extensions must be created in it)."""
    extensions = _installed_extensions(conn)
    server_version_num = int(one_row(conn.execute("show server_version_num"))[0])
    has_buffercache = "pg_buffercache" in extensions
    return {
        "extension": "pg_cachelab" in extensions,
        "pg_buffercache": has_buffercache,
        "summary": has_buffercache
        and server_version_num >= 160000
        and _has_function(conn, "pg_buffercache_summary"),
    }


def _has_function(conn: psycopg.Connection, name: str) -> bool:
    query = "select exists (select from pg_proc where proname = %s)"
    return one_row(conn.execute(query, [name]))[0]


def collect(conn: psycopg.Connection, method: str, mode: str = "consistent") -> CacheSnapshot:
    """Take one snapshot with `method` ('extension', 'pg_buffercache' or 'summary')."""
    facts = one_row(conn.execute(_SERVER_FACTS))
    started = time.perf_counter()
    if method == "summary":
        summary_row = one_row(conn.execute(_SUMMARY))
        usage_rows = None
        if facts[3] >= 170000:
            usage_rows = conn.execute(_USAGE_COUNTS).fetchall()
        snapshot = snapshot_from_summary(facts, summary_row, usage_rows)
    else:
        if method == "extension":
            rows_sql: sql.Composable = sql.SQL(_EXTENSION_ROWS).format(mode=sql.Literal(mode))
        elif method == "pg_buffercache":
            rows_sql = sql.SQL(_VIEW_ROWS)
            mode = "consistent"
        else:
            raise ValueError(f"unknown method {method!r}")
        query = sql.SQL(_NAMED_ROWS).format(rows=rows_sql)
        snapshot = snapshot_from_relations(method, mode, facts, conn.execute(query).fetchall())
    snapshot.elapsed_ms = (time.perf_counter() - started) * 1000
    snapshot.server_version_num = int(facts[3])
    return snapshot
