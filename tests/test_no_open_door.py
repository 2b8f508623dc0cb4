"""A cluster that listens on TCP lets no other local user in (issue 18).

The socket directory is 0700 (the lab's and the server user's); over TCP the superuser needs the
generated password, which the lab keeps in a 0600 passfile and hands over only in the
environment. The intruder is a forked child that becomes `nobody`, as another user would be.
"""

import contextlib
import json
import os
import pwd
import random
import stat
import subprocess
from pathlib import Path

import psycopg
import pytest
from fix_cli import CLI_TIMEOUT_S, cli_command, cli_env
from fix_lab import store_query
from fix_processes import server_reachable_dir

from pgcachelab.cli.progress import LineProgress
from pgcachelab.clusters.binaries import PgInstall
from pgcachelab.clusters.managed import (
    ManagedCluster,
    host_auth_method,
    initdb_auth_args,
    passfile_line,
    restrict_host_lines,
)
from pgcachelab.clusters.osuser import install_usable_by
from pgcachelab.workloads.tpcc import loader

pytestmark = pytest.mark.server


def test_host_auth_is_scram_from_10_and_md5_on_9_6():
    assert host_auth_method(18) == host_auth_method(10) == "scram-sha-256"
    assert host_auth_method(9) == "md5"
    fifteen = PgInstall(Path("/x"), "15.4", 15, "test")
    assert "--auth-local=trust" in initdb_auth_args(fifteen, Path("/x"))
    assert not any(arg.startswith("--auth=") for arg in initdb_auth_args(fifteen, Path("/x")))
    # before 9.2 one --auth for both; the host lines get the password right after initdb
    old = PgInstall(Path("/x"), "9.1", 9, "test")
    assert "--auth=trust" in initdb_auth_args(old, Path("/x"))
    hba = "local   all all trust\nhost    all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n"
    assert restrict_host_lines(hba, "md5").splitlines() == [
        "local   all all trust",
        "host    all all 127.0.0.1/32 md5",
        "host all all ::1/128 md5",
    ]


def test_passfile_line_escapes_what_libpq_would_split_on():
    assert passfile_line("lab", r"a:b\c") == "*:*:*:lab:a\\:b\\\\c\n"


