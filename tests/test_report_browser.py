"""Each shipped experiment's report, opened in headless Chromium: what people look at must work.

The reports are built from tests/data/report-runs/results.sqlite: real results of tiny real runs
of each shipped experiment's shape (regenerate.sh there rebuilds it), so these tests start no
server. The report and a screenshot of each page are kept under test-artifacts/report-browser/.
The compare-quick experiments are made to be compared: their page is `compare --html` of the
fixture's scale sweep against itself.

At 1280 px, the width a new user's browser opens at (issue 25), every page must read without a
horizontal scroll, open with what the run shows, and say each kind of warning once.
"""

import tempfile
import urllib.parse
from pathlib import Path

import pytest
from fix_processes import processes_mentioning
from fix_reports import REPORT_ARTIFACTS, REPORT_RUNS_DIR
from headless_chromium import chromium_path, headless_chromium, visit

from pgcachelab.spec import load_spec

ROOT = Path(__file__).parent.parent
# Each shipped experiment and the tiny run of its shape.
TINY_RUN = {
    "big-cache": "big-cache", "big-cache-quick": "big-cache", "big-cache-emulated": "big-cache",
    "big-cache-quick-noroot": "big-cache",
    "archaeology": "archaeology", "archaeology-quick": "archaeology",
    "cache-split": "cache-split", "cache-split-quick": "cache-split",
    "tpcc-ladder": "tpcc-ladder", "tpcc-ladder-quick": "tpcc-ladder",
    "inspect-overhead": "inspect-overhead", "inspect-overhead-quick": "inspect-overhead",
    "inspect-accuracy-quick": "inspect-overhead",
    "inspect-history": "inspect-history", "inspect-history-quick": "inspect-history",
    "compare-quick": "big-cache", "compare-quick-async-commit": "big-cache",  # scale sweeps
    "latency-offered-load-quick": "offered-load",
}  # fmt: skip
TINY_RUNS = sorted(set(TINY_RUN.values()))
PAGES = [*TINY_RUNS, "compare"]  # compare: what compare-quick and its async twin are for

pytestmark = [
    pytest.mark.skipif(
        chromium_path() is None, reason="no chromium: `make test` installs Debian's (as root)"
    ),
    pytest.mark.browser,
]


def _shape(spec) -> tuple:
    return spec.workload, set(spec.sweep_workload) | set(spec.sweep_settings), bool(spec.ladder)


def test_every_shipped_experiment_has_a_tiny_run_of_its_shape():
    shipped = {path.stem: path for path in (ROOT / "experiments").glob("*.toml")}
    assert set(shipped) == set(TINY_RUN)
    for name, path in shipped.items():
        workload, swept, ladder = _shape(load_spec(path))
        tiny = load_spec(REPORT_RUNS_DIR / f"{TINY_RUN[name]}.toml")
        tiny_workload, tiny_swept, tiny_ladder = _shape(tiny)
        assert (workload, ladder) == (tiny_workload, tiny_ladder), name
        # the tiny run sweeps what the experiment sweeps, but huge pages and an emulated disk
        # (both need root; archaeology's per-disk charts: test_version_interleave.py), and
        # inspect-history's clients: one more key of its cells, as shared_buffers is
        # (test_inspect_history.py: each shared_buffers gets its own versions block), and
        # archaeology's protocol (-M simple and prepared): one more key of its panels, as the
        # disk is (studies/versions/report.py: a panel per combination of the swept keys
        # other than version and clients), until the fixture store is regenerated with it
        assert swept <= tiny_swept | {"huge_pages", "disk", "clients", "protocol"}, name


def _run_id(store, name: str) -> str:
    [run_id] = [r for r, n in store.db.execute("select run_id, name from runs") if n == name]
    return run_id


