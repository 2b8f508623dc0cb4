"""What a postmaster's shared memory looks like from outside: pure readers of postmaster.pid,
/proc/sysvipc/shm, the SysV segment's header and the dynamic shared memory control segment.

A postmaster that ends normally (smart, fast or immediate shutdown) removes its SysV segment and
every /dev/shm/PostgreSQL.<handle> segment. One killed with SIGKILL removes none: they stay until
a server is started again on the same data directory, which finds them from postmaster.pid and
cleans up. A lab that removes the data directory instead must clean up as PostgreSQL would:

- postmaster.pid's seventh line holds the SysV segment's key and id;
- the SysV segment starts with PGShmemHeader { int32 magic; pid_t creatorPID; Size totalsize;
  Size freeoffset; dsm_handle dsm_control; ... } (storage/pg_shmem.h, the same from 9.4 to 18);
- the control segment is dsm_control_header { uint32 magic; uint32 nitems; uint32 maxitems;
  dsm_control_item item[] } (storage/ipc/dsm.c), each item starting { dsm_handle handle;
  uint32 refcnt; ... }; the item's size differs across versions, so it is derived from the
  segment's size (header + maxitems items).
"""

import struct
from dataclasses import dataclass

PG_SHMEM_MAGIC = 679834894  # PGShmemMagic
DSM_CONTROL_MAGIC = 0x9A503D32  # PG_DYNSHMEM_CONTROL_MAGIC
_HEADER = struct.Struct("=iiQQI")  # magic, creatorPID, totalsize, freeoffset, dsm_control
_CONTROL_HEADER = struct.Struct("=III")
_CONTROL_ITEMS_AT = 16  # the item array is 8-byte aligned (its items hold a pointer)
_ITEM_START = struct.Struct("=II")  # handle, refcnt


@dataclass(frozen=True)
class PidFile:
    pid: int
    data_dir: str
    shm_key: int | None
    shm_id: int | None


@dataclass(frozen=True)
class SysvSegment:
    key: int
    shm_id: int
    creator_pid: int
    attached: int
    uid: int


def parse_pid_file(text: str) -> PidFile:
    """postmaster.pid: pid, data directory, ..., "key shmid" on line 7 (absent while starting)."""
    lines = text.splitlines()
    if len(lines) < 2 or not lines[0].strip().isdigit():
        raise ValueError("not a postmaster.pid: no pid on its first line")
    key = shm_id = None
    if len(lines) >= 7:
        fields = lines[6].split()
        if len(fields) == 2 and all(f.isdigit() for f in fields):
            key, shm_id = int(fields[0]), int(fields[1])
    return PidFile(int(lines[0]), lines[1], key, shm_id)


def parse_sysvipc_shm(text: str) -> dict[int, SysvSegment]:
    """/proc/sysvipc/shm by segment id."""
    lines = text.splitlines()
    if not lines:
        return {}
    columns = lines[0].split()
    segments = {}
    for line in lines[1:]:
        row = dict(zip(columns, line.split(), strict=False))
        try:
            segment = SysvSegment(
                key=int(row["key"]),
                shm_id=int(row["shmid"]),
                creator_pid=int(row["cpid"]),
                attached=int(row["nattch"]),
                uid=int(row["uid"]),
            )
        except (KeyError, ValueError):
            continue
        segments[segment.shm_id] = segment
    return segments


def dsm_control_handle(header: bytes, creator_pid: int) -> int | None:
    """The control segment's handle in a SysV segment's header; None unless the header is a
    PostgreSQL one created by `creator_pid` (0 means the server had no control segment)."""
    if len(header) < _HEADER.size:
        return None
    magic, pid, _total, _free, control = _HEADER.unpack_from(header)
    if magic != PG_SHMEM_MAGIC or pid != creator_pid or control == 0:
        return None
    return control


def dsm_handles(control: bytes) -> list[int]:
    """The segments a control segment still lists (reference count above zero)."""
    if len(control) < _CONTROL_ITEMS_AT:
        return []
    magic, items, max_items = _CONTROL_HEADER.unpack_from(control)
    if magic != DSM_CONTROL_MAGIC or max_items == 0 or items > max_items:
        return []
    stride = (len(control) - _CONTROL_ITEMS_AT) // max_items
    if stride < _ITEM_START.size:
        return []
    handles = []
    for index in range(items):
        handle, refcnt = _ITEM_START.unpack_from(control, _CONTROL_ITEMS_AT + index * stride)
        if refcnt > 0 and handle != 0:
            handles.append(handle)
    return handles


def dsm_segment_name(handle: int) -> str:
    """The POSIX segment's name (dsm_impl_posix: "/PostgreSQL.%u")."""
    return f"PostgreSQL.{handle}"
