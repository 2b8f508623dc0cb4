"""What a report opens with and what `advise` prints are one thing (issue 25): on the fixture
store's tiny runs, and on constructed comparisons, warnings and version changes. No server."""

import html
import re

import pytest
from fix_cli import run_cli
from fix_reports import REPORT_ARTIFACTS, REPORT_RUNS_DIR

from pgcachelab.analysis.compare import Comparison, PointComparison, RunSide
from pgcachelab.analysis.compare_advice import comparison_advice
from pgcachelab.analysis.inspect_overhead import sag_of_ratios
from pgcachelab.analysis.run_data import load_run
from pgcachelab.analysis.statistics import StabilityWarning
from pgcachelab.analysis.versions import VersionChange
from pgcachelab.report.quality import group_warnings, warning_kind_html
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.studies.inspect_overhead.advice import method_advice
from pgcachelab.studies.inspect_overhead.sags import MethodSag
from pgcachelab.studies.registry import advise as run_advice
from pgcachelab.studies.versions.advice import version_pair_advice

TINY = ["archaeology", "big-cache", "cache-split", "inspect-overhead", "tpcc-ladder"]

# Checked by hand against the report's tables and, independently, from the stored tps
# (Welch on log tps with scipy's t): the step of big-cache-tiny is 1.415 (1.281..1.564) over
# 7 and 14 repetitions; archaeology's eight cells give 0.866..1.146, every interval across 1;
# the overhead run's pg_buffercache sag between runs at 32MB is +2.99% (-72.29..+78.28).
EXPECTED = {
    "big-cache": [
        "tps falls ×1.42 (95% CI 1.28–1.56) from scale=1 (22.4MB) to scale=2 (37.4MB), where "
        "the data outgrows shared_buffers (16MB)",
        "the run cannot show a step at the machine's RAM (23.5GB): every database measured "
        "(22.4MB .. 127MB) was smaller than it by more than a factor of 2 (a memory limit, "
        "[machine] memory, needs root)",
    ],
    "archaeology": [
        "18 against 15: no clear difference in any of the 8 cells (ratios 0.87–1.15; every 95% "
        "interval includes 1)",
    ],
    "inspect-overhead": [
        "polling with pg_buffercache view, grouped once a second: no clear cost, -0.1% "
        "(-26.8..+20.9%) at shared_buffers=16MB, +4.1% (-4.6..+12.1%) at shared_buffers=32MB "
        "(tps sag within runs; every 95% interval includes 0)",
        "polling with pg_buffercache_summary() once a second: no clear cost, -1.6% "
        "(-31.8..+21.7%) at shared_buffers=16MB, -10.4% (-25.0..+2.5%) at shared_buffers=32MB "
        "(tps sag within runs; every 95% interval includes 0)",
    ],
    "tpcc-ladder": [
        "step limit-removed mattered: tpmC ×500.19 [95% CI ×1.54, ×162723.82]",
        "step io made no clear difference: ×1.08 [95% CI ×0.60, ×1.93] includes 1",
        "the fastest step that keeps durability and vacuum is limit-removed",
    ],
    "cache-split": [
        "no shared_buffers measured keeps idx2 (the lookups after the scan) within 10% of idx1: "
        "idx2/idx1 1.24 (95% CI 0.04–35) at 16MB, the largest",
        "no clear difference: 1MB has the best median (0.13 ms [95% CI 0.066, 0.193] (n=2)), "
        "but every other value's interval overlaps it",
    ],
}


def _data(tiny: str):
    store = SqliteResultStore(REPORT_ARTIFACTS / "results.sqlite")
    [run_id] = [r for r, n in store.db.execute("select run_id, name from runs")
                if n == f"{tiny}-tiny"]  # fmt: skip
    data = load_run(store, run_id)
    store.db.close()
    return data


@pytest.mark.parametrize("tiny", TINY)
def test_the_report_opens_with_what_advise_prints(tiny_reports, tiny, tmp_path):
    data = _data(tiny)
    advice = run_advice(data)
    assert [a.recommendation for a in advice] == EXPECTED[tiny]
    page = tiny_reports[f"{tiny}-tiny"].index.read_text()
    block = page[page.index("<section id='findings'") : page.index("</section>")]
    assert page.index("<section id='findings'") < page.index("<h2>Measurement quality</h2>")
    for item in advice:
        assert html.escape(item.recommendation) + "." in block
    # advise, through the real entry point, on a copy of the fixture store
    store = tmp_path / "results.sqlite"
    store.write_bytes((REPORT_RUNS_DIR / "results.sqlite").read_bytes())
    printed = run_cli("advise", data.run.run_id, "--store", store)
    assert printed.returncode == 0, printed.stderr
    said = re.findall(r"^- [^:]+: (.*)$", printed.stdout, re.MULTILINE)
    assert said == EXPECTED[tiny]


