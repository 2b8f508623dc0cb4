"""Cache snapshots during a measurement: before it, between a workload's phases, after it, and
every N seconds from a thread, all on one connection of the sampler's own.

Each snapshot is shared_buffers per relation (probes/buffercache.py) and, when the server's
data directory is readable here, each relation's bytes in the OS page cache (mincore). Relations
with no buffer at all are added from pg_class so that a relation washed out of shared_buffers
but still in the OS cache is seen. A snapshot that fails is kept with its reason; it never
fails the measurement. Snapshots stay in memory until the runner stores them with the
measurement (SQLite connections stay in the thread that made them).
"""

import threading
import time

import psycopg

from pgcachelab.analysis.cache_composition import compact
from pgcachelab.analysis.inspect_accuracy import MEASURED_PREFIX, REFERENCE, ROUND_MODES
from pgcachelab.analysis.inspect_overhead import Windows
from pgcachelab.clusters.client import one_row
from pgcachelab.clusters.managed import ClusterError
from pgcachelab.clusters.target import Target, is_managed
from pgcachelab.probes.buffercache import (
    SAMPLER_APPLICATION_NAME,
    RelationCache,
    available_methods,
    choose_method,
    collect,
    relation_kind,
)
from pgcachelab.probes.datadir import (
    fill_os_cache,
    local_data_dir,
    os_cache_note,
    os_cache_readable,
    reason,
)
from pgcachelab.probes.process_cpu import cpu_seconds
from pgcachelab.spec import InspectOptions, parse_inspect_method
from pgcachelab.store.records import StoredSnapshot

_USER_RELATIONS = """
select n.nspname, c.relname, c.relkind::text, pg_relation_size(c.oid),
       pg_relation_filepath(c.oid), c.reltablespace, pg_relation_filenode(c.oid)
from pg_class c join pg_namespace n on n.oid = c.relnamespace
where c.relkind in ('r', 'i', 'm', 't')
  and n.nspname not in ('pg_catalog', 'information_schema')
  and c.relpersistence <> 't' and pg_relation_size(c.oid) > 0
"""
_NEEDS = {
    "extension": "pgcachelab extension install, then CREATE EXTENSION pg_cachelab",
    "pg_buffercache": "CREATE EXTENSION pg_buffercache",
    "summary": "PostgreSQL 16+ and CREATE EXTENSION pg_buffercache",
    "auto": "CREATE EXTENSION pg_buffercache (or pg_cachelab)",
}


def uncached_relations(rows: list[tuple], present: set[str]) -> list[RelationCache]:
    """User relations (main forks) that no buffer holds, from _USER_RELATIONS rows."""
    relations = []
    for schema, name, relkind, size_bytes, file_path, tablespace_oid, relfilenode in rows:
        if f"{schema}.{name}" in present or file_path is None:
            continue
        relations.append(
            RelationCache(
                database=None,
                database_oid=0,
                tablespace_oid=int(tablespace_oid),
                relfilenode=int(relfilenode or 0),
                fork="main",
                buffers=0,
                dirty=0,
                pinned=0,
                usage_counts=[0] * 6,
                schema=schema,
                name=name,
                kind=relation_kind(relkind, schema),
                size_bytes=int(size_bytes),
                file_path=file_path,
            )
        )
    return relations


