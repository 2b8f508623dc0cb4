"""A throwaway PostgreSQL cluster the lab creates, configures, restarts and removes.

The postmaster runs as our child in its own session (so a terminal's Ctrl-C reaches only the
lab, which then shuts it down cleanly), with PR_SET_PDEATHSIG so that even a SIGKILLed lab
takes its server down; a resumed run also removes what a killed run left (see `reap_stale`).
"""

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

from pgcachelab import interrupts
from pgcachelab.clusters.binaries import PgInstall
from pgcachelab.clusters.client import one_row
from pgcachelab.clusters.guc import (
    FileSetting,
    ServerSetting,
    log_reasons,
    setting_mismatches,
    setting_value_text,
    shown_unit,
)
from pgcachelab.clusters.osuser import OsUser, run_as_kwargs, server_environment
from pgcachelab.clusters.shmem_leftovers import release_shared_memory
from pgcachelab.errors import ClusterError
from pgcachelab.machine import owned

LAB_SUPERUSER = "lab"
SETTINGS_FILE = "pgcachelab.conf"
# The superuser's generated password, for TCP clients only: 0600, owned by the lab (root), in
# the cluster's 0700 work directory; read by libpq as a passfile, never put on a command line.
PASSFILE = "pgpass"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
_PR_SET_PDEATHSIG = 1
PG_FILE_SETTINGS_FROM = 90500  # server_version_num of the first release with pg_file_settings
# Log lines that say why a start failed; a bad value in the conf file is only a LOG line
# ("invalid value for parameter ...") followed by a FATAL that does not name it.
_LOG_REASONS = ("FATAL", "ERROR", "invalid value", "unrecognized configuration parameter")


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGQUIT)  # SIGQUIT: immediate shutdown


def _child_setup(user: OsUser, cgroup_procs: str | None):
    """What the postmaster's process does between fork and exec, in this order: join the
    cgroup (needs root), drop to the server user, then ask to die with the lab (the kernel
    clears that request when the uid changes, so it comes last)."""

    def setup() -> None:
        if cgroup_procs:
            with open(cgroup_procs, "w") as procs:
                procs.write(str(os.getpid()))
        if user.uid != os.geteuid():
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
        _die_with_parent()

    return setup


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def quote_conf_value(value) -> str:
    """A postgresql.conf value in single quotes, with embedded quotes doubled."""
    return "'" + setting_value_text(value).replace("\\", "\\\\").replace("'", "''") + "'"


def host_auth_method(major: int) -> str:
    """How TCP clients must authenticate: scram-sha-256 from PostgreSQL 10; 9.6 has no scram,
    md5 is the best it offers."""
    return "scram-sha-256" if major >= 10 else "md5"


def initdb_auth_args(install: PgInstall, password_file: Path) -> list[str]:
    """Trust only on the unix socket (its directory is 0700, the lab's and the server user's);
    TCP needs the generated password, so another local user finds no open door (issue 18).
    Before 9.2 initdb has one --auth for both: trust, and `restrict_host_lines` then asks TCP
    for the password before the server first starts."""
    if not install.at_least(9, 2):
        return ["--auth=trust", f"--pwfile={password_file}"]
    return [
        "--auth-local=trust",
        f"--auth-host={host_auth_method(install.major)}",
        f"--pwfile={password_file}",
    ]


def restrict_host_lines(pg_hba: str, method: str) -> str:
    """pg_hba.conf with every TCP ("host") line's method set to `method`: initdb before 9.2
    writes trust on all its lines."""
    lines = []
    for line in pg_hba.splitlines():
        fields = line.split()
        if fields and fields[0] == "host" and fields[-1] == "trust":
            line = line[: line.rindex("trust")] + method
        lines.append(line)
    return "\n".join(lines) + "\n"


