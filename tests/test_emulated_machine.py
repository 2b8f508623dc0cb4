"""The emulated machine on a real server: the memory cap holds, and the machine is restored
(no cgroup, vm.nr_hugepages as before) after success, Ctrl-C and SIGKILL-then-resume.

These need root (cgroups, vm.nr_hugepages) and are skipped without it.
"""

import json
import os
import signal
import threading
from pathlib import Path

import pytest
from fix_cli import CLI_TIMEOUT_S, SPECS_DIR, run_cli
from fix_lab import lab_process, store_query, wait_until_measuring

from pgcachelab.clusters.binaries import find_pgbench
from pgcachelab.clusters.client import PgbenchTarget
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.machine.cgroup import PREFIX, find_hierarchy
from pgcachelab.machine.emulated import EmulatedMachine, capabilities
from pgcachelab.machine.hugepages import NR_HUGEPAGES
from pgcachelab.workloads.pgbench import init_args, run_pgbench_init

pytestmark = [
    pytest.mark.server,
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(ok for ok, _ in capabilities().values()),
        reason="needs root with memory cgroups, vm.nr_hugepages and drop_caches",
    ),
]

MIB = 1024 * 1024


def lab_cgroups() -> list[Path]:
    hierarchy, _ = find_hierarchy()
    return sorted(hierarchy.own_dir.glob(f"{PREFIX}*"))


def nr_hugepages() -> int:
    return int(NR_HUGEPAGES.read_text())


@pytest.fixture
def machine_before():
    """The machine's state before the test, which the lab must give back."""
    cgroups, pages = lab_cgroups(), nr_hugepages()
    yield
    assert lab_cgroups() == cgroups
    assert nr_hugepages() == pages


def test_the_cap_holds_while_the_server_reads_more_than_it(
    pg_install, server_os_user, cluster_parent, machine_before
):
    limit = 128 * MIB
    machine = EmulatedMachine(limit)
    machine.open()
    try:
        cluster = ManagedCluster.create(
            pg_install, server_os_user, parent_dir=cluster_parent, machine=machine
        )
        with cluster:
            cluster.apply_settings({"shared_buffers": "16MB"})
            target = PgbenchTarget(cluster.conninfo())
            # scale 16: ~240 MB of data, twice the limit, loaded and read by the capped server
            run_pgbench_init(find_pgbench(cluster.install), init_args(16, None, 18), target)
            usage_file = machine.cgroup.path / (
                "memory.usage_in_bytes" if machine.cgroup.hierarchy.version == 1
                else "memory.current"
            )  # fmt: skip
            samples, stop = [], threading.Event()

            def sample():
                while not stop.is_set():
                    samples.append(int(usage_file.read_text()))
                    stop.wait(0.01)

            sampler = threading.Thread(target=sample)
            sampler.start()
            try:
                with cluster.connect() as conn:
                    for _ in range(2):
                        conn.execute("select count(*) from pgbench_accounts").fetchone()
                    size = conn.execute("select pg_database_size(current_database())").fetchone()
            finally:
                stop.set()
                sampler.join()
            stats = machine.stats()["cgroup"]
            assert size[0] > 1.5 * limit
            assert max(samples) <= limit
            assert stats["usage_bytes"] <= limit
            assert stats["page_cache_bytes"] > 0
            assert stats["oom_kills"] == 0
            assert cluster.running  # not killed by the OOM killer
            cgroup_path = machine.cgroup.path
            assert cluster.process.pid in machine.cgroup.pids()
    finally:
        machine.close()
    assert not cgroup_path.exists()