@pytest.fixture(scope="module")
def pages(tiny_reports) -> dict[str, Path]:
    """Page name -> index.html: each tiny run's report, and a compare page."""
    from pgcachelab.analysis.compare_store import load_comparison
    from pgcachelab.report.compare_html import render_html
    from pgcachelab.store.sqlite import SqliteResultStore

    store = SqliteResultStore(REPORT_ARTIFACTS / "results.sqlite")  # the copy the reports came from
    run_id = _run_id(store, "big-cache-tiny")
    comparison = load_comparison(store, run_id, store, run_id, ("pgbench", "pgbench"))
    store.db.close()
    found = {tiny: tiny_reports[f"{tiny}-tiny"].index for tiny in TINY_RUNS}
    found["compare"] = render_html(comparison, REPORT_ARTIFACTS / "compare" / "index.html")
    return found


@pytest.fixture(scope="module")
def browser():
    with headless_chromium() as devtools:
        yield devtools


@pytest.mark.parametrize("tiny", TINY_RUNS)
def test_report_opens_cleanly_in_chromium(tiny_reports, browser, tiny):
    index = tiny_reports[f"{tiny}-tiny"].index
    page = visit(browser, index)
    screenshot = REPORT_ARTIFACTS / f"{tiny}.png"
    screenshot.write_bytes(page.screenshot_png)
    assert page.screenshot_png.startswith(b"\x89PNG"), "the screenshot is not a PNG"
    assert page.console_errors == []
    assert page.network_requests == []
    assert page.failed_requests == []
    assert page.broken_images == []
    assert page.requests, "the page itself should at least have been requested"
    for link in page.links:
        parsed = urllib.parse.urlparse(link)
        assert parsed.scheme == "file", f"a link that would leave the report: {link}"
        target = Path(urllib.parse.unquote(parsed.path))
        assert target.is_file(), f"broken link: {link}"
        if parsed.fragment and target == index.resolve():
            assert parsed.fragment in page.anchors, f"broken anchor: {link}"


def test_the_browser_is_gone_afterwards(tiny_reports):
    temp = Path(tempfile.gettempdir())
    singletons_before = set(temp.glob("org.chromium.Chromium.*"))
    with headless_chromium() as devtools:
        visit(devtools, tiny_reports[f"{TINY_RUNS[0]}-tiny"].index)
        profile = str(devtools.profile)
        assert processes_mentioning(profile)
    assert processes_mentioning(profile) == []
    assert not Path(profile).exists()
    assert set(temp.glob("org.chromium.Chromium.*")) == singletons_before  # its $TMPDIR socket


def _warning_kinds(tiny: str) -> set[str]:
    """The kinds of warning the run's data has (none on a compare page)."""
    if tiny == "compare":
        return set()
    from pgcachelab.analysis.run_data import load_run
    from pgcachelab.store.sqlite import SqliteResultStore

    store = SqliteResultStore(REPORT_ARTIFACTS / "results.sqlite")
    kinds = {w.kind for w in load_run(store, _run_id(store, f"{tiny}-tiny")).warnings}
    store.db.close()
    return kinds


@pytest.mark.parametrize("tiny", PAGES)
def test_report_reads_at_1280_px(pages, browser, tiny):
    """No horizontal scroll, the answer first, and one line per kind of warning."""
    page = visit(browser, pages[tiny])
    (REPORT_ARTIFACTS / f"{tiny}-1280.png").write_bytes(page.screenshot_png)
    assert 1200 < page.viewport_width <= 1280  # the window is 1280 px, less its scroll bar
    assert page.scroll_width <= page.viewport_width, "the page scrolls sideways"
    assert page.overflowing == [], "past the right edge"
    assert page.findings, "no 'What this run shows' block"
    assert all(len(finding) > 20 for finding in page.findings), page.findings
    kinds = _warning_kinds(tiny)
    assert len(page.warning_kinds) == len(set(page.warning_kinds)), page.warning_kinds
    assert set(page.warning_kinds) == kinds  # every kind said, once
    assert page.visible_warning_details == 0, "per-point warnings shown before a line is opened"
