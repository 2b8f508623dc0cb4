"""The machine's resources per second (issue 32), without a server: the parsers and the
per-second arithmetic on kernel files captured a second apart on the lab's host
(tests/data/resources/capture.sh), and the sampler's thread on this machine's own files."""

import os
import time
from pathlib import Path

import psutil
import pytest
from fix_processes import wait_for

from pgcachelab.experiments import resource_sampler
from pgcachelab.experiments.instruments import ResourceSeries
from pgcachelab.experiments.recording import Recording
from pgcachelab.experiments.resource_sampler import (
    ResourceSampler,
    Sources,
    block_device_name,
    diskstats_reader,
    read_sample,
    sources_of,
)
from pgcachelab.machine.host_facts import parse_meminfo, parse_proc_stat
from pgcachelab.probes.base import snapshot
from pgcachelab.probes.host_resources import (
    COLUMNS,
    RawSample,
    emulated_disk_device,
    memory_of,
    parse_cgroup_v1_cpuacct,
    parse_cgroup_v2_cpu_stat,
    parse_diskstats,
    process_tree_cpu_us,
    row,
    summary,
)
from pgcachelab.probes.io import IoProbe

DATA = Path(__file__).parent / "data" / "resources"
VDA = (254, 0)  # the captures' disk


def text(moment: str, name: str) -> str:
    return (DATA / moment / name).read_text()


def captured_sample(monkeypatch, moment: str, monotonic_s: float, cgroup: dict | None = None):
    """A RawSample read by the sampler's own reader from a capture: psutil reads the captured
    /proc/stat through its PROCFS_PATH."""
    monkeypatch.setattr(psutil, "PROCFS_PATH", str(DATA / moment))
    sources = Sources(
        device="vda",
        device_source="diskstats",
        read_device=diskstats_reader(*VDA, proc=DATA / moment),
        cgroup="captured" if cgroup else None,
        read_cgroup=(lambda: cgroup) if cgroup else None,
    )
    sample = read_sample(sources, proc=DATA / moment)
    return RawSample(
        unix_time=1000.0 + monotonic_s,
        monotonic_s=monotonic_s,
        cpu_s=sample.cpu_s,
        ctx_switches=sample.ctx_switches,
        memory_bytes=sample.memory_bytes,
        device=sample.device,
        cgroup_cpu_us=sample.cgroup_cpu_us,
    )


def as_dict(values: list) -> dict:
    return dict(zip(COLUMNS, values, strict=True))


def test_meminfo_in_bytes_and_the_page_cache_without_shmem():
    meminfo = parse_meminfo(text("t0", "meminfo"))
    assert meminfo["MemTotal"] == 24684092 * 1024
    assert meminfo["HugePages_Total"] == 0  # a count, no unit
    assert memory_of(meminfo) == {
        "page_cache": (1594172 - 47032) * 1024,
        "dirty": 70624 * 1024,
        "writeback": 0,
    }


def test_diskstats_lines_by_major_and_minor():
    devices = parse_diskstats(text("t0", "diskstats"))
    assert {d.name for d in devices.values()} >= {"vda", "loop0", "zram0"}
    vda = devices[VDA]
    assert (vda.reads, vda.read_sectors, vda.read_ms) == (86328, 5009802, 39004)
    assert (vda.writes, vda.write_sectors, vda.write_ms, vda.busy_ms) == (
        288105,
        34026272,
        96560,
        35424,
    )
    assert vda.device()["read_bytes"] == 5009802 * 512
    # A pre-4.18 line (14 fields) reads the same; a torn or foreign line is skipped.
    old = parse_diskstats("   8       1 sda1 10 0 80 5 20 0 160 7 0 9 12\n 8 2 sdb2 x\n")
    assert old[8, 1].name == "sda1" and old[8, 1].device()["ios"] == 30
    assert (8, 2) not in old


