"""Reports of the tiny real runs in tests/data/report-runs (regenerate.sh there), built once
per session for the figure, findings and browser tests."""

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

REPORT_RUNS_DIR = Path(__file__).parent / "data" / "report-runs"
# one directory per pytest-xdist worker (gw0, gw1: each builds its own session's reports)
REPORT_ARTIFACTS = Path(__file__).parent.parent / "test-artifacts" / "report-browser"
if os.environ.get("PYTEST_XDIST_WORKER"):
    REPORT_ARTIFACTS /= os.environ["PYTEST_XDIST_WORKER"]


@dataclasses.dataclass
class TinyReport:
    index: Path  # the report's index.html
    figures: dict  # the name of each figure it saved -> the matplotlib Figure, as saved


@pytest.fixture(scope="session")
def tiny_runs(tmp_path_factory) -> dict:
    """Run name -> its RunData, from a copy of the fixture store (opening a store writes to
    it): what the studies' claims and the registry are judged on."""
    from pgcachelab.analysis.run_data import load_run
    from pgcachelab.store.sqlite import SqliteResultStore

    path = tmp_path_factory.mktemp("tiny-runs") / "results.sqlite"
    shutil.copyfile(REPORT_RUNS_DIR / "results.sqlite", path)
    store = SqliteResultStore(path)
    return {run.name: load_run(store, run.run_id) for run in store.runs()}


@pytest.fixture(scope="session")
def tiny_reports() -> dict[str, TinyReport]:
    """Run name -> the report built from the fixture store of real tiny runs (regenerate.sh
    there). Built once for the figure and the browser tests, kept under test-artifacts/."""
    from matplotlib.figure import Figure

    from pgcachelab.store.sqlite import SqliteResultStore
    from pgcachelab.studies.pages import build_report

    shutil.rmtree(REPORT_ARTIFACTS, ignore_errors=True)
    REPORT_ARTIFACTS.mkdir(parents=True)
    store_path = REPORT_ARTIFACTS / "results.sqlite"
    shutil.copyfile(REPORT_RUNS_DIR / "results.sqlite", store_path)  # opening a store writes
    store = SqliteResultStore(store_path)
    runs = store.db.execute("select run_id, name from runs").fetchall()
    original, saving = Figure.savefig, {}

    def keeping_savefig(figure, path, *args, **kwargs):
        # each figure is saved as PNG, then SVG, then closed: keep it to inspect later
        saving[Path(path).stem] = figure
        return original(figure, path, *args, **kwargs)

    reports = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", keeping_savefig)
        for run_id, name in runs:
            saving = {}
            index = build_report(store, run_id, REPORT_ARTIFACTS / name)
            reports[name] = TinyReport(index, saving)
    store.db.close()
    return reports


@pytest.fixture
def quick_figures(monkeypatch) -> None:
    """For a test that reads a report's text, not its pictures: every figure is still drawn and
    saved, each file in one pass at a low resolution (a tight bounding box lays the figure out
    once more just to measure it). The shipped figures are checked on `tiny_reports`, a session
    fixture, so it is built before this patch and never with it."""
    from matplotlib.figure import Figure

    original = Figure.savefig

    def quick_savefig(figure, path, *args, **kwargs):
        return original(figure, path, *args, **{**kwargs, "dpi": 30, "bbox_inches": None})

    monkeypatch.setattr(Figure, "savefig", quick_savefig)
