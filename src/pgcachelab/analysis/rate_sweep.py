"""A stored sweep of pgbench's -R judged: each cell's load steps (offered against achieved
throughput, latency percentiles) and its finding in one line (analysis/offered_load.py)."""

from pgcachelab.analysis.offered_load import LoadStep, finding
from pgcachelab.analysis.run_data import PointResult, RunData
from pgcachelab.workloads.parameters import PgbenchParameters


def offered_load_steps(data: RunData) -> dict[str, list[LoadStep]]:
    """Cell label ("" for a plain rate sweep) -> its steps, for the points with percentiles."""
    cells: dict[str, list[LoadStep]] = {}
    for result in data.points:
        step = _step(result)
        if step is not None:
            others = {k: v for k, v in result.point.swept.items() if k != "rate"}
            cell = ", ".join(f"{k}={v}" for k, v in others.items())
            cells.setdefault(cell, []).append(step)
    return {cell: sorted(steps, key=lambda s: s.offered_tps) for cell, steps in cells.items()}


def _step(result: PointResult) -> LoadStep | None:
    parameters = result.point.workload
    rate = parameters.rate if isinstance(parameters, PgbenchParameters) else None
    percentiles = result.latency_percentiles
    if not rate or result.tps is None or percentiles is None:
        return None
    figures = percentiles.median_ms
    runs = [m.metrics.get("pgbench") or {} for m in result.ok]
    completed = [r.get("transactions_processed") for r in runs]
    seconds = [r.get("duration_s") for r in runs]
    counted = all(c is not None for c in completed) and all(s for s in seconds)
    return LoadStep(
        offered_tps=float(rate),
        achieved_tps=result.tps.median,
        p50_ms=figures["p50"],
        p99_ms=figures["p99"],
        p999_ms=figures["p999"],
        lag_p99_ms=percentiles.lag_p99_ms,
        biased_low=percentiles.biased_low,
        completed=sum(c for c in completed if c is not None) if counted else None,
        measured_s=sum(s for s in seconds if s) if counted else None,
    )


def offered_load_findings(data: RunData) -> list[tuple[str, str]]:
    """(cell, the finding's line) per cell of a rate sweep."""
    if "rate" not in data.swept_keys:
        return []
    lines = []
    for cell, steps in offered_load_steps(data).items():
        line = finding(steps)
        if line:
            lines.append((cell, line))
    return lines
