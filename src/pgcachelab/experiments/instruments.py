"""The instruments around one measurement, entered with contextlib.ExitStack as pyperf's worker
enters its hooks: each reads on the way in, and on the way out adds its part to the Recording
or says why the point failed.

Watches are entered first, around the whole point, and act once it has ended; an error that
does not fail a point (Ctrl-C, a bug) passes them untouched. Entered in the order machine,
server, disk, they exit in the order disk, server, machine, which is the order a failure is
explained in: a dead emulated disk shows first as the server's errors, a killed postmaster as
"pgbench aborted", and an OOM kill explains both.
"""

import abc
import contextlib
import dataclasses
import os
import time

from pgcachelab.analysis.inspect_overhead import Windows
from pgcachelab.clusters.target import Target, is_managed
from pgcachelab.experiments.cache_sampler import CacheSampler
from pgcachelab.experiments.recording import Recording
from pgcachelab.experiments.resource_sampler import ResourceSampler, sources_of
from pgcachelab.experiments.wait_sampler import WaitSampler
from pgcachelab.probes.base import Probe, delta, snapshot
from pgcachelab.probes.checkpointer import CheckpointerProbe, WalProbe
from pgcachelab.probes.database import DatabaseProbe, StatioProbe
from pgcachelab.probes.io import IoProbe
from pgcachelab.spec import InspectOptions, Point
from pgcachelab.units import format_bytes

PROBES: list[Probe] = [DatabaseProbe(), StatioProbe(), CheckpointerProbe(), WalProbe(), IoProbe()]
# The emulated disk daemon's counters a measurement keeps, as differences over the measurement.
DEVICE_COUNTERS = ("reads", "read_bytes", "writes", "write_bytes", "syncs", "delayed_us")


class _Watch(abc.ABC):
    """A watch over a whole point, acting once the point has ended (or failed)."""

    def __init__(self, target: Target, recording: Recording):
        self.target, self.recording = target, recording

    def __enter__(self):
        return self

    def __exit__(self, exc_type, error, traceback) -> None:
        if exc_type is None:
            self.ended()

    @abc.abstractmethod
    def ended(self) -> None:
        """The point has ended, well or with a point error (recording.failed)."""


class MachineWatch(_Watch):
    """The emulated machine's stats after the point, and the OOM check: a kill since the run
    began (since the point began, when it failed before its run) fails the point and is its
    reason. The load average shows other users of the machine (compare flags such runs)."""

    def __enter__(self):
        self.before = self._stats()
        return self

    def start_run(self) -> None:
        self.before = self._stats()

    def ended(self) -> None:
        recording = self.recording
        if recording.failed and self.target.machine is None:
            return
        recording.metrics["machine"] = after = self._stats()
        killed = _oom_reason(self.before, after)
        if killed:
            recording.fail(killed)
        elif not recording.failed:
            recording.run_metrics["load_average_1m"] = os.getloadavg()[0]

    def _stats(self) -> dict | None:
        return self.target.machine.stats() if self.target.machine is not None else None


class ServerWatch(_Watch):
    """A point that failed because its postmaster died says so first (the client only saw
    its connection break)."""

    def ended(self) -> None:
        recording = self.recording
        if not recording.failed or not is_managed(self.target):
            return
        died = self.target.server_failure()
        if died and died not in (recording.reason or ""):
            recording.fail(f"{died}; {recording.reason}")


class DiskWatch(_Watch):
    """The point's disk, its storage probe and the requests that reached the emulated device
    during the run: the proof that the disk was in the way (or was not). A disk that stopped
    serving fails the point, whatever else its clients saw."""

    def start_run(self) -> None:
        self.before = self._record()

    def ended(self) -> None:
        failure = self.target.disk_failure() if is_managed(self.target) else None
        if failure:
            self.recording.fail(failure)
        elif not self.recording.failed:
            self.recording.metrics["disk"] = _disk_metrics(self.before, self._record())

    def _record(self) -> dict | None:
        return self.target.disk_record() if is_managed(self.target) else None


