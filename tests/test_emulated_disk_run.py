"""Runs on the emulated disk (a real FUSE mount): what each point stores of its disk, a dead
daemon failing its point with the reason while the sweep goes on, and nothing left mounted
after success, Ctrl-C, or SIGKILL followed by the next lab command. Root only (mounting);
the refusal without root is tested too."""

import json
import os
import pwd
import signal
from pathlib import Path

import pytest
from fix_cli import CLI_TIMEOUT_S, SPECS_DIR, run_cli
from fix_lab import lab_process, store_query, wait_until_measuring
from fix_processes import output_as_user, processes_mentioning, wait_for

from pgcachelab.clusters.osuser import server_user
from pgcachelab.errors import UserError
from pgcachelab.machine import fusedisk
from pgcachelab.machine.emulated import MachineNeeds, capabilities, check_needs

AVAILABLE, WHY_NOT = fusedisk.availability()
needs_fuse = pytest.mark.skipif(not AVAILABLE, reason=f"emulated disk unavailable: {WHY_NOT}")


def our_mounts() -> list[str]:
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if fusedisk.FSTYPE in line]  # fmt: skip


def daemons() -> list[int]:
    return [pid for pid in processes_mentioning(fusedisk.FSNAME_PREFIX) if pid != os.getpid()]


def pgbench_children(parent: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, rest = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        if name.endswith("(pgbench") and int(rest.split()[1]) == parent:
            children.append(int(stat.parent.name))
    return children


@pytest.fixture
def disk_free_after():
    """The machine's mounts and daemons as before the test, whatever happened in it."""
    mounts, running = our_mounts(), set(daemons())
    yield
    wait_for(lambda: set(daemons()) <= running, timeout_s=20, what="the daemons to exit")
    assert our_mounts() == mounts


@pytest.mark.quiet
@needs_fuse
@pytest.mark.server
@pytest.mark.slow
def test_each_point_stores_its_disk_its_probe_and_the_device_requests(
    tmp_path, lab_tmp, disk_free_after
):
    lab_dir = tmp_path / "lab"
    result = run_cli("run", SPECS_DIR / "disk-sweep.toml", "--lab-dir", lab_dir, tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    rows = store_query(lab_dir, "select point_index, status, metrics from measurements order by 1")
    host, emulated = (json.loads(metrics)["disk"] for _, status, metrics in rows)
    assert [status for _, status, _ in rows] == ["ok", "ok"]
    assert host["profile"] is None and host["device"] == {}
    assert emulated["profile"]["read_latency_s"] == pytest.approx(0.0003)
    # The probe verifies the device: a cold read pays the latency (the daemon's own read of the
    # backing file is usually a host page-cache hit, at most a host disk read), a warm one does
    # not reach the daemon.
    host_cold = host["probe"]["cold_read"]["median_ms"]
    cold = emulated["probe"]["cold_read"]["median_ms"]
    assert 0.3 <= cold <= 1.3 * (0.3 + host_cold) + 0.05
    assert emulated["probe"]["warm_read"]["median_ms"] < 0.05
    assert emulated["probe"]["write_fdatasync"]["median_ms"] >= 0.5
    # The host point loaded the data; the emulated one started on a new mount, so its reads
    # missed the page cache and reached the device.
    assert emulated["device"]["reads"] > 0
    # The per-second series (issue 32) follows the same disk: the host's block device, then
    # the daemon's own counters, which saw those reads.
    host_series, emulated_series = (json.loads(metrics)["resources"] for _, _, metrics in rows)
    assert host_series["source"]["device_source"] == "diskstats"
    assert emulated_series["source"]["device_source"] == "emulated disk"
    assert emulated_series["failed"] == 0 and emulated_series["rows"]
    assert emulated_series["summary"]["device_reads_per_s"] > 0
    html = Path(result.stdout.strip()).read_text()
    assert "emulated custom:read=300us,write=0us,sync=500us (read 0.3 ms" in html
    assert "host disk, not emulated: cold read median" in html


@needs_fuse
@pytest.mark.server
@pytest.mark.slow
def test_a_dead_daemon_fails_its_point_with_the_reason_and_the_sweep_goes_on(
    tmp_path, lab_tmp, disk_free_after
):
    lab_dir = tmp_path / "lab"
    args = ["run", SPECS_DIR / "disk-long.toml", "--lab-dir", lab_dir, "--no-report"]
    with lab_process(args, tmp_path, lab_tmp) as lab:
        wait_until_measuring(lab, lab_dir, tmp_path, measurements=1)
        name = f"{fusedisk.FSNAME_PREFIX}{lab.pid}"
        # Mid-measurement: while the lab's own pgbench runs.
        wait_for(lambda: pgbench_children(lab.pid) or None, what="the lab's pgbench")
        daemons_of_lab = processes_mentioning(f"--name {name}")
        assert len(daemons_of_lab) == 1, (name, daemons(), lab.poll())
        [daemon] = daemons_of_lab
        os.kill(daemon, signal.SIGKILL)
        assert lab.wait(timeout=CLI_TIMEOUT_S) == 0
    rows = store_query(lab_dir, "select repetition, status, reason from measurements order by 1")
    assert [status for _, status, _ in rows] == ["ok", "failed", "ok"]
    assert (
        "emulated disk failed: the emulated disk's daemon died (killed by signal SIGKILL)"
        in (rows[1][2])
    )


@needs_fuse
@pytest.mark.server
@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl-c", "sigkill-then-next-run"])
def test_interrupted_runs_leave_no_mount(tmp_path, lab_tmp, disk_free_after, how):
    lab_dir = tmp_path / "lab"
    args = ["run", SPECS_DIR / "disk-long.toml", "--lab-dir", lab_dir, "--no-report"]
    with lab_process(args, tmp_path, lab_tmp) as lab:
        wait_until_measuring(lab, lab_dir, tmp_path, measurements=1)
        assert our_mounts()
        if how == "ctrl-c":
            lab.send_signal(signal.SIGINT)
            assert lab.wait(timeout=CLI_TIMEOUT_S) == 130
            return
        lab.send_signal(signal.SIGKILL)
        lab.wait()
    # The killed lab's daemon died with it, its mount is dead: the next lab command reaps it.
    result = run_cli("run", SPECS_DIR / "two-points.toml", "--lab-dir", lab_dir,
                     "--no-report", tmpdir=lab_tmp)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "unmounted the emulated disk a killed lab left" in result.stderr


def test_without_root_a_disk_is_refused_before_anything_runs():
    """As the server user (in a forked child when we are root): the spec's needs are checked
    before anything runs, and the disk's says why it cannot be had."""

    def refusal() -> str:
        try:
            check_needs(MachineNeeds(None, False, False, emulated_disk=True), capabilities())
        except UserError as error:
            return str(error)
        return "accepted"

    as_root = os.geteuid() == 0
    message = output_as_user(pwd.getpwnam(server_user().name), refusal) if as_root else refusal()
    assert message.startswith(
        "the spec needs emulated disk, which is unavailable here: the emulated disk needs root"
    ), message