def initdb_sync_args(install: PgInstall) -> list[str]:
    """initdb's "do not fsync" option: --no-sync from 10, --nosync in 9.3 to 9.6, none before
    (initdb did not fsync then)."""
    if install.at_least(10):
        return ["--no-sync"]
    return ["--nosync"] if install.at_least(9, 3) else []


def include_directive(install: PgInstall) -> str:
    """postgresql.conf's line for the lab's settings file: include_if_exists from 9.3; before,
    include (the file is written right after initdb, so it exists)."""
    keyword = "include_if_exists" if install.at_least(9, 3) else "include"
    return f"\n{keyword} = '{SETTINGS_FILE}'\n"


def socket_directory_setting(install: PgInstall) -> str:
    """unix_socket_directories from 9.3; unix_socket_directory (one directory) before."""
    return "unix_socket_directories" if install.at_least(9, 3) else "unix_socket_directory"


def passfile_line(user: str, password: str) -> str:
    """A libpq passfile line for any host and port (the file is this cluster's alone, and a
    resumed cluster gets a new port): ':' and '\\' escaped as libpq wants."""
    escaped = password.replace("\\", "\\\\").replace(":", "\\:")
    return f"*:*:*:{user}:{escaped}\n"


def initdb_checksum_args(data_checksums: bool | None, major: int) -> list[str]:
    """initdb turns data checksums on by default from 18 and has no way to say "off" before."""
    if data_checksums is None:
        return []
    if data_checksums:
        return ["--data-checksums"]
    return ["--no-data-checksums"] if major >= 18 else []


