"""pg_cachelab and `inspect` against real servers: build, agreement, load, shutdown, the CLI.

The extension is built once per session into a scratch directory under /tmp and installed into
the install the test servers run; its files are removed again at the end unless they were
there before the session.
"""

import json
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fix_cli import SPECS_DIR, cli_command, cli_env, own_lines, run_cli, run_cli_forked
from fix_clusters import dsn_of
from fix_lab import store_query
from fix_processes import server_reachable_dir, wait_for

from pgcachelab.clusters import extension
from pgcachelab.clusters.binaries import PgInstall, find_install, find_pgbench
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by
from pgcachelab.probes.buffercache import MODES, collect

pytestmark = pytest.mark.server

DEBIAN_15_BIN = Path("/usr/lib/postgresql/15/bin")
IDLE_SETTINGS = {"shared_buffers": "32MB", "autovacuum": "off"}
WARMUP_ROUNDS = 6  # > BM_MAX_USAGE_COUNT: every catalog page the queries read ends at 5
SNAPSHOT_KINDS = (*(("extension", mode) for mode in MODES), ("pg_buffercache", None))


@pytest.fixture(scope="session")
def extension_build_dir() -> Iterator[Path]:
    build_root = Path(tempfile.mkdtemp(prefix="pgcachelab-extbuild-", dir="/tmp"))
    try:
        yield build_root
    finally:
        shutil.rmtree(build_root, ignore_errors=True)


def _installed_for(install: PgInstall, build_root: Path) -> Iterator[extension.ExtensionFiles]:
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("building pg_cachelab needs make and gcc")
    was_installed = extension.is_installed(install)
    built = extension.build(install, build_root / install.version)
    try:
        yield extension.install_files(built, install)
    finally:
        if not was_installed:
            extension.uninstall(install)


@pytest.fixture(scope="session")
def pg_cachelab_18(pg_install, extension_build_dir) -> Iterator[extension.ExtensionFiles]:
    yield from _installed_for(pg_install, extension_build_dir)


@pytest.fixture(scope="module")
def idle_cluster(pg_install, server_os_user, pg_cachelab_18) -> Iterator[ManagedCluster]:
    """A started cluster with both extensions created, autovacuum off, and a table + index."""
    with server_reachable_dir() as base:
        cluster = ManagedCluster.create(pg_install, server_os_user, parent_dir=base)
        try:
            cluster.apply_settings(IDLE_SETTINGS)
            _prepare(cluster)
            yield cluster
        finally:
            cluster.destroy()


def _prepare(cluster: ManagedCluster) -> None:
    with cluster.connect() as conn:
        conn.execute("create extension pg_cachelab")
        conn.execute("create extension pg_buffercache")
        conn.execute(
            "create table accounts as select g as id, repeat('x', 200) as filler"
            " from generate_series(1, 20000) g"
        )
        conn.execute("create index accounts_id on accounts (id)")
    _read_accounts(cluster)


def _read_accounts(cluster: ManagedCluster) -> None:
    """accounts and its index into shared_buffers: tests that look for them must not depend on
    what earlier tests on the module's cluster (a pgbench load) evicted."""
    with cluster.connect() as conn:
        conn.execute("set enable_seqscan = off")  # the index build bypasses shared_buffers
        conn.execute("select sum(id) from accounts where id <= 20000")


