"""Seed 003's advice: what polling shared_buffers once a second costs in tps per method, with
the interval of the report's sag table, and how far each extension mode misplaces buffers."""

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.inspect_accuracy import accuracy_finding
from pgcachelab.analysis.inspect_overhead import Sag
from pgcachelab.analysis.run_data import RunData, swept_text
from pgcachelab.studies.inspect_overhead.sags import (
    METHOD_NAMES,
    MethodSag,
    cell_accuracy,
    cell_text,
    method_sags,
)


def sag_text(sag: Sag | None) -> str:
    # method_advice writes only the sags its lists were filtered on having
    assert sag is not None, "a sag to write"
    interval = sag.sag_ci_percent
    if interval is None:
        return f"{sag.sag_percent:+.1f}% (no interval)"
    return f"{sag.sag_percent:+.1f}% ({interval[0]:+.1f}..{interval[1]:+.1f}%)"


def _at(item: MethodSag) -> str:
    return f"at {cell_text(item.cell)}"


def _quoted_ci(item: MethodSag) -> tuple[float, float] | None:
    """The quoted sag's interval (method_advice keeps the items that quote one)."""
    return item.quoted.sag_ci_percent if item.quoted is not None else None


def method_advice(method: str, mine: list[MethodSag], floor: list[MethodSag]) -> Advice:
    name = METHOD_NAMES.get(method, method)
    quoted = [s for s in mine if s.quoted is not None]
    within = any(s.within_runs is not None for s in quoted)
    kind = "tps sag within runs" if within else "tps sag between runs"
    if not quoted:
        return Advice(
            method,
            "",
            f"polling with {name}: no sag measured (no baseline or no measurement)",
            "",
            [],
        )
    costs = [s for s in quoted if (ci := _quoted_ci(s)) and ci[0] > 0]
    rest = [s for s in quoted if s not in costs]
    across = all((ci := _quoted_ci(s)) and ci[1] >= 0 for s in rest)
    if costs:
        recommendation = f"polling with {name} once a second costs " + ", ".join(
            f"{sag_text(s.quoted)} {_at(s)}" for s in costs
        )
        if rest:
            recommendation += "; no clear cost " + ", ".join(
                f"{_at(s)} ({sag_text(s.quoted)})" for s in rest
            )
        recommendation += f" ({kind}, 95% intervals)"
    else:
        recommendation = (
            f"polling with {name} once a second: no clear cost, "
            + ", ".join(f"{sag_text(s.quoted)} {_at(s)}" for s in rest)
            + f" ({kind}; "
            + ("every 95% interval includes 0)" if across else "no 95% interval lies above 0)")
        )
    evidence = (
        "sag = 1 − tps(polled window) / tps(the unpolled window next to it)"
        if within
        else "sag = 1 − tps(method) / tps(baseline), paired by round"
    )
    between = [s for s in mine if within and s.between_runs is not None]
    if between:
        evidence += "; between runs: " + ", ".join(
            f"{sag_text(s.between_runs)} {_at(s)}" for s in between
        )
    if floor:
        evidence += "; the baseline's A/A test (polling in neither window), the noise floor: " + (
            ", ".join(f"{sag_text(s.within_runs)} {_at(s)}" for s in floor)
        )
    caveats = []
    if any(_quoted_ci(s) is None for s in quoted):
        caveats.append("one ratio at some cells: no interval")
    if any((ci := _quoted_ci(s)) and ci[1] < 0 for s in quoted):
        caveats.append("tps higher while polling, beyond the interval: drift, not a gain")
    return Advice(method, "", recommendation, evidence, caveats)


def overhead_advice(data: RunData) -> list[Advice]:
    """Per inspect method, what polling once a second costs in tps, per cell, with the
    interval of the report's sag table (within runs when the run alternated windows)."""
    sags = method_sags(data)
    floor = [s for s in sags if s.method == "none" and s.within_runs is not None]
    methods = list(dict.fromkeys(s.method for s in sags if s.method != "none"))
    advice = [method_advice(m, [s for s in sags if s.method == m], floor) for m in methods]
    for cell, accuracies in cell_accuracy(data).items():
        advice.append(
            Advice(
                "inspect mode",
                swept_text(cell),
                accuracy_finding(accuracies),
                "each mode's snapshot between two exact references (snapshot mode) during the "
                "warm-ups; misplaced: the buffers counted outside the references' range per "
                "relation, halved",
            )
        )
    return advice
