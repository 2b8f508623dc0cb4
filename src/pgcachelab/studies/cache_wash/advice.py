"""Seed 000's advice: from which shared_buffers the index survives the scan, and what huge pages
change; the same analysis as the report's findings table (analysis.cache_split)."""

from pgcachelab.analysis.advice import (
    Advice,
    choose,
    format_interval,
    headline,
    others_text,
    ratio_interval,
)
from pgcachelab.analysis.cache_split import (
    PHASES,
    SURVIVAL_TOLERANCE,
    Repetition,
    SurvivalRow,
    huge_pages_effect,
    index_survives_from,
    pgbench_logged_zeros,
    survival_table,
)
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.summary import Effect
from pgcachelab.studies.cache_wash.repetitions import repetitions
from pgcachelab.units import format_bytes


def _geometric(row: SurvivalRow) -> Effect:
    assert row.geometric is not None  # _survival_advice keeps the rows that have one
    return row.geometric


def _survival_advice(reps: list[Repetition], huge_pages: str, cell: str) -> Advice | None:
    """From which shared_buffers the index survives the scan: the report's findings table."""
    rows = [r for r in survival_table(reps) if r.huge_pages == huge_pages and r.geometric]
    if not rows:
        return None
    within = f"within {(SURVIVAL_TOLERANCE - 1) * 100:.0f}% of idx1"
    size, _ = index_survives_from(reps, huge_pages)
    row = next((r for r in rows if r.shared_buffers_bytes == size), rows[-1])
    geometric = _geometric(row)
    interval = ratio_interval(geometric.ci_low, geometric.ci_high)
    figure = (
        f"idx2/idx1 {geometric.ratio:.2f} ({interval}) at {format_bytes(row.shared_buffers_bytes)}"
    )
    if size is None:
        recommendation = (
            f"no shared_buffers measured keeps idx2 (the lookups after the scan) "
            f"{within}: {figure}, the largest"
        )
    else:
        recommendation = (
            f"idx2 stays {within} (the index survives the scan) from "
            f"shared_buffers = {format_bytes(size)}: {figure}"
        )
    caveats = []
    if size is not None and row.verdict != "yes":
        caveats.append(
            f"that the index survives rests on the median ratio: the interval reaches past "
            f"{SURVIVAL_TOLERANCE:.2f} ({row.verdict})"
        )
    evidence = "; ".join(
        f"{format_bytes(r.shared_buffers_bytes)}: {_geometric(r).ratio:.2f} "
        f"({ratio_interval(_geometric(r).ci_low, _geometric(r).ci_high)}), {r.verdict}"
        for r in rows
    )
    return Advice(
        "shared_buffers", cell, recommendation, "idx2/idx1 per point: " + evidence, caveats
    )


def _huge_pages_advice(reps: list[Repetition]) -> Advice | None:
    """Huge pages on against off, per phase: the report's huge pages table."""
    found = {phase: huge_pages_effect(reps, phase) for phase in PHASES}
    effects = {phase: e for phase, e in found.items() if e is not None}
    if not effects:
        return None
    significant = {phase: e for phase, e in effects.items() if e.significant}

    def text(phase: str, effect: Effect) -> str:
        return (
            f"{phase} on/off ×{effect.ratio:.2f} ({ratio_interval(effect.ci_low, effect.ci_high)})"
        )

    if significant:
        recommendation = "huge pages change the latency: " + "; ".join(
            text(phase, e) + (" faster" if e.ratio < 1 else " SLOWER")
            for phase, e in significant.items()
        )
    else:
        recommendation = "huge pages: no clear difference in any phase"
    evidence = "; ".join(text(phase, e) for phase, e in effects.items())
    return Advice("huge_pages", "", recommendation, evidence, [])


def cache_wash_advice(data: RunData) -> list[Advice]:
    """Seed 000: where the index survives the scan, the shared_buffers that minimises idx2 (the
    index lookups after the scan), and what huge pages change."""
    reps = repetitions(data)
    advice = []
    for huge_pages in sorted({r.huge_pages for r in reps}, reverse=True):
        mine = [r for r in reps if r.huge_pages == huge_pages]
        cell = f"huge_pages={huge_pages}" if huge_pages else ""
        survival = _survival_advice(reps, huge_pages, cell)
        advice += [survival] if survival else []
        samples: dict[int, list[float]] = {}
        for rep in mine:
            samples.setdefault(rep.shared_buffers_bytes, []).append(rep.median("idx2"))
        choice = choose(samples, higher_is_better=False, show=format_bytes)
        if choice is None:
            continue
        others = others_text(choice, " ms", format_bytes)
        caveats = list(choice.caveats)
        zeros, total = pgbench_logged_zeros(mine)  # runs stored before the client timing
        if zeros:
            caveats.append(
                f"pgbench logged {zeros} of {total} lookups as 0 us (a reply already there "
                "when it looked; runs before the client timing): the medians are biased low"
            )
        advice.append(
            Advice(
                "shared_buffers",
                cell,
                headline(
                    choice,
                    f"shared_buffers = {format_bytes(choice.best)} gives the "
                    "fastest index lookups after a large scan, idx2",
                    " ms",
                    format_bytes,
                ),
                f"idx2 median {format_interval(choice.best_summary, ' ms')}"
                + (f"; others: {others}" if others else ""),
                caveats,
            )
        )
    on_off = _huge_pages_advice(reps)
    return advice + ([on_off] if on_off else [])
