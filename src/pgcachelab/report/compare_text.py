"""`compare` output for the terminal and for documents: a table and Markdown, and the document
exporters/json.py encodes."""

import dataclasses

from pgcachelab.analysis.compare import Comparison, PointComparison
from pgcachelab.analysis.compare_advice import comparison_advice
from pgcachelab.report.tables import format_table

HEADER = [
    "point",
    "n A",
    "n B",
    "median tps A",
    "median tps B",
    "B/A",
    "95% CI",
    "median B/A",
    "MWU p",
    "verdict",
]
P99_HEADER = ["point", "n A", "n B", "median p99 ms A", "median p99 ms B", *HEADER[5:]]
P99_NOTE = (
    "p99: each repetition's 99th percentile from pgbench's per-transaction log; B/A below 1"
    " means B answered faster, with the same interval and test as tps."
)


def method_note(comparison: Comparison) -> str:
    floors = sorted({p.rank_test.smallest_p for p in comparison.points if p.rank_test})
    floor = f" (with these repetitions it cannot go below {floors[-1]:.3g})" if floors else ""
    return (
        "B/A is the ratio of the geometric means of tps, with a 95% interval by Welch's t on"
        " log tps; a point differs significantly when the interval excludes 1. median B/A is"
        " the ratio of the medians. MWU p is the two-sided Mann-Whitney U test (a rank test;"
        f" exact without ties), a second opinion{floor}."
    )


def _num(value, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _ratio(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def point_row(point: PointComparison, digits: int = 0) -> list[str]:
    ci = f"{_ratio(point.ci_low)}..{_ratio(point.ci_high)}" if point.ci_low is not None else "–"
    p_value = f"{point.rank_test.p_value:.3g}" if point.rank_test else "–"
    return [
        point.label,
        str(point.n_a),
        str(point.n_b),
        _num(point.median_a, digits),
        _num(point.median_b, digits),
        _ratio(point.ratio),
        ci,
        _ratio(point.median_ratio),
        p_value,
        point.verdict,
    ]


def _runs_line(comparison: Comparison) -> list[str]:
    a, b = comparison.a, comparison.b
    return [
        f"A = run {a.run_id} ({a.name}, {a.status})",
        f"B = run {b.run_id} ({b.name}, {b.status})",
    ]


def _summary(comparison: Comparison) -> str:
    significant = comparison.significant
    faster = sum(1 for p in significant if p.ratio is not None and p.ratio > 1)
    return (
        f"{len(significant)} of {len(comparison.points)} matched points differ significantly"
        f" ({faster} B faster, {len(significant) - faster} B slower)"
    )


def render_table(comparison: Comparison) -> str:
    lines = _runs_line(comparison)
    keys = ", ".join(comparison.keys) or "nothing swept: the single points"
    lines.append(f"points matched on: {keys}")
    lines.append("")
    if comparison.context:
        lines.append("context differences (they make the comparison doubtful):")
        for d in comparison.context:
            mark = "!" if d.serious else "-"
            lines.append(f"  {mark} {d.what}: A {d.a}  B {d.b}")
    else:
        lines.append("context: same server version, settings, machine, memory limit and pgbench")
    lines.append("")
    if comparison.points:
        lines.append(format_table(HEADER, [point_row(p) for p in comparison.points]))
    else:
        lines.append("no point of A matches a point of B")
    for side, labels in (("A", comparison.only_a), ("B", comparison.only_b)):
        if labels:
            lines.append(f"points only in {side}: {'; '.join(labels)}")
    if comparison.p99:
        lines += ["", "p99 latency:"]
        lines.append(format_table(P99_HEADER, [point_row(p, 3) for p in comparison.p99]))
        lines.append(P99_NOTE)
    lines.append("")
    lines.append(_summary(comparison))
    lines += [f"- {item.recommendation}" for item in comparison_advice(comparison)]
    lines.append(method_note(comparison))
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |"]
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(comparison: Comparison) -> str:
    a, b = comparison.a, comparison.b
    parts = [f"## Run {b.run_id} (B) against run {a.run_id} (A)", ""]
    parts += [f"- {line}" for line in _runs_line(comparison)]
    parts.append(f"- points matched on: {', '.join(comparison.keys) or 'nothing swept'}")
    parts += ["", "### Context differences", ""]
    if comparison.context:
        parts.append(
            _md_table(
                ["what", "A", "B", "can explain a difference"],
                [[d.what, d.a, d.b, "yes" if d.serious else "hardly"] for d in comparison.context],
            )
        )
    else:
        parts.append("None: same server version, settings, machine, memory limit and pgbench.")
    parts += ["", "### Points", ""]
    parts.append(_md_table(HEADER, [point_row(p) for p in comparison.points]))
    for side, labels in (("A", comparison.only_a), ("B", comparison.only_b)):
        if labels:
            parts += ["", f"Points only in {side}: {'; '.join(labels)}"]
    if comparison.p99:
        parts += ["", "### p99 latency", ""]
        parts.append(_md_table(P99_HEADER, [point_row(p, 3) for p in comparison.p99]))
        parts += ["", P99_NOTE]
    parts += ["", f"{_summary(comparison)}.", ""]
    parts += [f"- {item.recommendation}" for item in comparison_advice(comparison)]
    parts += ["", method_note(comparison)]
    return "\n".join(parts)


def as_dict(comparison: Comparison) -> dict:
    def side(run):
        return {"run_id": run.run_id, "name": run.name, "status": run.status}

    return {
        "a": side(comparison.a),
        "b": side(comparison.b),
        "matched_on": comparison.keys,
        "context_differences": [dataclasses.asdict(d) for d in comparison.context],
        "points": [
            {
                "point": dict(p.key),
                "n_a": p.n_a,
                "n_b": p.n_b,
                "median_tps_a": p.median_a,
                "median_tps_b": p.median_b,
                "ratio_geometric_mean": p.ratio,
                "ci95_low": p.ci_low,
                "ci95_high": p.ci_high,
                "ratio_median": p.median_ratio,
                "mann_whitney": dataclasses.asdict(p.rank_test) if p.rank_test else None,
                "significant": p.significant,
                "verdict": p.verdict,
            }
            for p in comparison.points
        ],
        "p99": [
            {
                "point": dict(p.key),
                "n_a": p.n_a,
                "n_b": p.n_b,
                "median_p99_ms_a": p.median_a,
                "median_p99_ms_b": p.median_b,
                "ratio_geometric_mean": p.ratio,
                "ci95_low": p.ci_low,
                "ci95_high": p.ci_high,
                "significant": p.significant,
                "verdict": p.verdict,
            }
            for p in comparison.p99
        ],
        "only_a": comparison.only_a,
        "only_b": comparison.only_b,
        "findings": [item.recommendation for item in comparison_advice(comparison)],
        "method": method_note(comparison),
    }
