"""A TPC-C run's steps as the report and advise see them: tpmC samples per ladder step (or per
point), the settings in force, and advice on which steps mattered. No plotting here, so that
`advise` and `doctor` do not load matplotlib."""

import statistics
from collections.abc import Sequence

from pgcachelab.analysis.advice import MIN_REPETITIONS, Advice
from pgcachelab.analysis.run_data import PointResult, RunData
from pgcachelab.spec.load import stored_spec
from pgcachelab.store.metric_types import TpccMetrics
from pgcachelab.studies.tpcc.step_results import StepSamples, ladder_results
from pgcachelab.workloads.parameters import TpccParameters

# Workload parameters shown in a step's diff next to the server settings.
WORKLOAD_KEYS = (
    "rate_tpm",
    "clients",
    "threads",
    "duration",
    "home_warehouse",
    "weights",
    "mode",
    "terminal_times",
    "transactions",
)


def is_tpcc_run(data: RunData) -> bool:
    return any("tpcc" in m.metrics for r in data.points for m in r.ok)


def tpcc_runs(result: PointResult) -> list[TpccMetrics]:
    return [m.metrics["tpcc"] for m in result.ok if "tpcc" in m.metrics]


def step_name(result: PointResult) -> str:
    return str(result.point.swept.get("step") or result.point.label)


def _descriptions(data: RunData) -> dict[str, str]:
    spec = stored_spec(data.run.spec_text, data.run.spec_path)
    return {step.name: step.description for step in spec.ladder} if spec else {}


def _limit(rate_tpm: object) -> float | None:
    return float(rate_tpm) if isinstance(rate_tpm, int | float) else None  # "off": no limit


def median_of(values: Sequence[float | None]) -> float | None:
    """The median of the values present (None for none)."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _resources_of(result: PointResult, key: str) -> list[float]:
    """Each successful repetition's figure from its resource summary (cpu_busy_pct: user +
    system), in the order of tpcc_runs; empty unless every repetition recorded it."""
    values = []
    for m in result.ok:
        if "tpcc" not in m.metrics:
            continue
        summary = (m.metrics.get("resources") or {}).get("summary") or {}
        if key == "cpu_busy_pct":
            user, system = summary.get("cpu_user_pct"), summary.get("cpu_system_pct")
            value = None if user is None or system is None else user + system
        else:
            value = summary.get(key)
        if not isinstance(value, int | float):
            return []
        values.append(float(value))
    return values


def _emulated_disk(result: PointResult) -> str | None:
    for m in result.ok:
        profile = (m.metrics.get("disk") or {}).get("profile")
        if profile:
            return str(profile.get("name") if isinstance(profile, dict) else profile)
    return None


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def step_samples(data: RunData) -> list[StepSamples]:
    descriptions = _descriptions(data)
    # workload parameters that some step changes (the rate limit): the rest is the same for all
    stored = {r.point.point_index: r.point.workload.record() for r in data.points}  # by name
    varying = [
        k
        for k in WORKLOAD_KEYS
        if len({str(stored[r.point.point_index].get(k)) for r in data.points}) > 1
    ]
    steps = []
    for result in data.points:
        runs = tpcc_runs(result)
        record = stored[result.point.point_index]
        workload = {f"tpcc.{k}": str(record.get(k)) for k in varying}
        parameters = result.point.workload
        tpcc = parameters if isinstance(parameters, TpccParameters) else None
        sized = [
            m
            for m in result.ok
            if "tpcc" in m.metrics and isinstance(m.metrics.get("database_size_bytes"), int | float)
        ]
        steps.append(
            StepSamples(
                name=step_name(result),
                tpmc=[run["tpmc"] for run in runs],
                settings={**result.point.settings, **workload},
                rate_limited=sum(1 for run in runs if run.get("rate_limited")),
                failures=result.failure_reasons,
                description=descriptions.get(step_name(result), ""),
                rate_tpm=_limit(tpcc.rate_tpm if tpcc else None),
                tpm_total=median_of([run.get("tpm_total") for run in runs]),
                transactions=_count(tpcc.transactions if tpcc else None),
                cpu_busy_pct=_resources_of(result, "cpu_busy_pct"),
                cpu_iowait_pct=_resources_of(result, "cpu_iowait_pct"),
                cpu_idle_pct=_resources_of(result, "cpu_idle_pct"),
                database_bytes=[
                    float(size) for m in sized if (size := m.metrics.get("database_size_bytes"))
                ],
                started_at=[m.started_at for m in sized],
                warehouses=_count(tpcc.warehouses if tpcc else None),
                emulated_disk=_emulated_disk(result),
            )
        )
    return steps


def figure(value: float | None, digits: int = 0) -> str:
    """A count or rate with thousands separators; a dash for none."""
    return "–" if value is None else f"{value:,.{digits}f}"


def ladder_advice(data: RunData) -> list[Advice]:
    """`advise` on a TPC-C run: which steps mattered, and the best step that keeps durability."""
    results = ladder_results(step_samples(data))
    advice = []
    for before, result in zip(results, results[1:], strict=False):
        if result.ratio is None:
            continue
        changed = "; ".join(f"{n} → {v}" for n, _, v in result.changes) or "nothing"
        interval = (
            f" [95% CI ×{result.ci_low:.2f}, ×{result.ci_high:.2f}]"
            if result.ci_low is not None
            else ""
        )
        new_risks = [
            f"{s} = {v} ({why})"
            for s, v, why in result.risks
            if (s, v) not in {(n, b) for n, b, _ in before.risks}
        ]
        caveats = []
        if result.n < MIN_REPETITIONS or before.n < MIN_REPETITIONS:
            caveats.append(f"only {min(result.n, before.n)} repetitions")
        if before.rate_limited:
            caveats.append(f"{before.name} ran at its rate limit: it measured the limit")
        if result.rate_limited and result.rate_tpm is not None:
            caveats.append(
                f"{result.name} ran at the {result.rate_tpm:,.0f} tpm limit: it measured the limit"
            )
        if result.significant:
            verdict = "mattered" if result.ratio > 1 else "made it SLOWER"
            recommendation = f"step {result.name} {verdict}: tpmC ×{result.ratio:.2f}{interval}"
        else:
            recommendation = (
                f"step {result.name} made no clear difference: ×{result.ratio:.2f}{interval}"
                + (" includes 1" if result.ci_low is not None else "")
            )
        evidence = (
            f"tpmC median {figure(before.median)} ({before.name})"
            f" → {figure(result.median)};"
            f" changes: {changed}"
            + (f"; trades safety for speed: {'; '.join(new_risks)}" if new_risks else "")
        )
        advice.append(Advice("ladder", result.name, recommendation, evidence, caveats))
    safe = [r for r in results if not r.risks and not r.rate_limited and r.median]
    if safe:
        best = max(safe, key=lambda r: r.median or 0)  # safe: each has a median
        advice.append(
            Advice(
                "ladder",
                "",
                f"the fastest step that keeps durability and vacuum is {best.name}",
                f"tpmC median {figure(best.median)}"
                f" ({figure(best.minimum)}..{figure(best.maximum)})",
                [],
            )
        )
    return advice