class CacheSnapshots:
    """The point's cache sampler ([inspect]; none for method "none"): accuracy pairs during the
    warm-up, snapshots around and during the run. Its summary and snapshots go with the
    measurement whatever happens to it."""

    def __init__(
        self, target: Target, point: Point, options: InspectOptions | None, recording: Recording
    ):
        self.target, self.point, self.options, self.recording = target, point, options, recording
        self.sampler: CacheSampler | None = None

    def __enter__(self) -> "CacheSnapshots":
        if self.options is None:
            return self
        method = self.point.workload.inspect_method or "auto"
        self.sampler = CacheSampler.open(self.target, self.point.settings, self.options, method)
        if self.sampler and self.options.accuracy_pairs and self.sampler.method == "extension":
            # during the warm-up: the same load, not measured
            self.sampler.start_accuracy_rounds()
        return self

    @contextlib.contextmanager
    def around_run(self, windows: Windows | None):
        """Stop the warm-up's pairs, take "before", start the periodic snapshots (in the polled
        windows only); yield the workload's hook for snapshots between its phases (None when
        there are none); after a run that ended well, stop and take "after"."""
        sampler, options = self.sampler, self.options
        if sampler is None:
            yield None
            return
        assert options is not None  # a sampler is opened only with [inspect]
        sampler.stop()
        before_after = options.snapshots == "before-after"
        if before_after:
            sampler.take("before")
        if options.every_s:
            sampler.start_every(options.every_s, windows=windows)
        yield sampler.take if before_after else None
        sampler.stop()
        if before_after:
            sampler.take("after")

    def __exit__(self, *exc) -> None:
        sampler = self.sampler
        if sampler is None:
            return
        sampler.close()
        failed = [s.error for s in sampler.snapshots if s.error]
        self.recording.metrics["inspect"] = {
            "method": sampler.method,
            "mode": sampler.mode,
            "snapshots": len(sampler.snapshots),
            "failed": len(failed),
            "first_error": failed[0] if failed else None,
            "os_cache_note": sampler.note,
        }
        self.recording.snapshots = sampler.snapshots


class AlternatingWindows:
    """[inspect] alternate: the run's windows, starting now, in the "abba" pattern; odd
    repetitions start unpolled. Both keep a trend within the run (e.g. tps still rising after
    the warm-up) from favouring one side. The baseline points ("none") get windows too and
    poll in neither: their A/A figure."""

    def __init__(self, options: InspectOptions | None, repetition: int, recording: Recording):
        self.options, self.repetition, self.recording = options, repetition, recording

    def __enter__(self) -> Windows | None:
        if self.options is None or not self.options.alternate_s:
            return None
        windows = Windows(time.time(), self.options.alternate_s, self.repetition % 2 == 0, "abba")
        self.recording.metrics["inspect_windows"] = dataclasses.asdict(windows)
        return windows

    def __exit__(self, *exc) -> None:
        return None


class ProbeDeltas:
    """The server's counters (database, statio, checkpointer, WAL, I/O) over the run, on the
    measurement's session, and the database's size after it."""

    def __init__(self, conn, recording: Recording):
        self.conn, self.recording = conn, recording

    def __enter__(self) -> "ProbeDeltas":
        self.before = snapshot(self.conn, PROBES)
        return self

    def __exit__(self, exc_type, error, traceback) -> None:
        if exc_type is not None:
            return
        after = snapshot(self.conn, PROBES)
        self.recording.run_metrics["probes"] = delta(self.before, after)
        self.recording.run_metrics["database_size_bytes"] = after["database"].get("size_bytes")


class WaitEvents:
    """pg_stat_activity's wait events ten times a second through the run (`[inspect]
    wait_events`, issue 22); kept when the point fails too, as the cache snapshots are."""

    def __init__(
        self, target: Target, point: Point, options: InspectOptions | None, recording: Recording
    ):
        self.target, self.point, self.options = target, point, options
        self.recording = recording

    def __enter__(self) -> "WaitEvents":
        self.sampler = WaitSampler.start(self.target, self.point.settings, self.options)
        return self

    def __exit__(self, *exc) -> None:
        if self.sampler is not None:
            self.recording.metrics["wait_events"] = self.sampler.close()


class ResourceSeries:
    """The machine's resources once a second through the run (issue 32), in
    metrics["resources"]; kept when the point fails too: a failure's seconds explain it."""

    def __init__(self, target: Target, recording: Recording):
        self.target, self.recording = target, recording

    def __enter__(self) -> "ResourceSeries":
        self.sampler = ResourceSampler.start(sources_of(self.target))
        return self

    def __exit__(self, *exc) -> None:
        self.recording.metrics["resources"] = self.sampler.close()


def _disk_metrics(before: dict | None, after: dict | None) -> dict | None:
    if after is None:
        return None
    counters = {
        key: value - (before or {}).get("counters", {}).get(key, 0)
        for key, value in after["counters"].items()
        if isinstance(value, int | float) and key in DEVICE_COUNTERS
    }
    return {"profile": after["profile"], "probe": after["probe"], "device": counters}


def _oom_kills(stats: dict | None) -> int:
    return ((stats or {}).get("cgroup") or {}).get("oom_kills", 0)


def _oom_reason(before: dict | None, after: dict | None) -> str | None:
    killed = _oom_kills(after) - _oom_kills(before)
    if killed <= 0 or after is None:
        return None
    limit = after["cgroup"]["limit_bytes"]
    return (
        f"oom_killed: the OOM killer ended {killed} server process(es) at the memory limit "
        f"of {format_bytes(limit)}; lower shared_buffers or work_mem"
    )
