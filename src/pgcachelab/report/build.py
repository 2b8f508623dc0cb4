"""A run's report folder: plots (PNG and SVG) and index.html, from the store alone."""

from pathlib import Path

from markupsafe import Markup

from pgcachelab.report.advice import run_advice
from pgcachelab.report.cache_composition import cache_composition_section
from pgcachelab.report.cache_wash import cache_wash_section
from pgcachelab.report.dataset import RunData, load_run
from pgcachelab.report.findings import findings_html
from pgcachelab.report.hosts import host_classes_section
from pgcachelab.report.html import render_html
from pgcachelab.report.inspect_overhead import inspect_overhead_section
from pgcachelab.report.offered_load import offered_load_section
from pgcachelab.report.plots import all_plots
from pgcachelab.report.regimes import regimes_html
from pgcachelab.report.render import Section
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
        run
        for run in store.runs()
        if run.name == data.run.name
        and run.status == "done"
        and run.created_at < data.run.created_at
        and run.run_id != data.run.run_id
    ]
    return load_run(store, earlier[-1].run_id) if earlier else None


def build_report(store: ResultStore, run_id: str, out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_run(store, run_id)
    wash = cache_wash_section(data, out_dir)
    versions = versions_section(data, out_dir, previous_run(store, data))
    tpcc = tpcc_section(data, out_dir)
    overhead = inspect_overhead_section(data, out_dir)
    # An overhead run polls for the cost, not for what is cached: no composition there.
    composition = Section("") if overhead.body else cache_composition_section(data, out_dir)
    steps = Section("Steps: where the throughput drops", Markup(steps_html(data)))
    regimes = Section("Regimes: where the data lives", Markup(regimes_html(data)))
    hosts = host_classes_section(data)
    offered = offered_load_section(data, out_dir)
    # The page's order; the plots come in their own, each section's before the generic ones.
    ordered = (offered, wash, steps, regimes, versions, tpcc, overhead, composition, hosts)
    sections = [s for s in ordered if s.body]
    plots = [p for s in (offered, overhead, composition, tpcc, versions, wash) for p in s.plots]
    if all(s.generic_plots for s in sections):
        plots += all_plots(data, out_dir)
    answer = findings_html(run_advice(data), f"pgcachelab advise {data.run.run_id}")
    return render_html(data, plots, out_dir / "index.html", sections, answer)
