"""The OS rung on a real server (issue 33): host settings applied for the rung's points,
recorded with them, and the host as it was after success, a point's error, Ctrl-C, and kill -9
followed by any lab command.

These write /sys and /proc/sys: root only, skipped without it. Every test puts the host back in
a finally of its own (`host_before`), whatever the lab did.
"""

import json
import os
import re
import signal
from pathlib import Path

import pytest
from fix_cli import CLI_TIMEOUT_S, SPECS_DIR, run_cli
from fix_lab import lab_process, lab_stderr, store_query, wait_until_measuring

from pgcachelab.machine import fusedisk, host_settings, owned
from pgcachelab.machine.host_tunables import TUNABLES

pytestmark = [
    pytest.mark.server,
    pytest.mark.slow,
    pytest.mark.skipif(not host_settings.availability()[0], reason="writing /sys needs root"),
]

SPEC = SPECS_DIR / "host-rung.toml"
OS_RUNG = {
    "transparent_hugepage": "never",
    "vm.swappiness": "10",
    "vm.dirty_background_bytes": str(64 * 1024**2),
    "kernel.numa_balancing": "0",
    "readahead": "4096",
    "io_scheduler": "none",
}


def host_files(data_dir: Path) -> dict[str, str]:
    """Every file the rung may write, as it reads now (the coupled dirty_* both)."""
    files = {}
    for name in TUNABLES:
        path, _ = host_settings.setting_file(name, data_dir)
        if path is not None:
            files[path] = Path(path).read_text()
    return files


def put_back(files: dict[str, str]) -> None:
    """The test's own restore: a choice file gets its bracketed choice; a zero *_bytes is put
    back by its ratio (the kernel refuses 0 there and zeroes it when the ratio is written)."""
    for path, text in files.items():
        if Path(path).read_text() == text:
            continue
        words = text.split()
        chosen = next((w[1:-1] for w in words if w.startswith("[")), text.strip())
        if path.endswith("_bytes") and chosen == "0":
            continue
        Path(path).write_text(chosen)


@pytest.fixture
def host_before(lab_tmp):
    """The host's values before the test; the test fails if the lab did not give them back,
    and they are put back anyway."""
    before = host_files(lab_tmp)
    try:
        yield before
        assert host_files(lab_tmp) == before
    finally:
        put_back(before)
        put_back(before)  # a ratio written second may have zeroed a *_bytes written first


def host_metrics(lab_dir: Path) -> list[tuple]:
    rows = store_query(
        lab_dir,
        "select p.swept, m.status, m.reason, m.metrics from measurements m"
        " join points p using (run_id, point_index) order by m.started_at",
    )
    return [
        (json.loads(swept)["step"], status, reason, json.loads(metrics).get("host"))
        for swept, status, reason, metrics in rows
    ]


