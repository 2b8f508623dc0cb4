"""vm.nr_hugepages: sizing it for the server, and putting it back as it was.

The value before the lab touched it is also written to a state file, so that a lab killed
while huge pages were raised is undone by the next lab (`restore_abandoned`).
"""

import contextlib
import json
import math
import os
from pathlib import Path

NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")
MEMINFO = Path("/proc/meminfo")
STATE_FILE = Path("/run/pgcachelab/nr_hugepages.json")


class HugePagesUnavailable(Exception):
    """The kernel could not provide the pages; recorded as reason `hugepages_unavailable`."""


def parse_meminfo_hugepages(text: str) -> dict:
    """HugePages_Total/Free/Rsvd/Surp and the page size from /proc/meminfo."""
    wanted = {"HugePages_Total": "total", "HugePages_Free": "free", "HugePages_Rsvd": "reserved",
              "HugePages_Surp": "surplus"}  # fmt: skip
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in wanted:
            values[wanted[key]] = int(rest.split()[0])
        elif key == "Hugepagesize":
            values["page_size_bytes"] = int(rest.split()[0]) * 1024
    return values


def read_hugepages() -> dict:
    try:
        return parse_meminfo_hugepages(MEMINFO.read_text())
    except OSError:
        return {}


def pages_for_bytes(size_bytes: int, page_size_bytes: int) -> int:
    return math.ceil(size_bytes / page_size_bytes)


def parse_vmpeak_bytes(status_text: str) -> int | None:
    """VmPeak of /proc/PID/status in bytes: the seeds' way to size huge pages before 15."""
    for line in status_text.splitlines():
        if line.startswith("VmPeak:"):
            return int(line.split()[1]) * 1024
    return None


def availability() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "setting vm.nr_hugepages needs root"
    if not os.access(NR_HUGEPAGES, os.W_OK):
        return False, f"{NR_HUGEPAGES} is not writable here"
    return True, ""


class HugePagesReservation:
    """Raises vm.nr_hugepages for the server and restores the original value at the end."""

    def __init__(self):
        self.original: int | None = None

    def ensure(self, pages_needed: int) -> dict:
        """Make `pages_needed` free huge pages exist (the server is stopped at this moment)."""
        current = int(NR_HUGEPAGES.read_text())
        if self.original is None:
            self.original = current
            _remember(current)
        before = read_hugepages()
        used_by_others = before.get("total", 0) - before.get("free", 0) + before.get("reserved", 0)
        target = used_by_others + pages_needed
        if target != current:
            NR_HUGEPAGES.write_text(str(target))
        after = read_hugepages()
        if after.get("total", 0) < target:
            raise HugePagesUnavailable(
                f"hugepages_unavailable: the server needs {pages_needed} huge pages, the kernel "
                f"provided {after.get('total', 0) - used_by_others} (memory too fragmented or "
                f"too small)"
            )
        return {"pages_needed": pages_needed, "nr_hugepages": target}

    def release(self) -> None:
        """Back to the original value, once no server of ours holds pages."""
        if self.original is None:
            return
        NR_HUGEPAGES.write_text(str(self.original))
        self.original = None
        _forget()


def _remember(original: int) -> None:
    with contextlib.suppress(OSError):
        STATE_FILE.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        STATE_FILE.write_text(json.dumps({"original": original, "owner_pid": os.getpid()}))


def _forget() -> None:
    with contextlib.suppress(OSError):
        STATE_FILE.unlink()
    with contextlib.suppress(OSError):
        STATE_FILE.parent.rmdir()


def restore_abandoned() -> int | None:
    """Put back vm.nr_hugepages that a killed lab raised; returns the restored value."""
    try:
        state = json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        return None
    if Path(f"/proc/{state.get('owner_pid')}").exists() and state.get("owner_pid") != os.getpid():
        return None  # that lab is alive and will restore it itself
    with contextlib.suppress(OSError):
        NR_HUGEPAGES.write_text(str(state["original"]))
    _forget()
    return state["original"]
