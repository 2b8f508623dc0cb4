"""Each shipped experiment's report, opened in headless Chromium: what people look at must work.

The reports are built from tests/data/report-runs/results.sqlite: real results of tiny real runs
of each shipped experiment's shape (regenerate.sh there rebuilds it), so these tests start no
server. The report and a screenshot of each page are kept under test-artifacts/report-browser/.
"""

import tempfile
import urllib.parse
from pathlib import Path

import pytest
from conftest import REPORT_ARTIFACTS, REPORT_RUNS_DIR, processes_mentioning
from headless_chromium import chromium_path, headless_chromium, visit

from pgcachelab.experiments.spec import load_spec

ROOT = Path(__file__).parent.parent
# Each shipped experiment and the tiny run of its shape.
TINY_RUN = {
    "big-cache": "big-cache", "big-cache-quick": "big-cache", "big-cache-emulated": "big-cache",
    "big-cache-quick-noroot": "big-cache",
    "archaeology": "archaeology", "archaeology-quick": "archaeology",
    "cache-split": "cache-split", "cache-split-quick": "cache-split",
    "tpcc-ladder": "tpcc-ladder", "tpcc-ladder-quick": "tpcc-ladder",
    "inspect-overhead": "inspect-overhead", "inspect-overhead-quick": "inspect-overhead",
    "compare-quick": "big-cache", "compare-quick-async-commit": "big-cache",  # scale sweeps
}  # fmt: skip
TINY_RUNS = sorted(set(TINY_RUN.values()))

pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="no chromium: `make test` installs Debian's (as root)"
)


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
        # the tiny run sweeps what the experiment sweeps (huge_pages only "off": no root pages)
        assert swept <= tiny_swept | {"huge_pages"}, name


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