def _connect_as_nobody(conninfo: dict) -> str:
    """What `nobody` gets when connecting with `conninfo`: "connected" or libpq's error."""
    nobody = pwd.getpwnam("nobody")
    # Load what connecting imports lazily (the idna codec...) while we can read the venv.
    with contextlib.suppress(psycopg.Error):
        psycopg.connect(
            **{**conninfo, "passfile": "/nonexistent/pgpass"}, connect_timeout=5
        ).close()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child reports through the pipe)
        os.close(read_end)
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            os.environ["PGPASSFILE"] = "/nonexistent/pgpass"  # not root's ~/.pgpass
            os.environ.pop("PGPASSWORD", None)
            try:
                psycopg.connect(**conninfo, connect_timeout=5).close()
                outcome = "connected"
            except Exception as error:  # noqa: BLE001 (reported to the parent, which judges)
                outcome = f"{type(error).__name__}: {error}"
            os.write(write_end, outcome.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        outcome = pipe.read().decode()
    os.waitpid(child, 0)
    return outcome


@pytest.fixture(params=["18", "15", "9.6"])
def tcp_cluster(request, server_os_user, cluster_parent):
    from pgcachelab.clusters.binaries import find_install
    from pgcachelab.clusters.installs import resolve

    try:
        install = find_install(resolve(request.param))
    except Exception as error:  # noqa: BLE001 (an install this host lacks is skipped)
        pytest.skip(f"PostgreSQL {request.param} is not installed here: {error}")
    install = install_usable_by(install, server_os_user)
    cluster = ManagedCluster.create(install, server_os_user, cluster_parent, listen_tcp=True)
    try:
        cluster.apply_settings({})
        yield cluster
    finally:
        cluster.destroy()


@pytest.mark.skipif(
    os.geteuid() != 0, reason="becoming another local user (nobody) to connect needs root"
)
def test_another_local_user_cannot_connect_over_tcp_without_the_password(tcp_cluster):
    tcp = tcp_cluster.tcp_conninfo()
    without_password = {k: v for k, v in tcp.items() if k != "passfile"}
    refused = _connect_as_nobody(without_password)
    assert refused != "connected"
    assert "password" in refused  # asked for one: no trust over TCP
    # nor through the socket: its directory is 0700
    assert stat.S_IMODE(tcp_cluster.socket_dir.stat().st_mode) == 0o700
    assert _connect_as_nobody(tcp_cluster.conninfo()) != "connected"
    # nor by reading the lab's passfile
    assert stat.S_IMODE(tcp_cluster.passfile.stat().st_mode) == 0o600
    assert tcp_cluster.passfile.stat().st_uid == os.geteuid()
    assert _connect_as_nobody(tcp) != "connected"


def test_the_lab_connects_over_tcp_with_its_passfile(tcp_cluster):
    with psycopg.connect(**tcp_cluster.tcp_conninfo(), connect_timeout=5) as conn:
        method = conn.execute("show password_encryption").fetchone()[0]
        hba = conn.execute("select pg_read_file('pg_hba.conf')").fetchone()[0]
    rules = [line.split() for line in hba.splitlines() if line and not line.startswith("#")]
    assert all(rule[-1] == "trust" for rule in rules if rule[0] == "local")
    assert all(rule[-1] == host_auth_method(tcp_cluster.install.major) for rule in rules
               if rule[0] == "host")  # fmt: skip
    if tcp_cluster.install.major >= 10:
        assert method == "scram-sha-256"
    password = tcp_cluster.password
    assert password and password not in " ".join(map(str, tcp_cluster.tcp_conninfo().values()))


@pytest.fixture(scope="module")
def password_only_tcp_cluster(pg_install, server_os_user):
    """A running cluster whose TCP door asks for the password (the lab's listen_tcp)."""
    with server_reachable_dir() as parent:
        cluster = ManagedCluster.create(pg_install, server_os_user, parent, listen_tcp=True)
        try:
            cluster.apply_settings({})
            yield cluster
        finally:
            cluster.destroy()


def _run_with_pgpassword(cluster, lab_tmp, *args):
    """`pgcachelab ARGS` as the README says to reach such a server: its password in PGPASSWORD,
    and none in the DSN or a passfile."""
    environment = {
        **cli_env(lab_tmp),
        "PGPASSWORD": cluster.password,
        "PGPASSFILE": "/nonexistent/pgpass",
    }
    return subprocess.run(
        cli_command(*args), env=environment, stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=CLI_TIMEOUT_S,
    )  # fmt: skip


def _tcp_dsn(cluster) -> str:
    return f"host=127.0.0.1 port={cluster.port} user=lab dbname=postgres"


def test_a_dsn_without_its_password_measures_with_pgpassword(
    password_only_tcp_cluster, lab_tmp, tmp_path
):
    """pgbench must log in with PGPASSWORD as the lab's own connection does (issue 35, F12)."""
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "t"\n[pgbench]\nscale = 1\nclients = 1\nduration = "1s"\n')
    cluster = password_only_tcp_cluster
    result = _run_with_pgpassword(
        cluster, lab_tmp, "run", spec, "--dsn", _tcp_dsn(cluster), "--no-report",
        "--lab-dir", tmp_path / "lab",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    statuses = store_query(tmp_path / "lab", "select status, reason from measurements")
    assert statuses == [("ok", None)], result.stderr


def test_tpcc_run_on_a_dsn_without_its_password_uses_pgpassword(password_only_tcp_cluster, lab_tmp):
    """The same for tpcc run, which failed with exit 1 (issue 35, F13)."""
    loader.load(password_only_tcp_cluster.connect, 1, 2, LineProgress(), random.Random(2))
    result = _run_with_pgpassword(
        password_only_tcp_cluster, lab_tmp, "tpcc", "run", "--dsn",
        _tcp_dsn(password_only_tcp_cluster), "--transactions", "40", "--clients", "1", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["run"]["summary"]["completed"] > 0
