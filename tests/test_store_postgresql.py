"""The results store in a real PostgreSQL database (a managed cluster of the PG 18 wheel):
the same answers as the SQLite store, migrations, `store copy` both ways without duplicates,
an experiment run into it, `compare` across stores, and its bad input in one line."""

import dataclasses
import json
import signal
import sqlite3
import subprocess

import psycopg
import pytest
from fix_cli import SPECS_DIR, cli_command, cli_env, run_cli, run_cli_forked
from fix_lab import lab_process, lab_stderr
from fix_processes import server_reachable_dir, wait_for
from test_cli import assert_user_error
from test_store_metric_paths import METRICS
from test_store_migration import FIXTURE_STORE
from test_study_registry import FIXTURE_STUDIES

from pgcachelab.errors import UserError
from pgcachelab.spec import Point
from pgcachelab.store import postgresql, sql_store
from pgcachelab.store.postgresql import SCHEMA, SCHEMA_VERSION, PostgresResultStore
from pgcachelab.store.queue import run_queue
from pgcachelab.store.records import Measurement, StoredSnapshot
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.workloads.parameters import PgbenchParameters

pytestmark = pytest.mark.server
# Each table, with the columns the statements of store/sql_store.py name.
TABLES = {
    "runs": sql_store.RUN_COLUMNS,
    "points": sql_store.POINT_COLUMNS,
    "measurements": sql_store.MEASUREMENT_COLUMNS,
    "point_server_settings": sql_store.SERVER_SETTINGS_COLUMNS,
    "cache_snapshots": sql_store.SNAPSHOT_COLUMNS,
}


@pytest.fixture(scope="module")
def store_server(module_cluster):
    """One running cluster for the module; each test gets its own database in it."""
    module_cluster.apply_settings({})
    yield module_cluster
    module_cluster.stop()


def new_database(cluster, name: str) -> str:
    """A fresh database `name` and the postgresql:// URL of it."""
    with cluster.connect() as conn:
        conn.execute(f'drop database if exists "{name}"')
        conn.execute(f'create database "{name}"')
    return f"postgresql://lab@/{name}?host={cluster.socket_dir}&port={cluster.port}"