def test_shared_buffers_over_the_limit_fails_its_point_with_a_reason(
    tmp_path, lab_tmp, machine_before
):
    lab_dir = tmp_path / "lab"
    result = run_cli(
        "run", SPECS_DIR / "shared-buffers-over-limit.toml", "--lab-dir", lab_dir, "--no-report",
        tmpdir=lab_tmp,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = store_query(
        lab_dir, "select point_index, status, reason from measurements order by point_index"
    )
    assert rows[0][:2] == (0, "failed")
    assert rows[0][2].startswith("shared_buffers_exceeds_memory: shared_buffers 256MB")
    assert rows[1][:2] == (1, "ok")


def test_huge_pages_and_limit_recorded_and_restored_after_a_run(tmp_path, lab_tmp, machine_before):
    lab_dir = tmp_path / "lab"
    result = run_cli(
        "run", SPECS_DIR / "emulated-small.toml", "--lab-dir", lab_dir, tmpdir=lab_tmp
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = store_query(
        lab_dir, "select point_index, status, reason, metrics from measurements order by 1"
    )
    assert len(rows) == 6
    for point_index, status, reason, metrics in rows:
        machine = json.loads(metrics)["machine"]
        huge_pages_on = point_index % 2 == 0
        if status == "failed":  # allowed only as the kernel's refusal, recorded as such
            assert huge_pages_on and reason.startswith("hugepages_unavailable"), reason
            continue
        assert machine["memory_limit_bytes"] == 256 * MIB
        assert 0 < machine["cgroup"]["peak_bytes"] <= 256 * MIB
        assert set(machine["hugepages"]) >= {"total", "free", "reserved"}
        assert (machine["hugepages"]["total"] > 0) == huge_pages_on
        # The server's cgroup's CPU; where v1 mounts cpuacct apart from memory, its processes'.
        resources = json.loads(metrics)["resources"]
        assert 0 < resources["summary"]["cgroup_cpu_pct"] <= 100
        if resources["source"]["cgroup"].startswith("the server's processes"):
            assert any("no CPU account" in note for note in resources["source"]["notes"])
    html = Path(result.stdout.strip()).read_text()
    assert "256MB (memory cgroup limit of the server)" in html


def test_huge_pages_come_out_of_the_emulated_ram(tmp_path, lab_tmp, machine_before):
    """The cap read back from the cgroup is RAM less the pool; a pool that leaves too little
    fails its point; blocks run the "on" block first, shared_buffers as written."""
    lab_dir = tmp_path / "lab"
    result = run_cli(
        "run", SPECS_DIR / "huge-pages-split.toml", "--lab-dir", lab_dir, "--no-report",
        tmpdir=lab_tmp,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = store_query(
        lab_dir,
        "select m.status, m.reason, m.metrics, p.swept from measurements m"
        " join points p using (run_id, point_index) order by m.started_at",
    )
    labels = [json.loads(swept) for _, _, _, swept in rows]
    assert [(s["huge_pages"], s["shared_buffers"]) for s in labels] == [
        ("on", "224MB"), ("on", "32MB"), ("off", "224MB"), ("off", "32MB"),
    ]  # fmt: skip
    (too_big, _, _, _), (on, _, on_metrics, _), (off_big, _, _, _), (off, _, off_metrics, _) = rows
    assert too_big == "failed"
    assert rows[0][1].startswith("hugepages_exceed_memory: the server's huge page pool of"), rows
    assert "less than the 64MB" in rows[0][1]
    refused = json.loads(rows[0][2])["machine"]["memory_accounting"]  # its own, not the last's
    assert refused["cap_bytes"] is None and refused["huge_pages_pool_bytes"] > 224 * MIB
    assert (on, off_big, off) == ("ok", "ok", "ok"), rows
    on_split = json.loads(on_metrics)["machine"]["memory_accounting"]
    off_split = json.loads(off_metrics)["machine"]["memory_accounting"]
    pool = on_split["huge_pages_pool_bytes"]
    assert 32 * MIB < pool < 64 * MIB  # shared_buffers and the rest of the shared memory
    assert pool == json.loads(on_metrics)["machine"]["hugepages_reserved_by_lab"][
        "pages_needed"] * 2 * MIB  # fmt: skip
    assert on_split["ram_bytes"] == off_split["ram_bytes"] == 256 * MIB
    assert on_split["cap_bytes"] == on_split["cap_read_back_bytes"] == 256 * MIB - pool
    assert off_split["cap_bytes"] == off_split["cap_read_back_bytes"] == 256 * MIB
    assert off_split["huge_pages_pool_bytes"] == 0
    # the "off" server's shared memory is charged to the cap as it is touched; the "on"
    # server's is in the pool
    off_shared = off_split["cap_bytes"] - off_split["os_cache_room_bytes"]
    on_shared = on_split["cap_bytes"] - on_split["os_cache_room_bytes"]
    assert off_shared > on_shared + 8 * MIB, (off_split, on_split)
    assert on_split["accounting"].startswith("cap = RAM - huge page pool")


def test_a_server_that_takes_the_host_s_free_huge_pages_is_not_measured(
    pg_install, server_os_user, cluster_parent, machine_before
):
    """huge_pages = try (the default) would put shared memory outside the cap when the host
    has free huge pages (a database host often does): the start fails, with the reason."""
    from pgcachelab.errors import ClusterError

    before = nr_hugepages()
    NR_HUGEPAGES.write_text(str(before + 64))  # the host's own pool, not the lab's
    machine = EmulatedMachine(256 * MIB)
    machine.open()
    try:
        cluster = ManagedCluster.create(
            pg_install, server_os_user, parent_dir=cluster_parent, machine=machine
        )
        with cluster:
            cluster._write_settings_file({"shared_buffers": "16MB"})
            with pytest.raises(ClusterError, match=r"^huge_pages_outside_the_cap: .*try, the"):
                cluster.start()
            assert not cluster.running
            cluster._write_settings_file({"shared_buffers": "16MB", "huge_pages": "off"})
            cluster.start()  # told off, it stays inside the cap
            assert cluster.running
    finally:
        machine.close()
        NR_HUGEPAGES.write_text(str(before))


@pytest.mark.parametrize("how", ["ctrl-c", "sigkill-then-resume"])
def test_interrupted_runs_give_the_machine_back(tmp_path, lab_tmp, machine_before, how):
    lab_dir = tmp_path / "lab"
    spec = SPECS_DIR / "emulated-small.toml"
    with lab_process(["run", spec, "--lab-dir", lab_dir, "--no-report"], tmp_path, lab_tmp) as lab:
        run_id, _ = wait_until_measuring(lab, lab_dir, tmp_path, measurements=1)
        if how == "ctrl-c":
            lab.send_signal(signal.SIGINT)
            assert lab.wait(timeout=CLI_TIMEOUT_S) == 130
            return  # machine_before checks the cgroup and huge pages
        lab.send_signal(signal.SIGKILL)
        lab.wait()
    result = run_cli("run", "--resume", run_id, "--lab-dir", lab_dir, "--no-report",
                     tmpdir=lab_tmp)  # fmt: skip
    assert result.returncode == 0, result.stderr
    [(status,)] = store_query(lab_dir, "select status from runs where run_id = ?", (run_id,))
    assert status == "done"
    assert os.path.exists(NR_HUGEPAGES)
