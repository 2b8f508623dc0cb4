"""Which hosts measured a run (issue 21): host classes, and a run's figures told apart by them.
Pure: the facts come from each measurement's "fleet" metrics (experiments/fleet.py).

Hosts of one class measure alike: same CPU model and count, memory and kernel. The hostname is
not part of the class (two identical instances are one class) and neither is the storage probe
(its figures move from one probe to the next); both are shown beside the class.

When classes measured points unevenly, point and host class are confounded (issue 38): a
difference between points may be a difference between machines (point_class_confounding).
"""

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.statistics import StabilityWarning
from pgcachelab.store.metric_types import FleetMetrics
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


def host_class(facts: Mapping[str, object]) -> str:
    """A class's name, from a host's facts (or a run's environment, which has the same keys):
    "Intel Xeon ... x2, 24GB, Linux 6.1.0-18-amd64"."""
    memory = facts.get("memory_total_bytes")
    return (
        f"{facts.get('cpu_model') or 'unknown CPU'} x{facts.get('cores') or '?'},"
        f" {format_bytes(memory) if isinstance(memory, int | float) and memory else '? memory'},"
        f" Linux {facts.get('kernel') or '?'}"
    )


@dataclass
class ClassUse:
    """What one host class measured in a run."""

    host_class: str
    facts: dict[str, object]  # as its first measurement recorded them
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


def host_split(
    measured: Iterable[tuple[str, str, float | None, FleetMetrics | None]],
) -> HostSplit:
    """(point label, status, tps, fleet metrics) of each measurement -> who measured what.
    Measurements without fleet metrics (a run measured by `run`, not by agents) are left out."""
    classes: dict[str, ClassUse] = {}
    tps: dict[str, dict[str, list[float]]] = {}
    for label, status, value, fleet in measured:
        name = fleet.get("host_class") if fleet else None
        if not fleet or not name:
            continue
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


# -- point and host class confounded (issue 38) ------------------------------------------------

# What to do about it, in the spec's words.
CONFOUNDING_REMEDY = (
    '[fleet] host_class = "..." (every point on one class) or [fleet] classes = [...] (every'
    " point spread over every class listed)"
)
POINTS_NAMED = 4  # in a finding's text; the others are counted


@dataclass(frozen=True)
class Confounding:
    """Host classes measured the points unevenly: a difference between points may be one
    between machines.

    A blocked design's view, the host class as the block: a point's effect is free of the
    class's only when every point saw the classes in the same proportions. Points that share
    no class with the others (groups > 1) are completely confounded with their classes: no
    measurement of the run tells them apart from the machines. Otherwise the mixes differ
    (partly confounded): each point's median weighs the classes differently.
    """

    # point label -> host class -> succeeded measurements, both in the order they first measured
    counts: dict[str, dict[str, int]]
    # the points linked by a shared class, with their classes; one group per set of machines
    groups: list[tuple[list[str], list[str]]]

    @property
    def complete(self) -> bool:
        return len(self.groups) > 1

    @property
    def classes(self) -> list[str]:
        return list(dict.fromkeys(name for by_class in self.counts.values() for name in by_class))

    def shares(self) -> dict[str, dict[str, float]]:
        """Point -> each class's share of its succeeded measurements (0 for a class it lacks)."""
        return {
            label: {name: by_class.get(name, 0) / sum(by_class.values()) for name in self.classes}
            for label, by_class in self.counts.items()
        }

    def largest_gap(self) -> float:
        """The largest difference between two points' shares of one class (0..1)."""
        shares = self.shares().values()
        return max(
            max(share[name] for share in shares) - min(share[name] for share in shares)
            for name in self.classes
        )

    def measured_text(self) -> str:
        """Each point's succeeded measurements by class: "clients=1: 3 on A; clients=2: 3 on B"."""
        return "; ".join(
            f"{label}: " + " and ".join(f"{n} on {name}" for name, n in by_class.items())
            for label, by_class in self.counts.items()
        )

    def text(self) -> str:
        """What is confounded, with which classes, in one sentence (no stop)."""
        if self.complete:
            lined_up = "; ".join(
                f"{_named(points)} only on {' and '.join(names)}" for points, names in self.groups
            )
            return (
                f"point and host class are completely confounded: {lined_up}; a difference "
                "between points measured on different classes may be one between the machines, "
                "and no measurement of the run can tell which"
            )
        shares = self.shares()
        mixes = [
            f"{label}: "
            + " and ".join(
                f"{share:.0%} on {name}" for name, share in shares[label].items() if share
            )
            for label in shares
        ]
        more = len(mixes) - POINTS_NAMED
        return (
            "point and host class are partly confounded: the classes' shares of the points'"
            f" measurements differ by up to {self.largest_gap() * 100:.0f} percentage points ("
            + "; ".join(mixes[:POINTS_NAMED])
            + (f"; and {more} more point(s)" if more > 0 else "")
            + "); each point's median weighs the machines differently, so part of a difference"
            " between points may be one between the machines"
        )