def rows(url: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(f"select count(*) from {SCHEMA}.{table}").fetchone()[0]


def test_both_stores_have_the_same_columns(store_server, tmp_path):
    url = new_database(store_server, "columns")
    PostgresResultStore(url).close()
    sqlite_store = SqliteResultStore(tmp_path / "r.sqlite")
    with psycopg.connect(url) as conn:
        for table in TABLES:
            in_postgresql = [
                name
                for (name,) in conn.execute(
                    "select column_name from information_schema.columns"
                    " where table_schema = %s and table_name = %s order by ordinal_position",
                    (SCHEMA, table),
                )
            ]
            in_sqlite = [r[1] for r in sqlite_store.db.execute(f"pragma table_info({table})")]
            assert in_postgresql == in_sqlite == list(TABLES[table]), table
    sqlite_store.close()


def _exercise(store) -> dict:
    """The calls a run makes, a retried repetition included; what the readers then return."""
    points = [Point(i, PgbenchParameters(scale=i + 1), {"shared_buffers": "32MB"}, {"scale": i + 1})
              for i in range(2)]  # fmt: skip
    run_id = store.create_run("n", "spec.toml", "name = 'n'", {"kind": "managed"},
                              {"hostname": "h", "ratio": float("nan")}, points,
                              "big-cache")  # fmt: skip
    store.mark_running(run_id, 4242, "/work/dir")
    failed = Measurement(0, 0, "failed", "why", 1.0, 2.0, 1.0, "start", None, None, None, {})
    store.record_measurement(run_id, failed)
    store.record_measurement(run_id, Measurement(0, 0, "ok", None, 3.0, 4.0, 1.0, "none",
                                                 1234.5, 0.8, 0.1, {"x": [1, 2]}))  # fmt: skip
    store.record_server_settings(run_id, 0, {"shared_buffers": {"setting": "4096"}})
    snapshot = StoredSnapshot(0, 0, 0, 5.0, "before", "extension", "fast", 1.5, None, {"r": 1})
    store.record_snapshots(run_id, 0, 0, [snapshot, dataclasses.replace(snapshot, seq=1)])
    store.record_snapshots(run_id, 0, 0, [snapshot])  # a retried repetition keeps its own
    store.finish_run(run_id, "done")
    run = store.run(run_id)
    return {
        "run": {k: v for k, v in vars(run).items() if k not in ("run_id", "finished_at",
                                                                   "created_at", "environment")},
        "environment": json.dumps(run.environment),
        "runs": len(store.runs()),
        "points": store.points(run_id),
        "measurements": store.measurements(run_id),
        "completed": store.completed(run_id),
        "server_settings": store.server_settings(run_id),
        "snapshots": store.snapshots(run_id),
        "missing": store.run("nope"),
    }  # fmt: skip


def test_the_postgresql_store_answers_as_the_sqlite_store(store_server, tmp_path):
    url = new_database(store_server, "parity")
    postgresql_store = PostgresResultStore(url)
    sqlite_store = SqliteResultStore(tmp_path / "r.sqlite")
    assert _exercise(postgresql_store) == _exercise(sqlite_store)
    assert rows(url, "measurements") == 1  # the retry replaced the failed repetition
    assert postgresql_store.schema_version() == SCHEMA_VERSION
    postgresql_store.close()
    sqlite_store.close()


def _picked(store) -> list:
    """A few figures of each measurement, from a run without NaN and one with it."""
    clean = Measurement(0, 0, "ok", None, 1.0, 2.0, 1.0, None, 1.0, None, None, METRICS)
    with_nan = dataclasses.replace(clean, metrics={"load": float("nan"), "flag": False})
    found = []
    for metrics in (clean, with_nan):
        point = Point(0, PgbenchParameters(), {}, {})
        run_id = store.create_run("n", "spec.toml", "", {}, {}, [point], "big-cache")
        store.record_measurement(run_id, metrics)
        for paths in (("flag",), ("nested",), ("flag", "name", "nested.samples", "nested.gone",
                                                  "nested.deeper.n", "missing")):  # fmt: skip
            found.append([m.metrics for m in store.measurements(run_id, paths)])
        found.append(repr(store.measurements(run_id, ("load",))[0].metrics))  # NaN != NaN
    return found


def test_the_postgresql_store_picks_figures_as_the_sqlite_store(store_server, tmp_path):
    postgresql_store = PostgresResultStore(new_database(store_server, "picked"))
    sqlite_store = SqliteResultStore(tmp_path / "r.sqlite")
    found = _picked(postgresql_store)
    assert found == _picked(sqlite_store)
    assert found[0] == [{"flag": True}]
    assert found[-1] == "{'load': nan}"
    postgresql_store.close()
    sqlite_store.close()


def test_units_waiting_in_a_version_3_queue_become_jobs_in_their_order(store_server, monkeypatch):
    url = new_database(store_server, "queue3")
    with monkeypatch.context() as old_lab:
        old_lab.setattr(postgresql, "MIGRATIONS", postgresql.MIGRATIONS[:3])
        old_lab.setattr(postgresql, "SCHEMA_VERSION", 3)
        PostgresResultStore(url).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"set search_path to {SCHEMA}")
        for run_id, hosts, pinned, queued_at in (("b", "spread", None, 2), ("a", "same", "X", 1)):
            conn.execute(
                "insert into runs (run_id, name, spec_path, spec_text, target, environment,"
                " status, created_at) values (%s, 'q', 'q.toml', '', '{}', '{}', 'queued', 0)",
                (run_id,),
            )
            conn.execute(
                "insert into fleet_runs values (%s, %s, %s, 3, %s)",
                (run_id, hosts, pinned, queued_at),
            )
            for seq, state in enumerate(("done", "leased", "queued")):
                conn.execute(
                    "insert into units (run_id, point_index, repetition, seq, round, state)"
                    " values (%s, %s, 0, %s, 0, %s)",
                    (run_id, seq, seq, state),
                )
    store = PostgresResultStore(url)
    jobs = store.db.execute(
        "select args->>'run_id', (args->>'point_index')::int, queue_name, status::text"
        " from procrastinate_jobs order by id"
    ).fetchall()
    assert jobs == [
        ("a", 1, run_queue("a"), "todo"),
        ("a", 2, run_queue("a"), "todo"),
        ("b", 1, run_queue("b"), "todo"),
        ("b", 2, run_queue("b"), "todo"),
    ]  # the oldest run first, each in its order; a done unit stays done (its measurement)
    # version 4 deferred them in the shared queues; version 5 deferred them again in their
    # runs' queues through procrastinate's functions, and nothing is left in the old ones
    assert store.db.execute(
        "select count(*) from procrastinate_jobs where queue_name not like 'pgcachelab/r/%'"
    ).fetchone() == (0,)  # fmt: skip
    assert store.db.execute("select to_regclass('units')").fetchone() == (None,)
    store.close()


