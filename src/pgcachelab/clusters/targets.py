"""The server a run measures: a managed throwaway cluster, or an existing one (--dsn).

Both offer the same few verbs to the runner: open, apply a point's settings, connect, hand
pgbench its target, close. An existing server is never reconfigured or restarted: the only
settings it accepts are those a session may set, passed to pgbench through PGOPTIONS.
"""

import contextlib
import functools
import os
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pgcachelab.clusters.binaries import PgInstall, find_install, find_pgbench, parse_version
from pgcachelab.clusters.catalogue import install_catalogue, read_catalogue_rows
from pgcachelab.clusters.client import SERVICE, PgbenchTarget, one_row, pgoptions
from pgcachelab.clusters.guc import SettingInfo, catalogue_from_pg_settings
from pgcachelab.clusters.installs import read_record, resolve, source_of
from pgcachelab.clusters.managed import ClusterError, ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user
from pgcachelab.clusters.setting_history import names_in, translate_settings
from pgcachelab.clusters.target import ManagedServer, Preflight, ServerFacts, Target
from pgcachelab.errors import PointError, UserError
from pgcachelab.machine.disk_profiles import HOST, resolve_disk
from pgcachelab.machine.storage_probe import probe_storage
from pgcachelab.secrets import parse_failure, redact, service_file_text, split_secrets

if TYPE_CHECKING:
    from pgcachelab.machine.emulated import EmulatedMachine

SESSION_CONTEXTS = {"user", "superuser"}


def kept_data_path() -> Path:
    """Where clusters kept for --resume live: not /tmp, which may be cleaned at boot."""
    return Path(f"/var/tmp/pgcachelab-{os.geteuid()}")


def kept_data_root() -> Path:
    """kept_data_path(), made if missing."""
    root = kept_data_path()
    root.mkdir(mode=0o755, exist_ok=True)
    return root


