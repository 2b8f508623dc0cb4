"""Advice on a sweep of one value: the value at peak throughput per combination of the others,
read from a stored run (RunData); the studies build their advice from these."""

from pgcachelab.analysis.advice import Advice, choose, format_interval, headline, others_text
from pgcachelab.analysis.run_data import PointResult, RunData, swept_text
from pgcachelab.analysis.versions import control_base
from pgcachelab.store.records import Cell, Swept


def cell_without(result: PointResult, topic: str) -> Cell:
    return tuple((k, v) for k, v in result.point.swept.items() if k != topic)


def tps_by_cell(data: RunData, topic: str) -> dict[Cell, dict[Swept, list[float]]]:
    cells: dict[Cell, dict[Swept, list[float]]] = {}
    for result in data.points:
        if topic not in result.point.swept:
            continue
        values = [m.tps for m in result.ok if m.tps]
        cells.setdefault(cell_without(result, topic), {})[result.point.swept[topic]] = values
    return cells


def best_value_advice(data: RunData, topic: str, what: str) -> list[Advice]:
    """The value of `topic` at peak throughput, per combination of the other swept values."""
    advice = []
    for cell, samples in sorted(tps_by_cell(data, topic).items(), key=lambda kv: str(kv[0])):
        if topic == "version":  # the A/A control repeats a version: it is not a candidate
            samples = {v: s for v, s in samples.items() if control_base(str(v)) is None}
        choice = choose(samples, higher_is_better=True)
        if choice is None:
            continue
        others = others_text(choice, " tps")
        advice.append(
            Advice(
                topic,
                swept_text(cell),
                headline(choice, f"{topic} = {choice.best} {what}", " tps"),
                f"{format_interval(choice.best_summary, ' tps')}"
                + (f"; others: {others}" if others else ""),
                choice.caveats,
            )
        )
    return advice
