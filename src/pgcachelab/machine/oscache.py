"""The OS page cache: evicting a cluster's files, or everything, and dropping it cold."""

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Literal, get_args

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
OsCacheMode = Literal["keep", "drop-cluster", "drop-all"]
OS_CACHE_MODES: tuple[str, ...] = get_args(OsCacheMode)


def evict_files(directory: Path) -> dict:
    """posix_fadvise(DONTNEED) on every file under `directory`: clean cached pages leave.

    Works without root. Dirty pages stay, so callers checkpoint first.
    """
    files = evicted_bytes = 0
    for root, _dirs, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                try:
                    evicted_bytes += os.fstat(fd).st_size
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    files += 1
                finally:
                    os.close(fd)
    return {"files": files, "bytes": evicted_bytes}


READ_CHUNK = 1 << 20


def read_files(paths: list[Path]) -> int:
    """Read every file in `paths` through once, into the OS page cache; the bytes read. A file
    that is gone (a relation dropped meanwhile) is skipped."""
    total = 0
    for path in paths:
        with contextlib.suppress(OSError), open(path, "rb", buffering=0) as file:
            while chunk := file.read(READ_CHUNK):
                total += len(chunk)
    return total


def drop_all_availability() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "dropping the whole OS cache (vm.drop_caches) needs root"
    if not os.access(DROP_CACHES, os.W_OK):
        return False, f"{DROP_CACHES} is not writable here"
    return True, ""


def drop_all() -> None:
    """sync; echo 1 > /proc/sys/vm/drop_caches (page cache only, not dentries and inodes)."""
    subprocess.run(["sync"], check=True)
    DROP_CACHES.write_text("1")
