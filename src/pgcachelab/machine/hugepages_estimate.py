"""The shared memory a server will ask for, and so the huge pages it needs, without a server.

PostgreSQL 15+ says it exactly (`postgres -C shared_memory_size_in_huge_pages`, which
clusters/sizing.py asks of a throwaway cluster), but that needs an initdb'd data directory, and
the plan of a run (`run --plan`) starts nothing. So it estimates, with constants fitted on real
captured values (tests/data/hugepages: capture.sh captures them, fit.py fits them):

    shared memory = base
        + shared_buffers + per_buffer x buffers       descriptors, mapping entries, queues
        + 8 B x next power of 2 of (buffers + 128)    the buffer mapping hash's buckets
        + wal_buffers                                 auto: shared_buffers / 32, 64kB to 16MB
        + slru_per_buffer x min(buffers, slru_cap)    SLRU caches sized on shared_buffers, capped
        + aio_handle x processes x concurrency        18+: io_max_concurrency, buffers per process
        + per_connection x (max_connections - 100)

It assumes every other setting that sizes shared memory is at its default
(max_locks_per_transaction, max_worker_processes, max_wal_senders, max_prepared_transactions,
autovacuum's workers, io_max_concurrency, the *_buffers of the SLRU caches, ...): each of those
adds memory the estimate does not see. Captured from 15.20 and 18.6: on the values the constants
were fitted on (128kB to 14GB, 10 to 1000 connections) it gives every huge page count exactly;
on the held-out ones (3MB to 64GB, 50 to 2000 connections) it is at most 3 pages (0.14%) or
1.7% (one page in 60) off. 16 and 17 get 15's constants, 19 and later 18's: untested.
"""

import math
from dataclasses import dataclass

from pgcachelab.units import buffers_bytes, shared_buffers_bytes

BUFFER_BYTES = 8192  # BLCKSZ, and XLOG_BLCKSZ for wal_buffers
DEFAULT_MAX_CONNECTIONS = 100
MAX_BACKENDS = 0x3FFFF  # postmaster.h: max_connections and the other processes together
DEFAULT_PAGE_SIZE_BYTES = 2 * 1024**2
LATEST_CALIBRATED_MAJOR = 18  # the embedded wheel's: what a run without --pg-bin runs
# bufmgr's mapping table holds NBuffers + NUM_BUFFER_PARTITIONS entries (buf_table.c)
MAPPING_EXTRA_ENTRIES = 128
# AIO's processes are MaxBackends + NUM_AUXILIARY_PROCS (aio_init.c: AioProcs): 18's defaults
# add 16 autovacuum slots, the launcher, 8 worker processes, 10 WAL senders and 38 auxiliary
# processes to max_connections
AIO_PROCESSES_BEYOND_CONNECTIONS = 73
AIO_MAX_CONCURRENCY = 64  # AioChooseMaxConcurrency's upper limit


@dataclass(frozen=True)
class Calibration:
    """One family of versions' constants, as tests/data/hugepages/fit.py printed them."""

    calibrated_on: str  # the server version the values were captured from
    base_bytes: int
    per_buffer_bytes: float
    slru_per_buffer_bytes: float
    per_connection_bytes: float
    aio_handle_bytes: float  # 18+: a PgAioHandle and its iovecs and data
    # where the SLRU caches stop growing: 15's CLOG at 128 buffers of shared_buffers / 512,
    # 18's transaction_buffers (and its siblings) at 1024
    slru_cap_buffers: int


CALIBRATIONS = {
    15: Calibration(
        calibrated_on="15.20",
        base_bytes=7_216_340,
        per_buffer_bytes=163.6,
        slru_per_buffer_bytes=66.9,
        slru_cap_buffers=128 * 512,
        per_connection_bytes=48_048,
        aio_handle_bytes=0.0,
    ),
    18: Calibration(
        calibrated_on="18.6",
        base_bytes=8_764_057,
        per_buffer_bytes=171.9,
        slru_per_buffer_bytes=65.5,
        slru_cap_buffers=1024 * 512,
        per_connection_bytes=51_289,
        aio_handle_bytes=523.6,
    ),
}


