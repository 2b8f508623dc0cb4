"""What the storage under a run was: the emulated disk each point asked for, what the storage
probe measured on it, and how many requests reached the device. Pure."""

from dataclasses import dataclass

from pgcachelab.machine.disk_profiles import DiskProfile
from pgcachelab.machine.storage_probe import describe_probe
from pgcachelab.store.metric_types import DiskProfileRecord, MeasurementMetrics


@dataclass(frozen=True)
class StorageUse:
    disk: str  # the profile's name, or "host disk"
    asked: str  # what was emulated ("read 0.5 ms, write 0.5 ms, sync 1 ms") or ""
    measured: str  # the storage probe's figures
    device_reads: int  # requests that missed the page cache and reached the emulated device
    device_syncs: int
    measurements: int


@dataclass
class _DiskUse:
    """One disk's measurements so far: its first one's profile and probe, then sums."""

    profile: DiskProfileRecord | None
    probe: dict[str, object] | None
    reads: int = 0
    syncs: int = 0
    measurements: int = 0


def storage_uses(metrics_list: list[MeasurementMetrics]) -> list[StorageUse]:
    """One line per disk the run's measurements ran on, in the order they first appear."""
    by_disk: dict[str, _DiskUse] = {}
    for metrics in metrics_list:
        disk = metrics.get("disk")
        if not disk:
            continue
        profile = disk.get("profile")
        name = profile["name"] if profile else "host disk"
        entry = by_disk.setdefault(name, _DiskUse(profile, disk.get("probe")))
        device = disk.get("device") or {}
        entry.reads += device.get("reads", 0)
        entry.syncs += device.get("syncs", 0)
        entry.measurements += 1
    uses = []
    for name, entry in by_disk.items():
        asked = ""
        if entry.profile:
            profile = entry.profile
            asked = (
                DiskProfile(
                    name,
                    profile["read_latency_s"],
                    profile["write_latency_s"],
                    profile["sync_latency_s"],
                    profile.get("iops"),
                    profile.get("bandwidth_bytes_s"),
                )
                .summary()
                .split(": ", 1)[1]
            )
        uses.append(
            StorageUse(
                name,
                asked,
                describe_probe(entry.probe),
                entry.reads,
                entry.syncs,
                entry.measurements,
            )
        )
    return uses


def storage_note(uses: list[StorageUse]) -> str:
    """ "emulated cloud-network-ssd (read 0.5 ms, ...): cold read median 0.61 ms ...; 12,345
    reads and 40 syncs reached the device over 36 measurements"."""
    if not uses:
        return "not recorded (a run made before the storage probe, or a server given by --dsn)"
    parts = []
    for use in uses:
        if use.asked:
            parts.append(
                f"emulated {use.disk} ({use.asked}): {use.measured}; {use.device_reads:,} reads "
                f"and {use.device_syncs:,} syncs reached the emulated device over "
                f"{use.measurements} measurement(s)"
            )
        else:
            parts.append(f"{use.disk}, not emulated: {use.measured}")
    return " | ".join(parts)
