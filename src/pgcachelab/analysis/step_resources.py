"""What the machine did either side of a step (issue 32). Pure functions.

A step in tps says that something changed; the resource summaries of the points either side
say what: the CPU going idle while iowait rises and the device starts reading means the data
now comes from the disk; the CPU staying busy means the cost moved inside the server (e.g.
buffer replacement). Each point's figures are medians over its repetitions of each
repetition's summary (experiments/resource_sampler.py).
"""

import statistics

# The summary figures a step's explanation quotes, in the order it quotes them.
QUOTED = (
    "cpu_busy_pct",
    "cpu_iowait_pct",
    "device_reads_per_s",
    "device_writes_per_s",
    "device_wait_ms",
)


def point_resources(summaries: list[dict[str, float] | None]) -> dict[str, float] | None:
    """Medians over the repetitions of each summary figure; cpu_busy_pct is user + system."""
    present = [s for s in summaries if s]
    if not present:
        return None
    medians = {}
    for key in {k for s in present for k in s}:
        values = [s[key] for s in present if isinstance(s.get(key), int | float)]
        if values:
            medians[key] = statistics.median(values)
    busy = [
        s["cpu_user_pct"] + s["cpu_system_pct"]
        for s in present
        if s.get("cpu_user_pct") is not None and s.get("cpu_system_pct") is not None
    ]
    if busy:
        medians["cpu_busy_pct"] = statistics.median(busy)
    return medians


def step_explanation(before: dict[str, float] | None, after: dict[str, float] | None) -> str | None:
    """ "CPU busy 95% → 20%, iowait 2% → 93%, device reads 12 → 160/s at 6.1 ms" or None."""
    if not before or not after:
        return None
    parts = []
    if _both(before, after, "cpu_busy_pct"):
        parts.append(f"CPU busy {_pct(before['cpu_busy_pct'])} → {_pct(after['cpu_busy_pct'])}")
    if _both(before, after, "cpu_iowait_pct"):
        parts.append(f"iowait {_pct(before['cpu_iowait_pct'])} → {_pct(after['cpu_iowait_pct'])}")
    if _both(before, after, "device_reads_per_s"):
        wait = after.get("device_wait_ms")
        at = f" at {wait:.2g} ms" if wait else ""
        parts.append(
            f"device reads {_rate(before['device_reads_per_s'])} → "
            f"{_rate(after['device_reads_per_s'])}/s{at}"
        )
    if (
        _both(before, after, "device_writes_per_s")
        and max(before["device_writes_per_s"], after["device_writes_per_s"]) >= 1
    ):
        parts.append(
            f"writes {_rate(before['device_writes_per_s'])} → "
            f"{_rate(after['device_writes_per_s'])}/s"
        )
    return ", ".join(parts) or None


def _both(before: dict[str, float], after: dict[str, float], key: str) -> bool:
    return before.get(key) is not None and after.get(key) is not None


def _pct(value: float) -> str:
    return f"{value:.0f}%"


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"
