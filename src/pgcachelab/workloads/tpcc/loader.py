"""Load the TPC-C tables: rows generated inside the server (sql/load.sql), one task per table
and warehouse spread over parallel sessions, then keys and indexes, then vacuum analyze.

A load that fails or is interrupted drops the schema it created, so a database holds either
a complete load (tpcc.load_info.complete) or none.
"""

import queue
import random
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from importlib import resources

import psycopg

from pgcachelab.clusters.client import one_row
from pgcachelab.errors import UserError
from pgcachelab.progress import Progress
from pgcachelab.workloads.tpcc.checks import CheckResult, require_consistent
from pgcachelab.workloads.tpcc.params import LoadConstants, check_warehouses, choose_load_constants

SCHEMA = "tpcc"
# Largest first, so that the parallel sessions finish together.
KEYS = {
    "stock": ["alter table tpcc.stock add primary key (s_w_id, s_i_id)"],
    "order_line": [
        "alter table tpcc.order_line add primary key (ol_w_id, ol_d_id, ol_o_id, ol_number)"
    ],
    "customer": [
        "alter table tpcc.customer add primary key (c_w_id, c_d_id, c_id)",
        # clause 2.5.2.2: customers selected by last name
        "create index customer_last_name on tpcc.customer (c_w_id, c_d_id, c_last, c_first)",
    ],
    "orders": [
        "alter table tpcc.orders add primary key (o_w_id, o_d_id, o_id)",
        # Order-Status looks for a customer's last order (BenchmarkSQL has the same index)
        "create index orders_customer on tpcc.orders (o_w_id, o_d_id, o_c_id, o_id)",
    ],
    "item": ["alter table tpcc.item add primary key (i_id)"],
    "new_order": ["alter table tpcc.new_order add primary key (no_w_id, no_d_id, no_o_id)"],
    "district": ["alter table tpcc.district add primary key (d_w_id, d_id)"],
    "warehouse": ["alter table tpcc.warehouse add primary key (w_id)"],
    "history": [],
}
TABLES = tuple(KEYS)
# Per load session: the load is redone from scratch after a crash, so commits need not wait
# for the WAL flush; index builds get room to sort in memory.
SESSION_SETTINGS = {"synchronous_commit": "off", "maintenance_work_mem": "256MB"}


@dataclass(frozen=True)
class LoadInfo:
    warehouses: int
    constants: LoadConstants
    complete: bool
    load_seconds: float | None


@dataclass
class LoadResult:
    info: LoadInfo
    seconds_by_phase: dict[str, float]  # back to back: they add up to total_s
    total_s: float
    database_bytes: int
    checks: list[CheckResult]
    # each task of the parallel phases (a table and warehouse, a table's keys): they overlap
    seconds_by_task: dict[str, float] = field(default_factory=dict)


class PhaseClock:
    """A command's time as phases laid end to end, so that they add up to its whole time
    (issue 51: `tpcc load` said 8.8 s of a 14.3 s command, the cluster's creation and
    removal left out). `already_s` is time spent before the clock started (the start-up)."""

    def __init__(self, already_s: float | None = None) -> None:
        self.seconds: dict[str, float] = {}
        self._mark = time.monotonic()
        self._started = self._mark - (already_s or 0.0)
        if already_s is not None:
            self.seconds["start-up"] = already_s

    def lap(self, phase: str) -> float:
        """End the phase that ran since the last lap; its seconds are added to `phase`."""
        now = time.monotonic()
        seconds = now - self._mark
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds
        self._mark = now
        return seconds

    @property
    def total_s(self) -> float:
        """From the start to the last lap."""
        return self._mark - self._started


@dataclass(frozen=True)
class _Task:
    label: str
    sql: str
    params: tuple = ()


def _sql_text(name: str) -> str:
    return resources.files("pgcachelab.workloads.tpcc").joinpath("sql", name).read_text()


def read_load_info(conn: psycopg.Connection) -> LoadInfo | None:
    """What the last load recorded, or None when the database holds no TPC-C load."""
    if one_row(conn.execute("select to_regclass('tpcc.load_info')"))[0] is None:
        return None
    row = conn.execute(
        "select warehouses, c_last_load, c_id, c_ol_i_id, complete, load_seconds"
        " from tpcc.load_info"
    ).fetchone()
    if row is None:
        return None
    return LoadInfo(row[0], LoadConstants(row[1], row[2], row[3]), row[4], row[5])


def _prepare_schema(conn: psycopg.Connection, constants: LoadConstants, warehouses: int) -> None:
    """Drop a previous lab load, refuse a schema someone else made, create tables and code."""
    has_schema = one_row(
        conn.execute("select count(*) from pg_namespace where nspname = %s", [SCHEMA])
    )[0]
    if has_schema:
        if one_row(conn.execute("select to_regclass('tpcc.load_info')"))[0] is None:
            raise UserError(
                f'schema "{SCHEMA}" already exists and was not made by pgcachelab',
                "drop it yourself, or load into another database (dbname=... in --dsn)",
            )
        conn.execute("drop schema tpcc cascade")
    try:
        _create_schema(conn, constants, warehouses)
    except psycopg.errors.InsufficientPrivilege as error:
        raise UserError(
            f"cannot create the tpcc schema: {str(error).strip().splitlines()[0]}",
            "connect as a user that may create schemas in the database (or its owner)",
        ) from None


