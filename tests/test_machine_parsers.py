"""The emulated machine's pure parts, on files captured from a real machine (tests/data/machine)."""

import os
from pathlib import Path

import pytest

from pgcachelab.errors import UserError
from pgcachelab.machine.cgroup import _stat, memory_cgroup_mounts
from pgcachelab.machine.emulated import MachineNeeds, check_needs
from pgcachelab.machine.host_facts import (
    hugepages_of,
    parse_meminfo,
    parse_mountinfo,
    parse_proc_cgroup,
)
from pgcachelab.machine.hugepages import pages_for_bytes, parse_vmpeak_bytes
from pgcachelab.spec import parse_spec
from pgcachelab.units import shared_buffers_bytes

DATA = Path(__file__).parent / "data" / "machine"


def test_proc_cgroup_v1_with_memory_controller():
    paths = parse_proc_cgroup((DATA / "proc-cgroup-v1.txt").read_text())
    assert paths["memory"].startswith("/process_api/")
    assert paths[""] == "/"  # the (empty) unified hierarchy of a hybrid setup


def test_mountinfo_finds_v1_memory_and_the_unified_mount():
    v1_memory, v2 = memory_cgroup_mounts(parse_mountinfo((DATA / "mountinfo-v1.txt").read_text()))
    assert v1_memory == Path("/sys/fs/cgroup/memory")
    assert v2 == Path("/sys/fs/cgroup/unified")


def test_memory_stat_v1():
    stat = _stat((DATA / "memory-stat-v1.txt").read_text())
    assert stat["total_cache"] >= stat["total_shmem"] >= 0
    assert "hierarchical_memory_limit" in stat


def test_meminfo_hugepages():
    values = hugepages_of(parse_meminfo((DATA / "meminfo.txt").read_text()))
    assert values == {"total": 0, "free": 0, "reserved": 0, "surplus": 0,
                      "page_size_bytes": 2 * 1024 * 1024}  # fmt: skip


def test_vmpeak_sizing_the_seeds_way():
    vmpeak = parse_vmpeak_bytes((DATA / "status.txt").read_text())
    assert vmpeak == 3060 * 1024
    assert pages_for_bytes(vmpeak, 2 * 1024 * 1024) == 2
    assert parse_vmpeak_bytes("Name: x\n") is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [("64MB", 64 * 2**20), ("16384", 16384 * 8192), (None, 128 * 2**20), ("1GB", 2**30)],
)
def test_shared_buffers_bytes(value, expected):
    assert shared_buffers_bytes(value) == expected


def test_needs_refused_up_front_when_unavailable():
    unavailable = {
        "memory limit": (False, "memory cgroups need root"),
        "huge pages": (False, "setting vm.nr_hugepages needs root"),
        "dropping the whole OS cache": (True, ""),
    }
    with pytest.raises(UserError, match="needs memory limit, which is unavailable here: memory"):
        check_needs(MachineNeeds(2**30, False, False), unavailable)
    with pytest.raises(UserError, match="needs huge pages"):
        check_needs(MachineNeeds(None, True, False), unavailable)
    notes = check_needs(MachineNeeds(None, False, True), unavailable)
    assert len(notes) == 2 and all("not needed by this spec" in n for n in notes)


def test_machine_table_in_specs():
    spec = parse_spec(
        '[machine]\nmemory = "1GiB"\nos_cache = "drop-cluster"\nprewarm = true\n'
        '[sweep]\nos_cache = ["keep", "drop-all"]',
        Path("x.toml"),
    )
    assert spec.memory_bytes == 2**30
    assert [p.workload.os_cache for p in spec.points()] == ["keep", "drop-all"]
    assert spec.points()[0].workload.prewarm is True
    with pytest.raises(UserError, match=r'machine.memory: invalid value "12XB"'):
        parse_spec('[machine]\nmemory = "12XB"', Path("x.toml"))
    with pytest.raises(UserError, match=r'sweep.os_cache: invalid value "cold"'):
        parse_spec('[sweep]\nos_cache = ["cold"]', Path("x.toml"))


