"""What `compare` found (run B against run A), in the same words as a run's advice."""

from pgcachelab.analysis.advice import Advice, ratio_interval
from pgcachelab.analysis.compare import Comparison, PointComparison


def comparison_advice(comparison: Comparison) -> list[Advice]:
    """What `compare` found, in the same words as a run's advice."""
    points = [p for p in comparison.points if p.ratio is not None]
    if not points:
        return [
            Advice(
                "compare",
                "",
                "nothing to compare: no matched point has measurements in both runs",
                "",
                [],
            )
        ]

    def text(point: PointComparison) -> str:
        return (
            f"×{point.ratio:.2f} ({ratio_interval(point.ci_low, point.ci_high)}) at {point.label}"
        )

    ratios = [p.ratio for p in points if p.ratio is not None]  # all of them: see points
    faster = [p for p in points if p.significant and p.ratio is not None and p.ratio > 1]
    slower = [p for p in points if p.significant and p.ratio is not None and p.ratio < 1]
    unclear = len(points) - len(faster) - len(slower)
    if not faster and not slower:
        low, high = min(ratios), max(ratios)
        recommendation = (
            f"B against A: no clear difference at any of the {len(points)} "
            f"matched points (tps ratios {low:.2f}–{high:.2f}; no 95% interval "
            "excludes 1)"
        )
    else:
        parts = []
        if faster:
            parts.append(
                f"B is faster at {len(faster)} of {len(points)} points ("
                + ", ".join(text(p) for p in faster)
                + ")"
            )
        if slower:
            parts.append(f"SLOWER at {len(slower)} (" + ", ".join(text(p) for p in slower) + ")")
        if unclear:
            parts.append(f"no clear difference at {unclear}")
        recommendation = "; ".join(parts)
    caveats = []
    serious = [d.what for d in comparison.context if d.serious]
    if serious:
        caveats.append(
            f"the runs differ in {', '.join(serious)}, which can explain a "
            "difference in tps by itself"
        )
    evidence = "tps ratio B/A per point (geometric means): " + "; ".join(text(p) for p in points)
    return [Advice("compare", "", recommendation, evidence, caveats)]
