"""A run's report folder: plots (PNG and SVG) and index.html, from the store alone."""

from pathlib import Path

from pgcachelab.report.dataset import load_run
from pgcachelab.report.html import render_html
from pgcachelab.report.plots import all_plots
from pgcachelab.store.sqlite import ResultStore


def build_report(store: ResultStore, run_id: str, out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_run(store, run_id)
    plots = all_plots(data, out_dir)
    return render_html(data, plots, out_dir / "index.html")