class ManagedTarget:
    kind = "managed"
    # Set by __init__; declared here so that the protocol's check sees them on the class.
    machine: "EmulatedMachine"
    emulated_disk: bool

    def __init__(
        self,
        pg_bin: str | None,
        listen_tcp: bool = False,
        memory_bytes: int | None = None,
        keep_data: bool = False,
        data_checksums: bool | None = None,
        disks: tuple[str | None, ...] = (),  # the disks the run's points name (canonical texts)
        disk_override: str | None = None,  # --disk: recorded, so --resume uses it again
        machine: "EmulatedMachine | None" = None,  # shared with other targets, run by them
        resume_dir: Path | None = None,  # --resume: the cluster a stopped run kept there
    ):
        from pgcachelab.machine.emulated import EmulatedMachine

        self.install: PgInstall = find_install(resolve(pg_bin) if pg_bin else None)
        self.listen_tcp = listen_tcp
        self.data_checksums = data_checksums
        self.cluster: ManagedCluster | None = None
        self._owns_machine = machine is None
        self.machine = machine if machine is not None else EmulatedMachine(memory_bytes)
        # Data that takes long to build (cache-wash) is kept when a run stops unfinished, in a
        # directory outside /tmp, and picked up again by --resume.
        self.keep_data = keep_data
        self.resume_dir = resume_dir
        # {"store": location, "run_id": id}: recorded with a kept cluster (machine/owned.py), so
        # a later lab can tell a cluster its run may resume from one whose run or store is gone.
        self.kept_for: dict[str, str] = {}
        # A disk anywhere in the spec puts the data on the backing directory of a FUSE mount
        # from the start (cluster_disk), so that any point can switch disks without a copy.
        self.disks = tuple(disks)
        self.disk_override = disk_override
        self.emulated_disk = any(disk not in (None, HOST) for disk in self.disks)
        self._host_probe: dict | None = None
        self._catalogue: dict[str, SettingInfo] | None = None

    @property
    def server_major(self) -> int:
        return self.install.major

    @property
    def server_version(self) -> str:
        return self.install.version

    def catalogue(self) -> dict[str, SettingInfo]:
        """pg_settings of this install (units, enum values, ranges): clusters/catalogue.py."""
        if self._catalogue is None:
            try:
                self._catalogue = install_catalogue(self.install)
            except ClusterError as error:
                raise UserError(
                    f"cannot read the settings of PostgreSQL {self.install.version} "
                    f"({self.install.bin_dir}): {error}",
                    "check the server binaries (--pg-bin) and that the machine can run them",
                ) from None
        return self._catalogue

    def applicable_contexts(self) -> set[str] | None:
        return None

    def preflight(self, setting_names: set[str]) -> Preflight:
        """Its one install and catalogue; the lab sets max_connections and runs as superuser."""
        name = f"PostgreSQL {self.install.version}"
        return Preflight((ServerFacts(name, self.catalogue(), None, self.install),))

    def pgbench(self) -> Path:
        return find_pgbench(self.install)

    def label_kept(self, kept_for: dict[str, str]) -> None:
        self.kept_for = kept_for

    def switch(self, version: str | None, group: tuple) -> tuple[dict, dict] | None:
        return None  # one cluster, current from open() on

    def describe(self) -> dict:
        return {
            "kind": self.kind,
            "bin_dir": str(self.install.bin_dir),
            "source": self.install.source,
            "listen_tcp": self.listen_tcp,
            "memory_limit_bytes": self.machine.memory_bytes,
            "keep_data": self.keep_data,
            "data_checksums": self.data_checksums,
            "emulated_disk": self.emulated_disk,
            "disk_override": self.disk_override,
        }

    def open(self, record_work_dir: Callable[[str], None]) -> None:
        """Create and initdb the cluster, telling `record_work_dir` where before initdb runs."""
        user = server_user()
        install = install_usable_by(self.install, user)
        if self._owns_machine:
            self.machine.open()
        options = {
            "listen_tcp": self.listen_tcp,
            "machine": self.machine,
            "data_checksums": self.data_checksums,
            "emulated_disk": self.emulated_disk,
        }
        if self.resume_dir is not None:
            self.cluster = ManagedCluster.attach(
                install, user, self.resume_dir, kept_for=self.kept_for, **options
            )
        if self.cluster is not None:
            record_work_dir(str(self.cluster.work_dir))
            if self.emulated_disk:
                assert self.cluster.disk is not None  # emulated_disk: the cluster made one
                self.cluster.disk.prepare()
            return
        parent = kept_data_root() if self.keep_data else None
        first_disk = resolve_disk(self.disks[0]) if self.disks else None
        self.cluster = ManagedCluster.create(
            install,
            user,
            parent_dir=parent,
            on_work_dir=record_work_dir,
            disk_profile=first_disk,
            keep_for_resume=self.keep_data,
            kept_for=self.kept_for if self.keep_data else None,
            **options,
        )

    def data_parent(self) -> Path:
        """Where open() makes the cluster's work directory: its file system holds the data."""
        return kept_data_path() if self.keep_data else Path(tempfile.gettempdir())

    def use_disk(self, disk: str | None) -> bool:
        """The point's disk (canonical text; None or "host": the machine's own)."""
        return self._open_cluster().use_disk(resolve_disk(disk))

    def loading_data(self) -> AbstractContextManager[Any]:
        """A context in which data is built with no emulated latency (see ClusterDisk)."""
        if self.cluster is None or self.cluster.disk is None:
            return contextlib.nullcontext()
        return self.cluster.disk.loading()

    def _open_cluster(self) -> ManagedCluster:
        """The cluster open() made (a caller before open() or after close() is a bug)."""
        assert self.cluster is not None, "the target is not open"
        return self.cluster

    def server_failure(self) -> str | None:
        """Why the postmaster is gone, when it died under a measurement."""
        return self.cluster.death(wait_s=1.0) if self.cluster is not None else None

    def disk_failure(self) -> str | None:
        """Why the emulated disk stopped serving, when it did."""
        from pgcachelab.machine.fusedisk import DiskError

        if self.cluster is None or self.cluster.disk is None:
            return None
        try:
            self.cluster.disk.check()
        except DiskError as error:
            return f"emulated disk failed: {error}"
        return None

    def postmaster_pid(self) -> int | None:
        process = self.cluster.process if self.cluster is not None else None
        return process.pid if process is not None else None

    def disk_record(self) -> dict:
        """The disk a measurement ran on: its profile, the storage probe, the device counters."""
        disk = self.cluster.disk if self.cluster else None
        if disk is None:
            if self._host_probe is None:
                self._host_probe = probe_storage(self._open_cluster().work_dir)
            return {"profile": None, "probe": self._host_probe, "counters": {}}
        return {
            "profile": disk.profile.record() if disk.profile else None,
            "probe": disk.probe(),
            "counters": disk.device_counters(),
        }

    @property
    def data_dir(self) -> Path | None:
        return self.cluster.data_dir if self.cluster else None

    def apply(self, settings: dict) -> str:
        return self._open_cluster().apply_settings(settings)

    def connect(self, settings: dict | None = None) -> psycopg.Connection:
        return self._open_cluster().connect()  # the point's settings are the server's own

    def pgbench_target(self, settings: dict) -> PgbenchTarget:
        # The socket trusts; the password is there for a TCP host, in the environment only.
        cluster = self._open_cluster()
        return PgbenchTarget(conninfo=cluster.conninfo(), password=cluster.password)

    def close(self, finished: bool = True) -> str | None:
        """Stop everything; returns the directory kept for --resume, if any."""
        kept = None
        try:
            if self.cluster is not None:
                if self.keep_data and not finished:
                    self.cluster.stop()  # the directory stays, named by its "kept" entry
                    self.cluster.release_disk()
                    self.cluster.disown()
                    kept = str(self.cluster.work_dir)
                else:
                    self.cluster.destroy()
                    if self.keep_data:
                        with contextlib.suppress(OSError):
                            self.cluster.work_dir.parent.rmdir()
                self.cluster = None
        finally:
            if self._owns_machine:
                self.machine.close()
        return kept

    def park(self) -> None:
        """Stop the server and unmount its disk; the cluster and its data stay for later."""
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster.release_disk()