def test_a_version_5_stores_runs_get_the_study_they_were_recognised_as(store_server, monkeypatch):
    """The fixture store's runs written into a version 5 store (before runs.study): version 6
    gives each the study its reports have shown (tests/test_study_registry.py)."""
    url = new_database(store_server, "study6")
    with monkeypatch.context() as old_lab:
        old_lab.setattr(postgresql, "MIGRATIONS", postgresql.MIGRATIONS[:5])
        old_lab.setattr(postgresql, "SCHEMA_VERSION", 5)
        PostgresResultStore(url).close()
    fixture = sqlite3.connect(FIXTURE_STORE)
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cursor:
        cursor.execute(f"set search_path to {SCHEMA}")
        for table in ("runs", "points", "measurements"):
            columns = [column for column in TABLES[table] if column != "study"]
            names = ", ".join(columns)
            rows = fixture.execute(f"select {names} from {table}").fetchall()
            placeholders = ", ".join(["%s"] * len(columns))
            cursor.executemany(f"insert into {table} ({names}) values ({placeholders})", rows)
    fixture.close()
    store = PostgresResultStore(url)
    assert {run.name: run.study for run in store.runs()} == FIXTURE_STUDIES
    assert store.schema_version() == SCHEMA_VERSION == 6
    store.close()


def test_migrations_run_once_and_a_newer_schema_is_refused(store_server):
    url = new_database(store_server, "migrations")
    PostgresResultStore(url).close()
    PostgresResultStore(url).close()  # already at the latest version: nothing to do
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(f"select version from {SCHEMA}.schema_version").fetchall() == [
            (1,),
            (2,),
            (3,),
            (4,),
            (5,),
            (6,),
        ]
        conn.execute(f"insert into {SCHEMA}.schema_version values (99, 'from the future')")
    with pytest.raises(UserError, match=r"written by a newer pgcachelab \(schema version 99"):
        PostgresResultStore(url)
    with pytest.raises(UserError, match=r"--store: no results in"):
        PostgresResultStore(new_database(store_server, "empty"), create=False)


@pytest.mark.slow
def test_run_into_postgresql_copy_to_sqlite_and_back_then_compare(store_server, tmp_path):
    url = new_database(store_server, "results")
    lab_dir, sqlite_file = tmp_path / "lab", tmp_path / "copy.sqlite"
    with server_reachable_dir() as lab_tmp:
        ran = run_cli("run", SPECS_DIR / "two-points.toml", "--store", url, "--lab-dir", lab_dir,
                      "--no-report", tmpdir=lab_tmp)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert not (lab_dir / "results.sqlite").exists()  # the run went to PostgreSQL only
    with psycopg.connect(url) as conn:
        [(run_id, status)] = conn.execute(f"select run_id, status from {SCHEMA}.runs").fetchall()
    # 2 points x (1 warm-up + 2 measured repetitions): warm-up repetitions are stored too
    assert status == "done" and rows(url, "measurements") == 6
    listed = run_cli("runs", "--store", url)
    assert listed.returncode == 0 and run_id in listed.stdout

    first = run_cli("store", "copy", "--from", url, "--to", sqlite_file)
    assert first.returncode == 0, first.stderr
    assert "copied 1 new run(s) and brought 0 up to date (6 measurements)" in first.stdout
    again = run_cli("store", "copy", "--from", url, "--to", sqlite_file, run_id)
    assert "copied 0 new run(s) and brought 1 up to date" in again.stdout
    with sqlite3.connect(sqlite_file) as db:
        counts = [db.execute(f"select count(*) from {t}").fetchone()[0] for t in TABLES]
    assert counts == [rows(url, t) for t in TABLES] == [1, 2, 6, 2, 0]

    back = new_database(store_server, "back")
    for expected in ("copied 1 new run(s)", "copied 0 new run(s)"):
        copied = run_cli("store", "copy", "--from", f"sqlite:{sqlite_file}", "--to", back)
        assert copied.returncode == 0 and expected in copied.stdout, copied.stderr
    assert [rows(back, t) for t in TABLES] == [1, 2, 6, 2, 0]
    for export in (["--store", url], ["--store", back], ["--store", sqlite_file]):
        exported = run_cli("export", run_id, "--format", "json", *export)
        assert exported.returncode == 0, exported.stderr
        assert json.loads(exported.stdout) == json.loads(
            run_cli("export", run_id, "--format", "json", "--store", url).stdout
        )

    html = tmp_path / "compare.html"
    compared = run_cli("compare", run_id, run_id, "--store", sqlite_file, "--store-b", back,
                       "--format", "json", "--html", html)  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    result = json.loads(compared.stdout)
    assert result["matched_on"] == ["clients"]
    # a run against itself: nothing differs but what a busy machine says of both
    differences = [d["what"] for d in result["context_differences"]]
    assert all(what.startswith("machine load") for what in differences), differences
    assert [p["point"] for p in result["points"]] == [{"clients": 1}, {"clients": 2}]
    assert all(p["ratio_geometric_mean"] == pytest.approx(1) for p in result["points"])
    assert not any(p["significant"] for p in result["points"])
    page = html.read_text()
    assert "data:image/png;base64," in page and "http" not in page.replace("http-equiv", "")


