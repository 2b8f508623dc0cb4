"""Seed 002's ladder redrawn beside this run's: the article's tpmC per rung (as its BenchmarkSQL
logs print them) next to the run's median tpmC per step, on log axes, since the article's
rungs span three orders of magnitude and a small machine's steps sit far below them."""

from pathlib import Path

from pgcachelab.report.plots import save_figure
from pgcachelab.report.pyplot import plt
from pgcachelab.studies.tpcc.step_results import StepResult

# Seed 002's "Measured tpmC (NewOrders)" lines, in the article's order: limitTxnsPerMin 300,
# then 3,000, then 50,000; the IO settings; the memory settings; the limit removed; the OS.
ARTICLE_LADDER = (
    ("limit 300/min", 111.11),
    ("limit 3,000", 1330.08),
    ("limit 50,000", 10140.68),
    ("IO settings", 15803.6),
    ("memory", 22656.34),
    ("limit removed", 180732.76),
    ("OS settings", 193150.84),
)


def ladder_beside_article(results: list[StepResult], out_dir: Path) -> Path | None:
    """The two ladders side by side; None when the run measured no step."""
    measured = [r for r in results if r.median]
    if not measured:
        return None
    figure, (theirs, ours) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    names, values = zip(*ARTICLE_LADDER, strict=True)
    theirs.bar(range(len(values)), values, color="#9aa5b1")
    theirs.set_title("the article (BenchmarkSQL, its server)")
    theirs.set_xticks(range(len(names)), names, rotation=30, ha="right")
    medians = [r.median or 0.0 for r in measured]
    low = [m - (r.minimum or m) for m, r in zip(medians, measured, strict=True)]
    high = [(r.maximum or m) - m for m, r in zip(medians, measured, strict=True)]
    ours.bar(range(len(measured)), medians, yerr=[low, high], color="#1f77b4", capsize=3)
    ours.set_title("this run (median, min–max)")
    ours.set_xticks(range(len(measured)), [r.name for r in measured], rotation=30, ha="right")
    theirs.set_yscale("log")
    theirs.set_ylabel("tpmC (New-Orders per minute)")
    figure.tight_layout()
    [png, *_] = save_figure(figure, out_dir, "tpcc-ladder-beside-article")
    return png
