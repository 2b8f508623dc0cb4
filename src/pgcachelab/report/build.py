"""A run's report folder: plots (PNG and SVG) and index.html, from the store alone."""

from pathlib import Path

from pgcachelab.report.cache_composition import cache_composition_section
from pgcachelab.report.cache_wash import cache_wash_section
from pgcachelab.report.dataset import load_run
from pgcachelab.report.html import render_html
from pgcachelab.report.inspect_overhead import inspect_overhead_section
from pgcachelab.report.plots import all_plots, progress_plot
from pgcachelab.report.regimes import regimes_html
from pgcachelab.report.steps import steps_html
from pgcachelab.report.tpcc import tpcc_section
from pgcachelab.report.versions import versions_section
from pgcachelab.store.sqlite import ResultStore


def build_report(store: ResultStore, run_id: str, out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_run(store, run_id)
    wash_plots, findings = cache_wash_section(data, out_dir)
    version_plots, changes = versions_section(data, out_dir)
    tpcc_plots, tpcc_body = tpcc_section(data, out_dir)
    if tpcc_body:
        plots = tpcc_plots
    elif version_plots or changes:
        # one line per version in panels: the generic plots would draw every cell as a line
        plots = version_plots + progress_plot(data, out_dir)
    else:
        plots = wash_plots + all_plots(data, out_dir)
    overhead_plots, overhead = inspect_overhead_section(data, out_dir)
    # An overhead run polls for the cost, not for what is cached: no composition there.
    composition_plots, snapshots = (
        ([], "") if overhead else cache_composition_section(data, out_dir)
    )
    plots = overhead_plots + composition_plots + plots
    sections = [("Findings", findings)] if findings else []
    steps = steps_html(data)
    sections += [("Steps: where the throughput drops", steps)] if steps else []
    regimes = regimes_html(data)
    sections += [("Regimes: where the data lives", regimes)] if regimes else []
    sections += [("Version to version", changes)] if changes else []
    sections += [("TPC-C", tpcc_body)] if tpcc_body else []
    sections += [("The cost of looking inside shared_buffers", overhead)] if overhead else []
    sections += [("Cache snapshots: before and after each point", snapshots)] if snapshots else []
    return render_html(data, plots, out_dir / "index.html", sections)
