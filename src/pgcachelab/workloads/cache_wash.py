"""Seed 000's cache wash-out test: index lookups, one big sequential scan, lookups again.

The table `random(random real, data float[])` is sized against the server's memory and built
once per run; each point then prewarms it, warms the index with pgbench's lookups (for a time or
a count: throughput is what matters there), and measures three phases, each on a new session
that times every statement on the client (workloads/client_timing.py; pgbench's log reads 0 for
a reply already waiting): idx1 (N lookups), seq (one `count(data)` over the table) and idx2 (N
lookups). Each phase also gets its own block reads and hits from pg_statio, so the report can
say which cache each phase was served from. With prewarm, N lookups are also timed right after
pg_prewarm, before the warm-up (idx0: seed 000's "pg_prewarm fills the cache but does not warm
it", issue 46).
"""

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from pgcachelab.clusters.client import one_row
from pgcachelab.clusters.target import Target
from pgcachelab.machine import owned
from pgcachelab.probes.buffercache import SAMPLER_APPLICATION_NAME
from pgcachelab.units import format_bytes
from pgcachelab.workloads.client_timing import cross_check, time_statement
from pgcachelab.workloads.outcome import Outcome
from pgcachelab.workloads.parameters import CacheWashParameters
from pgcachelab.workloads.pgbench import run_pgbench
from pgcachelab.workloads.pgbench_workload import checkpoint
from pgcachelab.workloads.protocol import Bench, DataEstimate

TABLE = "random"
INDEX = "random_random_idx"
LOOKUP_QUERY = "select random from random where random = (select random()::real)"
LOOKUP_SQL = LOOKUP_QUERY + ";\n"  # pgbench's script, for the warm-up
SEQ_QUERY = "select count(data) from random"
# Run untimed first on the seq phase's session: it loads the catalog caches for the table as
# the untimed first lookup does for idx1 and idx2, without reading a block (One-Time Filter).
SEQ_SESSION_WARMUP = "select count(data) from random where false"
SESSION_NAME = "pgcachelab-cache-wash"
SAMPLE_ROWS = 10_000
LOAD_BATCHES = 10

# What the runner asks of it (workloads/protocol.py).
parameters_type = CacheWashParameters
# The table is sized against memory and takes long to build: a failed run keeps it for --resume.
keeps_data = True
prewarms_itself = True  # the point's prewarm is the seed's pg_prewarm of table then index
prewarm_after_version_switch = False
run_stopping_errors: tuple[type[Exception], ...] = ()


def data_estimate(parameters: CacheWashParameters, memory_bytes: int | None) -> DataEstimate:
    """The table, built once per run at its size against the server's memory."""
    table_size = parameters.table_size
    wanted = target_table_bytes(table_size, memory_bytes or 0)
    if isinstance(table_size, float) and not memory_bytes:
        identity, build = table_size, f"the cache-wash table ({table_size:g} x the server's memory)"
    else:
        identity, build = wanted, f"the cache-wash table of {format_bytes(wanted)}"
    return DataEstimate(identity, wanted, "cache_wash.table_size", repr(table_size), build)


def known_seconds(parameters: CacheWashParameters) -> tuple[float, list[str]]:
    """The warm-up for a time; the lookups' and the scan's time depend on the caches."""
    seconds, left_out = 0.0, []
    if parameters.warmup_lookups is not None:
        left_out.append(f"the warm-up's {parameters.warmup_lookups:,} lookups")
    else:
        seconds += float(parameters.warmup or 0)
    if parameters.prewarm:
        left_out.append("pg_prewarm of the table and index")
    # idx1 and idx2, and idx0 right after pg_prewarm
    lookups = parameters.lookups * (3 if parameters.prewarm else 2)
    left_out.append(f"the measured phases ({lookups:,} lookups and one scan of the table)")
    return seconds, left_out


def target_table_bytes(table_size, memory_bytes: int) -> int:
    """`table_size` in bytes: as given, or a fraction of the server's memory (the seed: 1.0)."""
    if isinstance(table_size, float):
        return int(table_size * memory_bytes)
    return int(table_size)


def rows_for(target_bytes: int, sample_bytes: int, sample_rows: int) -> int:
    """Rows that make a table of `target_bytes`, from the size of a sample of it."""
    return max(sample_rows, round(target_bytes * sample_rows / max(sample_bytes, 1)))


def _existing_build(conn: psycopg.Connection) -> dict | None:
    row = conn.execute(
        "select obj_description(c.oid, 'pg_class') from pg_class c where c.oid = to_regclass(%s)",
        [TABLE],
    ).fetchone()
    if not row or not row[0]:
        return None
    try:
        return json.loads(row[0])
    except ValueError:
        return None