class VersionedTarget:
    """Managed clusters of several server versions, one running at a time (seed 001).

    Each version gets a cluster of its own per data group (scale class, ...), created and
    loaded the first time a point needs it and then kept, stopped, on disk (issue 19): the
    runner's rounds visit every version again and again, and a version's data is built once.
    Switching parks the running cluster (server stopped, emulated disk unmounted) and drops
    every other cluster's files from the OS page cache before the next one starts, so one
    server holds the (emulated) memory at a time and no version inherits another's warm
    cache. All clusters share one emulated machine: one memory cgroup, one huge pages
    reservation. Everything else is the current cluster's ManagedTarget, asked by name below.
    """

    kind = "managed"
    machine: "EmulatedMachine"  # its own, shared by its clusters: set by __init__

    def __init__(
        self,
        bin_dirs: dict[str, str],  # version label -> bin directory (a control: its twin's)
        listen_tcp: bool = False,
        memory_bytes: int | None = None,
        data_checksums: bool | None = None,
        disks: tuple[str | None, ...] = (),
        disk_override: str | None = None,
        unavailable: dict[str, str] | None = None,  # version label -> why it is not installed
    ):
        from pgcachelab.machine.emulated import EmulatedMachine

        self.unavailable = dict(unavailable or {})
        self.machine = EmulatedMachine(memory_bytes)
        self._options: dict[str, Any] = {
            "listen_tcp": listen_tcp,
            "data_checksums": data_checksums,
            "disks": disks,
            "disk_override": disk_override,
            "machine": self.machine,
        }
        # One per version, never opened: its install and settings catalogue.
        self.targets = {
            version: ManagedTarget(bin_dir, memory_bytes=memory_bytes, **self._options)
            for version, bin_dir in bin_dirs.items()
        }
        self.clusters: dict[tuple, ManagedTarget] = {}  # (version, data group) -> its cluster
        self.states: dict[tuple, dict] = {}  # the workload's state of each cluster
        self.version = next(iter(self.targets))
        self.current = self.targets[self.version]
        self.key: tuple | None = None
        self._record_work_dir: Callable[[str], None] | None = None
        # version -> names of settings that version does not know: left out of its points
        self.skipped_settings: dict[str, list[str]] = {}
        # version -> {spec's name: the setting it runs as}; both filled by preflight()
        self.translated_settings: dict[str, dict[str, str]] = {}

    # What the current cluster answers.
    @property
    def server_major(self) -> int:
        return self.current.server_major

    @property
    def data_dir(self) -> Path | None:
        return self.current.data_dir

    @property
    def emulated_disk(self) -> bool:
        return self.current.emulated_disk

    def catalogue(self) -> dict[str, SettingInfo]:
        return self.current.catalogue()

    def applicable_contexts(self) -> set[str] | None:
        return self.current.applicable_contexts()

    def connect(self, settings: dict | None = None) -> psycopg.Connection:
        return self.current.connect(settings)

    def pgbench_target(self, settings: dict) -> PgbenchTarget:
        return self.current.pgbench_target(settings)

    def data_parent(self) -> Path:
        return self.current.data_parent()

    def use_disk(self, disk: str | None) -> bool:
        return self.current.use_disk(disk)

    def loading_data(self) -> AbstractContextManager[Any]:
        return self.current.loading_data()

    def server_failure(self) -> str | None:
        return self.current.server_failure()

    def disk_failure(self) -> str | None:
        return self.current.disk_failure()

    def disk_record(self) -> dict:
        return self.current.disk_record()

    def postmaster_pid(self) -> int | None:
        return self.current.postmaster_pid()

    def preflight(self, setting_names: set[str]) -> Preflight:
        """Each version's catalogue, with the run's settings it knows by another name and those
        it does not know at all, kept for apply() and the run's record.

        Same settings for every version: one a version knows by another name runs as that
        (clusters/setting_history: max_wal_size is checkpoint_segments before 9.5), one it does
        not know at all is skipped for it (seed 001 compares like with like, as far as each
        version allows)."""
        catalogues = {version: t.catalogue() for version, t in self.targets.items()}
        renamed = {v: names_in(t.install.version, setting_names) for v, t in self.targets.items()}

        def known(name: str, version: str) -> bool:
            return renamed[version].get(name, name) in catalogues[version]

        known_somewhere = {
            name for name in setting_names if any(known(name, v) for v in catalogues)
        }
        self.skipped_settings, self.translated_settings = {}, {}
        servers = []
        for version, catalogue in catalogues.items():
            skipped = sorted(name for name in known_somewhere if not known(name, version))
            translated = {
                name: other
                for name, other in renamed[version].items()
                if other != name and other in catalogue
            }
            if skipped:
                self.skipped_settings[version] = skipped
            if translated:
                self.translated_settings[version] = translated
            install = self.targets[version].install
            servers.append(
                ServerFacts(
                    f"PostgreSQL {version}", catalogue, None, install, tuple(skipped), translated
                )
            )
        return Preflight(tuple(servers))

    def pgbench(self) -> Path:
        return _newest_pgbench()  # one pgbench, the newest, for every version (seed 001)

    def label_kept(self, kept_for: dict[str, str]) -> None:
        return None  # its clusters are never kept: close() removes them all

    @property
    def server_version(self) -> str:
        return ", ".join(target.server_version for target in self.targets.values())

    def describe(self) -> dict:
        versions = {
            version: {
                "bin_dir": str(t.install.bin_dir),
                "source": source_of(t.install.bin_dir) or t.install.source,
                "server_version": t.install.version,
                "install": read_record(t.install.bin_dir),
            }
            for version, t in self.targets.items()
        }
        return {
            **self.current.describe(),
            "bin_dir": None,
            "source": "versions",
            "versions": versions,
            "skipped_settings": self.skipped_settings,
            "translated_settings": self.translated_settings,
            "unavailable": self.unavailable,
            # one pgbench, the newest, for every version (seed 001), even one built with its own
            "pgbench": str(_newest_pgbench()),
            "clusters": "one per version and data group, stopped between turns",
        }

    def apply(self, settings: dict) -> str:
        """The point's settings as the current version spells them (clusters/setting_history),
        without those it lacks."""
        skipped = self.skipped_settings.get(self.version, [])
        kept = {k: v for k, v in settings.items() if k not in skipped}
        return self.current.apply(translate_settings(kept, self.current.install.version)[0])

    def open(self, record_work_dir: Callable[[str], None]) -> None:
        """Open the shared machine; clusters are created by switch, as points need them."""
        self._record_work_dir = record_work_dir
        self.machine.open()

    def switch(self, version: str | None, group: tuple) -> tuple[dict, dict] | None:
        """Make the cluster of `version` and data `group` current (created on first use, its
        server started by the next apply). Returns its workload state and what was dropped from
        the OS cache, or None when it was current already."""
        assert version is not None  # the spec sweeps version: every point has one
        if version in self.unavailable:
            # a row with its reason, not a failed run: the sweep goes on with the others
            raise PointError(
                f"PostgreSQL {version} cannot be measured here: {self.unavailable[version]}"
            )
        key = (version, group)
        if key == self.key and self.current.cluster is not None:
            return None
        if self.key is not None:
            self.current.park()
        target = self.clusters.get(key)
        if target is None:
            bin_dir = str(self.targets[version].install.bin_dir)
            target = ManagedTarget(bin_dir, memory_bytes=self.machine.memory_bytes, **self._options)
            self.key = None  # the previous cluster is parked: a failed initdb leaves none current
            assert self._record_work_dir is not None, "open() comes before switch()"
            target.open(self._record_work_dir)  # a failure removes what it made
            target.park()  # initdb left nothing running; its disk is mounted again on use
            self.clusters[key] = target
        self.version, self.current, self.key = version, target, key
        return self.states.setdefault(key, {}), self.drop_others_cache()

    def drop_others_cache(self) -> dict:
        """posix_fadvise(DONTNEED) on the files of every cluster but the current one (all
        parked: nothing dirty is left in their pages after a clean shutdown)."""
        from pgcachelab.machine.oscache import evict_files

        files = evicted_bytes = 0
        for key, target in self.clusters.items():
            if key != self.key and target.cluster is not None:
                evicted = evict_files(target.cluster.data_dir)
                files += evicted["files"]
                evicted_bytes += evicted["bytes"]
        return {"clusters": len(self.clusters) - 1, "files": files, "bytes": evicted_bytes}

    def close(self, finished: bool = True) -> str | None:
        """Stop and remove every cluster, then the machine."""
        failures = []
        try:
            for target in self.clusters.values():
                try:  # one cluster that fails to stop must not leave the others behind
                    target.close(finished=True)
                except Exception as error:  # noqa: BLE001 - re-raised below, after the rest
                    failures.append(error)
        finally:
            self.clusters = {}
            self.key = None
            self.machine.close()
        if failures:
            raise failures[0]
        return None