def test_cgroup_cpu_accounts_of_both_versions_in_microseconds():
    assert parse_cgroup_v2_cpu_stat(text("t0", "cpu.stat")) == {
        "usage": 1146064251,
        "user": 710717073,
        "system": 435347178,
    }
    v1 = parse_cgroup_v1_cpuacct(text("t0", "cpuacct.usage"), text("t0", "cpuacct.stat"), 100)
    assert v1 == {"usage": 1183834860, "user": 734130000, "system": 449700000}


def test_one_second_of_captured_files_as_a_row(monkeypatch):
    cgroups = [parse_cgroup_v2_cpu_stat(text(m, "cpu.stat")) for m in ("t0", "t1")]
    before = captured_sample(monkeypatch, "t0", 0.0, cgroups[0])
    after = captured_sample(monkeypatch, "t1", 1.0, cgroups[1])
    values = as_dict(row(before, after, cpu_count=2))
    # /proc/stat's cpu line rose by user 34, system 58, idle 95, iowait 5, softirq 1 ticks.
    assert values["cpu_user_pct"] == round(100 * 34 / 193, 1)
    assert values["cpu_system_pct"] == round(100 * 59 / 193, 1)
    assert values["cpu_iowait_pct"] == round(100 * 5 / 193, 1)
    assert values["cpu_idle_pct"] == round(100 * 95 / 193, 1)
    assert values["cpu_steal_pct"] == 0.0
    shares = ("cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_steal_pct", "cpu_idle_pct")
    assert sum(values[name] for name in shares) == pytest.approx(100, abs=0.3)
    assert values["ctx_switches_per_s"] == 19981370 - 19942523
    # vda: 2 reads of 16 sectors, 401 writes of 219064 sectors, 205 ms waited, 64 ms busy.
    assert (values["device_reads_per_s"], values["device_writes_per_s"]) == (2.0, 401.0)
    assert values["device_read_bytes_per_s"] == 16 * 512
    assert values["device_write_bytes_per_s"] == 219064 * 512
    assert values["device_wait_ms"] == round(205 / 403, 3)
    assert values["device_busy_pct"] == 6.4
    # The cgroup used 923,924 µs of the two CPUs' 2,000,000.
    assert values["cgroup_cpu_pct"] == 46.2
    assert values["cgroup_user_pct"] == 17.2 and values["cgroup_system_pct"] == 29.0
    assert values["dirty_bytes"] == parse_meminfo(text("t1", "meminfo"))["Dirty"]
    assert values["unix_time"] == 1001.0


def test_the_rates_are_per_second_whatever_the_interval(monkeypatch):
    before = captured_sample(monkeypatch, "t0", 0.0)
    after = captured_sample(monkeypatch, "t1", 2.0)
    values = as_dict(row(before, after, cpu_count=2))
    assert values["device_writes_per_s"] == 200.5
    assert values["cpu_user_pct"] == round(100 * 34 / 193, 1)  # a share: no time in it
    assert values["cgroup_cpu_pct"] is None  # no cgroup sampled


def test_counters_that_went_backwards_give_no_rate_and_shares_stay_within_0_and_100():
    def sample(at, reads, usage_us):
        device = {"reads": reads, "writes": 0, "read_bytes": 0, "write_bytes": 0}
        device |= {"ios": reads, "wait_ms": 0, "busy_ms": 0}
        return RawSample(
            unix_time=at,
            monotonic_s=at,
            cpu_s={"user": at, "idle": 0.0},
            ctx_switches=0,
            memory_bytes={"page_cache": 1, "dirty": 2, "writeback": 3},
            device=device,
            cgroup_cpu_us={"usage": usage_us, "user": 0, "system": 0},
        )

    values = as_dict(row(sample(0.0, 100, 0), sample(1.0, 5, 2_100_000), cpu_count=2))
    assert values["device_reads_per_s"] is None  # a remounted disk's counters start again
    assert values["cgroup_cpu_pct"] == 100.0  # a tick of disagreement between two files
    with pytest.raises(ValueError):
        row(sample(1.0, 0, 0), sample(1.0, 0, 0), cpu_count=2)