def _named(points: list[str]) -> str:
    more = len(points) - POINTS_NAMED
    return ", ".join(points[:POINTS_NAMED]) + (f" and {more} more" if more > 0 else "")


def point_class_confounding(
    measured: Iterable[tuple[str, str, str | None]],
) -> Confounding | None:
    """(point label, status, host class) of each measurement -> how point and host class are
    confounded; None when they are not: one class measured everything, or every point saw the
    classes in the same proportions. Failed measurements, and those without a host class
    (measured by `run`), are left out."""
    counts: dict[str, dict[str, int]] = {}
    for label, status, name in measured:
        if status == "ok" and name:
            by_class = counts.setdefault(label, {})
            by_class[name] = by_class.get(name, 0) + 1
    totals = {label: sum(by_class.values()) for label, by_class in counts.items()}
    pooled: dict[str, int] = {}
    for by_class in counts.values():
        for name, n in by_class.items():
            pooled[name] = pooled.get(name, 0) + n
    everything = sum(pooled.values())
    # balanced: each point's share of each class is the run's (exactly: counts, not floats)
    if all(
        Fraction(by_class.get(name, 0), totals[label]) == Fraction(n, everything)
        for label, by_class in counts.items()
        for name, n in pooled.items()
    ):
        return None
    return Confounding(counts, _linked_groups(counts))


def _linked_groups(counts: dict[str, dict[str, int]]) -> list[tuple[list[str], list[str]]]:
    """The points joined by the classes they share (the design's connected parts), in the order
    the points and classes first measured."""
    groups: list[tuple[set[str], set[str]]] = []
    for label, by_class in counts.items():
        points, classes = {label}, set(by_class)
        for group in [g for g in groups if g[1] & classes]:
            groups.remove(group)
            points, classes = points | group[0], classes | group[1]
        groups.append((points, classes))
    point_order = list(counts)
    class_order = list(dict.fromkeys(name for by_class in counts.values() for name in by_class))
    found = [
        (sorted(points, key=point_order.index), sorted(classes, key=class_order.index))
        for points, classes in groups
    ]
    return sorted(found, key=lambda group: point_order.index(group[0][0]))


def run_confounding(data: RunData) -> Confounding | None:
    return point_class_confounding(
        (result.point.label, m.status, (m.metrics.get("fleet") or {}).get("host_class"))
        for result in data.points
        for m in result.measurements
    )


def confounding_warning(confounding: Confounding) -> StabilityWarning:
    """The run's warning, among the measurement-quality ones."""
    return StabilityWarning("run", confounding.text(), CONFOUNDING_REMEDY, "hosts")


# -- two agents measuring on one host at once (issue 38) ------------------------------------------


def overlapping_on_one_host(
    measured: Iterable[tuple[str | None, str | None, float, float]],
) -> dict[str, int]:
    """host -> how many of its measurements overlapped another on the same host, from each
    fleet measurement's (host name, host id, start, end): two agents measuring on one machine
    at once measured each other's load. A host is the same by name or by identity (agents
    refuse a second agent per identity; an operator can still give one machine two)."""
    rows = [(name, host_id, start, end) for name, host_id, start, end in measured]
    flagged: set[int] = set()
    for key in (0, 1):  # by host name, then by host id
        by_host: dict[str, list[int]] = {}
        for index, row in enumerate(rows):
            if row[key]:
                by_host.setdefault(str(row[key]), []).append(index)
        for indexes in by_host.values():
            indexes.sort(key=lambda i: rows[i][2])
            latest_end, latest = float("-inf"), -1
            for i in indexes:
                if rows[i][2] < latest_end:
                    flagged.update({i, latest})
                if rows[i][3] > latest_end:
                    latest_end, latest = rows[i][3], i
    counts: dict[str, int] = {}
    for i in flagged:
        host = str(rows[i][0] or rows[i][1])
        counts[host] = counts.get(host, 0) + 1
    return dict(sorted(counts.items()))


def run_overlaps(data: RunData) -> dict[str, int]:
    return overlapping_on_one_host(
        (fleet.get("host"), fleet.get("host_id"), m.started_at, m.finished_at)
        for result in data.points
        for m in result.measurements
        if (fleet := m.metrics.get("fleet"))
    )


OVERLAP_REMEDY = "one agent per machine (agent refuses a second one per --host-id: give none)"


def overlap_warning(overlaps: dict[str, int]) -> StabilityWarning:
    hosts = ", ".join(f"{host} ({n})" for host, n in overlaps.items())
    problem = (
        f"measurements overlapped others on the same host, so two agents measured there at once"
        f" and each measured the other's load: {hosts}"
    )
    return StabilityWarning("run", problem, OVERLAP_REMEDY, "overlap")
