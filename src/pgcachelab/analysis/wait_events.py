"""Wait events of a measurement split by its alternating windows (issue 22). Pure functions.

The sampler (experiments/wait_sampler.py) stores [Unix time, {event: active backends}] ten
times a second. With `[inspect] alternate`, a sample belongs to a polled or a quiet window;
only the windows that have a whole pgbench progress sample count (the ones whose tps the sag
compares), so the samples taken after pgbench ended, or in a partial last window, do not.
Figures are per sample: the mean number of active client backends waiting on each event.
"""

from dataclasses import dataclass, field

from pgcachelab.analysis.inspect_overhead import Windows, window_tps
from pgcachelab.probes.wait_events import RUNNING, is_buffer_mapping
from pgcachelab.store.metric_types import MeasurementMetrics

POLLED, QUIET, WHOLE_RUN = "polled", "quiet", "run"


@dataclass
class WaitTally:
    samples: int = 0
    backends: dict[str, int] = field(default_factory=dict)  # event -> sum over the samples

    def add(self, backends: dict[str, int]) -> None:
        self.samples += 1
        for name, count in backends.items():
            self.backends[name] = self.backends.get(name, 0) + count

    def merge(self, other: "WaitTally") -> None:
        self.samples += other.samples
        for name, count in other.backends.items():
            self.backends[name] = self.backends.get(name, 0) + count

    def mean(self, name: str) -> float:
        return self.backends.get(name, 0) / self.samples if self.samples else 0.0

    @property
    def active(self) -> float:
        """Mean active client backends per sample."""
        return sum(self.backends.values()) / self.samples if self.samples else 0.0

    @property
    def buffer_mapping(self) -> float:
        """Mean backends per sample waiting on a buffer-mapping partition lock."""
        total = sum(c for name, c in self.backends.items() if is_buffer_mapping(name))
        return total / self.samples if self.samples else 0.0

    def top_waits(self, count: int = 3) -> list[tuple[str, float]]:
        """The `count` events with the most backends waiting, besides running."""
        waits = [(name, self.mean(name)) for name in self.backends if name != RUNNING]
        return sorted(waits, key=lambda item: (-item[1], item[0]))[:count]


def measured_windows(metrics: MeasurementMetrics, windows: Windows) -> set[int]:
    """Indexes of the windows with a whole pgbench progress sample (those the sag compares)."""
    progress = (metrics.get("pgbench") or {}).get("progress") or []
    return set(window_tps([(s["elapsed_s"], s["tps"]) for s in progress], windows))


def tally_measurement(metrics: MeasurementMetrics) -> dict[str, WaitTally]:
    """A measurement's samples tallied by window kind (polled, quiet), or as one tally for the
    whole run when it did not alternate; {} when it sampled no wait events."""
    record = metrics.get("wait_events")
    if not record or not record.get("samples"):
        return {}
    if not metrics.get("inspect_windows"):
        tally = WaitTally()
        for _, backends in record["samples"]:
            tally.add(backends)
        return {WHOLE_RUN: tally}
    windows = Windows(**metrics["inspect_windows"])
    kept = measured_windows(metrics, windows)
    tallies = {POLLED: WaitTally(), QUIET: WaitTally()}
    for taken_at, backends in record["samples"]:
        index = windows.index(taken_at)
        if index in kept:
            tallies[POLLED if windows.polled(index) else QUIET].add(backends)
    return tallies


def tally_measurements(measurements_metrics: list[MeasurementMetrics]) -> dict[str, WaitTally]:
    """The tallies of several measurements (a point's repetitions), added up by window kind."""
    total: dict[str, WaitTally] = {}
    for metrics in measurements_metrics:
        for kind, tally in tally_measurement(metrics).items():
            total.setdefault(kind, WaitTally()).merge(tally)
    return total


def buffer_mapping_excess(metrics: MeasurementMetrics) -> list[float]:
    """Per pair of neighbouring windows (0 and 1, 2 and 3, ...), the mean backends waiting on
    buffer mapping in the polled one minus that in the quiet one: the waits polling adds, paired
    like the tps ratios of the sag, so that what drifts within the run cancels."""
    record = metrics.get("wait_events")
    if not record or not record.get("samples") or not metrics.get("inspect_windows"):
        return []
    windows = Windows(**metrics["inspect_windows"])
    kept = measured_windows(metrics, windows)
    per_window: dict[int, WaitTally] = {}
    for taken_at, backends in record["samples"]:
        index = windows.index(taken_at)
        if index in kept:
            per_window.setdefault(index, WaitTally()).add(backends)
    excess = []
    for first in range(0, max(per_window, default=-1) + 1, 2):
        if first not in per_window or first + 1 not in per_window:
            continue
        polled, quiet = (first, first + 1) if windows.polled(first) else (first + 1, first)
        excess.append(per_window[polled].buffer_mapping - per_window[quiet].buffer_mapping)
    return excess