def check_dsn_given(dsn: str | None) -> None:
    """An empty --dsn would make libpq connect by its defaults, or the lab fall back to a
    cluster of its own: neither is what was asked for (issue 35, F9)."""
    if dsn is not None and not dsn.strip():
        raise UserError(
            "--dsn: empty connection string",
            'give the server, e.g. --dsn "host=/var/run/postgresql dbname=bench", or leave '
            "--dsn out for a cluster the lab manages",
        )


class ExistingTarget:
    kind = "existing"

    machine = None  # the lab does not run this server, so it emulates no machine for it
    data_dir = None

    def __init__(self, dsn: str):
        try:
            params = conninfo_to_dict(dsn)
        except (psycopg.ProgrammingError, UnicodeDecodeError) as error:
            raise UserError(
                f"--dsn: not a connection string: {parse_failure(error, dsn)}",
                'write e.g. "host=/var/run/postgresql dbname=bench" or postgresql://host/db',
            ) from None
        # The secrets (password, sslpassword, ...) apart from the rest: never stored
        # (describe), shown, or on a child's command line (issue 48); connections get them as
        # arguments, pgbench through its environment (clusters/client.py).
        self.conninfo: dict[str, Any]
        self.conninfo, self.secrets = split_secrets(params)
        _check_service_secrets(self.conninfo, self.secrets)
        try:
            with self.connect() as conn:
                self._server_version = one_row(conn.execute("show server_version"))[0]
                self._catalogue = catalogue_from_pg_settings(read_catalogue_rows(conn))
        except psycopg.OperationalError as error:
            # libpq's first line names the socket or host, the next says why: keep both.
            reason = " ".join(str(error).split()) or "refused"
            reason = redact(reason, dsn, tuple(map(str, self.secrets.values())))
            raise UserError(
                f"--dsn: cannot connect to {self.safe_description()}: {reason}",
                "check that the server runs and the connection string is right",
            ) from None
        _, self._major = parse_version(f"(PostgreSQL) {self._server_version}")

    @property
    def password(self) -> str | None:
        password = self.secrets.get("password")
        return str(password) if password is not None else None

    @property
    def server_major(self) -> int:
        return self._major

    @property
    def server_version(self) -> str:
        return self._server_version

    def safe_description(self) -> str:
        return " ".join(f"{k}={v}" for k, v in sorted(self.conninfo.items()))

    def catalogue(self) -> dict[str, SettingInfo]:
        return self._catalogue

    def applicable_contexts(self) -> set[str] | None:
        return SESSION_CONTEXTS

    def preflight(self, setting_names: set[str]) -> Preflight:
        """Its catalogue, its own max_connections, and whether the role may run CHECKPOINT
        (the lab runs it before a measured run, and before it drops the OS cache)."""
        with self.connect() as conn:
            max_connections = int(_current_setting(conn, "max_connections"))
            role = _current_setting(conn, "session_authorization")
            # CASE, so that pg_has_role never meets a role that does not exist: a superuser,
            # or from 15 a member of pg_checkpoint
            may_checkpoint = one_row(
                conn.execute(
                    "select case when rolsuper then true"
                    " when exists (select 1 from pg_roles where rolname = 'pg_checkpoint')"
                    " then pg_has_role('pg_checkpoint', 'member') else false end"
                    " from pg_roles where rolname = current_user"
                )
            )[0]
        server = ServerFacts("the server given by --dsn", self._catalogue, SESSION_CONTEXTS)
        return Preflight((server,), max_connections, may_checkpoint, role)

    def pgbench(self) -> Path:
        return _newest_pgbench()

    def label_kept(self, kept_for: dict[str, str]) -> None:
        return None  # the lab keeps nothing of a server it does not run

    def switch(self, version: str | None, group: tuple) -> tuple[dict, dict] | None:
        return None

    def describe(self) -> dict:
        return {"kind": self.kind, "conninfo": self.conninfo}  # no secret, ever

    def open(self, record_work_dir: Callable[[str], None]) -> None:
        return None

    def apply(self, settings: dict) -> str:
        return "session" if settings else "none"

    def connect(self, settings: dict | None = None) -> psycopg.Connection:
        """A session with the point's settings, as pgbench's sessions get them (PGOPTIONS)."""
        options = {"options": pgoptions(settings)} if settings else {}
        return psycopg.connect(**{**self.conninfo, **options, **self.secrets}, autocommit=True)

    def pgbench_target(self, settings: dict) -> PgbenchTarget:
        others = {k: v for k, v in self.secrets.items() if k != "password"}
        return PgbenchTarget(
            self.conninfo, self.password, session_options=settings or None, secrets=others
        )

    def close(self, finished: bool = True) -> None:
        return None


