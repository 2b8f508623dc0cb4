"""Which hosts measured a run (issue 21): host classes, and a run's figures told apart by them.
Pure: the facts come from each measurement's "fleet" metrics (experiments/fleet.py).

Hosts of one class measure alike: same CPU model and count, memory and kernel. The hostname is
not part of the class (two identical instances are one class) and neither is the storage probe
(its figures move from one probe to the next); both are shown beside the class.
"""

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from pgcachelab.analysis.run_data import RunData
from pgcachelab.units import format_bytes

# The facts a class is made of, and how the report names them.
CLASS_FACTS = (
    ("cpu_model", "CPU"),
    ("cores", "cores"),
    ("memory_total_bytes", "memory"),
    ("kernel", "kernel"),
)
# A run's environment keys that describe the host it ran on: for a fleet run they are the
# queueing host's, not those of the hosts that measured it.
HOST_ENVIRONMENT_KEYS = frozenset({"hostname", *(key for key, _ in CLASS_FACTS)})


def host_class(facts: dict) -> str:
    """A class's name, from a host's facts (or a run's environment, which has the same keys):
    "Intel Xeon ... x2, 24GB, Linux 6.1.0-18-amd64"."""
    memory = facts.get("memory_total_bytes")
    return (
        f"{facts.get('cpu_model') or 'unknown CPU'} x{facts.get('cores') or '?'},"
        f" {format_bytes(memory) if memory else '? memory'}, Linux {facts.get('kernel') or '?'}"
    )


@dataclass
class ClassUse:
    """What one host class measured in a run."""

    host_class: str
    facts: dict  # as its first measurement recorded them
    hosts: set[str] = field(default_factory=set)
    ok: int = 0
    failed: int = 0


@dataclass(frozen=True)
class HostSplit:
    classes: list[ClassUse]  # in the order they first measured
    # point label -> host class -> median tps of the class's succeeded measurements
    medians: dict[str, dict[str, float]]

    @property
    def mixed(self) -> bool:
        return len(self.classes) > 1

    def differing_facts(self) -> list[str]:
        """The names of the class facts that differ between the classes ("CPU", "memory")."""
        return [
            name
            for key, name in CLASS_FACTS
            if len({str(use.facts.get(key)) for use in self.classes}) > 1
        ]


def host_split(measured: Iterable[tuple[str, str, float | None, dict | None]]) -> HostSplit:
    """(point label, status, tps, fleet metrics) of each measurement -> who measured what.
    Measurements without fleet metrics (a run measured by `run`, not by agents) are left out."""
    classes: dict[str, ClassUse] = {}
    tps: dict[str, dict[str, list[float]]] = {}
    for label, status, value, fleet in measured:
        if not fleet or not fleet.get("host_class"):
            continue
        name = fleet["host_class"]
        use = classes.setdefault(name, ClassUse(name, fleet.get("facts") or {}))
        use.hosts.add(fleet.get("host") or "?")
        if status == "ok":
            use.ok += 1
            if value is not None:
                tps.setdefault(label, {}).setdefault(name, []).append(value)
        else:
            use.failed += 1
    medians = {
        label: {name: statistics.median(values) for name, values in by_class.items()}
        for label, by_class in tps.items()
    }
    return HostSplit(list(classes.values()), medians)


def classes_text(classes: Iterable[str]) -> str:
    """How compare shows a run's host classes: one, or several "mixed"."""
    names = sorted(set(classes))
    if len(names) > 1:
        return f"{len(names)} host classes mixed: " + "; ".join(names)
    return names[0] if names else "?"


def run_host_split(data: RunData) -> HostSplit:
    return host_split(
        (result.point.label, m.status, m.tps, m.metrics.get("fleet"))
        for result in data.points
        for m in result.measurements
    )
