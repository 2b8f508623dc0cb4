"""Where a managed cluster's files live when the spec names a disk: one place, two ways in.

The files stay in `work_dir/disk` (the backing directory, owned by the server user) whatever
disk a point runs on; an emulated disk is a FUSE mount of that directory on `work_dir/mnt`,
served by the lab's daemon with the profile's latencies. So changing the disk between points is
an unmount and a mount while the server is down, never a copy, and "host" points read the
backing directory directly. The data directory is `pgdata` under whichever is in use.
"""

import contextlib
import os
from pathlib import Path

from pgcachelab.clusters.osuser import OsUser
from pgcachelab.machine.disk_profiles import DiskProfile
from pgcachelab.machine.fusedisk import DiskError, DiskTimings, FuseDisk
from pgcachelab.machine.storage_probe import probe_storage

BACKING = "disk"
MOUNTPOINT = "mnt"
DATA = "pgdata"
NO_LATENCY = DiskTimings(0.0, 0.0, 0.0)


def timings_of(profile: DiskProfile) -> DiskTimings:
    return DiskTimings(
        read_latency_s=profile.read_latency_s,
        write_latency_s=profile.write_latency_s,
        sync_latency_s=profile.sync_latency_s,
        iops=profile.iops,
        bandwidth_bytes_s=profile.bandwidth_bytes_s,
    )


def layout_data_dir(work_dir: Path) -> Path:
    """The data directory as it lies on the host disk, mounted or not (for reaping, resume)."""
    return work_dir / BACKING / DATA


def data_dir_in(work_dir: Path) -> Path:
    """A managed cluster's data directory in its work directory: `pgdata`, or on a disk the
    lab emulates, under the mount when it is up, else under the backing directory."""
    plain = work_dir / DATA
    for candidate in (plain, work_dir / MOUNTPOINT / DATA, layout_data_dir(work_dir)):
        with contextlib.suppress(OSError):  # ENOTCONN: a dead mount
            if (candidate / "PG_VERSION").is_file():
                return candidate
    return plain


class ClusterDisk:
    def __init__(self, work_dir: Path, user: OsUser):
        self.user = user
        self.backing = work_dir / BACKING
        self.mountpoint = work_dir / MOUNTPOINT
        self.profile: DiskProfile | None = None
        self.fuse: FuseDisk | None = None
        self.probes: dict[str, dict] = {}  # profile name ("host") -> what probe_storage saw

    def prepare(self) -> None:
        for directory in (self.backing, self.mountpoint):
            directory.mkdir(mode=0o700, exist_ok=True)
            os.chown(directory, self.user.uid, self.user.gid)

    @property
    def root(self) -> Path:
        return self.mountpoint if self.fuse is not None else self.backing

    @property
    def data_dir(self) -> Path:
        return self.root / DATA

    def needs_change(self, profile: DiskProfile | None) -> bool:
        """Another disk, or the same one whose daemon died (then it is mounted anew)."""
        if profile != self.profile:
            return True
        return profile is not None and (self.fuse is None or not self._alive())

    def can_retime(self, profile: DiskProfile | None) -> bool:
        """From one emulated device to another: new timings for the running daemon, with the
        server up and the page cache as it is (the point's os_cache says what to drop)."""
        return (
            profile is not None
            and self.profile is not None
            and self.fuse is not None
            and (self._alive())
        )

    def use(self, profile: DiskProfile | None) -> bool:
        """Serve the files through `profile` (None: the host disk); unless can_retime, the
        server must be down. True when the disk changed."""
        if not self.needs_change(profile):
            return False
        if self.can_retime(profile):
            assert self.fuse is not None and profile is not None  # can_retime checked both
            self.fuse.retime(timings_of(profile))
            self.profile = profile
            return True
        self.unmount()
        if profile is not None:
            fuse = FuseDisk(
                timings_of(profile), self.backing, self.mountpoint, self.user.uid, self.user.gid
            )
            fuse.mount()
            self.fuse = fuse
        self.profile = profile
        return True

    @contextlib.contextmanager
    def loading(self):
        """No latency while data is built: loading through a slow device measures nothing and
        takes minutes. The pages written stay cached, as after a load on a real server."""
        if self.fuse is None or self.profile is None:
            yield
            return
        self.fuse.retime(NO_LATENCY)
        try:
            yield
        finally:
            self.fuse.retime(timings_of(self.profile))

    def _alive(self) -> bool:
        assert self.fuse is not None  # asked only of a mounted disk
        try:
            self.fuse.check()
            return True
        except DiskError:
            return False

    def check(self) -> None:
        """Raise DiskError with the reason when the emulated disk stopped serving."""
        if self.fuse is not None:
            self.fuse.check()

    def probe(self) -> dict:
        """The storage probe of the disk in use, measured once per disk and run."""
        name = self.profile.name if self.profile else "host"
        if name not in self.probes:
            self.probes[name] = probe_storage(self.root)
        return self.probes[name]

    def device_counters(self) -> dict:
        """What the daemon counted so far (requests that missed the page cache)."""
        return self.fuse.stats() if self.fuse is not None else {}

    def unmount(self) -> None:
        if self.fuse is not None:
            fuse, self.fuse = self.fuse, None
            fuse.unmount()
