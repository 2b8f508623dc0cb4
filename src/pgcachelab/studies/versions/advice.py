"""Seed 001's advice: the A/A control's verdict, then each version against the one before it
over every cell, as the report's version-to-version table."""

from pgcachelab.analysis.advice import MIN_REPETITIONS, Advice, ratio_interval
from pgcachelab.analysis.run_data import RunData, swept_text
from pgcachelab.analysis.sweep_advice import cell_without
from pgcachelab.analysis.versions import (
    CONTROL_SIGNIFICANT_LIMIT,
    VersionChange,
    control_changes,
    control_verdict,
    version_changes,
    version_order,
)
from pgcachelab.store.records import Cell


def control_advice(data: RunData) -> list[Advice]:
    """Issue 19: the A/A control's verdict first; an untrustworthy run casts doubt on the rest."""
    if "version" not in data.swept_keys:
        return []
    verdict = control_verdict(control_changes(version_samples(data)))
    if verdict is None:
        return []
    share = f"{verdict.significant} of {verdict.cells} cells ({verdict.share:.0%})"
    if verdict.trustworthy:
        return [
            Advice(
                "control",
                "",
                "the A/A control holds: identical clusters were told "
                "apart no more often than chance",
                f"significant in {share}; the limit is {CONTROL_SIGNIFICANT_LIMIT:.0%}",
                [],
            )
        ]
    return [
        Advice(
            "control",
            "",
            "UNTRUSTWORTHY RUN: do not act on its version differences; "
            "repeat it on a quieter machine or with more repetitions",
            f"the A/A control (one version on two clusters) is significant in {share}, "
            f"more than the {CONTROL_SIGNIFICANT_LIMIT:.0%} chance allows",
            ["differences between versions of the size the control shows may be noise"],
        )
    ]


def version_samples(data: RunData) -> dict[Cell, dict[str, list[float]]]:
    """Cell (the other swept values) -> version -> tps of each repetition."""
    samples: dict[Cell, dict[str, list[float]]] = {}
    for result in data.points:
        version = str(result.point.swept["version"])
        cell = cell_without(result, "version")
        samples.setdefault(cell, {})[version] = [m.tps for m in result.ok if m.tps]
    return samples


def _change_text(change: VersionChange) -> str:
    return (
        f"×{change.ratio:.2f} ({ratio_interval(change.ci_low, change.ci_high)}) at "
        f"{swept_text(change.cell) or 'the one cell'}"
    )


def version_pair_advice(previous: str, version: str, changes: list[VersionChange]) -> Advice:
    faster = [c for c in changes if c.significant and c.ratio > 1]
    slower = [c for c in changes if c.significant and c.ratio < 1]
    unclear = len(changes) - len(faster) - len(slower)
    pair = f"{version} against {previous}"
    if not faster and not slower:
        low = min(c.ratio for c in changes)
        high = max(c.ratio for c in changes)
        every = "every" if all(c.ci_low is not None for c in changes) else "no"
        verb = "includes" if every == "every" else "excludes"
        recommendation = (
            f"{pair}: no clear difference in any of the {len(changes)} cells "
            f"(ratios {low:.2f}–{high:.2f}; {every} 95% interval {verb} 1)"
        )
    else:
        parts = []
        if faster:
            best = max(faster, key=lambda c: c.ratio)
            parts.append(
                f"faster in {len(faster)} of {len(changes)} cells (up to {_change_text(best)})"
            )
        if slower:
            worst = min(slower, key=lambda c: c.ratio)
            parts.append(f"SLOWER in {len(slower)} (down to {_change_text(worst)})")
        if unclear:
            parts.append(f"no clear difference in {unclear}")
        recommendation = f"{pair}: " + "; ".join(parts)
    caveats = []
    fewest = min(min(c.samples) for c in changes)
    if fewest < MIN_REPETITIONS:
        caveats.append(
            f"only {fewest} repetitions for some cells: intervals are wide; use "
            f"repetitions = {MIN_REPETITIONS} or more"
        )
    caveats.append(
        "the versions ran one after another: a change of the machine's load during "
        "the run lands on the versions, and these intervals cannot see it"
    )
    evidence = "tps ratio per cell: " + "; ".join(_change_text(c) for c in changes)
    return Advice("version", "", recommendation, evidence, caveats)


def version_advice(data: RunData) -> list[Advice]:
    """Each version against the one before it, over every cell: the report's table."""
    changes = version_changes(version_samples(data))
    pairs: dict[tuple[str, str], list[VersionChange]] = {}
    for change in changes:
        pairs.setdefault((change.previous, change.version), []).append(change)
    order = version_order(v for pair in pairs for v in pair)
    ordered = sorted(pairs, key=lambda pair: (order.index(pair[1]), order.index(pair[0])))
    return [
        version_pair_advice(previous, version, pairs[(previous, version)])
        for previous, version in ordered
    ]
