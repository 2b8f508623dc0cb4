"""A stored run over data sizes (seed 004) judged: its steps, where tps drops and which
boundary each matches, and its regimes, where the data lived; the report's steps and regimes
sections and `advise` read the same findings."""

from pgcachelab.analysis.regimes import Regime, regimes
from pgcachelab.analysis.run_data import PointResult, RunData
from pgcachelab.analysis.steps import SizePoint, StepFinding, find_steps


def run_steps(data: RunData) -> StepFinding | None:
    """The run's steps, or None when it did not sweep data sizes alone under one
    shared_buffers (other swept keys would mix series into one line). Found once per run
    data: the plots and the section all ask."""
    if "steps" not in data.memo:
        data.memo["steps"] = (
            points_steps(data.points, data.memory_available_bytes)
            if data.swept_keys == ["scale"]
            else None
        )
    found = data.memo["steps"]
    return found if isinstance(found, StepFinding) else None


def points_steps(results: list[PointResult], memory_bytes: float | None) -> StepFinding | None:
    """The steps over these points' database sizes (one series: one shared_buffers), the
    report's and `advise`'s alike; None under several shared_buffers."""
    shared = {r.shared_buffers_bytes for r in results if r.shared_buffers_bytes}
    if len(shared) > 1:
        return None
    points = [
        SizePoint(r.point.label, r.database_size_bytes, tuple(m.tps for m in r.ok if m.tps))
        for r in results
        if r.database_size_bytes
    ]
    return find_steps(points, shared.pop() if shared else None, memory_bytes)


def emulated_disk(data: RunData) -> bool:
    return any((m.metrics.get("disk") or {}).get("profile") for r in data.points for m in r.ok)


def run_regimes(data: RunData) -> list[Regime]:
    """The run's regimes, or [] when it did not sweep data sizes under one shared_buffers."""
    shared = {r.shared_buffers_bytes for r in data.points if r.shared_buffers_bytes}
    memory = data.memory_available_bytes
    measured = [
        (r.point.label, r.database_size_bytes, r.tps.median)
        for r in data.points
        if r.database_size_bytes and r.tps is not None
    ]
    if len(shared) != 1 or not memory or len(measured) < 2:
        return []
    found = regimes(measured, shared.pop(), memory)
    return found if len(found) > 1 else []


def disk_label(data: RunData) -> str:
    """What lies beyond memory: the emulated disk's name, or the host's disk."""
    profiles = [((m.metrics.get("disk") or {}).get("profile")) for r in data.points for m in r.ok]
    names = {profile["name"] for profile in profiles if profile}
    return f"the emulated disk ({', '.join(sorted(names))})" if names else "the host's disk"
