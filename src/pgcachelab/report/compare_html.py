"""`compare --html FILE`: one self-contained page, the chart inlined as a base64 PNG."""

import base64
import io
from pathlib import Path

from markupsafe import Markup
from matplotlib.ticker import FuncFormatter

from pgcachelab.analysis.compare import Comparison
from pgcachelab.analysis.compare_advice import comparison_advice
from pgcachelab.report.compare_text import HEADER, method_note, point_row
from pgcachelab.report.findings import findings_html
from pgcachelab.report.pyplot import plt
from pgcachelab.report.render import ALL_COLUMNS, macro, render, table


def ratio_chart_png(comparison: Comparison) -> bytes | None:
    """B/A per point with its 95% interval, on a log axis with a line at 1; None without data."""
    points = [p for p in comparison.points if p.ratio is not None]
    if not points:
        return None
    figure, axis = plt.subplots(figsize=(max(6.0, 0.7 * len(points) + 2), 4.2))
    xs = list(range(len(points)))
    for x, point in zip(xs, points, strict=True):
        ratio = point.ratio
        assert ratio is not None  # points keeps those with one
        color = ("tab:green" if ratio > 1 else "tab:red") if point.significant else "0.35"
        if point.ci_low is not None and point.ci_high is not None:
            axis.errorbar(
                [x],
                [ratio],
                yerr=[[ratio - point.ci_low], [point.ci_high - ratio]],
                fmt="o",
                color=color,
                capsize=4,
            )
        else:
            axis.plot([x], [ratio], "o", color=color)
    axis.axhline(1.0, color="black", linewidth=1)
    axis.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")  # 0.5, not 5x10^-1
    axis.yaxis.set_major_formatter(plain)
    axis.yaxis.set_minor_formatter(plain)
    axis.set_xticks(xs, [p.label for p in points], rotation=30, ha="right", fontsize=8)
    axis.set_xlabel("point (matched parameters)")
    axis.set_ylabel("tps ratio B / A (geometric means, log scale)")
    axis.set_title(
        f"run {comparison.b.run_id} (B) / run {comparison.a.run_id} (A), 95% Welch intervals"
    )
    axis.plot([], [], "o", color="tab:green", label="B significantly faster")
    axis.plot([], [], "o", color="tab:red", label="B significantly slower")
    axis.plot([], [], "o", color="0.35", label="no significant difference")
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # beside: never on a point
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def render_html(comparison: Comparison, out_path: Path) -> Path:
    a, b = comparison.a, comparison.b
    png = ratio_chart_png(comparison)
    serious = macro("compare_parts.html.j2", "serious")
    context = [[serious(d.what) if d.serious else d.what, d.a, d.b] for d in comparison.context]
    page = render(
        "compare.html.j2",
        a=a,
        b=b,
        keys=", ".join(comparison.keys) or "nothing swept",
        findings=findings_html(
            comparison_advice(comparison),
            f"pgcachelab compare {a.run_id} {b.run_id}",
            "What this comparison shows",
        ),
        context=Markup(table(["what", "A", "B"], context, ALL_COLUMNS)) if context else "",
        png_base64=base64.b64encode(png).decode() if png else "",
        method_note=method_note(comparison),
        points=Markup(table(HEADER, [point_row(p) for p in comparison.points])),
        only=[("A", comparison.only_a), ("B", comparison.only_b)],
    )
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(page)
    return out_path
