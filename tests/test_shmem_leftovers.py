"""The shared memory a SIGKILLed postmaster leaves: the readers on captured segments (PostgreSQL 15
and 18), and a real server killed with SIGKILL whose segments the lab then removes."""

import os
import signal
from pathlib import Path

import pytest

from pgcachelab.clusters.shmem_layout import (
    dsm_control_handle,
    dsm_handles,
    parse_pid_file,
    parse_sysvipc_shm,
)
from pgcachelab.clusters.shmem_leftovers import SYSVIPC_SHM, release_shared_memory

DATA = Path(__file__).parent / "data" / "shmem"
# The captured servers: the control segment's handle and the segments it listed (pg_stat's
# pinned DSA segment, the one a killed server leaves beside the control segment).
CAPTURED = {"pg15": (276782864, [3684063440]), "pg18": (3110245366, [1072375352])}


@pytest.mark.parametrize("version", sorted(CAPTURED))
def test_the_header_names_the_control_segment_and_the_control_segment_its_segments(version):
    pid_file = parse_pid_file((DATA / f"{version}-postmaster.pid").read_text())
    header = (DATA / f"{version}-shmem-header.bin").read_bytes()
    control, listed = CAPTURED[version]
    assert dsm_control_handle(header, pid_file.pid) == control
    assert dsm_control_handle(header, pid_file.pid + 1) is None  # another server's segment
    assert dsm_control_handle(b"\0" * 64, pid_file.pid) is None
    assert dsm_handles((DATA / f"{version}-dsm-control.bin").read_bytes()) == listed
    assert dsm_handles(b"\0" * 100) == [] and dsm_handles(b"") == []


@pytest.mark.parametrize("version", sorted(CAPTURED))
def test_the_pid_file_and_sysvipc_show_the_segment_attached_then_left(version):
    pid_file = parse_pid_file((DATA / f"{version}-postmaster.pid").read_text())
    assert pid_file.data_dir.endswith("/pgdata") and pid_file.shm_id and pid_file.shm_key
    running = parse_sysvipc_shm((DATA / f"{version}-sysvipc-shm-running.txt").read_text())
    assert running[pid_file.shm_id].creator_pid == pid_file.pid
    assert running[pid_file.shm_id].attached > 0
    killed = parse_sysvipc_shm((DATA / f"{version}-sysvipc-shm-after-kill.txt").read_text())
    assert killed[pid_file.shm_id].attached == 0


def test_a_pid_file_written_while_starting_has_no_segment_yet():
    pid_file = parse_pid_file("4242\n/some/pgdata\n1795725610\n5432\n")
    assert (pid_file.pid, pid_file.shm_id) == (4242, None)
    with pytest.raises(ValueError):
        parse_pid_file("not a pid\n")


def _dsm_segments() -> set[str]:
    return {p.name for p in Path("/dev/shm").glob("PostgreSQL.*")}


def _sysv_ids() -> set[int]:
    return set(parse_sysvipc_shm(SYSVIPC_SHM.read_text()))


def test_a_server_killed_with_sigkill_leaves_nothing_once_stopped(running_cluster):
    running_cluster.connect().close()
    before_dsm, shm_id = (
        _dsm_segments(),
        parse_pid_file((running_cluster.data_dir / "postmaster.pid").read_text()).shm_id,
    )
    assert shm_id in _sysv_ids()
    assert release_shared_memory(running_cluster.data_dir) == []  # running: never touched
    os.kill(running_cluster.process.pid, signal.SIGKILL)  # the postmaster alone, as a user would
    running_cluster.stop()
    assert shm_id not in _sysv_ids()
    mine = before_dsm - _dsm_segments()
    assert mine, "no segment of the killed server was removed"
    assert not (mine & _dsm_segments())
