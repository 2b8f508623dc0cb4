"""A run's report folder: plots (PNG and SVG) and index.html, from the store alone.

The page is the run's studies' own sections between the sections every run has: the offered load
first, then the steps and regimes, the cache composition and the hosts. Which studies a run is and
what they advise are given by the caller (studies/pages.py, from the registry): the studies draw
with this package's parts, so this package does not import them."""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from markupsafe import Markup

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData, load_run
from pgcachelab.report.cache_composition import cache_composition_section
from pgcachelab.report.findings import findings_html
from pgcachelab.report.hosts import host_classes_section
from pgcachelab.report.html import render_html
from pgcachelab.report.offered_load import offered_load_section
from pgcachelab.report.plots import all_plots
from pgcachelab.report.regimes import regimes_html
from pgcachelab.report.render import Section
from pgcachelab.report.steps import steps_html
from pgcachelab.spec.load import stored_schedule
from pgcachelab.store.records import ResultStore


class ReportedStudy(Protocol):
    """What the page asks of a study (studies/kind.py's Study has it)."""

    @property
    def shows_cache_composition(self) -> bool: ...

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]: ...


def build_report(
    store: ResultStore,
    run_id: str,
    out_dir: Path,
    studies_of: Callable[[RunData], Sequence[ReportedStudy]],
    advise: Callable[[RunData], list[Advice]],
) -> Path:
    """The page of `run_id` in `out_dir`: `studies_of` the run (its own first) draw their
    sections, `advise` gives the findings it opens with."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_run(store, run_id)
    if not data.schedule:  # stored before the runner recorded it: the page says what the spec did
        data.schedule = stored_schedule(data.run.spec_text, data.run.spec_path)
    studies = studies_of(data)
    own = [s for study in studies for s in study.sections(data, out_dir, store) if s.body]
    offered = offered_load_section(data, out_dir)
    composition = (
        cache_composition_section(data, out_dir)
        if all(study.shows_cache_composition for study in studies)
        else Section("")
    )
    steps = Section("Steps: where the throughput drops", Markup(steps_html(data)))
    regimes = Section("Regimes: where the data lives", Markup(regimes_html(data)))
    hosts = host_classes_section(data)
    ordered = (offered, *own, steps, regimes, composition, hosts)
    sections = [s for s in ordered if s.body]
    # The plots in the page's order; the generic ones only where no section stands for them.
    plots = [p for s in (offered, *own, composition) for p in s.plots]
    if all(s.generic_plots for s in sections):
        plots += all_plots(data, out_dir)
    answer = findings_html(advise(data), f"pgcachelab advise {data.run.run_id}")
    return render_html(data, plots, out_dir / "index.html", sections, answer)
