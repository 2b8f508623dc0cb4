"""The emulated machine's disk: a FUSE passthrough daemon that makes page-cache misses slow.

The host's virtual disk answers a cold 8 kB read in ~0.06 ms, too fast for data falling out of
memory to matter. `native/fusedisk` mounts a directory through a daemon that sleeps a device's
latency on every read, write and sync that reaches it, while the kernel's page cache stays on:
cache hits never reach the daemon. The lab (root) starts the daemon, which mounts and then
becomes the server user; the lab unmounts it at the end (the daemon no longer can).

The daemon runs in its own session (a terminal's Ctrl-C reaches only the lab, which unmounts)
and dies with the lab (PR_SET_PDEATHSIG). A SIGKILLed lab leaves a dead mount behind: each mount
is named `pgcachelab-disk-<lab pid>`, so a later lab finds and removes it (`reap_stale_mounts`).
The parent-death signal follows the thread that spawned the daemon: mount from a thread that
lives as long as the mount (the main thread).
"""

import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.errors import UserError
from pgcachelab.machine import owned
from pgcachelab.machine.host_facts import Mount, read_mountinfo

# The source lives at the top of the repository, beside src/ (the lab installs in editable mode).
SOURCE_DIR = Path(__file__).resolve().parents[3] / "native" / "fusedisk"
BINARY = SOURCE_DIR / "fusedisk"
FSNAME_PREFIX = "pgcachelab-disk-"
FSTYPE = "fuse.pgcachelab-disk"  # the daemon's subtype, as mountinfo shows it
READY_TIMEOUT_S = 10.0
EXIT_TIMEOUT_S = 5.0
INSTALL_HINT = "apt-get install fuse3 libfuse3-dev (or run make fusedisk as root)"
_MNT_DETACH = 2
_PR_SET_PDEATHSIG = 1


class DiskError(Exception):
    """The emulated disk would not mount, or its daemon died; the message is the reason."""


