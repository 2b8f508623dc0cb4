"""What the storage under a cluster really does: cold and warm 8 kB random reads, and fsync.

Run on the directory that holds the cluster's files, before the run measures anything, and
stored with every measurement: a report then states what was emulated next to what was
measured ("emulated 0.5 ms; cold read median 0.61 ms, warm 3 µs"), so a disk that did not
slow anything down cannot go unnoticed.
"""

import contextlib
import os
import random
import statistics
import time
from pathlib import Path

BLOCK = 8192
PROBE_FILE = "pgcachelab-storage-probe"


def _quantiles_ms(samples_ns: list[int]) -> dict:
    ordered = sorted(samples_ns)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return {
        "median_ms": statistics.median(ordered) / 1e6,
        "p90_ms": p90 / 1e6,
        "samples": len(ordered),
    }


def probe_storage(
    directory: Path, file_bytes: int = 16 * 1024 * 1024, reads: int = 64, syncs: int = 16
) -> dict:
    """Write a scratch file in `directory`, evict it from the page cache and time random reads
    of it (cold), the same reads again (warm), then 8 kB writes each followed by fdatasync."""
    path = directory / PROBE_FILE
    blocks = file_bytes // BLOCK
    offsets = [b * BLOCK for b in random.Random(4).sample(range(blocks), min(reads, blocks))]
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        chunk = os.urandom(1024 * 1024)
        for start in range(0, file_bytes, len(chunk)):
            os.pwrite(fd, chunk, start)
        os.fsync(fd)  # dirty pages would survive DONTNEED and read back warm
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        # No readahead: one request per read, so a read costs what the device takes for 8 kB.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        cold = _timed_reads(fd, offsets)
        warm = _timed_reads(fd, offsets)
        sync = []
        block = os.urandom(BLOCK)
        for offset in offsets[:syncs]:
            started = time.perf_counter_ns()
            os.pwrite(fd, block, offset)
            os.fdatasync(fd)
            sync.append(time.perf_counter_ns() - started)
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
    return {
        "directory": str(directory),
        "cold_read": _quantiles_ms(cold),
        "warm_read": _quantiles_ms(warm),
        "write_fdatasync": _quantiles_ms(sync),
    }


def _timed_reads(fd: int, offsets: list[int]) -> list[int]:
    samples = []
    for offset in offsets:
        started = time.perf_counter_ns()
        os.pread(fd, BLOCK, offset)
        samples.append(time.perf_counter_ns() - started)
    return samples


def describe_probe(probe: dict | None) -> str:
    """ "cold read median 0.61 ms (p90 0.73), warm 0.003 ms, write+fdatasync 1.02 ms"."""
    if not probe:
        return "not measured"
    cold, warm, sync = probe["cold_read"], probe["warm_read"], probe["write_fdatasync"]
    return (
        f"cold read median {cold['median_ms']:.3g} ms (p90 {cold['p90_ms']:.3g}), "
        f"warm {warm['median_ms']:.2g} ms, write+fdatasync {sync['median_ms']:.3g} ms"
    )
