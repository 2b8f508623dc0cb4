"""The report and `advise` read only dataset.REPORT_METRICS of each measurement (issue 24):
every fixture run reports and advises exactly as it does from every figure it stored."""

import re
import shutil
from pathlib import Path

import pytest

from pgcachelab.analysis.run_data import load_run
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.studies.pages import build_report
from pgcachelab.studies.registry import advise as run_advice

FIXTURE = Path(__file__).parent / "data" / "report-runs" / "results.sqlite"


class EveryFigure(SqliteResultStore):
    """The store as the report read it before: every figure, whichever it asks for."""

    def measurements(self, run_id, metrics=None):
        return super().measurements(run_id)


def _page(out_dir: Path) -> str:
    """index.html without its images (drawn from the same figures, but not byte-stable)."""
    text = (out_dir / "index.html").read_text()
    text = re.sub(r"<svg.*?</svg>", "<svg/>", text, flags=re.S)
    return re.sub(r"data:image/[^\"')]*", "IMG", text)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    path = tmp_path_factory.mktemp("report-metrics") / "results.sqlite"
    shutil.copy(FIXTURE, path)  # an old-version store: opening it migrates the copy
    picked, everything = SqliteResultStore(path), EveryFigure(path)
    yield picked, everything
    picked.close()
    everything.close()


@pytest.mark.parametrize("name", sorted({
    "archaeology-tiny", "big-cache-tiny", "cache-split-tiny", "inspect-overhead-tiny",
    "tpcc-ladder-tiny",
}))  # fmt: skip
def test_a_fixture_run_reports_the_same_from_the_figures_it_reads(
    stores, tiny_reports, name, tmp_path, quick_figures
):
    picked, everything = stores
    run_id = next(run.run_id for run in picked.runs() if run.name == name)
    assert run_advice(load_run(picked, run_id)) == run_advice(load_run(everything, run_id))
    # the report from the figures it picks is the session's (fix_reports.py), built the same way
    build_report(everything, run_id, tmp_path / "everything")
    assert _page(tiny_reports[name].index.parent) == _page(tmp_path / "everything")
