"""How much of a relation's files sits in the OS page cache: mincore(2), as pgfincore does.

Each 1 GB segment file is mapped PROT_NONE (no page is touched, so nothing is read in) and
mincore() reports one byte per OS page. Since Linux 5.2 (commit 134fca9063ad) mincore reports
pages as resident only to callers that could write the file, so this is read as the files'
owner or root; `residency_reliable` says whether we are one of them.
"""

import ctypes
import os
from pathlib import Path

PAGE_SIZE_BYTES = os.sysconf("SC_PAGE_SIZE")
FORK_SUFFIXES = {"main": "", "fsm": "_fsm", "vm": "_vm", "init": "_init"}
_PROT_NONE = 0
_MAP_SHARED = 1
_RESIDENT_BIT = bytes(range(256)).translate(bytes(b & 1 for b in range(256)))

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
_MAP_FAILED = ctypes.c_void_p(-1).value


def resident_pages(vector: bytes) -> int:
    """Pages whose mincore byte has the low bit set (the other bits are reserved)."""
    return vector.translate(_RESIDENT_BIT).count(1)


def file_residency(path: str | Path) -> tuple[int, int]:
    """(bytes in the OS page cache, file size in bytes) of one file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        size_bytes = os.fstat(fd).st_size
        if size_bytes == 0:
            return 0, 0
        address = _libc.mmap(None, size_bytes, _PROT_NONE, _MAP_SHARED, fd, 0)
        if address in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap of {path} failed")
        try:
            pages = (size_bytes + PAGE_SIZE_BYTES - 1) // PAGE_SIZE_BYTES
            vector = (ctypes.c_ubyte * pages)()
            if _libc.mincore(address, size_bytes, vector) != 0:
                raise OSError(ctypes.get_errno(), f"mincore of {path} failed")
        finally:
            _libc.munmap(address, size_bytes)
    finally:
        os.close(fd)
    return min(resident_pages(bytes(vector)) * PAGE_SIZE_BYTES, size_bytes), size_bytes


def segment_paths(data_dir: Path, main_fork_path: str, fork: str) -> list[Path]:
    """The files of one relation fork: PATH[_fork], PATH[_fork].1, .2, ... while they exist."""
    base = data_dir / (main_fork_path + FORK_SUFFIXES.get(fork, f"_{fork}"))
    paths: list[Path] = []
    segment = 0
    while True:
        path = base if segment == 0 else base.with_name(f"{base.name}.{segment}")
        if not path.exists():
            return paths
        paths.append(path)
        segment += 1


def relation_residency_bytes(data_dir: Path, main_fork_path: str, fork: str) -> int | None:
    """Bytes of one relation fork in the OS page cache; None when its files cannot be read."""
    total = 0
    try:
        for path in segment_paths(data_dir, main_fork_path, fork):
            total += file_residency(path)[0]
    except OSError:
        return None
    return total


def residency_reliable(data_dir: Path) -> bool:
    """True when mincore tells the truth for these files: we own them or are root."""
    try:
        return os.geteuid() == 0 or data_dir.stat().st_uid == os.geteuid()
    except OSError:
        return False
