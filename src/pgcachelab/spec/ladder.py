"""Tuning ladders: named, cumulative configuration steps (seed 002's story), and settings given
as a share of the machine's memory. Pure functions.

A spec lists `[[ladder]]` steps in order; step N runs with everything steps 1..N set, so the
report can show what each step added. Memory settings are written as "25% of memory" and
resolved against the emulated machine's memory (or the real one), so one ladder fits any
machine instead of the seed's absolute 16GB.
"""

import re
from dataclasses import dataclass, field

STEP_KEYS = {"name", "description", "settings"}
# re.ASCII: \d would take other scripts' digits ("٣% of memory")
_MEMORY_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*of\s+memory\s*$", re.IGNORECASE | re.ASCII)


@dataclass(frozen=True)
class LadderStep:
    name: str
    description: str = ""
    settings: dict = field(default_factory=dict)  # server settings as text, as written
    workload: dict = field(default_factory=dict)  # workload parameters this step changes
    host: dict = field(default_factory=dict)  # host (OS) settings as their files take them


def memory_share(value: str) -> float | None:
    """0.25 for "25% of memory"; None when the value is not written that way."""
    match = _MEMORY_SHARE.match(value) if isinstance(value, str) else None
    return float(match.group(1)) / 100.0 if match else None


def resolve_memory_shares(settings: dict[str, str], memory_bytes: int | None) -> dict[str, str]:
    """Settings with every "N% of memory" replaced by a size in whole megabytes."""
    resolved = {}
    for name, value in settings.items():
        share = memory_share(value)
        if share is not None and memory_bytes:
            value = f"{max(1, int(memory_bytes * share) // 2**20)}MB"
        resolved[name] = value
    return resolved


def cumulative(steps: list[LadderStep]) -> list[tuple[dict, dict]]:
    """(settings, workload changes) in force at each step: each step keeps what came before."""
    settings: dict = {}
    workload: dict = {}
    in_force = []
    for step in steps:
        settings = {**settings, **step.settings}
        workload = {**workload, **step.workload}
        in_force.append((dict(settings), dict(workload)))
    return in_force


def host_in_force(steps: list[LadderStep]) -> list[dict]:
    """The host settings in force at each step: an OS rung's stay for the rungs after it."""
    host: dict = {}
    in_force = []
    for step in steps:
        host = {**host, **step.host}
        in_force.append(dict(host))
    return in_force
