"""On-CPU time of a local process: what one cache snapshot costs the server backend that
computes it, independent of how busy the machine is (the elapsed time is not)."""

from pathlib import Path


def cpu_seconds(pid: int) -> float | None:
    """Time `pid` has spent on a CPU so far, or None when it cannot be read (another
    machine's server, another user's process without root, no /proc).

    /proc/PID/schedstat's first field is the scheduler's own account in nanoseconds; the
    utime/stime of /proc/PID/stat are in clock ticks (10 ms), coarser than a snapshot."""
    try:
        return parse_schedstat(Path(f"/proc/{pid}/schedstat").read_text())
    except OSError:
        return None


def parse_schedstat(text: str) -> float | None:
    """Seconds on a CPU from the text of /proc/PID/schedstat ("ns-on-cpu ns-waiting slices")."""
    try:
        return int(text.split()[0]) / 1e9
    except (ValueError, IndexError):
        return None