@dataclass(frozen=True)
class HugePagesEstimate:
    pages: int
    page_size_bytes: int
    shared_memory_bytes: int
    calibrated_on: str  # which captured server version's constants it used

    @property
    def bytes(self) -> int:
        """The pool the pages make: what a machine loses from its RAM while they are set."""
        return self.pages * self.page_size_bytes


def calibration_for(major: int | None) -> Calibration:
    """18's constants for 18 and later (and for an unknown version: the embedded wheel's),
    15's for anything before."""
    if major is None or major >= LATEST_CALIBRATED_MAJOR:
        return CALIBRATIONS[LATEST_CALIBRATED_MAJOR]
    return CALIBRATIONS[15]


def wal_buffers_bytes(shared_buffers: int, setting: str | None = None) -> int:
    """wal_buffers as the server sizes it: -1 (the default) is shared_buffers / 32, at least 8
    pages and at most a WAL segment's 2048 (xlog.c: XLOGChooseNumBuffers); a number without a
    unit counts 8kB pages."""
    text = "" if setting is None else str(setting).strip()
    if text not in ("", "-1"):
        return buffers_bytes(text)  # ASCII digits count pages; 400 of them are refused
    pages = max(8, min(2048, shared_buffers // BUFFER_BYTES // 32))
    return pages * BUFFER_BYTES


def exact_bytes(shared_buffers: int, wal_buffers: str | None = None) -> int:
    """The terms that need no fitted constant: the buffers, the mapping hash's buckets (an array
    of pointers, a power of 2 long: dynahash.c) and the WAL buffers."""
    buffers = shared_buffers // BUFFER_BYTES
    buckets = 1 << (buffers + MAPPING_EXTRA_ENTRIES - 1).bit_length()
    return shared_buffers + 8 * buckets + wal_buffers_bytes(shared_buffers, wal_buffers)


def fitted_counts(shared_buffers: int, max_connections: int, slru_cap_buffers: int) -> tuple:
    """What each fitted constant multiplies, in Calibration's order: 1 (base), buffers, buffers
    up to the SLRU cap, connections beyond 100, AIO handles (18+)."""
    buffers = shared_buffers // BUFFER_BYTES
    processes = max_connections + AIO_PROCESSES_BEYOND_CONNECTIONS
    handles = processes * min(AIO_MAX_CONCURRENCY, max(1, buffers // processes))
    return (
        1,
        buffers,
        min(buffers, slru_cap_buffers),
        max_connections - DEFAULT_MAX_CONNECTIONS,
        handles,
    )


def shared_memory_bytes(
    shared_buffers: int,
    major: int | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    wal_buffers: str | None = None,
) -> int:
    """The estimated size of the server's main shared memory segment (shared_memory_size)."""
    calibration = calibration_for(major)
    constants = (
        calibration.base_bytes,
        calibration.per_buffer_bytes,
        calibration.slru_per_buffer_bytes,
        calibration.per_connection_bytes,
        calibration.aio_handle_bytes,
    )
    counts = fitted_counts(shared_buffers, max_connections, calibration.slru_cap_buffers)
    fitted = sum(c * n for c, n in zip(constants, counts, strict=True))
    return math.ceil(exact_bytes(shared_buffers, wal_buffers) + fitted)


def _max_connections(value) -> int:
    """ASCII digits up to MAX_BACKENDS: int() took "٣" and 400 digits, which overflowed the
    float sums below."""
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 6 or int(text) > MAX_BACKENDS:
        raise ValueError(f"max_connections: not a number from 1 to {MAX_BACKENDS}: {value!r}")
    return int(text)


def estimate_huge_pages(
    settings: dict[str, str],
    major: int | None = None,
    page_size_bytes: int = DEFAULT_PAGE_SIZE_BYTES,
) -> HugePagesEstimate:
    """The pages a server with these settings (text, as a spec writes them) will ask for.

    Raises ValueError when shared_buffers, max_connections or wal_buffers is not a value."""
    shared = shared_buffers_bytes(settings.get("shared_buffers"))
    connections = _max_connections(settings.get("max_connections", DEFAULT_MAX_CONNECTIONS))
    size = shared_memory_bytes(shared, major, connections, settings.get("wal_buffers"))
    return HugePagesEstimate(
        pages=math.ceil(size / page_size_bytes),
        page_size_bytes=page_size_bytes,
        shared_memory_bytes=size,
        calibrated_on=calibration_for(major).calibrated_on,
    )