def _regression_check(install: PgInstall, build_root: Path, cluster: ManagedCluster) -> None:
    """The extension's own sql/ + expected/ test, through PGXS's installcheck (pg_regress)."""
    build_dir = build_root / install.version
    env = {**cli_env(), "PGHOST": str(cluster.socket_dir), "PGPORT": str(cluster.port),
           "PGUSER": "lab"}  # fmt: skip
    result = subprocess.run(
        ["make", "-C", str(build_dir), "-f", str(extension.SOURCE_DIR / "Makefile"),
         f"VPATH={extension.SOURCE_DIR}", f"PG_CONFIG={install.tool('pg_config')}",
         "installcheck"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    diffs = build_dir / "regression.diffs"
    assert result.returncode == 0, diffs.read_text() if diffs.exists() else result.stdout


def _by_relation(snapshot) -> dict:
    return {
        (r.database_oid, r.tablespace_oid, r.relfilenode, r.fork): (
            r.buffers, r.dirty, r.pinned, r.usage_counts,
        )
        for r in snapshot.relations
    }  # fmt: skip


def _idle_snapshots(cluster: ManagedCluster) -> dict:
    """One snapshot per method and mode, after the queries' own catalog reads have settled."""
    with cluster.connect() as conn:
        for round_number in range(WARMUP_ROUNDS):
            for method, mode in SNAPSHOT_KINDS:
                collect(conn, method, mode or "consistent")
            if round_number == WARMUP_ROUNDS - 2:
                conn.execute("checkpoint")  # hint bits the warm-up set are written out
        return {
            (method, mode): collect(conn, method, mode or "consistent")
            for method, mode in SNAPSHOT_KINDS
        }


def _assert_idle_agreement(cluster: ManagedCluster) -> None:
    snapshots = _idle_snapshots(cluster)
    reference = _by_relation(snapshots[("pg_buffercache", None)])
    names = {r.qualified_name for r in snapshots[("pg_buffercache", None)].relations}
    assert {"public.accounts", "public.accounts_id", "pg_catalog.pg_class"} <= names
    for kind, snapshot in snapshots.items():
        assert _by_relation(snapshot) == reference, kind
        assert snapshot.buffers_used == sum(r.buffers for r in snapshot.relations)


# -- the extension -----------------------------------------------------------------------------


def test_the_extension_builds_and_installs_for_18(pg_cachelab_18, pg_install):
    assert extension.is_installed(pg_install)
    for path in pg_cachelab_18.all():
        assert path.stat().st_mode & 0o004, f"{path} is not readable by the server user"
    assert pg_cachelab_18.library.parent == Path(extension.pg_config_value(pg_install, "pkglibdir"))


def test_on_an_idle_server_both_modes_and_the_grouped_view_agree_exactly(idle_cluster):
    _assert_idle_agreement(idle_cluster)


def test_totals_add_up_and_bad_modes_are_refused(idle_cluster):
    with idle_cluster.connect() as conn:
        total, used, free, dirty, pinned = conn.execute(
            "select * from pg_cachelab_totals('fast')"
        ).fetchone()
        assert total == 4096 and used + free == total and used > 0  # 32MB of 8kB buffers
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="semiconsistent"):
            conn.execute("select * from pg_cachelab_relations('nonconsistent')")


def test_the_extensions_own_regression_test_passes(idle_cluster, pg_install, extension_build_dir):
    _regression_check(pg_install, extension_build_dir, idle_cluster)


@pytest.mark.parametrize("mode", ["fast", "semiconsistent"])  # semiconsistent: under LWLocks
def test_a_scan_answers_a_cancel_request(idle_cluster, mode):
    with idle_cluster.connect() as scanner, idle_cluster.connect() as canceller:
        pid = scanner.info.backend_pid

        def cancel_when_scanning() -> None:
            def scanning() -> bool:
                return canceller.execute(
                    "select state = 'active' from pg_stat_activity where pid = %s", [pid]
                ).fetchone()[0]

            wait_for(scanning, what="the scan to start")
            time.sleep(0.2)
            canceller.execute("select pg_cancel_backend(%s)", [pid])

        thread = threading.Thread(target=cancel_when_scanning)
        thread.start()
        with pytest.raises(psycopg.errors.QueryCanceled):
            scanner.execute(
                "do $$ begin for i in 1..1000000 loop"
                f" perform count(*) from pg_cachelab_relations('{mode}'); end loop; end $$"
            )
        thread.join()
        assert scanner.execute("select 1").fetchone() == (1,)  # the session goes on


def test_snapshots_under_pgbench_load(idle_cluster, pg_install):
    pgbench = str(find_pgbench(pg_install))
    dsn = dsn_of(idle_cluster)
    subprocess.run([pgbench, "-i", "-s", "2", "-q", dsn], check=True, capture_output=True)
    load = subprocess.Popen(
        [pgbench, "-c", "4", "-j", "2", "-T", "3", "-n", dsn],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    rounds = 0
    try:
        with idle_cluster.connect() as conn:
            while load.poll() is None:
                for method, mode in SNAPSHOT_KINDS:
                    snapshot = collect(conn, method, mode or "consistent")
                    assert 0 < snapshot.buffers_used <= snapshot.buffers_total
                    for relation in snapshot.relations:
                        assert sum(relation.usage_counts) == relation.buffers
                        assert relation.dirty <= relation.buffers
                rounds += 1
    finally:
        stdout, stderr = load.communicate(timeout=60)
    assert load.returncode == 0, stderr
    assert rounds >= 1
    assert idle_cluster.running


def test_a_fast_shutdown_during_scans_is_clean(cluster, pg_cachelab_18):
    cluster.apply_settings({"shared_buffers": "256MB"})
    with cluster.connect() as conn:
        conn.execute("create extension pg_cachelab")
    errors: list[Exception] = []

    def scan_forever(mode: str) -> None:
        try:
            with cluster.connect() as conn:
                conn.execute(
                    "do $$ begin for i in 1..1000000 loop"
                    f" perform count(*) from pg_cachelab_relations('{mode}');"
                    " end loop; end $$"
                )
        except psycopg.Error as error:
            errors.append(error)

    scanners = [threading.Thread(target=scan_forever, args=(mode,)) for mode in MODES]
    for scanner in scanners:
        scanner.start()

    def scanning() -> bool:
        with cluster.connect() as conn:
            return conn.execute(
                "select count(*) = %s from pg_stat_activity"
                " where state = 'active' and query like 'do $$%%'",
                [len(MODES)],
            ).fetchone()[0]

    wait_for(scanning, what="a session scanning in each mode")
    time.sleep(0.3)
    postmaster = cluster.process
    cluster.stop()
    for scanner in scanners:
        scanner.join(timeout=60)
    assert postmaster.returncode == 0  # a fast shutdown, not a crash and restart
    assert len(errors) == len(MODES)
    assert all(isinstance(e, psycopg.OperationalError) for e in errors)
    log = cluster.log_path.read_text()
    assert "database system is shut down" in log
    assert "terminated by signal" not in log and "PANIC" not in log


@pytest.mark.skipif(
    not (DEBIAN_15_BIN / "pg_config").is_file(),
    reason="no postgresql-server-dev-15 (apt-get install postgresql-server-dev-15)",
)
def test_pg_15_builds_installs_and_agrees_with_its_grouped_view(
    server_os_user, extension_build_dir
):
    install = install_usable_by(find_install(DEBIAN_15_BIN), server_os_user)
    if not extension.has_pgxs(install):
        pytest.skip("no PGXS or server headers for PostgreSQL 15")
    with server_reachable_dir() as base:
        try:
            installed = _installed_for(install, extension_build_dir)
            next(installed)
        except extension.UserError as error:
            pytest.skip(f"cannot install into Debian's PostgreSQL 15: {error.message}")
        try:
            with ManagedCluster.create(install, server_os_user, parent_dir=base) as cluster:
                cluster.apply_settings(IDLE_SETTINGS)
                _prepare(cluster)
                _assert_idle_agreement(cluster)
                _regression_check(install, extension_build_dir, cluster)
        finally:
            installed.close()


# -- the command line --------------------------------------------------------------------------


def test_inspect_json_of_a_managed_cluster_shows_relations_and_the_os_cache(idle_cluster):
    _read_accounts(idle_cluster)
    result = run_cli("inspect", "--work-dir", idle_cluster.work_dir, "--json", "--top", "0")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["method"], data["mode"], data["os_cache_note"]) == (
        "extension",
        "consistent",
        None,
    )
    assert data["buffers_total"] == 4096
    assert data["buffers_used"] + data["buffers_free"] == 4096
    accounts = next(
        r for r in data["relations"] if (r["schema"], r["name"]) == ("public", "accounts")
    )
    assert accounts["kind"] == "table" and accounts["buffers"] > 0
    assert accounts["size_bytes"] > 0
    assert 0 < accounts["os_cached_bytes"] <= accounts["size_bytes"]


def test_inspect_mode_semiconsistent_says_what_it_locks(idle_cluster):
    result = run_cli("inspect", "--work-dir", idle_cluster.work_dir, "--mode", "semiconsistent")
    assert result.returncode == 0, result.stderr
    assert "one buffer-mapping partition lock at a time" in result.stdout
    assert "public.accounts" in result.stdout


def test_inspect_by_dsn_with_the_grouped_view_as_a_table(idle_cluster):
    _read_accounts(idle_cluster)
    result = run_cli("inspect", "--dsn", dsn_of(idle_cluster), "--method", "pg_buffercache")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # the data directory is local and readable: no note
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["relation", "kind", "buffers"]
    assert any(line.startswith("public.accounts ") for line in lines)
    assert "shared_buffers: 4,096 buffers (32MB)" in result.stdout
    assert "method: pg_buffercache in " in result.stdout


def test_inspect_summary_shows_totals_only(idle_cluster):
    result = run_cli("inspect", "--dsn", dsn_of(idle_cluster), "--method", "summary", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["method"] == "summary" and data["relations"] == []
    assert sum(data["usage_counts"]) == 4096  # 18 has pg_buffercache_usage_counts()


def test_inspect_watch_repeats_until_interrupted(idle_cluster, tmp_path):
    args = ["inspect", "--work-dir", idle_cluster.work_dir, "--watch", "0.2", "--top", "1"]
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        process = subprocess.Popen(cli_command(*args), env=cli_env(), stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL)  # fmt: skip
        try:
            wait_for(
                lambda: (tmp_path / "out").read_text().count("method: extension") >= 2,
                what="two rounds of --watch",
            )
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 0, (tmp_path / "err").read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "pgcachelab: inspect needs one server: --dsn or --work-dir"),
        (["--dsn", "x", "--top", "-2"], "pgcachelab: --top: invalid value '-2': below 0"),
        (["--work-dir", "/nonexistent/pgcachelab"], "pgcachelab: --work-dir: no managed cluster"),
        (["--dsn", "host=/nonexistent port=1"], "pgcachelab: --dsn: cannot connect"),
    ],
)
def test_inspect_bad_input_is_one_line_and_exit_2(args, message):
    result = run_cli_forked("inspect", *args)
    assert result.returncode == 2
    first, hint = own_lines(result.stderr)
    assert first.startswith(message)
    assert hint.startswith("hint: ")


