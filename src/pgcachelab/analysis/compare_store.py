"""Two stored runs as `compare` sees them: read from the store, then compared (pure)."""

import statistics

from pgcachelab.analysis.compare import Comparison, PointSide, RunSide, compare_runs
from pgcachelab.analysis.run_data import schedule_of
from pgcachelab.store.records import Measurement, ResultStore, gc_paused
from pgcachelab.store.run_types import ServerSettings


def load_side(store: ResultStore, run_id: str, workload: str | None) -> RunSide:
    """One run as compare sees it: each point's tps over the repetitions the report counts
    (after the warm-up ones, succeeded). Read straight from the store: the report's dataset
    also computes warnings, noise and summaries, half of compare's time at 100,000
    measurements, none of which compare uses (issue 24). `workload`: what its stored spec ran
    (spec/load.py reads it), None when the spec no longer reads."""
    run = store.run(run_id)
    assert run is not None, f"no run {run_id}"  # callers look it up first
    warmup_repetitions = schedule_of(run).get("warmup_repetitions") or 0
    counted: dict[int, list[Measurement]] = {}
    with gc_paused():
        measurements = store.measurements(
            run_id, metrics=("load_average_1m", "fleet.host_class", "latency.p99_ms")
        )
    for m in measurements:
        if m.status == "ok" and m.repetition >= warmup_repetitions:
            counted.setdefault(m.point_index, []).append(m)
    server_settings = store.server_settings(run_id)
    points = [
        PointSide(
            label=point.label,
            swept=point.swept,
            workload=point.workload.record(),  # compared key by key, as stored
            settings=point.settings,
            tps=[m.tps for m in counted.get(point.point_index, []) if m.tps is not None],
            p99_ms=[
                p99
                for m in counted.get(point.point_index, [])
                if (p99 := (m.metrics.get("latency") or {}).get("p99_ms")) is not None
            ],
            server_settings=_as_text(server_settings.get(point.point_index, {})),
            derived_settings=_chosen_by_server(server_settings.get(point.point_index, {})),
        )
        for point in store.points(run_id)
    ]
    loads = [
        load
        for measurements in counted.values()
        for m in measurements
        if (load := m.metrics.get("load_average_1m")) is not None
    ]
    load = statistics.median(loads) if loads else None
    classes = {
        host_class
        for measurements in counted.values()
        for m in measurements
        if (fleet := m.metrics.get("fleet")) and (host_class := fleet.get("host_class"))
    }
    return RunSide(
        run.run_id,
        run.name,
        run.status,
        run.environment,
        run.target,
        points,
        load,
        workload,
        tuple(sorted(classes)),
    )


def _as_text(settings: ServerSettings) -> dict[str, str]:
    """pg_settings rows as 'value unit' text, how the settings comparison shows them."""
    text = {}
    for name, row in settings.items():
        if isinstance(row, dict):
            unit = row.get("unit")
            text[name] = f"{row.get('setting')}{' ' + unit if unit else ''}"
        else:
            text[name] = str(row)
    return text


def _chosen_by_server(settings: ServerSettings) -> frozenset[str]:
    """Settings nobody set: built-in defaults and values the server computes (override)."""
    return frozenset(
        name
        for name, row in settings.items()
        if isinstance(row, dict) and row.get("source") in ("default", "override")
    )


def load_comparison(
    store_a: ResultStore,
    run_a: str,
    store_b: ResultStore,
    run_b: str,
    workloads: tuple[str | None, str | None],
) -> Comparison:
    """`workloads`: each run's, as load_side takes it."""
    return compare_runs(
        load_side(store_a, run_a, workloads[0]), load_side(store_b, run_b, workloads[1])
    )