class ManagedCluster:
    """One cluster in a private work directory: pgdata, a 0700 socket directory and a log."""

    def __init__(
        self,
        install: PgInstall,
        work_dir: Path,
        user: OsUser,
        listen_tcp: bool = False,
        machine=None,  # machine.emulated.EmulatedMachine: cgroup, huge pages, caches
        data_checksums: bool | None = None,  # None: the version's initdb default
        emulated_disk: bool = False,  # the data in work_dir/disk, served through a FUSE mount
    ):
        self.install = install
        self.data_checksums = data_checksums
        self.machine = machine
        self.work_dir = work_dir
        self.user = user
        self.listen_tcp = listen_tcp
        self.disk = None
        if emulated_disk:
            from pgcachelab.clusters.cluster_disk import ClusterDisk

            self.disk = ClusterDisk(work_dir, user)
        self.socket_dir = work_dir / "socket"
        self.log_path = work_dir / "postgres.log"
        self.port = free_port()
        self.passfile = work_dir / PASSFILE
        self.settings: dict[str, str] = {}
        self.process: subprocess.Popen | None = None
        self.restarts = 0
        self.owned_entry: Path | None = None  # machine/owned.py: reaped if the lab is killed
        # Kept for --resume: the entry that names its run, left when the lab stops unfinished
        # (experiments/reaping.py removes the cluster once no run names it).
        self.kept_entry: Path | None = None
        self._log_start_offset = 0  # where the current start's lines begin in the log
        # False after the server refused what the file asks: the next apply reloads and checks
        # again even when the file does not change (the next repetition of a failed point).
        self.settings_verified = True

    @property
    def data_dir(self) -> Path:
        return self.disk.data_dir if self.disk is not None else self.work_dir / "pgdata"

    @classmethod
    def create(
        cls,
        install: PgInstall,
        user: OsUser,
        parent_dir: Path | None = None,
        on_work_dir: Callable[[str], None] | None = None,
        disk_profile=None,  # machine.disk_profiles.DiskProfile to initdb on, with emulated_disk
        keep_for_resume: bool = False,  # a killed lab's directory stays for --resume
        kept_for: dict[str, str] | None = None,  # the store and run id that may resume it
        **kwargs,
    ) -> "ManagedCluster":
        """Make the work directory (owned by the server user) and run initdb in it.

        The directory is recorded (machine/owned.py) before it is made and `on_work_dir`
        learns it before initdb, so a lab killed at any moment leaves a directory a later lab
        knows: to remove, or, kept for --resume, to keep while `kept_for`'s run names it.
        """
        kinds: dict[str, dict] = {"cluster": {"keep": keep_for_resume}}
        if keep_for_resume:
            kinds["kept"] = dict(kept_for or {})
        work_dir, entries = owned.new_dir(
            Path(parent_dir or tempfile.gettempdir()), "pgcachelab-", kinds
        )
        try:
            cluster = cls(install, work_dir, user, **kwargs)
        except BaseException:
            shutil.rmtree(work_dir, ignore_errors=True)
            for entry in entries:
                owned.forget(entry)
            raise
        cluster.owned_entry = entries[0]
        cluster.kept_entry = entries[1] if keep_for_resume else None
        try:
            if on_work_dir:
                on_work_dir(str(work_dir))
            os.chown(work_dir, user.uid, user.gid)
            work_dir.chmod(0o700)
            cluster.socket_dir.mkdir(mode=0o700)
            os.chown(cluster.socket_dir, user.uid, user.gid)
            if cluster.disk is not None:
                cluster.disk.prepare()
                cluster.use_disk(disk_profile)
                # initdb builds files as a data load does: through seed-004-vm's 0.2 ms writes
                # it took ~25 s of a quick run's budget (issue 17), and measures nothing
                with cluster.disk.loading():
                    cluster._initdb()
            else:
                cluster._initdb()
        except BaseException:
            cluster.destroy()
            raise
        return cluster

    @classmethod
    def attach(
        cls,
        install: PgInstall,
        user: OsUser,
        work_dir: Path,
        kept_for: dict[str, str] | None = None,
        **kwargs,
    ):
        """The cluster a paused run kept in `work_dir`: no initdb, its data as it was."""
        from pgcachelab.clusters.cluster_disk import layout_data_dir

        data_dir = layout_data_dir(work_dir) if kwargs.get("emulated_disk") else work_dir / "pgdata"
        if not (data_dir / "PG_VERSION").is_file():
            return None
        cluster = cls(install, work_dir, user, **kwargs)
        cluster.owned_entry = owned.record("cluster", work_dir, keep=True)
        cluster.kept_entry = owned.record("kept", work_dir, **(kept_for or {}))
        return cluster

    def use_disk(self, profile) -> bool:
        """Serve the cluster's files from `profile` (None: the host disk), stopping the server
        when that changes the disk; the next apply_settings starts it again."""
        if self.disk is None:
            if profile is not None:
                raise ClusterError("this cluster was not created on an emulated disk")
            return False
        from pgcachelab.machine.fusedisk import DiskError

        if not self.disk.needs_change(profile):
            return False
        if not self.disk.can_retime(profile):
            self.stop()
        try:
            return self.disk.use(profile)
        except DiskError as error:
            raise ClusterError(f"emulated disk: {error}") from None

    # -- lifecycle -------------------------------------------------------------------------

    def _run_as_server_user(self, args: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(
            args,
            cwd=self.work_dir,
            capture_output=True,
            text=True,
            env=server_environment(),
            preexec_fn=_die_with_parent,
            **run_as_kwargs(self.user),
        )

    @property
    def password(self) -> str | None:
        """The superuser's password (TCP only; the socket trusts), None for an older cluster."""
        try:
            line = self.passfile.read_text().strip()
        except OSError:
            return None
        return line.split(":", 4)[4].replace("\\:", ":").replace("\\\\", "\\")

    def _initdb(self) -> None:
        password = secrets.token_urlsafe(24)
        # initdb runs as the server user and reads the password from a file it can read, removed
        # as soon as initdb is done; the lab keeps its own copy in a 0600 passfile.
        password_file = self.work_dir / "initdb-password"
        fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(password + "\n")
        os.chown(password_file, self.user.uid, self.user.gid)
        try:
            result = self._run_as_server_user(
                [
                    str(self.install.tool("initdb")),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    LAB_SUPERUSER,
                    *initdb_auth_args(self.install, password_file),
                    "--encoding=UTF8",
                    "--locale=C",
                    *initdb_sync_args(self.install),
                    *initdb_checksum_args(self.data_checksums, self.install.major),
                ],
            )
        finally:
            password_file.unlink(missing_ok=True)
        fd = os.open(self.passfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(passfile_line(LAB_SUPERUSER, password))
        if result.returncode != 0:
            raise ClusterError(f"initdb failed: {_last_lines(result.stderr)}")
        if not self.install.at_least(9, 2):
            pg_hba = self.data_dir / "pg_hba.conf"
            pg_hba.write_text(
                restrict_host_lines(pg_hba.read_text(), host_auth_method(self.install.major))
            )
        # The seed's way of configuring: an included file we rewrite for each point.
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write(include_directive(self.install))
        self._write_settings_file({})

    def _base_settings(self) -> dict[str, str]:
        return {
            "port": str(self.port),
            "listen_addresses": "localhost" if self.listen_tcp else "",
            socket_directory_setting(self.install): str(self.socket_dir),
        }

    def _write_settings_file(self, settings: dict[str, str]) -> None:
        lines = ["# written by pgcachelab for the current point; rewritten at every point"]
        for name, value in {**self._base_settings(), **settings}.items():
            lines.append(f"{name} = {quote_conf_value(value)}")
        path = self.data_dir / SETTINGS_FILE
        path.write_text("\n".join(lines) + "\n")
        os.chown(path, self.user.uid, self.user.gid)
        self.settings = dict(settings)

    def death(self, wait_s: float = 0.0) -> str | None:
        """ "the server died (how): its log's last errors" when the postmaster we started has
        exited without being asked to (killed, crashed), else None. `wait_s`: how long to give
        a dying postmaster, whose socket refuses connections a moment before it is reaped."""
        if self.process is None:
            return None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=wait_s)
        if self.process.poll() is None:
            return None
        return f"the server died ({describe_exit(self.process.returncode)}): {self._log_errors()}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        if self.machine is not None:
            self.machine.before_start(self)
        self._spawn()
        if self.machine is not None:
            try:
                self.machine.after_start(self)
            except ClusterError:
                self.stop()  # a server on another machine than the point's: not to measure
                raise

    def _spawn(self, extra_args: tuple[str, ...] = ()) -> None:
        """Start the postmaster as the server user, inside the memory cgroup if there is one."""
        cgroup_procs = self.machine.cgroup_procs_file() if self.machine else None
        with open(self.log_path, "ab") as log:
            # The log accumulates every start: report only this start's errors, not earlier ones.
            self._log_start_offset = log.tell()
            self.process = subprocess.Popen(
                [str(self.install.tool("postgres")), "-D", str(self.data_dir), *extra_args],
                cwd=self.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=server_environment(),
                preexec_fn=_child_setup(self.user, cgroup_procs),
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                self.process = None
                raise ClusterError(f"server did not start: {self._log_errors()}")
            try:
                with self.connect(connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise ClusterError(
                        f"server not ready after {START_TIMEOUT_S:.0f} s: {self._log_errors()}"
                    ) from None
                time.sleep(0.05)

    def huge_pages_needed(self) -> int:
        """Huge pages the server needs with the current settings file; the server is stopped.

        15+: `postgres -C shared_memory_size_in_huge_pages`; before: the seeds' way, the
        postmaster's VmPeak after a start without huge pages.
        """
        from pgcachelab.machine.hugepages import (
            page_size_bytes,
            pages_for_bytes,
            parse_vmpeak_bytes,
        )

        if self.install.major >= 15:
            result = self._run_as_server_user(
                [
                    str(self.install.tool("postgres")),
                    "-D",
                    str(self.data_dir),
                    "-C",
                    "shared_memory_size_in_huge_pages",
                ]
            )
            if result.returncode != 0 or int(result.stdout.strip() or -1) < 0:
                raise ClusterError(f"cannot size huge pages: {_last_lines(result.stderr)}")
            return int(result.stdout.strip())
        self._spawn(("-c", "huge_pages=off"))
        try:
            assert self.process is not None  # _spawn started it
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        finally:
            self.stop()
        vmpeak = parse_vmpeak_bytes(status)
        assert vmpeak is not None  # every Linux process's status has VmPeak
        return pages_for_bytes(vmpeak, page_size_bytes())

    def stop(self, immediate: bool = False) -> None:
        """Fast shutdown (SIGINT); immediate, then SIGKILL of the whole group if it hangs.

        `immediate` starts at the immediate shutdown (SIGQUIT): no shutdown checkpoint, for a
        cluster whose directory is removed right after (`destroy`) and never read again.
        """
        if self.process is None:
            return
        process, self.process = self.process, None
        interrupts.server_stopped()
        signals = ((signal.SIGINT, STOP_TIMEOUT_S), (signal.SIGQUIT, 10.0))
        try:
            for sig, wait_s in signals[1:] if immediate else signals:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, sig)
                try:
                    process.wait(timeout=wait_s)
                    return
                except subprocess.TimeoutExpired:
                    continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        finally:
            # A server that died killed (by us, the OOM killer, anyone) left its shared memory.
            release_shared_memory(self.data_dir)

    def restart(self) -> None:
        self.stop()
        self.start()
        self.restarts += 1

    def destroy(self) -> None:
        """Stop the server and remove the work directory: nothing of the cluster is left."""
        try:
            # Its files are removed next: a shutdown checkpoint would write them for nobody
            # (2-12 s with large shared_buffers or on the emulated disk).
            self.stop(immediate=True)
        finally:
            try:
                self.release_disk()
            finally:
                shutil.rmtree(self.work_dir, ignore_errors=True)
                self.disown()
                owned.forget(self.kept_entry)
                self.kept_entry = None

    def disown(self) -> None:
        """Nothing of the cluster runs and its directory is gone or kept for --resume (then its
        "kept" entry stays, naming its run): no later lab needs to stop or remove it."""
        owned.forget(self.owned_entry)
        self.owned_entry = None

    def release_disk(self) -> None:
        """Unmount the emulated disk (the server is down); the files stay in the backing dir."""
        if self.disk is not None:
            self.disk.unmount()

    def __enter__(self) -> "ManagedCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

    # -- settings --------------------------------------------------------------------------

    def apply_settings(self, settings: dict) -> str:
        """Make `settings` the point's settings; returns 'none', 'reload', 'restart' or 'start'.

        Restarts only when a changed setting has pg_settings.context = 'postmaster'.
        """
        wanted = {name: setting_value_text(value) for name, value in settings.items()}
        if not self.running:
            self._write_settings_file(wanted)
            self.start()
            self.verify_settings(wanted, self._log_start_offset)
            return "start"
        changed = {
            n for n in wanted.keys() | self.settings.keys() if wanted.get(n) != self.settings.get(n)
        }
        if not changed and self.settings_verified:
            return "none"
        with self.connect() as conn:
            contexts: dict[str, str] = dict(
                conn.execute(
                    "select name, context from pg_settings where name = any(%s)", [list(changed)]
                ).fetchall()
            )
            loaded_before = one_row(conn.execute("select pg_conf_load_time()"))[0]
        self._write_settings_file(wanted)
        if any(contexts.get(name) == "postmaster" for name in changed):
            self.restart()
            self.verify_settings(wanted, self._log_start_offset)
            return "restart"
        log_offset = self._log_size()
        self._reload(loaded_before)
        self.verify_settings(wanted, log_offset)
        return "reload"

    def verify_settings(self, wanted: dict[str, str], log_offset: int) -> None:
        """Read back pg_settings and pg_file_settings: a setting the server does not run with
        as asked is a ClusterError naming it, what it has instead, and the server's reason.

        A reload that rejects a value keeps the old one and says so only in the log (seed 002
        was burned by a silent rate limit; issue 16 by a silent checkpoint_timeout).
        """
        self.settings_verified = False
        with self.connect() as conn:
            server = {
                name.lower(): ServerSetting(
                    name, setting, shown_unit(name, unit, vartype), vartype, source
                )
                for name, setting, unit, vartype, source in conn.execute(
                    "select name, setting, unit, vartype, source from pg_settings"
                    " where lower(name) = any(%s)",
                    [[n.lower() for n in wanted]],
                )
            }
            file_settings = (
                {
                    name.lower(): FileSetting(name, applied, error)
                    for name, applied, error in conn.execute(
                        "select name, applied, error from pg_file_settings"
                        " where sourcefile like %s order by seqno",
                        [f"%/{SETTINGS_FILE}"],
                    )
                }
                if conn.info.server_version >= PG_FILE_SETTINGS_FROM
                else None
            )
        reasons = log_reasons(self._log_since(log_offset))
        if file_settings is None:
            # Before 9.5: what pg_settings says came from the lab's file, with no complaint in
            # the log since, is what the file asked and the server took.
            file_settings = {
                key: FileSetting(row.name, True, None)
                for key, row in server.items()
                if row.source == "configuration file" and key not in reasons
            }
        mismatches = setting_mismatches(wanted, server, file_settings, reasons)
        if mismatches:
            raise ClusterError("; ".join(mismatches))
        self.settings_verified = True

    def _reload(self, loaded_before) -> None:
        """SIGHUP is asynchronous: wait until new sessions see the reloaded file."""
        with self.connect() as conn:
            conn.execute("select pg_reload_conf()")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with self.connect() as conn:
                if one_row(conn.execute("select pg_conf_load_time()"))[0] > loaded_before:
                    return
            time.sleep(0.02)
        raise ClusterError("server did not reload its configuration within 10 s")

    # -- connections -----------------------------------------------------------------------

    def conninfo(self, dbname: str = "postgres") -> dict:
        return {
            "host": str(self.socket_dir),
            "port": self.port,
            "user": LAB_SUPERUSER,
            "dbname": dbname,
        }

    def tcp_conninfo(self, dbname: str = "postgres") -> dict:
        """How a TCP client reaches the server (listen_tcp): the password from the passfile."""
        return {
            "host": "localhost",
            "port": self.port,
            "user": LAB_SUPERUSER,
            "dbname": dbname,
            "passfile": str(self.passfile),
        }

    def connect(self, dbname: str = "postgres", **kwargs) -> psycopg.Connection:
        return psycopg.connect(**self.conninfo(dbname), autocommit=True, **kwargs)

    def _log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def _log_errors(self) -> str:
        text = self._log_since(self._log_start_offset)
        if not text and not self.log_path.exists():
            return "no server log"
        errors = [line for line in text.splitlines() if any(m in line for m in _LOG_REASONS)]
        return _last_lines("\n".join(errors) or text)


def describe_exit(returncode: int) -> str:
    """A Popen return code in words: "killed by SIGKILL", "exit code 1"."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:]) or "(no output)"


def reap_stale(work_dir: Path, remove: bool = True) -> bool:
    """Stop a postmaster a killed lab left in `work_dir`, and remove the directory unless
    it holds data kept for --resume. Returns True when a server was still running there.
    """
    from pgcachelab.clusters.cluster_disk import data_dir_in

    found = False
    pid_file = data_dir_in(work_dir) / "postmaster.pid"
    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int(pid_file.read_text().splitlines()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if str(work_dir).encode() in cmdline:
            found = True
            os.kill(pid, signal.SIGQUIT)
            for _ in range(200):
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.05)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
    release_shared_memory(data_dir_in(work_dir))
    if remove:
        shutil.rmtree(work_dir, ignore_errors=True)
    return found