def _warning(point: str, kind: str, problem: str = "x") -> StabilityWarning:
    return StabilityWarning(point, problem, f"advice for {kind}", kind)


def test_warnings_group_by_kind_with_each_point_once():
    labels = [f"scale={s}" for s in (1, 2, 4, 8, 16, 32)]
    warnings = [
        _warning("run", "repetitions", "every point with fewer than 6 repetitions"),
        *[_warning(f"{label} #{rep}", "trend") for label in labels for rep in (1, 2)],
        _warning("scale=2", "spread"),
    ]
    groups = group_warnings(warnings, labels)
    assert [g.kind for g in groups] == ["repetitions", "trend", "spread"]
    trend = groups[1]
    assert trend.points == labels and len(trend.warnings) == 12
    assert trend.advice == "advice for trend"
    line = warning_kind_html(trend)
    summary = line[line.index("<summary>") : line.index("</summary>")]
    # four points named, the rest counted; the twelve measurements only in the details
    assert "6 point(s): scale=1, scale=2, scale=4, scale=8 and 2 more (12 measurement(s))" in (
        summary
    )
    assert summary.count("try ") == 1 and "scale=32 #2" in line[line.index("</summary>") :]
    assert "every point with fewer than 6 repetitions" in warning_kind_html(groups[0])


def _side(run_id: str) -> RunSide:
    return RunSide(run_id, run_id, "done", {}, {}, [], None, "pgbench")


def _point(scale: int, ratio: float, low: float | None, high: float | None) -> PointComparison:
    return PointComparison((("scale", scale),), 5, 5, 100.0, 100.0 * ratio, ratio, low, high,
                           ratio, None)  # fmt: skip


def test_a_comparison_says_where_b_is_faster_and_where_nothing_is_clear():
    points = [_point(1, 1.8, 1.6, 2.0), _point(2, 0.7, 0.6, 0.8), _point(4, 1.02, 0.95, 1.1)]
    comparison = Comparison(_side("a"), _side("b"), ["scale"], [], points, [], [])
    [advice] = comparison_advice(comparison)
    assert advice.recommendation == (
        "B is faster at 1 of 3 points (×1.80 (95% CI 1.60–2.00) at scale=1); SLOWER at 1 "
        "(×0.70 (95% CI 0.60–0.80) at scale=2); no clear difference at 1"
    )
    same = Comparison(_side("a"), _side("b"), ["scale"], [], points[2:], [], [])
    assert comparison_advice(same)[0].recommendation == (
        "B against A: no clear difference at any of the 1 matched points (tps ratios "
        "1.02–1.02; no 95% interval excludes 1)"
    )


def test_version_changes_name_the_largest_in_each_direction():
    changes = [
        VersionChange((("clients", 1),), "15", "18", 1.25, 1.10, 1.42, (3, 3)),
        VersionChange((("clients", 4),), "15", "18", 1.05, 1.01, 1.09, (3, 3)),
        VersionChange((("clients", 8),), "15", "18", 0.80, 0.70, 0.91, (3, 3)),
        VersionChange((("clients", 16),), "15", "18", 1.01, 0.90, 1.12, (3, 3)),
    ]
    advice = version_pair_advice("15", "18", changes)
    assert advice.recommendation == (
        "18 against 15: faster in 2 of 4 cells (up to ×1.25 (95% CI 1.10–1.42) at clients=1); "
        "SLOWER in 1 (down to ×0.80 (95% CI 0.70–0.91) at clients=8); no clear difference in 1"
    )
    assert not any("only" in caveat for caveat in advice.caveats)  # three repetitions each


def test_an_overhead_sag_whose_interval_lies_above_zero_is_a_cost():
    # ratios 0.90, 0.91, 0.89: mean 0.90, sd 0.01, t(2) 4.303: 10% ± 2.5%
    def sag(shared_buffers: str, ratios: list[float]) -> MethodSag:
        cell = (("shared_buffers", shared_buffers),)
        return MethodSag(cell, "extension/fast", None, sag_of_ratios(ratios, "fast"), None)

    advice = method_advice("extension/fast", [sag("32MB", [0.90, 0.91, 0.89]),
                                              sag("128MB", [1.01, 0.98, 1.0])], [])  # fmt: skip
    assert advice.recommendation == (
        "polling with pg_cachelab fast once a second costs +10.0% (+7.5..+12.5%) at "
        "shared_buffers=32MB; no clear cost at shared_buffers=128MB (+0.3% (-3.5..+4.1%)) "
        "(tps sag between runs, 95% intervals)"
    )
