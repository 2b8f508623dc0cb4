"""A run's report folder: plots (PNG and SVG) and index.html, from the store alone."""

from pathlib import Path

from pgcachelab.report.advice import run_advice
from pgcachelab.report.cache_composition import cache_composition_section
from pgcachelab.report.cache_wash import cache_wash_section
from pgcachelab.report.dataset import RunData, load_run
from pgcachelab.report.findings import findings_html
from pgcachelab.report.html import render_html
from pgcachelab.report.inspect_overhead import inspect_overhead_section
from pgcachelab.report.plots import all_plots, progress_plot
from pgcachelab.report.regimes import regimes_html
from pgcachelab.report.steps import steps_html
from pgcachelab.report.tpcc import tpcc_section
from pgcachelab.report.versions import is_version_run, versions_section
from pgcachelab.store.records import ResultStore


def previous_run(store: ResultStore, data: RunData) -> RunData | None:
    """The newest finished run of the same spec (by name) before this one, to check that the
    two agree (seed 001's versions, issue 19); None when there is none."""
    if not is_version_run(data):
        return None
    earlier = [
        run for run in store.runs()
        if run.name == data.run.name and run.status == "done"
        and run.created_at < data.run.created_at and run.run_id != data.run.run_id
    ]  # fmt: skip
    return load_run(store, earlier[-1].run_id) if earlier else None


def build_report(store: ResultStore, run_id: str, out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_run(store, run_id)
    wash_plots, findings = cache_wash_section(data, out_dir)
    version_plots, changes = versions_section(data, out_dir, previous_run(store, data))
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
    sections = [("Cache wash: idx1, the scan, idx2", findings)] if findings else []
    steps = steps_html(data)
    sections += [("Steps: where the throughput drops", steps)] if steps else []
    regimes = regimes_html(data)
    sections += [("Regimes: where the data lives", regimes)] if regimes else []
    sections += [("Version to version", changes)] if changes else []
    sections += [("TPC-C", tpcc_body)] if tpcc_body else []
    sections += [("The cost of looking inside shared_buffers", overhead)] if overhead else []
    sections += [("Cache snapshots: before and after each point", snapshots)] if snapshots else []
    answer = findings_html(run_advice(data), f"pgcachelab advise {data.run.run_id}")
    return render_html(data, plots, out_dir / "index.html", sections, answer)
