"""`pgcachelab advise`: a stored run's measurements turned into advice (analysis.advice).

Reads a RunData only. Which questions apply follows from what the run swept: cache-wash points
(seed 000), versions (seed 001), clients, and the scale factor (seed 004).
"""

from pgcachelab.analysis.advice import Advice, Choice, choose, format_interval, throughput_steps
from pgcachelab.analysis.cache_split import (
    SURVIVAL_TOLERANCE,
    index_survives_from,
    pgbench_logged_zeros,
)
from pgcachelab.report.dataset import PointResult, RunData, repetitions
from pgcachelab.report.tpcc_steps import is_tpcc_run, ladder_advice
from pgcachelab.units import format_bytes, shared_buffers_bytes


def _cell(result: PointResult, topic: str) -> tuple:
    return tuple((k, v) for k, v in result.point.swept.items() if k != topic)


def _cell_text(cell: tuple) -> str:
    return ", ".join(f"{k}={v}" for k, v in cell)


def _tps_by_cell(data: RunData, topic: str) -> dict[tuple, dict]:
    cells: dict[tuple, dict] = {}
    for result in data.points:
        if topic not in result.point.swept:
            continue
        values = [m.tps for m in result.ok if m.tps]
        cells.setdefault(_cell(result, topic), {})[result.point.swept[topic]] = values
    return cells


def _all_tied(choice: Choice) -> bool:
    """Every other value's interval overlaps the best's: the run singles out nothing."""
    return len(choice.summaries) > 1 and len(choice.indistinguishable) == len(choice.summaries) - 1


def _headline(choice: Choice, claim: str, show=str) -> str:
    if _all_tied(choice):
        return (f"no value stands out: {show(choice.best)} has the best median, but every other "
                f"value's interval overlaps it")  # fmt: skip
    return claim + _tied_text(choice, show)


def _tied_text(choice: Choice, show=str) -> str:
    if not choice.indistinguishable:
        return ""
    return (
        f" (as good within the intervals: {', '.join(show(v) for v in choice.indistinguishable)})"
    )


def _others(choice: Choice, unit: str, show=str) -> str:
    return "; ".join(
        f"{show(v)}: {format_interval(s, unit)}"
        for v, s in sorted(choice.summaries.items(), key=lambda item: str(item[0]))
        if v != choice.best
    )


def cache_wash_advice(data: RunData) -> list[Advice]:
    """Seed 000: the shared_buffers that minimises idx2 (the index lookups after the scan)."""
    reps = repetitions(data)
    advice = []
    for huge_pages in sorted({r.huge_pages for r in reps}, reverse=True):
        mine = [r for r in reps if r.huge_pages == huge_pages]
        samples: dict[int, list[float]] = {}
        for rep in mine:
            samples.setdefault(rep.shared_buffers_bytes, []).append(rep.median("idx2"))
        choice = choose(samples, higher_is_better=False, show=format_bytes)
        if choice is None:
            continue
        cell = f"huge_pages={huge_pages}" if huge_pages else ""
        survives, ratio = index_survives_from(mine, huge_pages)
        evidence = f"idx2 median {format_interval(choice.best_summary, ' ms')}"
        if survives is not None:
            evidence += (
                f"; idx2 stays within 10% of idx1 from shared_buffers = {format_bytes(survives)}"
                f" (idx2/idx1 {format_interval(ratio)})"
            )
            if ratio.ci_high is None or ratio.ci_high > SURVIVAL_TOLERANCE:
                choice.caveats.append(
                    "that the index survives the scan rests on the mean ratio only: its interval "
                    f"reaches past {SURVIVAL_TOLERANCE:.2f}"
                )
        others = _others(choice, " ms", format_bytes)
        caveats = list(choice.caveats)
        zeros, total = pgbench_logged_zeros(mine)  # runs stored before the client timing
        if zeros:
            caveats.append(
                f"pgbench logged {zeros} of {total} lookups as 0 us (a reply already there "
                "when it looked; runs before the client timing): the medians are biased low"
            )
        advice.append(
            Advice(
                "shared_buffers", cell,
                _headline(choice, f"shared_buffers = {format_bytes(choice.best)} gives the "
                          "fastest index lookups after a large scan", format_bytes),
                evidence + (f"; others: {others}" if others else ""), caveats,
            )
        )  # fmt: skip
    return advice


