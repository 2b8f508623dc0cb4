"""The emulated machine's disk: named presets with their sources, and custom profiles. Pure.

A profile is what the FUSE daemon (native/fusedisk) adds to each request that reaches it: a
read that misses the page cache waits `read_latency` (plus its size over `bandwidth`), a write
`write_latency`, an fsync `sync_latency`; `iops` caps the requests the device serves per second.
Page-cache hits never reach the daemon, so they cost what they cost without the lab.

A spec names a profile as a preset ("nvme"), as "host" (no emulation: the machine's own disk),
or as a table, which this module turns into one canonical text so that points, labels and the
store carry a plain string: "custom:read=0.5ms,write=20us,sync=1ms,iops=150".
"""

from dataclasses import dataclass

from pgcachelab.units import format_bytes, parse_bytes, parse_seconds

HOST = "host"
CUSTOM_PREFIX = "custom:"
# Table keys -> the short names of the canonical text.
TABLE_KEYS = {
    "read_latency": "read",
    "write_latency": "write",
    "sync_latency": "sync",
    "iops": "iops",
    "bandwidth": "bandwidth",
}
MAX_LATENCY_S = 1.0  # beyond a second per request nothing useful is measured in minutes
MAX_IOPS = 100_000_000  # a hundred times a fast NVMe's; TOML's inf and 400 digits overflowed


@dataclass(frozen=True)
class DiskProfile:
    name: str  # a preset's name, or the canonical "custom:..." text
    read_latency_s: float
    write_latency_s: float
    sync_latency_s: float
    iops: int | None = None  # None: no limit
    bandwidth_bytes_s: int | None = None  # None: no limit
    stands_for: str = ""
    source: str = ""

    @property
    def random_read_iops_one_client(self) -> float:
        """What one client waiting on each read gets: the figure data sheets quote at QD1."""
        per_read = self.read_latency_s + (
            8192 / self.bandwidth_bytes_s if self.bandwidth_bytes_s else 0
        )
        qd1 = 1 / per_read if per_read > 0 else float("inf")
        return min(qd1, self.iops) if self.iops else qd1

    def summary(self) -> str:
        """One line for notes and reports: "nvme: read 0.08 ms, write 0.02 ms, sync 0.05 ms"."""
        parts = [
            f"read {_ms(self.read_latency_s)}",
            f"write {_ms(self.write_latency_s)}",
            f"sync {_ms(self.sync_latency_s)}",
        ]
        if self.iops:
            parts.append(f"≤ {self.iops} IOPS")
        if self.bandwidth_bytes_s:
            parts.append(f"≤ {format_bytes(self.bandwidth_bytes_s)}/s")
        return f"{self.name}: {', '.join(parts)}"

    def record(self) -> dict:
        """What a measurement stores of the disk it ran on."""
        return {
            "name": self.name,
            "read_latency_s": self.read_latency_s,
            "write_latency_s": self.write_latency_s,
            "sync_latency_s": self.sync_latency_s,
            "iops": self.iops,
            "bandwidth_bytes_s": self.bandwidth_bytes_s,
        }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:g} ms"


# Typical figures of each class of device, not of one product: a preset stands for what a
# PostgreSQL server on such storage waits for a random 8 kB read that misses every cache, a
# buffered write, and a flush.
PRESETS: dict[str, DiskProfile] = {
    profile.name: profile
    for profile in (
        DiskProfile(
            "nvme",
            80e-6,
            20e-6,
            50e-6,
            stands_for="a datacenter NVMe SSD with power-loss protection (flushes are cheap)",
            source="Intel SSD DC P4510 product specification: typical latency read 77 µs, "
            "write 18 µs (4 kB, QD1); flushes complete from the protected cache",
        ),
        DiskProfile(
            "sata-ssd",
            0.15e-3,
            50e-6,
            0.5e-3,
            stands_for="a SATA SSD (AHCI, one queue)",
            source="Intel SSD D3-S4510 product brief: read latency 36 µs, write 37 µs (typical, "
            "sequential); random 4 kB QD1 reads through AHCI measure 0.1-0.2 ms with fio",
        ),
        DiskProfile(
            "cloud-network-ssd",
            0.5e-3,
            0.5e-3,
            1e-3,
            iops=3000,
            bandwidth_bytes_s=125 * 1024 * 1024,
            stands_for="a network block volume in a cloud (e.g. AWS EBS gp3 at its baseline)",
            source="AWS EBS documentation, gp3: 3,000 IOPS and 125 MiB/s baseline, "
            '"single-digit millisecond latency"; 0.5-1 ms per request is typical',
        ),
        DiskProfile(
            "hdd-7200",
            12e-3,
            0.1e-3,
            8e-3,
            iops=150,
            bandwidth_bytes_s=200 * 1024 * 1024,
            stands_for="one 7,200 rpm hard disk with its write cache on",
            source="Seagate Exos 7E8 data sheet: average latency 4.16 ms (half a turn) and "
            "average seek ~8.5 ms: ~12 ms per random read, 150 IOPS with command queueing",
        ),
        DiskProfile(
            "sata-raid0-3x7200",
            12e-3,
            0.1e-3,
            8e-3,
            iops=3 * 150,
            bandwidth_bytes_s=3 * 200 * 1024 * 1024,
            stands_for="seed 001's second storage: three 7,200 rpm SATA disks in RAID0",
            source="seed 001 (hardware: 3 x 7.2k SATA RAID0); one disk as hdd-7200 (Seagate "
            "Exos 7E8: 4.16 ms average latency, ~8.5 ms seek, ~150 IOPS, ~200 MiB/s): striping "
            "serves three requests at once, so IOPS and bandwidth add up, while one request "
            "still waits one disk's seek and half a turn",
        ),
        DiskProfile(
            "seed-004-vm",
            6.5e-3,
            0.2e-3,
            5e-3,
            iops=150,
            bandwidth_bytes_s=100 * 1024 * 1024,
            stands_for="seed 004's small VM, where beyond the OS cache \"the disk (100-200 "
            'random IOPS) decides"',
            source="seed 004 (shared/SEEDS.md): 100-200 random IOPS; 150 IOPS is ~6.5 ms a read",
        ),
    )
}