def ensure_data(bench: Bench, point) -> dict:
    """Build the table once per run; a resumed run finds it (its description records it)."""
    state = bench.state
    wanted_bytes = target_table_bytes(point.workload.table_size, bench.memory_bytes())
    key = ("cache-wash", wanted_bytes)
    if state.get("data_key") == key:
        return {"built": False, **state["data_sizes"]}
    with bench.target.connect() as conn:
        existing = _existing_build(conn)
        if existing and existing.get("target_bytes") == wanted_bytes:
            state["data_key"], state["data_sizes"] = key, existing
            return {"built": False, "reused": True, **existing}
        sizes = _build(conn, wanted_bytes, bench.progress.note)
    state["data_key"], state["data_sizes"] = key, sizes
    return {"built": True, **sizes}


def _build(conn: psycopg.Connection, wanted_bytes: int, note: Callable[[str], None]) -> dict:
    started = time.monotonic()
    table, index = sql.Identifier(TABLE), sql.Identifier(INDEX)
    conn.execute(sql.SQL("drop table if exists {}").format(table))
    conn.execute(sql.SQL("create table {} (random real, data float[])").format(table))
    fill = sql.SQL(
        "insert into {} select r, array_fill(r, array[20]) from"
        " (select random()::real as r from generate_series(1, %s)) s"
    ).format(table)
    conn.execute(fill, [SAMPLE_ROWS])
    sample_bytes = one_row(conn.execute("select pg_relation_size(%s)", [TABLE]))[0]
    rows = rows_for(wanted_bytes, sample_bytes, SAMPLE_ROWS)
    remaining, loaded = rows - SAMPLE_ROWS, SAMPLE_ROWS
    batch = max(1, remaining // LOAD_BATCHES)
    while remaining > 0:
        count = min(batch, remaining)
        conn.execute(fill, [count])
        remaining, loaded = remaining - count, loaded + count
        note(f"cache-wash table: {loaded:,} of {rows:,} rows loaded")
    conn.execute(sql.SQL("create index {} on {} (random)").format(index, table))
    note("cache-wash table: vacuum full freeze analyze")
    conn.execute(sql.SQL("vacuum full freeze analyze {}").format(table))
    conn.execute("create extension if not exists pg_prewarm")
    table_bytes, index_bytes = one_row(
        conn.execute("select pg_relation_size(%s), pg_relation_size(%s)", [TABLE, INDEX])
    )
    sizes = {
        "target_bytes": wanted_bytes,
        "rows": rows,
        "table_bytes": table_bytes,
        "index_bytes": index_bytes,
        "build_s": round(time.monotonic() - started, 2),
    }
    conn.execute(sql.SQL("comment on table {} is {}").format(table, sql.Literal(json.dumps(sizes))))
    checkpoint(conn)
    note(
        f"cache-wash table: {rows:,} rows, table {format_bytes(table_bytes)}, index "
        f"{format_bytes(index_bytes)} (wanted {format_bytes(wanted_bytes)}), "
        f"built in {sizes['build_s']:.0f} s"
    )
    return sizes


def _statio(conn: psycopg.Connection) -> dict:
    row = one_row(
        conn.execute(
            "select heap_blks_read, heap_blks_hit, coalesce(idx_blks_read, 0),"
            " coalesce(idx_blks_hit, 0) from pg_statio_user_tables where relid = to_regclass(%s)",
            [TABLE],
        )
    )
    names = ("heap_blks_read", "heap_blks_hit", "idx_blks_read", "idx_blks_hit")
    return dict(zip(names, (int(v) for v in row), strict=True))


def _wait_for_stats(conn: psycopg.Connection) -> None:
    """pgbench's backends flush their statistics as they exit (15+: before leaving the proc
    array), so wait until they are gone; before 15 the collector needs a moment more."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        others = one_row(
            conn.execute(
                "select count(*) from pg_stat_activity where backend_type = 'client backend'"
                " and pid <> pg_backend_pid() and datname = current_database()"
                " and application_name <> %s",
                [SAMPLER_APPLICATION_NAME],
            )
        )[0]
        if not others:
            break
        time.sleep(0.01)
    if conn.info.server_version < 150000:
        time.sleep(0.6)
    conn.execute("select pg_stat_clear_snapshot()")


def prepare(bench: Bench, point, conn: psycopg.Connection) -> dict:
    """Prewarm table then index, then warm further with the lookups (seed 000: pg_prewarm
    fills shared_buffers but leaves usage counts at 1, so it "fills but does not warm").

    The warm-up runs for `warmup` seconds or `warmup_lookups` lookups: a count touches the
    index the same way whatever the disk's speed (the seed's 100 s against a ~1.6 GB index)."""
    done: dict[str, Any] = {}
    parameters = point.workload
    timed: dict[str, Any] = {}  # what run() stores with the phases
    if parameters.prewarm:
        table_blocks, index_blocks = one_row(
            conn.execute("select pg_prewarm(%s), pg_prewarm(%s)", [TABLE, INDEX])
        )
        done["prewarmed"] = {"table_blocks": table_blocks, "index_blocks": index_blocks}
        timed["prewarmed_index_blocks"] = index_blocks
        # idx0: the lookups right after pg_prewarm, before the warm-up; ~0.1 s of a point
        timed["idx0_ms"], timed["idx0_check"] = _timed_phase(
            bench.target, point, "idx0", parameters.lookups
        )
    warmup_s = int(parameters.warmup or 0)
    warmup_lookups = parameters.warmup_lookups
    limit = ["-t", str(warmup_lookups)] if warmup_lookups else ["-T", str(warmup_s)]
    started = time.monotonic()
    lookups_done = 0
    if warmup_lookups or (warmup_lookups is None and warmup_s):
        with owned.scratch_dir("pgcachelab-cache-wash-") as scratch:
            lookup = scratch / "lookup.sql"
            lookup.write_text(LOOKUP_SQL)
            warm = run_pgbench(
                bench.pgbench,
                ["-n", "-c", "1", "-f", str(lookup), *limit],
                bench.target.pgbench_target(point.settings),
            )
        lookups_done = warm.result.transactions_processed
    if warmup_lookups is not None:
        done["warmup_lookups"] = warmup_lookups
        done["warmup_s"] = round(time.monotonic() - started, 2)  # what the count took
    else:
        done["warmup_s"] = warmup_s
    # The claims read the warm-up's lookups per index page (the seed's ~5 decides the wash-out)
    timed["warmup"] = {"lookups": lookups_done, "seconds": round(time.monotonic() - started, 2)}
    bench.state["timed_before_run"] = timed
    return done


def _timed_phase(target: Target, point, name: str, lookups: int) -> tuple[list[float], dict]:
    """One phase on a new session, as pgbench's were: (samples in ms, their cross-check).

    The session's first statement is left out: it also loads the catalog caches (~2 ms), which
    is not what the phase measures; for the lookups it also prepares the statement."""
    with target.connect(point.settings) as session:
        session.execute(f"set application_name = '{SESSION_NAME}'")
        if name == "seq":
            session.execute(SEQ_SESSION_WARMUP)
            loop = time_statement(session, SEQ_QUERY, 1)
        else:
            session.execute(LOOKUP_QUERY, prepare=True)
            loop = time_statement(session, LOOKUP_QUERY, lookups)
    return loop.samples_ms, cross_check(loop, f"cache-wash phase {name}")


def run(bench: Bench, point, conn: psycopg.Connection, mark=None) -> Outcome:
    """Reset the relation's statistics, then idx1, seq, idx2, each with its own statio.

    `mark(label)`, when given, takes a cache snapshot after idx1 and after seq (issue 7: the
    index washed out of the OS cache by the scan, or surviving in shared_buffers)."""
    lookups = point.workload.lookups
    _wait_for_stats(conn)
    conn.execute("select pg_stat_reset_single_table_counters(%s::regclass)", [TABLE])
    conn.execute("select pg_stat_reset_single_table_counters(%s::regclass)", [INDEX])
    samples, checks, statio = {}, {}, {}
    # prepare()'s idx0 and warm-up count, for this point only (the state outlives the point)
    before_run = bench.state.pop("timed_before_run", None) or {}
    before = _statio(conn)
    for name in ("idx1", "seq", "idx2"):
        samples[name], checks[name] = _timed_phase(bench.target, point, name, lookups)
        _wait_for_stats(conn)  # the phase's session has gone: its statistics are flushed
        after = _statio(conn)
        statio[name] = {k: after[k] - before[k] for k in after}
        before = after
        if mark is not None and name != "idx2":  # after idx2 is the runner's "after"
            mark(f"after {name}")
    medians = {name: statistics.median(values) for name, values in samples.items()}
    idx0_and_warmup = _before_run_metrics(before_run, checks)
    return Outcome(
        metrics={
            "cache_wash": {
                "idx1_ms": samples["idx1"],
                "seq_ms": samples["seq"],
                "idx2_ms": samples["idx2"],
                "timing": "client",  # runs before it have none: pgbench's per-transaction log
                "cross_check": checks,
                "statio": statio,
                "data": bench.state.get("data_sizes"),
                **idx0_and_warmup,
            }
        },
        latency_avg_ms=statistics.fmean(samples["idx2"]),
        summary=(
            f"idx1 {medians['idx1']:.3f} ms, seq {medians['seq']:.0f} ms, "
            f"idx2 {medians['idx2']:.3f} ms (medians)"
        ),
    )


def _before_run_metrics(before_run: dict, checks: dict) -> dict:
    """idx0 (the lookups right after pg_prewarm) and the warm-up, beside the phases; its
    cross-check joins the phases' (`checks`, changed in place)."""
    found: dict[str, Any] = {}
    if "idx0_ms" in before_run:
        found["idx0_ms"] = before_run["idx0_ms"]
        checks["idx0"] = before_run["idx0_check"]
    if "warmup" in before_run:
        found["warmup"] = {
            **before_run["warmup"],
            "prewarmed_index_blocks": before_run.get("prewarmed_index_blocks"),
        }
    return found
