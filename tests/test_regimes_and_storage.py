"""Seed 004's regimes and the report's storage line: pure."""

import pytest

from pgcachelab.analysis.regimes import (
    DISK,
    OS_CACHE,
    SHARED_BUFFERS,
    drop_past_memory,
    regime_of,
    regimes,
)
from pgcachelab.analysis.storage import storage_note, storage_uses

MIB = 1024 * 1024


def test_points_are_placed_by_database_size():
    assert regime_of(30 * MIB, 64 * MIB, 1024 * MIB) == SHARED_BUFFERS
    assert regime_of(64 * MIB, 64 * MIB, 1024 * MIB) == SHARED_BUFFERS
    assert regime_of(500 * MIB, 64 * MIB, 1024 * MIB) == OS_CACHE
    assert regime_of(1500 * MIB, 64 * MIB, 1024 * MIB) == DISK


def test_three_regimes_and_the_drop_past_memory():
    points = [("s1", 20 * MIB, 40000.0), ("s2", 35 * MIB, 38000.0), ("s8", 130 * MIB, 30000.0),
              ("s32", 500 * MIB, 28000.0), ("s48", 740 * MIB, 26000.0),
              ("s88", 1300 * MIB, 900.0), ("s104", 1550 * MIB, 500.0)]  # fmt: skip
    found = regimes(points, 64 * MIB, 1024 * MIB)
    assert [r.name for r in found] == [SHARED_BUFFERS, OS_CACHE, DISK]
    assert found[0].points == ("s1", "s2")
    assert found[1].median_tps == 28000.0
    assert found[2].median_tps == 700.0
    assert drop_past_memory(found) == pytest.approx(40.0)


def test_no_drop_without_points_past_memory():
    found = regimes([("a", 10 * MIB, 5.0), ("b", 100 * MIB, 4.0)], 64 * MIB, 1024 * MIB)
    assert drop_past_memory(found) is None


def _metrics(profile, reads, probe_ms):
    probe = {"cold_read": {"median_ms": probe_ms, "p90_ms": probe_ms, "samples": 64},
             "warm_read": {"median_ms": 0.003, "p90_ms": 0.004, "samples": 64},
             "write_fdatasync": {"median_ms": 1.1, "p90_ms": 1.2, "samples": 16}}  # fmt: skip
    return {"disk": {"profile": profile, "probe": probe, "device": {"reads": reads, "syncs": 2}}}


def test_storage_line_states_what_was_emulated_and_what_was_measured():
    profile = {"name": "nvme", "read_latency_s": 8e-05, "write_latency_s": 2e-05,
               "sync_latency_s": 5e-05, "iops": None, "bandwidth_bytes_s": None}  # fmt: skip
    uses = storage_uses([_metrics(profile, 10, 0.13), _metrics(profile, 5, 0.13),
                         _metrics(None, 0, 0.042), {}])  # fmt: skip
    assert [(u.disk, u.device_reads, u.measurements) for u in uses] == [
        ("nvme", 15, 2),
        ("host disk", 0, 1),
    ]
    note = storage_note(uses)
    assert note.startswith(
        "emulated nvme (read 0.08 ms, write 0.02 ms, sync 0.05 ms): cold read median 0.13 ms"
    )
    assert "15 reads and 4 syncs reached the emulated device over 2 measurement(s)" in note
    assert "host disk, not emulated: cold read median 0.042 ms" in note
    assert storage_note([]).startswith("not recorded")
