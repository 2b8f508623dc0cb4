"""Latency against offered load: a sweep of pgbench's -R (issue 32). Pure functions.

Under -R pgbench schedules each transaction on a Poisson timetable and measures its latency from
the scheduled start, so a transaction that waited behind a slow one counts its wait (the
schedule lag): the percentiles are free of coordinated omission. Below saturation the server
achieves what is offered; the knee is the first rate it falls behind, and there the latency
grows by the queue, not by the server's work.
"""

from dataclasses import dataclass

from pgcachelab.workloads.rate_schedule import kept_to_schedule

# Achieved over offered at or above which the server kept up, however long the run: a long
# run's Poisson noise is a fraction of a percent, but a few transactions still in flight at
# the end, or the connections' start, cost it a little.
KEEPS_UP = 0.95
# How far above the lowest rate's p99 a p99 may be and still count as the flat part.
LATENCY_RISE = 2.0


@dataclass(frozen=True)
class LoadStep:
    offered_tps: float
    achieved_tps: float  # median over the repetitions
    p50_ms: float
    p99_ms: float
    p999_ms: float
    lag_p99_ms: float | None
    biased_low: bool
    # all repetitions together: transactions pgbench completed, in how many seconds of runs
    completed: int | None = None
    measured_s: float | None = None

    @property
    def keeps_up(self) -> bool:
        """Achieved at least KEEPS_UP of the offered rate, or fell short by no more than the
        Poisson schedule's own noise (a short run at a low rate: 300 tps for 2 s is 600 +- 25
        transactions)."""
        if self.achieved_tps >= KEEPS_UP * self.offered_tps:
            return True
        if not self.completed or not self.measured_s:
            return False
        return kept_to_schedule(self.completed, self.offered_tps, self.measured_s)


def knee(steps: list[LoadStep]) -> int | None:
    """The index of the first step (by offered rate) the server fell behind at; None if it
    kept up with every rate offered."""
    for index, step in enumerate(sorted(steps, key=lambda s: s.offered_tps)):
        if not step.keeps_up:
            return index
    return None


def finding(steps: list[LoadStep]) -> str | None:
    """One line: "p99 stays under X ms up to Y tps, then ..."; None without steps.

    X is the p99 of the flat part: the lowest rates, while p99 stays within LATENCY_RISE of
    the lowest rate's; then where p99 went while the server still kept up; then the knee,
    where it fell behind."""
    if not steps:
        return None
    ordered = sorted(steps, key=lambda s: s.offered_tps)
    behind = knee(ordered)
    kept = ordered if behind is None else ordered[:behind]
    if not kept:
        first = ordered[0]
        return (
            f"the server fell behind already at the lowest rate offered, {first.offered_tps:,.0f}"
            f" tps (achieved {first.achieved_tps:,.0f}, p99 {_ms(first.p99_ms)}): offer less"
        )
    flat = [kept[0]]
    for step in kept[1:]:
        if step.p99_ms > LATENCY_RISE * kept[0].p99_ms:
            break
        flat.append(step)
    line = (
        f"p99 stays under {_ms(max(s.p99_ms for s in flat))} up to "
        f"{flat[-1].offered_tps:,.0f} tps offered"
    )
    if len(flat) < len(kept):
        last = kept[-1]
        line += f", then rises to {_ms(last.p99_ms)} at {last.offered_tps:,.0f} tps"
    if behind is None:
        return line + " (the server kept up with every rate offered: offer more for the knee)"
    past = ordered[behind]
    lag = f", schedule lag p99 {_ms(past.lag_p99_ms)}" if past.lag_p99_ms is not None else ""
    return (
        f"{line}; at {past.offered_tps:,.0f} tps offered the server achieved only "
        f"{past.achieved_tps:,.0f} ({past.achieved_tps / past.offered_tps:.0%}) and p99 was "
        f"{_ms(past.p99_ms)}{lag}: the knee"
    )


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3g} ms"