def best_value_advice(data: RunData, topic: str, what: str) -> list[Advice]:
    """The value of `topic` at peak throughput, per combination of the other swept values."""
    advice = []
    for cell, samples in sorted(_tps_by_cell(data, topic).items(), key=lambda kv: str(kv[0])):
        choice = choose(samples, higher_is_better=True)
        if choice is None:
            continue
        others = _others(choice, " tps")
        advice.append(
            Advice(
                topic, _cell_text(cell),
                _headline(choice, f"{topic} = {choice.best} {what}"),
                f"{format_interval(choice.best_summary, ' tps')}"
                + (f"; others: {others}" if others else ""), choice.caveats,
            )
        )  # fmt: skip
    return advice


def scale_advice(data: RunData) -> list[Advice]:
    """Seed 004: where throughput falls as the data grows, and the boundary crossed there."""
    shared_buffers = shared_buffers_bytes(
        next((p.point.settings.get("shared_buffers") for p in data.points), None)
    )
    boundaries = {
        "shared_buffers": shared_buffers,
        "the memory available to the server": data.memory_available_bytes,
    }
    advice = []
    for cell, samples in sorted(_tps_by_cell(data, "scale").items(), key=lambda kv: str(kv[0])):
        sizes = {
            r.point.swept["scale"]: r.database_size_bytes
            for r in data.points
            if "scale" in r.point.swept and _cell(r, "scale") == cell
        }
        steps = throughput_steps(samples, sizes, boundaries)
        if not steps:
            advice.append(
                Advice("scale", _cell_text(cell),
                       "throughput does not fall by a fifth or more between neighbouring scales",
                       f"database sizes {_size_range(sizes)}; shared_buffers = "
                       f"{format_bytes(shared_buffers)}", [])
            )  # fmt: skip
        for step in steps:
            crossed = " and ".join(step.crosses) or "no boundary the lab knows"
            caveats = [] if step.significant else [
                "the intervals on both sides overlap: the fall may be noise"
            ]  # fmt: skip
            if step.significant:
                headline = (
                    f"keep the data under scale {step.after}: throughput falls to "
                    f"{step.ratio:.0%} from scale {step.before} to {step.after}"
                )
            else:  # a lower mean inside overlapping intervals is not a measured step
                headline = (
                    f"no measured step: throughput's mean is {step.ratio:.0%} from scale "
                    f"{step.before} to {step.after}, inside the noise"
                )
            advice.append(
                Advice(
                    "scale", _cell_text(cell), headline,
                    f"database {_size(step.size_before_bytes)} -> {_size(step.size_after_bytes)}"
                    f" crosses {crossed}", caveats,
                )
            )  # fmt: skip
    return advice


def _size(value) -> str:
    return format_bytes(value) if value else "?"


def _size_range(sizes: dict) -> str:
    known = [s for s in sizes.values() if s]
    return f"{format_bytes(min(known))} .. {format_bytes(max(known))}" if known else "unknown"


def run_advice(data: RunData) -> list[Advice]:
    """Every piece of advice the run's sweep allows; a note when it allows none."""
    keys = data.swept_keys
    advice: list[Advice] = []
    if any(m.metrics.get("cache_wash") for r in data.points for m in r.ok):
        advice += cache_wash_advice(data)
    elif is_tpcc_run(data):
        advice += ladder_advice(data)
    elif "version" in keys:
        advice += best_value_advice(data, "version", "is the fastest")
    else:
        if "clients" in keys:
            advice += best_value_advice(data, "clients", "gives the peak throughput")
        if "scale" in keys:
            advice += scale_advice(data)
    if not advice:
        swept = ", ".join(keys) or "nothing"
        advice.append(
            Advice("run", "", "no advice: the measurements answer none of the questions advise "
                   "knows", f"the run swept {swept}; advise knows cache-wash runs and sweeps of "
                   "clients, scale or version", [])
        )  # fmt: skip
    failed = sum(len(r.failures) for r in data.points)
    if failed:
        for item in advice:
            item.caveats.append(f"{failed} measurements failed and are left out")
    return advice