def test_bad_store_input_is_one_line_with_the_password_masked(store_server, tmp_path):
    url = new_database(store_server, "bad")
    PostgresResultStore(url).close()
    cases = [
        (["runs", "--store", "postgresql://lab:hunter2@127.0.0.1:1/results"],
         r"--store: cannot connect to 'postgresql://lab:\*\*\*@127\.0\.0\.1:1/results': .*refused",
         r"postgresql://"),
        (["compare", "nope", "last", "--store", url], r"no run 'nope' in postgresql://lab@/bad",
         r"pgcachelab runs"),
        (["show", "last", "--store", url], r"no runs in postgresql://lab@/bad", r"run an"),
        (["runs", "--store", "mysql://root:hunter2@db/x"],
         r"--store: unknown store scheme 'mysql://' in 'mysql://root:\*\*\*@db/x'",
         r"postgresql://"),
        (["store", "copy", "--from", str(tmp_path / "none.sqlite"), "--to", url],
         r"--from: no results in '.*none\.sqlite'", r"run an experiment first"),
        (["compare", "a", "b", "--store", url, "--format", "csv"],
         r"--format: compare cannot write 'csv'", r"text, json or markdown"),
    ]  # fmt: skip
    for args, message, hint in cases:
        lab_dir = [] if args[0] == "store" else ["--lab-dir", tmp_path / "lab"]
        result = run_cli_forked(*args, *lab_dir)
        assert_user_error(result, message, hint)
        assert "hunter2" not in result.stderr
    assert not (tmp_path / "lab").exists()


def test_the_environment_variable_names_the_store(store_server, tmp_path):
    url = new_database(store_server, "fromenv")
    PostgresResultStore(url).close()

    def runs_with(store: str) -> subprocess.CompletedProcess:
        env = {**cli_env(), "PGCACHELAB_STORE": store}  # cli_env drops it: tests set it here
        command = cli_command("runs", "--lab-dir", tmp_path / "lab")
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    listed = runs_with(url)
    assert listed.returncode == 0 and listed.stdout.startswith("run "), listed.stderr
    failed = runs_with("postgresql://lab:hunter2@127.0.0.1:1/x")
    assert_user_error(
        failed, r"PGCACHELAB_STORE: cannot connect to 'postgresql://lab:\*\*\*@", r"postgresql://"
    )
    assert "hunter2" not in failed.stderr


@pytest.mark.slow
def test_a_killed_run_resumes_from_the_postgresql_store(store_server, tmp_path, lab_tmp):
    url = new_database(store_server, "resume")
    spec = tmp_path / "six-points.toml"  # the spec names its store: no --store for the run
    spec.write_text(f'store = "{url}"\n' + (SPECS_DIR / "six-points.toml").read_text())
    args = ["run", spec, "--no-report"]

    def progress():
        if lab.poll() is not None:
            pytest.fail(f"the lab exited with {lab.returncode}: {lab_stderr(tmp_path)}")
        with psycopg.connect(url) as conn:
            if conn.execute(f"select to_regclass('{SCHEMA}.measurements')").fetchone()[0]:
                found = conn.execute(
                    f"select r.run_id, count(m.run_id) from {SCHEMA}.runs r left join"
                    f" {SCHEMA}.measurements m using (run_id) where r.work_dir is not null"
                    " group by r.run_id"
                ).fetchall()
                if found and found[0][1] >= 2:
                    return found[0][0]
        return None

    with lab_process([*args, "--lab-dir", tmp_path / "lab"], tmp_path, lab_tmp) as lab:
        run_id = wait_for(progress, what="2 measurements in the PostgreSQL store")
        lab.send_signal(signal.SIGKILL)
        assert lab.wait() == -signal.SIGKILL
    before = rows(url, "measurements")
    resumed = run_cli("run", "--resume", run_id, "--store", url, "--lab-dir", tmp_path / "lab",
                      "--no-report", tmpdir=lab_tmp)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {before} of 6 measurements already done" in resumed.stderr
    with psycopg.connect(url) as conn:
        status = conn.execute(f"select status, work_dir from {SCHEMA}.runs").fetchall()
        done = conn.execute(
            f"select count(*) from {SCHEMA}.measurements where status = 'ok'"
        ).fetchone()[0]
    assert status == [("done", None)] and done == 6
    assert list(lab_tmp.iterdir()) == []
    assert not (tmp_path / "lab").exists()  # nothing went to the default SQLite store
