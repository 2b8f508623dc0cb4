"""Removing the shared memory a killed postmaster left (see shmem_layout for what and why).

Only a segment nobody is attached to is touched: a live postmaster stays attached to its SysV
segment, so `nattch == 0` together with the header's creator pid proves the server is gone. The
/dev/shm segments removed are the ones its control segment lists, owned by the server's user.
"""

import contextlib
import ctypes
import os
import stat
import time
from pathlib import Path

from pgcachelab.clusters.shmem_layout import (
    SysvSegment,
    dsm_control_handle,
    dsm_handles,
    dsm_segment_name,
    parse_pid_file,
    parse_sysvipc_shm,
)
from pgcachelab.machine.host_facts import read_proc_stat

SYSVIPC_SHM = Path("/proc/sysvipc/shm")
POSIX_SHM_DIR = Path("/dev/shm")
_SHM_RDONLY = 0o10000
_IPC_RMID = 0
_HEADER_BYTES = 64
DETACH_GRACE_S = 10.0


def release_shared_memory(data_dir: Path) -> list[str]:
    """Remove what a postmaster killed in `data_dir` left in shared memory; the names removed.

    Nothing happens for a server still running, one that shut down (no postmaster.pid) or one
    whose segments are already gone; never raises for any of them."""
    try:
        pid_file = parse_pid_file((data_dir / "postmaster.pid").read_text())
    except (OSError, ValueError):
        return []
    if pid_file.shm_id is None or _alive(pid_file.pid):
        return []
    segment = _unattached(pid_file.shm_id, pid_file.pid)
    if segment is None:
        return []
    removed = []
    control = _control_handle(segment)
    if control is not None:
        removed += _remove_dsm_segments(control, segment.uid)
    if _libc().shmctl(segment.shm_id, _IPC_RMID, None) == 0:
        removed.append(f"SysV segment {segment.shm_id}")
    return removed


def _unattached(shm_id: int, creator_pid: int) -> SysvSegment | None:
    """The dead postmaster's segment once its last backend has let go of it (backends of a
    killed postmaster exit when they next wait); None if it is not there, not the postmaster's
    or still attached after the grace period."""
    deadline = time.monotonic() + DETACH_GRACE_S
    while True:
        try:
            segment = parse_sysvipc_shm(SYSVIPC_SHM.read_text()).get(shm_id)
        except OSError:
            return None
        if segment is None or segment.creator_pid != creator_pid:
            return None
        if segment.attached == 0:
            return segment
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Running, or at least not a zombie waiting for its parent to reap it."""
    try:
        return not read_proc_stat(pid).zombie
    except OSError:
        return False


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    libc.shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
    libc.shmdt.argtypes = (ctypes.c_void_p,)
    libc.shmctl.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
    return libc


def _control_handle(segment: SysvSegment) -> int | None:
    libc = _libc()
    address = libc.shmat(segment.shm_id, None, _SHM_RDONLY)
    if address in (None, ctypes.c_void_p(-1).value):
        return None
    try:
        header = ctypes.string_at(address, _HEADER_BYTES)
    finally:
        libc.shmdt(address)
    return dsm_control_handle(header, segment.creator_pid)


def _remove_dsm_segments(control: int, uid: int) -> list[str]:
    control_path = POSIX_SHM_DIR / dsm_segment_name(control)
    try:
        if not _owned_file(control_path, uid):
            return []
        listed = dsm_handles(control_path.read_bytes())
    except OSError:
        return []
    removed = []
    for handle in [*listed, control]:
        path = POSIX_SHM_DIR / dsm_segment_name(handle)
        with contextlib.suppress(OSError):
            if _owned_file(path, uid):
                os.unlink(path)
                removed.append(path.name)
    return removed


def _owned_file(path: Path, uid: int) -> bool:
    """A regular file of `uid` (not a link another user planted in the shared directory)."""
    info = path.lstat()
    return stat.S_ISREG(info.st_mode) and info.st_uid == uid