def test_the_emulated_disk_counters_as_a_device():
    counters = {"reads": 10, "read_bytes": 81920, "writes": 4, "write_bytes": 32768}
    counters |= {"syncs": 2, "delayed_us": 16000, "read_latency_us": 1000}
    device = emulated_disk_device(counters)
    assert device["ios"] == 16 and device["wait_ms"] == 16.0 and device["busy_ms"] is None


def test_the_summary_spans_the_run_and_keeps_the_memory_peaks(monkeypatch):
    first = captured_sample(monkeypatch, "t0", 0.0)
    last = captured_sample(monkeypatch, "t1", 1.0)
    rows = [row(first, last, 2)]
    rows[0][COLUMNS.index("dirty_bytes")] = 1 << 30
    whole = summary(first, last, rows, cpu_count=2)
    assert whole["cpu_idle_pct"] == round(100 * 95 / 193, 1)
    assert whole["dirty_max_bytes"] == 1 << 30
    assert whole["seconds"] == 1.0
    assert "dirty_bytes" not in whole and "unix_time" not in whole


def test_block_device_of_a_directory_and_no_device_for_major_0(tmp_path):
    device = tmp_path.stat().st_dev
    name = block_device_name(os.major(device), os.minor(device))
    diskstats = {d.name for d in parse_diskstats(Path("/proc/diskstats").read_text()).values()}
    assert name is None or name in diskstats
    assert block_device_name(0, 42) is None


class FakeTarget:
    kind = "existing"
    machine = None

    def __init__(self, data_dir=None):
        self.data_dir = data_dir


class FakeDiskTarget(FakeTarget):
    kind = "managed"

    def __init__(self):
        super().__init__(Path("/nonexistent"))
        self.counters = {"reads": 0, "read_bytes": 0, "writes": 0, "write_bytes": 0}
        self.counters |= {"syncs": 0, "delayed_us": 0}

    def disk_record(self):
        self.counters = {**self.counters, "reads": self.counters["reads"] + 7}
        return {"profile": {"name": "hdd"}, "probe": {}, "counters": self.counters}


def test_sources_say_where_each_figure_comes_from_or_why_not(tmp_path):
    assert sources_of(FakeTarget()).record()["notes"] == [
        "device: the server's data directory is not on this machine",
        "cgroup: no managed server here to count the CPU of",
    ]
    gone = sources_of(FakeTarget(tmp_path / "gone")).record()
    assert gone["device"] is None and gone["notes"][0].startswith("device_source: FileNotFound")
    emulated = sources_of(FakeDiskTarget()).record()
    assert (emulated["device"], emulated["device_source"]) == ("hdd", "emulated disk")


def counting_reads(monkeypatch) -> list:
    """The sampler's reads, counted as they start: a test waits for a number of them, not for
    a time a loaded machine may not keep."""
    started: list = []
    real = resource_sampler.read_sample

    def counted(*args, **kwargs):
        started.append(time.monotonic())
        return real(*args, **kwargs)

    monkeypatch.setattr(resource_sampler, "read_sample", counted)
    return started


def test_the_sampler_on_this_machine_through_a_measurement(tmp_path, monkeypatch):
    recording = Recording(point_index=0, repetition=0)
    reads = counting_reads(monkeypatch)
    with ResourceSeries(FakeTarget(tmp_path), recording):
        # three reads begun: the first two are a row; a fourth read at exit makes another
        wait_for(lambda: len(reads) >= 3 and reads[-1] - reads[0] >= 0.2, what="three samples")
    resources = recording.metrics["resources"]
    assert resources["failed"] == 0 and resources["samples"] == len(resources["rows"]) + 1
    values = as_dict(resources["rows"][-1])
    for name in ("cpu_user_pct", "cpu_system_pct", "cpu_idle_pct", "cpu_iowait_pct"):
        assert 0 <= values[name] <= 100
    assert values["ctx_switches_per_s"] >= 0 and values["page_cache_bytes"] > 0
    assert resources["summary"]["seconds"] >= 0.2
    assert 0 <= resources["sampler_cpu_s"] < 1