class DiskProfileError(ValueError):
    """A disk value that names no preset or has a bad field; the message says which."""


def canonical_disk(value) -> str:
    """The canonical text of a spec's disk value (preset name, "host", or a table)."""
    if isinstance(value, str):
        if value == HOST or value in PRESETS:
            return value
        if value.startswith(CUSTOM_PREFIX):
            return canonical_disk(_parse_custom_text(value))
        raise DiskProfileError(
            f"unknown disk preset {value!r}; use one of {', '.join([HOST, *PRESETS])} or a "
            'table such as { read_latency = "0.5ms", sync_latency = "1ms" }'
        )
    if not isinstance(value, dict):
        raise DiskProfileError("not a preset name or a table of latencies")
    profile = _custom_profile(value)
    fields = [
        f"read={_short_seconds(profile.read_latency_s)}",
        f"write={_short_seconds(profile.write_latency_s)}",
        f"sync={_short_seconds(profile.sync_latency_s)}",
    ]
    if profile.iops:
        fields.append(f"iops={profile.iops}")
    if profile.bandwidth_bytes_s:
        fields.append(f"bandwidth={profile.bandwidth_bytes_s}")
    return CUSTOM_PREFIX + ",".join(fields)


def resolve_disk(text: str | None) -> DiskProfile | None:
    """The profile a canonical disk text stands for; None for no emulation ("host" or unset)."""
    if text is None or text == HOST:
        return None
    if text in PRESETS:
        return PRESETS[text]
    if text.startswith(CUSTOM_PREFIX):
        profile = _custom_profile(_parse_custom_text(text))
        return DiskProfile(
            canonical_disk(text),
            profile.read_latency_s,
            profile.write_latency_s,
            profile.sync_latency_s,
            profile.iops,
            profile.bandwidth_bytes_s,
            stands_for="a custom device",
        )
    raise DiskProfileError(f"unknown disk {text!r}")


def parse_disk_option(text: str) -> str:
    """--disk: a preset name, "host", or "read_latency=0.5ms,sync_latency=1ms" (a table)."""
    if "=" not in text:
        return canonical_disk(text)
    table = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise DiskProfileError(f"{item!r} is not key=value")
        table[key.strip()] = value.strip()
    return canonical_disk(table)


def _parse_custom_text(text: str) -> dict:
    short_to_key = {short: key for key, short in TABLE_KEYS.items()}
    table = {}
    for item in text.removeprefix(CUSTOM_PREFIX).split(","):
        short, _, value = item.partition("=")
        if short not in short_to_key:
            raise DiskProfileError(f"unknown field {short!r} in {text!r}")
        table[short_to_key[short]] = value
    return table


def _custom_profile(table: dict) -> DiskProfile:
    unknown = set(table) - set(TABLE_KEYS) - {"preset"}
    if unknown:
        raise DiskProfileError(
            f"unknown key {sorted(unknown)[0]!r}; use {', '.join(['preset', *TABLE_KEYS])}"
        )
    base = DiskProfile("custom", 0.0, 0.0, 0.0)
    if "preset" in table:
        if table["preset"] not in PRESETS:
            raise DiskProfileError(f"preset: unknown preset {table['preset']!r}")
        base = PRESETS[table["preset"]]
    latencies = {}
    for key in ("read_latency", "write_latency", "sync_latency"):
        if key not in table:
            latencies[key] = getattr(base, f"{key}_s")
            continue
        try:
            seconds = parse_seconds(table[key])
        except (ValueError, TypeError):
            raise DiskProfileError(
                f"{key}: {table[key]!r} is not a duration (e.g. 0.5ms)"
            ) from None
        if not 0 <= seconds <= MAX_LATENCY_S:
            raise DiskProfileError(f"{key}: {table[key]!r} is not between 0 and 1s")
        latencies[key] = seconds
    iops = base.iops
    if "iops" in table:
        iops = _positive_int("iops", table["iops"])
    bandwidth = base.bandwidth_bytes_s
    if "bandwidth" in table:
        raw = table["bandwidth"]
        try:
            bandwidth = parse_bytes(raw if isinstance(raw, int) else str(raw).removesuffix("/s"))
        except (ValueError, TypeError):
            raise DiskProfileError(
                f"bandwidth: {raw!r} is not a size per second (e.g. 125MB)"
            ) from None
        if bandwidth < 1024 * 1024:
            raise DiskProfileError(f"bandwidth: {raw!r} is below 1MB per second")
    return DiskProfile(
        "custom",
        latencies["read_latency"],
        latencies["write_latency"],
        latencies["sync_latency"],
        iops,
        bandwidth,
    )


def _positive_int(key: str, value) -> int:
    try:
        number = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError, OverflowError):  # int(inf), or a text of 4300 digits
        number = None
    if number is None or str(number) != str(value).strip() or number < 1:
        raise DiskProfileError(f"{key}: {value!r} is not a positive integer")
    if number > MAX_IOPS:
        raise DiskProfileError(f"{key}: {value!r} is above {MAX_IOPS}")
    return number


def _short_seconds(seconds: float) -> str:
    """0.0005 -> "500us", 0.001 -> "1ms": the shortest exact text in whole microseconds."""
    micros = round(seconds * 1e6)
    if micros % 1000 == 0 and micros:
        return f"{micros // 1000}ms"
    return f"{micros}us"