def test_the_os_rung_is_applied_recorded_and_put_back_after_the_run(tmp_path, lab_tmp, host_before):
    lab_dir = tmp_path / "lab"
    result = run_cli("run", SPEC, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    rows = host_metrics(lab_dir)
    assert [(step, status) for step, status, _, _ in rows] == [
        *[("base", "ok")] * 3, *[("os", "ok")] * 3, *[("after", "ok")] * 3,
    ]  # fmt: skip
    assert all(host is None for step, _, _, host in rows if step == "base")
    first_os = rows[3][3]
    applied = first_os["applied"]
    assert {name: value["now"] for name, value in applied.items()} == OS_RUNG
    swappiness = applied["vm.swappiness"]
    assert swappiness["path"] == "/proc/sys/vm/swappiness"
    assert swappiness["before"] == host_before["/proc/sys/vm/swappiness"].strip()
    assert swappiness["written"] == (swappiness["before"] != "10")
    assert applied["readahead"]["path"].endswith("/queue/read_ahead_kb")
    assert "host settings put back: " in result.stderr
    assert f"vm.swappiness = {swappiness['before']}" in result.stderr
    # later points of the rung, and the rung after it, find them in force: nothing rewritten
    for _, _, _, host in rows[4:]:
        assert {name: value["now"] for name, value in host["applied"].items()} == OS_RUNG
        assert not any(value["written"] for value in host["applied"].values())


def test_a_point_that_fails_on_its_host_settings_leaves_the_host_as_it_was(
    tmp_path, lab_tmp, host_before
):
    """Another live lab holds vm.swappiness (this test's own entry in the registry): the
    rung's points fail with that, after the setting before it was written; the run goes on.
    (A scheduler the disk does not offer, the seed's "deadline", is refused before the run:
    test_bad_input_round4.py.)"""
    held = owned.record(host_settings.KIND, "/proc/sys/vm/swappiness", name="vm.swappiness")
    lab_dir = tmp_path / "lab"
    try:
        result = run_cli("run", SPEC, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp)
    finally:
        owned.forget(held)
    assert result.returncode == 0, result.stderr
    rows = host_metrics(lab_dir)
    failed = [(step, reason, host) for step, status, reason, host in rows if status == "failed"]
    assert [step for step, _, _ in failed] == ["os"] * 3 + ["after"] * 3
    step, reason, host = failed[0]
    assert reason.startswith(
        f"host_setting_busy: vm.swappiness is set by another lab (pid {os.getpid()})"
    )
    assert host["applied"]["transparent_hugepage"]["now"] == "never"  # how far it got
    assert "vm.swappiness" not in host["applied"]


@pytest.mark.parametrize("how", ["ctrl-c", "kill-9-then-runs"])
def test_an_interrupted_lab_gives_the_host_back(tmp_path, lab_tmp, host_before, how):
    lab_dir = tmp_path / "lab"
    args = ["run", SPEC, "--lab-dir", lab_dir, "--no-report"]
    with lab_process(args, tmp_path, lab_tmp) as lab:
        # the first point of the OS rung is stored: its settings are in force
        wait_until_measuring(lab, lab_dir, tmp_path, measurements=4)
        assert Path("/proc/sys/vm/swappiness").read_text().strip() == "10"
        assert "[never]" in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
        if how == "ctrl-c":
            lab.send_signal(signal.SIGINT)
            assert lab.wait(timeout=CLI_TIMEOUT_S) == 130
            assert "host settings put back: " in lab_stderr(tmp_path)
            return  # host_before checks every value
        lab.send_signal(signal.SIGKILL)
        lab.wait()
    assert Path("/proc/sys/vm/swappiness").read_text().strip() == "10"  # nobody put it back yet
    result = run_cli("runs", "--lab-dir", lab_dir, tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    swappiness = host_before["/proc/sys/vm/swappiness"].strip()
    assert (
        f"restored vm.swappiness (/proc/sys/vm/swappiness = {swappiness}), set by a killed lab "
        f"(pid {lab.pid})"
    ) in result.stderr


@pytest.mark.skipif(not fusedisk.availability()[0], reason="the emulated disk is unavailable")
def test_on_the_emulated_disk_readahead_is_the_mount_s_and_there_is_no_scheduler(
    tmp_path, lab_tmp, host_before
):
    """The data on a FUSE mount has no block queue: the scheduler is not applicable, said so;
    the read-ahead is the mount's own (its bdi, /sys/class/bdi/0:N), which goes with it."""
    spec = tmp_path / "fuse.toml"
    spec.write_text(SPEC.read_text().replace("[pgbench]", '[machine]\ndisk = "nvme"\n\n[pgbench]'))
    lab_dir = tmp_path / "lab"
    result = run_cli("run", spec, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp)
    assert result.returncode == 0, result.stderr
    rows = host_metrics(lab_dir)
    assert all(status == "ok" for _, status, _, _ in rows), rows
    host = rows[3][3]
    assert set(host["not_applicable"]) == {"io_scheduler"}
    assert re.fullmatch(
        r"not applicable here: the data is on the emulated disk \(FUSE\), device 0:\d+, no "
        r"block queue",
        host["not_applicable"]["io_scheduler"],
    )
    readahead = host["applied"]["readahead"]
    assert readahead["path"].startswith("/sys/class/bdi/0:")
    assert readahead["now"] == "4096"
    assert not Path(readahead["path"]).exists()  # unmounted with the disk
