"""machine/host_facts.py: one parser per kernel file, on files captured from a real host
(tests/data/host-facts/capture.sh; mountinfo from tests/data/machine/), and its readers."""

import shutil
from pathlib import Path

from pgcachelab.machine import host_facts
from pgcachelab.machine.host_facts import (
    Mount,
    hugepages_of,
    memory_total_bytes,
    parse_cpu_model,
    parse_meminfo,
    parse_mountinfo,
    parse_proc_cgroup,
    read_cpu_model,
    read_hugepages,
    read_meminfo,
    read_mountinfo,
    read_proc_cgroup,
)

DATA = Path(__file__).parent / "data" / "host-facts"
MACHINE = Path(__file__).parent / "data" / "machine"


def test_meminfo_in_bytes_and_the_huge_page_counts_as_counts():
    meminfo = parse_meminfo((DATA / "meminfo").read_text())
    assert meminfo["MemTotal"] == 24684092 * 1024
    assert meminfo["SwapTotal"] == 0
    assert meminfo["Shmem"] == 48980 * 1024
    assert meminfo["HugePages_Total"] == 0  # no unit: a count
    assert meminfo["Hugepagesize"] == 2048 * 1024


def test_the_huge_page_pool_of_a_meminfo():
    meminfo = parse_meminfo((DATA / "meminfo").read_text())
    assert hugepages_of(meminfo) == {
        "total": 0, "free": 0, "reserved": 0, "surplus": 0, "page_size_bytes": 2 * 1024 * 1024,
    }  # fmt: skip
    pool = hugepages_of(parse_meminfo("HugePages_Total:    1000\nHugePages_Free:  12\n"))
    assert pool == {"total": 1000, "free": 12}  # what the kernel does not report is absent
    assert hugepages_of(parse_meminfo("MemTotal: 1024 kB\n")) == {}  # no huge page support


def test_cpu_model_of_cpuinfo():
    assert parse_cpu_model((DATA / "cpuinfo").read_text()) == "AMD EPYC"
    # arm64's cpuinfo has no model name: the caller falls back to platform.processor()
    assert parse_cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n") is None


def test_proc_cgroup_v1_controllers_and_the_unified_line():
    paths = parse_proc_cgroup((DATA / "cgroup").read_text())
    assert paths["memory"].startswith("/process_api/")
    assert paths["cpu"] == paths["cpuacct"] == "/"
    assert paths[""] == "/"  # the (empty) unified hierarchy of a hybrid setup


def test_mountinfo_lines_with_their_escapes_undone():
    mounts = parse_mountinfo((MACHINE / "mountinfo-fusedisk.txt").read_text())
    assert len(mounts) == 22
    root = next(mount for mount in mounts if mount.mount_point == Path("/"))
    assert (root.device, root.fstype, root.source) == ("254:0", "ext4", "/dev/vda")
    assert mounts[-2] == Mount(
        device="0:39",
        mount_point=Path("/tmp/fdcap-l0NX/mount point"),  # \040 in the file
        fstype="fuse.pgcachelab-disk",
        source="pgcachelab-disk-7368",
        super_options=("rw", "user_id=0", "group_id=0", "default_permissions", "allow_other"),
    )
    memory = [m for m in mounts if m.fstype == "cgroup" and "memory" in m.super_options]
    assert [m.mount_point for m in memory] == [Path("/sys/fs/cgroup/memory")]


def test_mountinfo_skips_what_is_not_a_mount_line():
    text = "a line that is not mountinfo\n36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw\n"
    assert parse_mountinfo(text) == [
        Mount("98:0", Path("/mnt2"), "ext3", "/dev/root", ("rw",))  # proc(5)'s example
    ]


def _fake_proc(tmp_path: Path) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    shutil.copy(DATA / "meminfo", proc / "meminfo")
    shutil.copy(DATA / "cpuinfo", proc / "cpuinfo")
    shutil.copy(DATA / "cgroup", proc / "self" / "cgroup")
    shutil.copy(MACHINE / "mountinfo-v1.txt", proc / "self" / "mountinfo")
    return proc


def test_readers_read_the_proc_they_are_given(tmp_path):
    proc = _fake_proc(tmp_path)
    assert read_meminfo(proc)["MemTotal"] == 24684092 * 1024
    assert memory_total_bytes(proc) == 24684092 * 1024
    assert read_hugepages(proc)["page_size_bytes"] == 2 * 1024 * 1024
    assert read_cpu_model(proc) == "AMD EPYC"
    assert read_proc_cgroup("self", proc)["memory"].startswith("/process_api/")
    assert len(read_mountinfo(proc)) == 20


def test_readers_default_to_PROC_looked_up_when_called(tmp_path, monkeypatch):
    monkeypatch.setattr(host_facts, "PROC", _fake_proc(tmp_path))
    assert memory_total_bytes() == 24684092 * 1024
    assert read_cpu_model() == "AMD EPYC"


def test_what_cannot_be_read_is_none_or_empty_where_the_callers_want_it(tmp_path):
    assert memory_total_bytes(tmp_path) is None
    assert read_hugepages(tmp_path) == {}
