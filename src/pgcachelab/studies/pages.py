"""How a stored run reads, with its studies' own parts: the report page and `show`'s table.

report/ draws the parts every run has and takes the studies from here (the registry passed in),
so report never imports studies: the studies are the ones that draw with report's parts."""

from pathlib import Path

from pgcachelab.analysis.run_data import load_run
from pgcachelab.report.build import build_report as build_page
from pgcachelab.report.tables import run_table
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.registry import advise, studies_of, study_of


def build_report(store: ResultStore, run_id: str, out_dir: Path) -> Path:
    """A run's report folder (plots and index.html) from the store alone; the page's path."""
    return build_page(store, run_id, out_dir, studies_of, advise)


def run_text_table(store: ResultStore, run_id: str) -> str:
    """`show`: the run's study's own table, or the one every run has."""
    data = load_run(store, run_id)
    own = study_of(data).text_table(data)
    return own if own is not None else run_table(data)
