"""Two stored runs as `compare` sees them: read from the store, then compared (pure)."""

import statistics
import tomllib

from pgcachelab.analysis.compare import Comparison, PointSide, RunSide, compare_runs
from pgcachelab.report.dataset import load_run


def load_side(store, run_id: str) -> RunSide:
    data = load_run(store, run_id)
    points = [
        PointSide(
            label=result.point.label,
            swept=result.point.swept,
            workload=result.point.workload,
            settings=result.point.settings,
            tps=[m.tps for m in result.ok if m.tps is not None],
            server_settings=_as_text(data.server_settings.get(result.point.point_index, {})),
            derived_settings=_chosen_by_server(
                data.server_settings.get(result.point.point_index, {})
            ),
        )
        for result in data.points
    ]
    run = data.run
    loads = [
        m.metrics["load_average_1m"]
        for result in data.points
        for m in result.ok
        if m.metrics.get("load_average_1m") is not None
    ]
    load = statistics.median(loads) if loads else None
    return RunSide(run.run_id, run.name, run.status, run.environment, run.target, points, load,
                   workload_of(run.spec_text))  # fmt: skip


def workload_of(spec_text: str) -> str | None:
    """The workload a stored spec ran (pgbench when it names none), None when unreadable."""
    try:
        workload = tomllib.loads(spec_text or "").get("workload", "pgbench")
    except tomllib.TOMLDecodeError:
        return None
    return workload if isinstance(workload, str) else None


def _as_text(settings: dict) -> dict[str, str]:
    """pg_settings rows as 'value unit' text, how the settings comparison shows them."""
    text = {}
    for name, row in settings.items():
        if isinstance(row, dict):
            unit = row.get("unit")
            text[name] = f"{row.get('setting')}{' ' + unit if unit else ''}"
        else:
            text[name] = str(row)
    return text


def _chosen_by_server(settings: dict) -> frozenset:
    """Settings nobody set: built-in defaults and values the server computes (override)."""
    return frozenset(
        name
        for name, row in settings.items()
        if isinstance(row, dict) and row.get("source") in ("default", "override")
    )


def load_comparison(store_a, run_a: str, store_b, run_b: str) -> Comparison:
    return compare_runs(load_side(store_a, run_a), load_side(store_b, run_b))