def test_a_sample_that_fails_is_counted_with_its_reason_and_the_series_goes_on(monkeypatch):
    calls = []

    def flaky_device():
        calls.append(1)
        if len(calls) == 2:
            raise OSError("diskstats went away")
        device = {"reads": len(calls), "writes": 0, "read_bytes": 0, "write_bytes": 0}
        return device | {"ios": len(calls), "wait_ms": 2 * len(calls), "busy_ms": 0}

    sources = Sources(device="x", device_source="diskstats", read_device=flaky_device)
    sampler = ResourceSampler.start(sources, interval_s=0.05)
    wait_for(lambda: len(calls) >= 4, what="a failed sample and two after it")
    kept = sampler.close()
    assert kept["failed"] == 1 and kept["first_error"] == "OSError: diskstats went away"
    assert kept["rows"] and kept["samples"] == len(kept["rows"]) + 1
    # The row after the failure spans two intervals, from the last good sample.
    assert all(as_dict(r)["device_wait_ms"] == 2.0 for r in kept["rows"])


def test_a_sampler_that_never_read_a_sample_keeps_no_summary(monkeypatch):
    tried = []

    def broken(sources, proc=resource_sampler.PROC):
        tried.append(1)
        raise ValueError("unparsable")

    monkeypatch.setattr(resource_sampler, "read_sample", broken)
    sampler = ResourceSampler.start(Sources(), interval_s=0.05)
    wait_for(lambda: len(tried) >= 2, what="two failed samples")
    kept = sampler.close()
    assert kept["rows"] == [] and kept["summary"] is None and kept["samples"] == 0
    assert kept["failed"] >= 2 and kept["first_error"] == "ValueError: unparsable"


class OldServer:
    class info:  # noqa: N801 - psycopg's conn.info
        server_version = 150004


def test_pg_stat_io_is_absent_before_16_without_a_query():
    assert snapshot(OldServer(), [IoProbe()]) == {"io": {"absent": True}}


def test_a_summary_that_cannot_be_made_leaves_the_series(monkeypatch, tmp_path):
    def broken(*args):
        raise KeyError("ios")

    monkeypatch.setattr(resource_sampler, "summary", broken)
    reads = counting_reads(monkeypatch)
    sampler = ResourceSampler.start(sources_of(FakeTarget(tmp_path)), interval_s=0.05)
    wait_for(lambda: len(reads) >= 3, what="a row of two samples")  # the third began after it
    kept = sampler.close()
    assert kept["rows"] and kept["summary"] is None
    assert kept["failed"] == 1 and kept["first_error"] == "summary: KeyError: 'ios'"


def test_the_server_s_processes_are_counted_where_no_cgroup_counts_them():
    # a postmaster and one of its io workers (18), captured from a real run
    postmaster = parse_proc_stat((DATA / "postmaster-stat.txt").read_text()).cpu_ticks
    worker = parse_proc_stat((DATA / "backend-stat.txt").read_text()).cpu_ticks
    assert postmaster == (1, 6, 3127, 2215)  # its own time, then its reaped children's
    assert worker == (4, 33, 0, 0)
    assert (DATA / "postmaster-children.txt").read_text().split()[0] == "3720"
    assert process_tree_cpu_us(postmaster, [worker], 100) == {
        "usage": (1 + 3127 + 4 + 6 + 2215 + 33) * 10_000,
        "user": (1 + 3127 + 4) * 10_000,
        "system": (6 + 2215 + 33) * 10_000,
    }
    # a command name with spaces and parentheses does not shift the fields
    odd = "42 (a) b (c) R 1 42 42 0 -1 0 0 0 0 0 7 8 9 10 20 0 1 0 5 0 0"
    assert parse_proc_stat(odd).cpu_ticks == (7, 8, 9, 10)