def _check_service_secrets(conninfo: dict, secrets: dict) -> None:
    """The secrets but the password reach pgbench in a service file of the lab's own
    (PgbenchTarget): refused, before anything runs, where that file cannot hold them or would
    hide the user's own service."""
    others = sorted(key for key in secrets if key != "password")
    if not others:
        return
    names = " and ".join(others)
    service = conninfo.get("service") or os.environ.get("PGSERVICE")
    if service:
        raise UserError(
            f"--dsn: {names} with the service {service!r}: pgbench would get {names} from a"
            " service file of the lab's, not yours",
            f"put {names} in the service's entry of your pg_service.conf, not in --dsn",
        )
    try:
        service_file_text(SERVICE, {key: secrets[key] for key in others})
    except ValueError:
        raise UserError(
            f"--dsn: {names} holds a line break or ends in whitespace, which the service file"
            " that hands it to pgbench cannot keep",
            f"give a {names} without line breaks or trailing whitespace",
        ) from None


def _current_setting(conn: psycopg.Connection, name: str) -> str:
    return one_row(conn.execute("select current_setting(%s)", (name,)))[0]


@functools.cache
def _newest_pgbench() -> Path:
    # find_install runs `postgres --version`: once per process, not once per point
    return find_pgbench(find_install(None))


# Each target satisfies its protocol: mypy checks these assignments (the experiments layer sees
# targets only through the protocols).
_managed: type[ManagedServer] = ManagedTarget
_versioned: type[ManagedServer] = VersionedTarget
_existing: type[Target] = ExistingTarget