class CacheSampler:
    def __init__(
        self,
        conn,
        method: str,
        mode: str,
        options: InspectOptions,
        data_dir,
        note,
        backend_pid: int | None = None,
    ):
        self.conn = conn
        self.backend_pid = backend_pid  # the server process of `conn`, when it runs here
        self.method, self.mode = method, mode
        self.options = options
        self.data_dir = data_dir
        self.note = note
        self.read_os_cache = options.os_cache and os_cache_readable(note) and data_dir is not None
        self.snapshots: list[StoredSnapshot] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def open(cls, target: Target, settings: dict, options: InspectOptions, point_method: str):
        """A sampler for one measurement, or None when the point takes no snapshot."""
        wanted = parse_inspect_method(point_method)
        if wanted is None:
            return None
        requested, mode = wanted
        conn = target.connect(settings)
        try:
            conn.execute(f"set application_name = '{SAMPLER_APPLICATION_NAME}'")
            if is_managed(target):
                _create_extensions(conn, requested)
            method = choose_method(requested, available_methods(conn))
            if method is None:
                raise ClusterError(
                    f"inspect: method {point_method!r} is not available in database"
                    f" {conn.info.dbname!r}; it needs {_NEEDS[requested]}"
                )
            data_dir, note = None, None
            if options.os_cache:
                data_dir, why_not = local_data_dir(conn)
                note = os_cache_note(data_dir, why_not)
            backend_pid = None
            if is_managed(target) or data_dir is not None:  # the server runs here
                backend_pid = one_row(conn.execute("select pg_backend_pid()"))[0]
        except BaseException:
            conn.close()
            raise
        return cls(
            conn,
            method,
            mode if method == "extension" else "consistent",
            options,
            data_dir,
            note,
            backend_pid,
        )

    def take(self, label: str, mode: str | None = None, os_cache: bool = True) -> None:
        """One snapshot now, labelled; its failure is recorded, not raised."""
        mode = mode or self.mode
        with self._lock:
            taken_at, data, error, elapsed_ms = time.time(), None, None, None
            try:
                cpu_before = self._server_cpu()
                snapshot = collect(self.conn, self.method, mode)
                elapsed_ms = snapshot.elapsed_ms
                cpu_after = self._server_cpu()
                if os_cache and self.read_os_cache and self.method != "summary":
                    present = {r.qualified_name for r in snapshot.relations}
                    rows = self.conn.execute(_USER_RELATIONS).fetchall()
                    snapshot.relations += uncached_relations(rows, present)
                    fill_os_cache(snapshot, self.data_dir)
                snapshot.os_cache_note = self.note if self.options.os_cache else None
                data = compact(snapshot, self.options.top)
                if cpu_before is not None and cpu_after is not None:
                    data["server_cpu_ms"] = (cpu_after - cpu_before) * 1000
            except (psycopg.Error, OSError) as failure:
                error = reason(failure)
            self.snapshots.append(
                StoredSnapshot(
                    0,
                    0,
                    len(self.snapshots),
                    taken_at,
                    label,
                    self.method,
                    mode,
                    elapsed_ms,
                    error,
                    data,
                )
            )

    def _server_cpu(self) -> float | None:
        return None if self.backend_pid is None else cpu_seconds(self.backend_pid)

    def start_every(self, seconds: float, label: str = "sample", windows: Windows | None = None):
        """Snapshots every `seconds` from a thread until stop(); with `windows`, only in the
        polled ones, and none that the last snapshot's time says would run past its window
        (it would slow the next, unpolled window down)."""

        def tick():
            if windows is not None:
                now = time.time()
                index = windows.index(now)
                last = self.snapshots[-1].elapsed_ms if self.snapshots else None
                if not windows.polled(index) or now + (last or 0) / 1000 > windows.end(index):
                    return
            self.take(label)

        self._start(seconds, tick)

    def start_accuracy_rounds(self, seconds: float = 1.0) -> None:
        """Every `seconds`: each pg_cachelab mode between two exact references (snapshot mode:
        every partition lock for one pass), only the buffer counts (analysis/inspect_accuracy).
        The references block the server's buffer replacement for a pass each: this runs
        during a warm-up, never while a point is measured."""

        def accuracy_round():
            self.take(REFERENCE, "snapshot", os_cache=False)
            for mode in ROUND_MODES:
                self.take(MEASURED_PREFIX + mode, mode, os_cache=False)
                self.take(REFERENCE, "snapshot", os_cache=False)

        self._start(seconds, accuracy_round)

    def _start(self, seconds: float, tick) -> None:
        self.stop()
        self._stop.clear()

        def loop():
            next_at = time.monotonic() + seconds
            while not self._stop.wait(max(0.0, next_at - time.monotonic())):
                tick()
                # A slow snapshot skips the ticks it overran instead of bunching them up.
                next_at = max(next_at + seconds, time.monotonic())

        self._thread = threading.Thread(target=loop, name=SAMPLER_APPLICATION_NAME, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def close(self) -> None:
        self.stop()
        self.conn.close()


def _create_extensions(conn: psycopg.Connection, requested: str) -> None:
    """In a cluster the lab runs: pg_cachelab where it is installed, and pg_buffercache."""
    available = one_row(
        conn.execute(
            "select exists (select from pg_available_extensions where name = 'pg_cachelab')"
        )
    )[0]
    if requested in ("auto", "extension") and available:  # else auto takes pg_buffercache
        conn.execute("create extension if not exists pg_cachelab")
    if requested != "extension":
        conn.execute("create extension if not exists pg_buffercache")