@dataclass(frozen=True)
class DiskTimings:
    """What one request costs on the emulated device."""

    read_latency_s: float
    write_latency_s: float
    sync_latency_s: float
    iops: int | None = None  # None: no limit
    bandwidth_bytes_s: int | None = None  # None: no transfer time

    def __post_init__(self):
        for name in ("read_latency_s", "write_latency_s", "sync_latency_s"):
            if not 0 <= getattr(self, name) <= 60:
                raise ValueError(f"{name} must be between 0 and 60 s, not {getattr(self, name)}")
        for name in ("iops", "bandwidth_bytes_s"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")

    def timings_file_text(self) -> str:
        """The daemon's --timings file: latencies in µs, iops, bandwidth (0: no limit)."""
        return (
            " ".join(
                str(value)
                for value in (
                    _microseconds(self.read_latency_s),
                    _microseconds(self.write_latency_s),
                    _microseconds(self.sync_latency_s),
                    self.iops or 0,
                    self.bandwidth_bytes_s or 0,
                )
            )
            + "\n"
        )

    def daemon_args(self) -> list[str]:
        """The daemon's command-line options for these timings (latencies in whole µs)."""
        args = [
            "--read-latency-us",
            str(_microseconds(self.read_latency_s)),
            "--write-latency-us",
            str(_microseconds(self.write_latency_s)),
            "--sync-latency-us",
            str(_microseconds(self.sync_latency_s)),
        ]
        if self.iops is not None:
            args += ["--iops", str(self.iops)]
        if self.bandwidth_bytes_s is not None:
            args += ["--bandwidth-bps", str(self.bandwidth_bytes_s)]
        return args


def _microseconds(seconds: float) -> int:
    return round(seconds * 1_000_000)


# -- mountinfo (pure) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DiskMount:
    """One of our mounts as /proc/self/mountinfo shows it."""

    mount_point: Path
    fsname: str
    lab_pid: int | None  # from the fsname; None when it does not carry one


def disk_mounts(mounts: list[Mount]) -> list[DiskMount]:
    """Our emulated disks' mounts (fstype fuse.pgcachelab-disk) among the mounts."""
    found = []
    for mount in mounts:
        if mount.fstype != FSTYPE:
            continue
        source = mount.source
        owner = source[len(FSNAME_PREFIX) :] if source.startswith(FSNAME_PREFIX) else ""
        found.append(
            DiskMount(
                mount_point=mount.mount_point,
                fsname=source,
                lab_pid=int(owner) if owner.isdigit() else None,
            )
        )
    return found


def _read_disk_mounts() -> list[DiskMount]:
    return disk_mounts(read_mountinfo())


# -- availability and build ----------------------------------------------------------------------


def _sources() -> list[Path]:
    return [*SOURCE_DIR.glob("*.c"), *SOURCE_DIR.glob("*.h"), SOURCE_DIR / "Makefile"]


def _binary_up_to_date() -> bool:
    if not BINARY.is_file():
        return False
    built = BINARY.stat().st_mtime
    return all(source.stat().st_mtime <= built for source in _sources() if source.exists())


def _missing_build_tools() -> list[str]:
    missing = [tool for tool in ("make", "cc", "pkg-config") if shutil.which(tool) is None]
    if not missing:
        result = subprocess.run(["pkg-config", "--exists", "fuse3"], capture_output=True)
        if result.returncode != 0:
            missing.append("libfuse3-dev")
    return missing


def availability() -> tuple[bool, str]:
    """Whether the emulated disk can be mounted here, and if not, what is missing."""
    if os.geteuid() != 0:
        return False, "the emulated disk needs root to mount"
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as error:
        return False, f"cannot open /dev/fuse: {error.strerror} (is the fuse module loaded?)"
    if ctypes.util.find_library("fuse3") is None or shutil.which("fusermount3") is None:
        return False, f"the FUSE 3 runtime (libfuse3, fusermount3) is missing: {INSTALL_HINT}"
    if not _binary_up_to_date():
        if not SOURCE_DIR.is_dir():
            return False, f"the daemon's source is not in {SOURCE_DIR}"
        missing = _missing_build_tools()
        if missing:
            return False, (
                f"building the emulated disk's daemon needs {', '.join(missing)}: "
                f"{INSTALL_HINT} and apt-get install build-essential pkg-config"
            )
    return True, ""


def ensure_built() -> Path:
    """The daemon's binary, built first when it is missing or older than its sources."""
    if _binary_up_to_date():
        return BINARY
    if not SOURCE_DIR.is_dir():
        raise UserError(
            f"the emulated disk's source is not in {SOURCE_DIR}",
            "install the lab from its repository (pip install -e .), where native/ lives",
        )
    missing = _missing_build_tools()
    if missing:
        raise UserError(
            f"building the emulated disk's daemon needs {', '.join(missing)}",
            f"{INSTALL_HINT}; apt-get install build-essential pkg-config",
        )
    result = subprocess.run(["make", "-C", str(SOURCE_DIR)], capture_output=True, text=True)
    if result.returncode != 0 or not BINARY.is_file():
        errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
        last = (errors or result.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise UserError(
            f"building the emulated disk's daemon failed: {last}",
            f"run make -C {SOURCE_DIR} to see every message",
        )
    return BINARY


# -- mounting ------------------------------------------------------------------------------------


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _umount2(mount_point: Path, flags: int) -> int:
    """umount2(2); returns 0 or the errno."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    if libc.umount2(os.fsencode(mount_point), flags) == 0:
        return 0
    return ctypes.get_errno()


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


class FuseDisk:
    """One emulated disk: `backing` seen through `mountpoint`, files owned by uid:gid."""

    def __init__(self, timings: DiskTimings, backing: Path, mountpoint: Path, uid: int, gid: int):
        self.timings = timings
        self.backing = Path(backing).resolve()
        self.mountpoint = Path(mountpoint).resolve()  # as mountinfo will show it
        self.uid = uid
        self.gid = gid
        self.fsname = f"{FSNAME_PREFIX}{os.getpid()}"
        self.process: subprocess.Popen | None = None
        self._private_dir: Path | None = None
        self._owned_entry: Path | None = None  # machine/owned.py: reaped if the lab is killed
        self._last_stats: dict = {}

    def __enter__(self) -> "FuseDisk":
        self.mount()
        return self

    def __exit__(self, *exc_info) -> None:
        self.unmount()

    @property
    def _stats_path(self) -> Path | None:
        return self._private_dir / "stats.json" if self._private_dir else None

    @property
    def _timings_path(self) -> Path | None:
        return self._private_dir / "timings" if self._private_dir else None

    def _write_timings(self, timings: DiskTimings) -> None:
        timings_path = self._timings_path
        assert timings_path is not None  # called once mount() made the private directory
        staging = timings_path.with_suffix(".tmp")
        staging.write_text(timings.timings_file_text())
        staging.chmod(0o644)  # the daemon reads it as the server user
        os.replace(staging, timings_path)

    def retime(self, timings: DiskTimings, timeout_s: float = 5.0) -> None:
        """Make the mounted device answer with `timings` from now on; returns once the daemon
        reports them in force (its page cache, unlike after a remount, stays as it is)."""
        if self.process is None:
            raise DiskError(f"the emulated disk on {self.mountpoint} is not mounted")
        if timings == self.timings:
            return
        self._write_timings(timings)
        wanted = {
            "read_latency_us": _microseconds(timings.read_latency_s),
            "write_latency_us": _microseconds(timings.write_latency_s),
            "sync_latency_us": _microseconds(timings.sync_latency_s),
            "iops": timings.iops or 0,
            "bandwidth_bps": timings.bandwidth_bytes_s or 0,
        }
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            stats = self.stats()
            if all(stats.get(key) == value for key, value in wanted.items()):
                self.timings = timings
                return
            self.check()
            time.sleep(0.01)
        raise DiskError(
            f"the emulated disk's daemon did not take new timings within {timeout_s:g} s"
        )

    def mount(self) -> None:
        """Start the daemon and wait until the mount is there; DiskError when it fails."""
        if self.process is not None:
            raise DiskError(f"the emulated disk on {self.mountpoint} is already mounted")
        binary = ensure_built()
        # The daemon writes its stats after becoming the server user: a directory of its own.
        self._private_dir = Path(tempfile.mkdtemp(prefix=f"{self.fsname}-"))
        self._owned_entry = owned.record(
            "mount", self.mountpoint, fsname=self.fsname, private_dir=str(self._private_dir)
        )
        os.chown(self._private_dir, self.uid, self.gid)
        self._write_timings(self.timings)
        command = [
            str(binary),
            str(self.backing),
            str(self.mountpoint),
            *self.timings.daemon_args(),
            "--uid",
            str(self.uid),
            "--gid",
            str(self.gid),
            "--stats",
            str(self._stats_path),
            "--timings",
            str(self._timings_path),
            "--name",
            self.fsname,
        ]
        # stderr goes to a file: nobody reads a pipe once the daemon runs.
        with open(self._private_dir / "daemon.log", "wb") as log:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        try:
            self._wait_until_ready()
            if not any(mount.mount_point == self.mountpoint for mount in self._own_mounts()):
                raise DiskError(f"the emulated disk is not in the mount table at {self.mountpoint}")
        except BaseException:
            self.unmount()
            raise

    def _wait_until_ready(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        output = b""
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while b"\n" not in output:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DiskError(
                        f"the emulated disk's daemon was not ready after {READY_TIMEOUT_S:.0f} s"
                        + self._daemon_says()
                    )
                if not selector.select(remaining):
                    continue
                chunk = os.read(self.process.stdout.fileno(), 64)
                if not chunk:
                    self.process.wait()
                    raise DiskError(
                        "the emulated disk's daemon failed "
                        f"({_describe_exit(self.process.returncode)}){self._daemon_says()}"
                    )
                output += chunk
        self.process.stdout.close()  # it prints nothing after `ready`
        if output.strip() != b"ready":
            raise DiskError(f"the emulated disk's daemon said {output.strip()!r}, not 'ready'")

    def _daemon_says(self) -> str:
        """The daemon's stderr as '; ...', one line."""
        if self._private_dir is None:
            return ""
        with contextlib.suppress(OSError):
            lines = (self._private_dir / "daemon.log").read_text(errors="replace").splitlines()
            lines = [line.strip() for line in lines if line.strip()]
            if lines:
                return ": " + "; ".join(lines)[:500]
        return ""

    def _own_mounts(self) -> list[DiskMount]:
        return [
            mount
            for mount in _read_disk_mounts()
            if mount.fsname == self.fsname and mount.mount_point == self.mountpoint
        ]

    def unmount(self) -> None:
        """Unmount, stop the daemon, remove its files; safe to call again, or after a failure."""
        if self._own_mounts():
            error = _umount2(self.mountpoint, 0)
            if error == errno.EBUSY:  # still open somewhere: detach it, the kernel ends it later
                error = _umount2(self.mountpoint, _MNT_DETACH)
            if error not in (0, errno.EINVAL, errno.ENOENT):
                raise DiskError(f"cannot unmount {self.mountpoint}: {os.strerror(error)}")
        if self.process is not None:
            process = self.process
            if process.stdout is not None:
                process.stdout.close()
            # Unmounting ends the daemon's loop; signals are for one that does not notice.
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    with contextlib.suppress(ProcessLookupError):
                        process.send_signal(sig)
                try:
                    process.wait(timeout=EXIT_TIMEOUT_S)
                    break
                except subprocess.TimeoutExpired:
                    continue
            self.process = None
        if self._private_dir is not None:
            self._last_stats = self.stats()
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir = None
        owned.forget(self._owned_entry)
        self._owned_entry = None

    def check(self) -> None:
        """Raise DiskError when the daemon is gone or the mount no longer answers."""
        if self.process is None:
            raise DiskError(f"the emulated disk on {self.mountpoint} is not mounted")
        returncode = self.process.poll()
        if returncode is not None:
            raise DiskError(
                f"the emulated disk's daemon died ({_describe_exit(returncode)})"
                + self._daemon_says()
            )
        try:
            os.stat(self.mountpoint)
        except OSError as error:
            if error.errno == errno.ENOTCONN:
                raise DiskError(
                    f"the emulated disk's mount on {self.mountpoint} is dead (not connected)"
                ) from None
            raise DiskError(f"the emulated disk's mount on {self.mountpoint}: {error}") from None

    def stats(self) -> dict:
        """The daemon's last counters: requests, bytes, time delayed (µs), its settings."""
        if self._stats_path is None:
            return dict(self._last_stats)
        try:
            return json.loads(self._stats_path.read_text())
        except (OSError, ValueError):
            return dict(self._last_stats)


# -- what killed labs left -----------------------------------------------------------------------


def _daemons_named(fsname: str) -> list[int]:
    """Pids of live fusedisk daemons started with `--name fsname`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv or os.path.basename(argv[0]) != b"fusedisk":
            continue
        for option, value in zip(argv, argv[1:], strict=False):
            if option == b"--name" and value == os.fsencode(fsname):
                pids.append(int(entry.name))
    return pids


def _dead_lab(lab_pid: int | None) -> bool:
    return lab_pid is not None and lab_pid != os.getpid() and not Path(f"/proc/{lab_pid}").exists()


def reap_mount(mount_point: Path, fsname: str, private_dir: str | None) -> bool:
    """Detach one mount a killed lab left, kill its daemon and remove its private directory;
    True when the mount was still there."""
    mounted = any(mount.mount_point == mount_point for mount in _read_disk_mounts())
    if mounted:
        _umount2(mount_point, _MNT_DETACH)
    for pid in _daemons_named(fsname) if fsname else []:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if private_dir:
        shutil.rmtree(private_dir, ignore_errors=True)
    return mounted


def reap_stale_mounts() -> list[Path]:
    """Detach the emulated disks that dead labs left mounted, kill their daemons and remove
    their private directories; returns the mount points."""
    reaped = []
    for mount in _read_disk_mounts():
        if not _dead_lab(mount.lab_pid):
            continue  # ours, a live lab's, or not named by a lab
        _umount2(mount.mount_point, _MNT_DETACH)
        for pid in _daemons_named(mount.fsname):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        reaped.append(mount.mount_point)
    for private_dir in Path(tempfile.gettempdir()).glob(f"{FSNAME_PREFIX}*-*"):
        owner = private_dir.name[len(FSNAME_PREFIX) :].split("-")[0]
        if owner.isdigit() and _dead_lab(int(owner)):
            shutil.rmtree(private_dir, ignore_errors=True)
    return reaped
