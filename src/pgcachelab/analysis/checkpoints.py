"""The CHECKPOINT a run's measurements ran right before their measured run
(experiments/checkpoint.py), summed up for the report's context. Pure."""

import statistics

from pgcachelab.store.metric_types import MeasurementMetrics


def checkpoint_note(metrics_list: list[MeasurementMetrics]) -> str | None:
    """ "at 12 of 24 measurements: 8.1 ms median (3.2..40 ms), 150 buffers written (median);
    each checked on pg_stat_checkpointer.num_requested"; None when no measurement had one."""
    done = [m["checkpoint"] for m in metrics_list if m.get("checkpoint")]
    if not done:
        return None
    durations = [c["duration_ms"] for c in done]
    buffers = statistics.median(c["buffers_written"] for c in done)
    counters = ", ".join(dict.fromkeys(c["counter"] for c in done))
    return (
        f"at {len(done)} of {len(metrics_list)} measurements: "
        f"{statistics.median(durations):,.1f} ms median ({min(durations):,.1f}.."
        f"{max(durations):,.1f} ms), {buffers:,.0f} buffers written (median); each checked "
        f"on {counters}"
    )