def _create_schema(conn: psycopg.Connection, constants: LoadConstants, warehouses: int) -> None:
    with conn.transaction():
        conn.execute(_sql_text("schema.sql"))
        conn.execute(_sql_text("load.sql"))
        conn.execute(_sql_text("transactions.sql"))
        conn.execute(
            "insert into tpcc.load_info (warehouses, c_last_load, c_id, c_ol_i_id)"
            " values (%s, %s, %s, %s)",
            [warehouses, constants.c_last_load, constants.c_id, constants.c_ol_i_id],
        )


def drop_schema(conn: psycopg.Connection) -> None:
    conn.execute("drop schema if exists tpcc cascade")


def _data_tasks(warehouses: int, constants: LoadConstants) -> list[_Task]:
    numbers = range(1, warehouses + 1)
    c_last_load = constants.c_last_load
    return [
        *(_Task(f"stock w{w}", "select tpcc.load_stock(%s)", (w,)) for w in numbers),
        *(_Task(f"orders w{w}", "select tpcc.load_orders(%s)", (w,)) for w in numbers),
        *(
            _Task(f"customer w{w}", "select tpcc.load_customers(%s, %s)", (w, c_last_load))
            for w in numbers
        ),
        _Task("item", "select tpcc.load_items()"),
        *(_Task(f"warehouse w{w}", "select tpcc.load_warehouse(%s)", (w,)) for w in numbers),
    ]


def _key_tasks() -> list[_Task]:
    # One task per table: its indexes build one after the other in one session.
    return [_Task(f"keys {table}", ";\n".join(sql)) for table, sql in KEYS.items() if sql]


def _analyze_tasks() -> list[_Task]:
    return [_Task(f"analyze {table}", f"vacuum analyze tpcc.{table}") for table in TABLES]


def _run_parallel(connections: list, tasks: list[_Task], progress: Progress) -> dict[str, float]:
    """Run `tasks` on the sessions in `connections`, each session one task at a time; the
    seconds of each."""
    idle: queue.Queue = queue.Queue()
    for conn in connections:
        idle.put(conn)

    def run(task: _Task) -> tuple[str, float]:
        conn = idle.get()
        try:
            started = time.monotonic()
            conn.execute(task.sql, task.params or None)
            return task.label, time.monotonic() - started
        finally:
            idle.put(conn)

    seconds_by_task = {}
    with ThreadPoolExecutor(max_workers=len(connections)) as executor:
        futures = {executor.submit(run, task) for task in tasks}
        try:
            while futures:
                done, futures = wait(futures, return_when=FIRST_EXCEPTION)
                for future in done:
                    label, seconds = future.result()
                    seconds_by_task[label] = seconds
                    progress.finished(f"tpcc load: {label} in {seconds:.2f} s")
        except BaseException:
            for future in futures:
                future.cancel()
            for conn in connections:
                conn.cancel()  # the running statements end with an error, the threads return
            raise
    return seconds_by_task


def load(
    connect: Callable[[], psycopg.Connection],
    warehouses: int,
    workers: int,
    progress: Progress,
    rng: random.Random | None = None,
    clock: PhaseClock | None = None,
) -> LoadResult:
    """Load `warehouses` warehouses with `workers` parallel sessions; check; return timings.

    Its phases go on `clock` when given (a command that times more than the load)."""
    check_warehouses(warehouses)
    constants = choose_load_constants(rng or random.Random())
    clock = clock or PhaseClock()
    seconds_by_task: dict[str, float] = {}
    with connect() as conn:
        # outside the try below: a schema someone else made is refused, never dropped
        _prepare_schema(conn, constants, warehouses)
        phases = (
            ("data", _data_tasks(warehouses, constants)),
            ("keys and indexes", _key_tasks()),
            ("vacuum analyze", _analyze_tasks()),
        )
        progress.start(sum(len(tasks) for _, tasks in phases), 0)
        sessions = []
        try:
            for _ in range(max(1, workers)):
                session = connect()
                sessions.append(session)
                for name, value in SESSION_SETTINGS.items():
                    session.execute("select set_config(%s, %s, false)", [name, value])
            clock.lap("schema and sessions")
            for phase, tasks in phases:
                progress.begin(f"tpcc load: {phase}")
                seconds_by_task.update(_run_parallel(sessions, tasks, progress))
                clock.lap(phase)
            checks = require_consistent(conn, "after the load")
            clock.lap("consistency checks")
            conn.execute(
                "update tpcc.load_info set complete = true, load_seconds = %s", [clock.total_s]
            )
        except BaseException:
            for session in sessions:
                session.close()
            sessions = []
            drop_schema(conn)
            raise
        finally:
            for session in sessions:
                session.close()
        database_bytes = one_row(
            conn.execute(
                "select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint from pg_class c"
                " join pg_namespace n on n.oid = c.relnamespace"
                " where n.nspname = %s and c.relkind = 'r'",
                [SCHEMA],
            )
        )[0]
    clock.lap("size")
    info = LoadInfo(warehouses, constants, True, clock.total_s)
    return LoadResult(
        info, dict(clock.seconds), clock.total_s, database_bytes, checks, seconds_by_task
    )