def test_huge_pages_on_sweeps_shared_buffers_descending():
    spec = parse_spec(
        '[sweep.settings]\nshared_buffers = ["16MB", "1GB", "128MB"]\nhuge_pages = ["on", "off"]',
        Path("x.toml"),
    )
    sizes = [p.settings["shared_buffers"] for p in spec.points()]
    assert sizes == ["1GB", "1GB", "128MB", "128MB", "16MB", "16MB"]
    plain = parse_spec('[sweep.settings]\nshared_buffers = ["16MB", "1GB"]', Path("x.toml"))
    assert [p.settings["shared_buffers"] for p in plain.points()] == ["16MB", "1GB"]


ROOT_ONLY_POOL = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="the lab raises the huge-pages pool only as root: as a user it never touches it",
)


@ROOT_ONLY_POOL
def test_a_kernel_that_gives_fewer_huge_pages_is_refused_and_restored(tmp_path, monkeypatch):
    """The refusal path, on stand-in /proc files: this 'kernel' never raises HugePages_Total."""
    from pgcachelab.machine import host_facts, hugepages

    nr, meminfo = tmp_path / "nr_hugepages", tmp_path / "meminfo"
    nr.write_text("0\n")
    meminfo.write_text((DATA / "meminfo.txt").read_text())
    monkeypatch.setattr(hugepages, "NR_HUGEPAGES", nr)
    # this kernel's meminfo; the rest of /proc (the labs' processes) is the real one
    monkeypatch.setattr(hugepages, "read_hugepages", lambda: host_facts.read_hugepages(tmp_path))
    monkeypatch.setattr(hugepages, "STATE_DIR", tmp_path / "state" / "hugepages")
    reservation = hugepages.HugePagesReservation()
    with pytest.raises(hugepages.HugePagesUnavailable, match="^hugepages_unavailable: .* 70 "):
        reservation.ensure(70)
    assert nr.read_text() == "0"  # the partial pool given back at once
    reservation.release()
    assert nr.read_text() == "0"
    assert not (tmp_path / "state").exists()


@ROOT_ONLY_POOL
def test_labs_side_by_side_take_back_only_what_they_added(tmp_path, monkeypatch):
    """Two labs raise the pool in turn and finish in the other order; a killed one is undone."""
    from pgcachelab.machine import host_facts, hugepages

    nr, meminfo = tmp_path / "nr_hugepages", tmp_path / "meminfo"
    nr.write_text("4\n")  # the administrator's pool
    meminfo.write_text("HugePages_Total: 1000\nHugepagesize: 2048 kB\n")  # a generous kernel
    monkeypatch.setattr(hugepages, "NR_HUGEPAGES", nr)
    # this kernel's meminfo; the rest of /proc (the labs' processes) is the real one
    monkeypatch.setattr(hugepages, "read_hugepages", lambda: host_facts.read_hugepages(tmp_path))
    monkeypatch.setattr(hugepages, "STATE_DIR", tmp_path / "state" / "hugepages")
    first, second = hugepages.HugePagesReservation(), hugepages.HugePagesReservation()
    first.ensure(10)
    assert nr.read_text() == "14"
    first.ensure(6)  # a smaller shared_buffers next: the pool shrinks with it
    assert nr.read_text() == "10"
    monkeypatch.setattr(hugepages.os, "getpid", lambda: 999_999_998)  # another lab
    second.ensure(20)
    assert nr.read_text() == "30"
    monkeypatch.setattr(hugepages.os, "getpid", lambda: 999_999_997)  # a third one, later
    assert hugepages.restore_abandoned() == 10  # the "other lab" is dead: its 20 come back
    monkeypatch.undo()
    monkeypatch.setattr(hugepages, "NR_HUGEPAGES", nr)
    monkeypatch.setattr(hugepages, "STATE_DIR", tmp_path / "state" / "hugepages")
    first.release()
    assert nr.read_text() == "4"
    assert not (tmp_path / "state").exists()


def test_schedstat_gives_seconds_on_a_cpu_and_this_process_is_readable():
    from pgcachelab.probes.process_cpu import cpu_seconds, parse_schedstat

    assert parse_schedstat((DATA / "schedstat.txt").read_text()) == pytest.approx(0.202490021)
    assert parse_schedstat("") is None and parse_schedstat("x 1 2") is None
    spent = cpu_seconds(os.getpid())
    assert spent is not None and spent > 0
    assert cpu_seconds(2**22 + 1) is None  # no such process: pid_max is at most 2^22
