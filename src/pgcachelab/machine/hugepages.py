"""vm.nr_hugepages: sizing it for the server, and taking back what the lab added.

Labs may run side by side, so none restores an absolute value it saw once: each adds the pages
its server needs on top of the pool as it finds it, and takes back exactly what it added. The
read-modify-write happens under a lock, and each lab's addition is written to a state file of
its own, so that what a killed lab added is taken back by the next lab (`restore_abandoned`).
"""

import contextlib
import fcntl
import json
import math
import os
from pathlib import Path

from pgcachelab.machine import owned
from pgcachelab.machine.host_facts import read_hugepages
from pgcachelab.machine.hugepages_estimate import DEFAULT_PAGE_SIZE_BYTES

NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")
STATE_DIR = Path("/run/pgcachelab/hugepages")  # one <pid>.json per lab: the pages it added


class HugePagesUnavailable(Exception):
    """The kernel could not provide the pages; recorded as reason `hugepages_unavailable`."""


def page_size_bytes() -> int:
    """The kernel's default huge page size (2 MiB on x86-64)."""
    return read_hugepages().get("page_size_bytes", DEFAULT_PAGE_SIZE_BYTES)


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
    """Adds the server's huge pages to vm.nr_hugepages; takes them back at the end."""

    def __init__(self):
        self.added = 0

    def ensure(self, pages_needed: int) -> dict:
        """Make the pool hold `pages_needed` pages for us (the server is stopped right now)."""
        with _locked():
            baseline = int(NR_HUGEPAGES.read_text()) - self.added  # the pool without us
            target = baseline + pages_needed
            _remember(max(self.added, pages_needed))  # before the write: a kill may come
            NR_HUGEPAGES.write_text(str(target))
            total = read_hugepages().get("total", target)
            if total >= target:
                self.added = pages_needed
                _remember(self.added)
            else:  # a point that cannot have its pages fails: give back the partial pool
                NR_HUGEPAGES.write_text(str(baseline))
                self.added = 0
                _remember(0)
        if total < target:
            raise HugePagesUnavailable(
                f"hugepages_unavailable: the server needs {pages_needed} huge pages, the kernel "
                f"provided {max(0, total - baseline)} (memory too fragmented or too small)"
            )
        return {"pages_needed": pages_needed, "nr_hugepages": target}

    def release(self) -> None:
        """Take back what this lab added, once no server of ours holds pages."""
        # without root nothing was added, and root's state directory cannot even be looked in
        if not self.added and (os.geteuid() != 0 or not _state_file(os.getpid()).exists()):
            return
        with _locked():
            _take_back(self.added)
            self.added = 0
            _forget(os.getpid())


def _state_file(pid: int) -> Path:
    return STATE_DIR / f"{pid}.json"


@contextlib.contextmanager
def _locked():
    STATE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(STATE_DIR / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _take_back(pages: int) -> None:
    current = int(NR_HUGEPAGES.read_text())
    NR_HUGEPAGES.write_text(str(max(0, current - pages)))


def _remember(added: int) -> None:
    # The start time tells a dead lab from a new process that got its pid (machine/owned.py).
    owner = owned.Owner.me()
    _state_file(os.getpid()).write_text(
        json.dumps({"added": added, "start_time": owner.start_time})
    )


def _forget(pid: int) -> None:
    with contextlib.suppress(OSError):
        _state_file(pid).unlink()
    if not any(STATE_DIR.glob("*.json")):
        for leftover in (STATE_DIR / "lock", STATE_DIR, STATE_DIR.parent):
            with contextlib.suppress(OSError):
                leftover.unlink() if leftover.name == "lock" else leftover.rmdir()


def _alive(pid: int, start_time: int | None) -> bool:
    if start_time is None:  # written before start times were recorded
        return Path(f"/proc/{pid}").exists()
    return owned.Owner(pid, start_time).alive()


def restore_abandoned() -> int | None:
    """Take back the pages killed labs added; returns vm.nr_hugepages afterwards, if changed."""
    # Only root can have added pages, or take them back; a lab without root found root's state
    # directory (left by a root lab on the same machine) and died on its lock (issue 17).
    if not STATE_DIR.is_dir() or os.geteuid() != 0:
        return None
    restored = None
    with _locked():
        for state in STATE_DIR.glob("*.json"):
            pid = int(state.stem)
            try:
                recorded = json.loads(state.read_text())
                added = int(recorded.get("added", 0))
                start_time = recorded.get("start_time")
            except (OSError, ValueError, AttributeError):
                added, start_time = 0, None
            if pid == os.getpid() or _alive(pid, start_time):
                continue  # alive: it takes back its own pages
            _take_back(added)
            restored = int(NR_HUGEPAGES.read_text())
            _forget(pid)
    return restored