def test_inspect_names_the_missing_extension_and_how_to_get_it(idle_cluster):
    with idle_cluster.connect() as conn:
        conn.execute("drop database if exists bare")
        conn.execute("create database bare")
    dsn = dsn_of(idle_cluster).replace("dbname=postgres", "dbname=bare")
    result = run_cli("inspect", "--dsn", dsn, "--method", "extension")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "pgcachelab: --method: 'extension' is not available in database 'bare'",
        "hint: it needs CREATE EXTENSION pg_cachelab (after: pgcachelab extension install);"
        " or use --method auto",
    ]
    result = run_cli("inspect", "--dsn", dsn, "--mode", "fast")
    assert result.returncode == 2
    assert "neither pg_cachelab nor pg_buffercache" in result.stderr


def test_inspect_as_a_monitoring_role_and_as_a_role_without_rights(idle_cluster):
    with idle_cluster.connect() as conn:
        conn.execute("drop role if exists watcher")
        conn.execute("drop role if exists stranger")
        conn.execute("create role watcher login in role pg_monitor")
        conn.execute("create role stranger login")
    watcher = dsn_of(idle_cluster).replace("user=lab", "user=watcher")
    result = run_cli("inspect", "--dsn", watcher, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["method"] == "extension"

    stranger = dsn_of(idle_cluster).replace("user=lab", "user=stranger")
    result = run_cli("inspect", "--dsn", stranger)
    assert result.returncode == 2
    first, hint = result.stderr.splitlines()[-2:]
    assert first.startswith("pgcachelab: role 'stranger' may not read shared_buffers (extension)")
    assert hint == "hint: GRANT pg_monitor TO stranger, or connect as a superuser"


def test_extension_install_command_builds_into_the_install(pg_cachelab_18, pg_install):
    result = run_cli("extension", "install", "--pg-bin", pg_install.bin_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(pg_cachelab_18.library)
    assert "CREATE EXTENSION pg_cachelab" in result.stderr

    result = run_cli("extension", "install", "--pg-bin", "/nonexistent/bin")
    assert result.returncode == 2
    assert result.stderr.startswith("pgcachelab: --pg-bin: no postgres binary in")


# -- snapshots during an experiment ([inspect]) -----------------------------------------------


def test_a_cache_wash_run_stores_snapshots_and_reports_the_composition(
    pg_cachelab_18, tmp_path, lab_tmp
):
    lab_dir = tmp_path / "lab"
    result = run_cli("run", SPECS_DIR / "cache-wash-inspect.toml", "--lab-dir", lab_dir,
                     tmpdir=lab_tmp)  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = store_query(
        lab_dir,
        "select point_index, label, method, error, data from cache_snapshots"
        " order by point_index, seq",
    )
    for point_index in (0, 1):
        mine = [row for row in rows if row[0] == point_index]
        labels = [label for _, label, *_ in mine if label != "sample"]
        assert labels == ["before", "after idx1", "after seq", "after"]
        assert {method for _, _, method, *_ in mine} == {"extension"}  # auto: the cheap one
        assert [error for *_, error, _ in mine if error] == []
    snapshots = {(p, label): json.loads(data) for p, label, _, _, data in rows}
    index = "public.random_random_idx"

    def cached(point_index, label, key):
        data = snapshots[(point_index, label)]
        relation = next(r for r in data["relations"] if r["name"] == index)
        return relation[key] * (data["block_size"] if key == "buffers" else 1)

    # 32MB holds the index (~0.9MB) through the scan, and the OS cache (root: mincore) too;
    # 256kB cannot hold it
    size_bytes = cached(1, "after seq", "size_bytes")
    assert cached(1, "after seq", "buffers") >= 0.9 * size_bytes
    assert cached(1, "after seq", "os_cached_bytes") >= 0.9 * size_bytes
    assert cached(0, "after seq", "buffers") < 0.5 * size_bytes
    report = Path(result.stdout.strip())
    assert (report.parent / "cache-composition.svg").exists()
    page = report.read_text()
    assert "Cache snapshots: before and after each point" in page and index in page
    assert "cache-composition" in page


def test_an_overhead_run_polls_per_method_and_reports_sag_and_accuracy(
    pg_cachelab_18, tmp_path, lab_tmp
):
    lab_dir = tmp_path / "lab"
    result = run_cli("run", SPECS_DIR / "inspect-overhead-tiny.toml", "--lab-dir", lab_dir,
                     tmpdir=lab_tmp)  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = store_query(
        lab_dir,
        "select point_index, label, method, mode, count(*), count(error) from cache_snapshots"
        " group by point_index, label, method, mode order by point_index, label",
    )
    by_point = {(p, label): (method, mode, n, errors) for p, label, method, mode, n, errors in rows}
    assert not any(p == 0 for p, _ in by_point)  # the baseline takes no snapshot
    assert by_point[(1, "sample")][:2] == ("summary", "consistent")
    assert by_point[(2, "sample")][:2] == ("extension", "fast")
    # accuracy rounds: each mode between two snapshot-mode references, where the extension runs
    rounds = by_point[(2, "accuracy-fast")][2]
    assert rounds >= 1 and by_point[(2, "accuracy-reference")][:2] == ("extension", "snapshot")
    assert by_point[(2, "accuracy-reference")][2] == 4 * rounds
    for mode in ("consistent", "semiconsistent", "fast"):
        assert by_point[(2, f"accuracy-{mode}")][1:3] == (mode, rounds)
    assert (1, "accuracy-fast") not in by_point
    assert all(errors == 0 for *_, errors in by_point.values())
    # Alternating windows: snapshots only in the polled ones, tps per second to cut along them.
    from pgcachelab.analysis.inspect_overhead import Windows, measurement_window_ratios

    for point_index, metrics_json in store_query(
        lab_dir, "select point_index, metrics from measurements order by point_index"
    ):
        metrics = json.loads(metrics_json)
        windows = Windows(**metrics["inspect_windows"])
        assert windows.length_s == 2 and windows.first_polled  # the first round starts polled
        assert "--progress-timestamp" in metrics["pgbench_args"]
        assert len(measurement_window_ratios(metrics)) >= 2, metrics["pgbench"]["progress"]
        taken = store_query(
            lab_dir, "select taken_at from cache_snapshots where point_index = ?"
            " and label = 'sample'", [point_index],
        )  # fmt: skip
        assert all(windows.polled(windows.index(at)) for (at,) in taken)
        assert len(taken) >= (2 if point_index else 0)
    page = Path(result.stdout.strip()).read_text()
    assert "The cost of looking inside shared_buffers" in page
    assert "sag % within runs" in page and "A/A test" in page
    # What each snapshot cost the polling backend in CPU: read from /proc (the server is local).
    cpu = [
        json.loads(data).get("server_cpu_ms")
        for (data,) in store_query(
            lab_dir, "select data from cache_snapshots where label = 'sample' and data is not null"
        )
    ]
    assert cpu and all(ms is not None and 0 <= ms < 5000 for ms in cpu)
    assert "server CPU ms per snapshot" in page
    assert "pg_cachelab fast" in page and "How wrong each mode is under this load" in page
    assert "semiconsistent (against snapshot)" in page and "all held" in page
