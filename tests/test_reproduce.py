"""`pgcachelab reproduce`: each study's claims judged on its run, on one page (experiments/
reproduce.py and reproduce_page.py). The page is built here from the fixture store's real tiny
runs and opened in headless Chromium; a toy study registered from the test goes through the
command itself on a real server, with a second one that cannot run, as a row with its reason."""

import json
import shutil
import urllib.parse
from pathlib import Path

import pytest
from fix_cli import run_cli_forked
from fix_reports import REPORT_RUNS_DIR
from headless_chromium import chromium_path, headless_chromium, visit

from pgcachelab.analysis.claims import (
    CANNOT,
    NOISE,
    NOT_MEASURED,
    Figure,
    at_least,
    cannot,
    follows_from_setup,
    ratio_figure,
)
from pgcachelab.analysis.qualifiers import QUALIFIERS
from pgcachelab.analysis.run_data import RunData
from pgcachelab.errors import RunFailed
from pgcachelab.experiments.reproduce import (
    FULL,
    QUICK,
    StudyResult,
    judge,
    judge_across,
    judge_claim,
    other_work_pct,
    reproduce_study,
    spec_for,
    spec_path,
)
from pgcachelab.experiments.reproduce_page import as_dict, render_html, render_text
from pgcachelab.probes.host_resources import busy_pct
from pgcachelab.progress import QuietProgress
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.studies import registry
from pgcachelab.studies.kind import PublishedClaim, Reproduction, Study

FIXTURE_RUN = {  # each study's tiny run in the fixture store
    "big-cache": "big-cache-tiny",
    "cache-wash": "cache-split-tiny",
    "tpcc": "tpcc-ladder-tiny",
    "inspect-overhead": "inspect-overhead-tiny",
    "versions": "archaeology-tiny",
}


def test_each_study_reproduces_shipped_specs():
    for study in registry.STUDIES:
        assert study.reproduction is not None, study.name
        for root in (True, False):
            for mode in (QUICK, FULL):
                assert spec_path(spec_for(study, mode, root)).is_file(), (study.name, mode, root)
    big_cache = next(s for s in registry.STUDIES if s.name == "big-cache")
    assert spec_for(big_cache, QUICK, root=False) == "big-cache-quick-noroot"
    assert spec_for(big_cache, QUICK, root=True) == "big-cache-quick"


@pytest.fixture(scope="module")
def fixture_results(tmp_path_factory, tiny_reports) -> tuple[list[StudyResult], Path]:
    """Every study's claims judged on its tiny fixture run, each run's report (the session's,
    built once) under reports/RUN as `reproduce` writes them."""
    base = tmp_path_factory.mktemp("reproduce")
    shutil.copyfile(REPORT_RUNS_DIR / "results.sqlite", base / "results.sqlite")
    store = SqliteResultStore(base / "results.sqlite")
    by_name = {run.name: run.run_id for run in store.runs()}
    (base / "reports").mkdir()
    results = []
    for study in registry.STUDIES:
        name = FIXTURE_RUN[study.name]
        run_id = by_name[name]
        (base / "reports" / run_id).symlink_to(tiny_reports[name].index.parent)
        result = StudyResult(study, spec_for(study, QUICK, True), run_id, seconds=61.0)
        result.claims = judge(study, run_id, store, "")
        results.append(result)
    failed = StudyResult(registry.STUDIES[0], "cache-split-quick", None, reason="no root here")
    failed.claims = judge(failed.study, None, store, failed.reason)
    return [*results, failed], base


def test_a_study_without_a_run_is_a_row_of_cannot_with_its_reason(fixture_results):
    results, _ = fixture_results
    failed = results[-1]
    assert failed.claims and all(c.verdict.outcome == CANNOT for c in failed.claims)
    assert {c.verdict.reason for c in failed.claims} == {"no root here"}


def test_text_and_json_carry_every_claim(fixture_results):
    results, _ = fixture_results
    text = render_text(results)
    claims = [c for r in results for c in r.claims]
    for claim in claims:
        assert claim.claim.words in text
    assert "did not finish: no root here" in text
    machine = {"host": "h", "cores": 2}
    document = json.loads(json.dumps(as_dict(results, machine)))
    assert document["machine"] == machine
    assert sum(len(s["claims"]) for s in document["studies"]) == len(claims)
    assert document["studies"][-1]["reason"] == "no root here"


@pytest.mark.browser
@pytest.mark.skipif(chromium_path() is None, reason="no chromium: `make test` installs it (root)")
def test_the_page_opens_cleanly_in_chromium(fixture_results):
    results, base = fixture_results
    machine = {"host": "h", "cores": 2, "memory": "24 GiB", "root": True, "mode": "quick",
               "date": "today", "commit": "abc"}  # fmt: skip
    store = SqliteResultStore(base / "results.sqlite")
    index = render_html(results, machine, store, base / "reports", base / "reports" / "reproduce")
    with headless_chromium() as browser:
        page = visit(browser, index)
    assert page.console_errors == [] and page.failed_requests == []
    assert page.network_requests == [] and page.broken_images == []
    assert page.scroll_width <= page.viewport_width, "the page scrolls sideways"
    reports = set()
    for link in page.links:
        target = Path(urllib.parse.unquote(urllib.parse.urlparse(link).path))
        assert target.is_file(), f"broken link: {link}"
        reports.add(target.parent.name)
    assert reports >= {r.run_id for r in results if r.run_id}  # each study links its report
    html = index.read_text()
    # each run's headline chart, and TPC-C's ladder beside the article's
    assert html.count("<img") == sum(1 for r in results if r.run_id) + 1
    assert 'src="tpcc-ladder-beside-article.png"' in html


# -- a study that cannot run is a row, through the command --------------------------------


class UnrunnableStudy(Study):
    name = "unrunnable"
    title = "a study whose spec is missing"
    seed = "toy"
    reproduction = Reproduction(quick="/nonexistent/spec.toml", full="/nonexistent/spec.toml")
    claims = (PublishedClaim("toy", "nowhere", "this one never runs"),)


@pytest.fixture
def unrunnable():
    study = UnrunnableStudy()
    registry.register(study)
    yield study
    registry.unregister(study.name)


def test_a_study_that_cannot_run_is_a_row_with_its_reason(unrunnable, tmp_path):
    lab = tmp_path / "lab"
    done = run_cli_forked("reproduce", "unrunnable", "--json", "--lab-dir", lab)
    assert done.returncode == 0, done.stderr
    [study] = json.loads(done.stdout)["studies"]
    assert study["run_id"] is None and "/nonexistent/spec.toml" in study["reason"]
    [claim] = study["claims"]
    assert claim["verdict"] == CANNOT and claim["reason"] == study["reason"]
    assert "this one never runs" in (lab / "reports" / "reproduce" / "index.html").read_text()


def test_a_disk_that_fills_once_reproduce_has_begun_is_exit_1_in_one_line(unrunnable, tmp_path):
    """Issue 48, item 11: a full disk once `reproduce` began ended it with exit 2 (bad input);
    the docs say 1 once a run has started. Here the page's file is /dev/full, where every
    write fails as on a full disk (ENOSPC), after the store and the studies went well."""
    lab = tmp_path / "lab"
    first = run_cli_forked("reproduce", "unrunnable", "--lab-dir", lab)
    assert first.returncode == 0, first.stderr
    page = lab / "reports" / "reproduce" / "index.html"
    page.unlink()
    page.symlink_to("/dev/full")
    done = run_cli_forked("reproduce", "unrunnable", "--lab-dir", lab)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    message, hint = done.stderr.splitlines()[-2:]
    assert message == "pgcachelab: no space left on device"
    assert hint.startswith("hint: free space on that file system")
    assert hint.endswith("then run the same reproduce again: finished runs are reused")


def test_a_study_whose_run_the_environment_stopped_ends_reproduce_with_exit_1(tmp_path):
    """The run of a study failed on its disk or store (RunFailed, exit 1 from `run`): its row
    keeps the reason and the command, once the page is written, exits 1 with that line."""
    versions = next(s for s in registry.STUDIES if s.name == "versions")
    store = SqliteResultStore(tmp_path / "results.sqlite")

    def disk_filled(spec, store, progress, pg_bin):
        raise RunFailed("/lab/results.sqlite: no space left on device", "free space")

    result = reproduce_study(versions, QUICK, store, QuietProgress(), measure=disk_filled)
    assert result.reason.startswith("/lab/results.sqlite: no space left on device")
    assert isinstance(result.environment_failure, RunFailed)
    assert all(c.verdict.outcome == CANNOT for c in result.claims)


def test_an_unknown_study_is_one_line(tmp_path):
    done = run_cli_forked("reproduce", "nope", "--lab-dir", tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "pgcachelab: reproduce: unknown study 'nope'"


# -- other work on the machine ------------------------------------------------------------


def test_the_busy_share_of_the_machine_from_two_cpu_time_readings():
    before = {"user": 100.0, "nice": 0.0, "system": 50.0, "idle": 800.0, "iowait": 10.0,
              "irq": 0.0, "softirq": 0.0, "steal": 0.0}  # fmt: skip
    # 2 cores for 3 s: 6 s of CPU, 1.5 s of it working, 0.5 s waiting for IO, 4 s idle
    after = {**before, "user": 101.0, "system": 50.5, "idle": 804.0, "iowait": 10.5}
    assert busy_pct(before, after) == pytest.approx(25.0)
    assert busy_pct(before, before) is None
    measured = other_work_pct(0.2)  # this machine, now: a share, whatever the tests beside it do
    assert measured is not None and 0.0 <= measured <= 100.0


def test_a_run_beside_other_work_is_flagged_on_every_output(fixture_results, tmp_path):
    results, base = fixture_results
    quiet, busy = results[0], results[1]
    quiet.other_work_before_pct, quiet.other_work_after_pct = 2.0, 1.0
    busy.other_work_before_pct, busy.other_work_after_pct = 3.0, 47.0
    try:
        assert not quiet.machine_was_busy and busy.machine_was_busy
        text = render_text([quiet, busy])
        assert text.count("WARNING: other work kept the machine busy") == 1
        assert "its CPU 3% in use just before it and 47% in use just after, while" in text
        refused = StudyResult(busy.study, busy.spec, None, reason="no root here")
        refused.other_work_before_pct = 47.0  # sampled, then the study was refused: no figures
        assert not refused.machine_was_busy and "WARNING" not in render_text([refused])
        document = as_dict([quiet, busy], {"host": "h"})
        assert [s["other_work_pct"]["busy"] for s in document["studies"]] == [False, True]
        store = SqliteResultStore(base / "results.sqlite")
        machine = {"host": "h", "cores": 2, "memory": "24 GiB", "root": True, "mode": "quick",
                   "date": "today", "commit": "abc"}  # fmt: skip
        html = render_html([quiet, busy], machine, store, base / "reports", tmp_path).read_text()
        assert html.count('<p class="warning">WARNING: other work') == 1
    finally:
        for result in (quiet, busy):
            result.other_work_before_pct = result.other_work_after_pct = None


# -- issue 46: refused figures, classes, the article beside us, the words ------------------


def _refusing_judge(data: RunData):
    return at_least(ratio_figure("tps after/before", [0.0, 0.0, 5.0, 5.0]), 1.1, "rule")


def test_a_refused_figure_leaves_the_claim_undecided_with_the_reason():
    claim = PublishedClaim("toy", "nowhere", "a claim", judge=_refusing_judge)
    verdict = judge_claim(claim, None)
    assert verdict.outcome == NOISE
    assert "undecided: the figure was refused" in verdict.reason
    assert "repetition 1 of 4 gave the ratio 0.0" in verdict.reason


def test_a_claim_names_a_known_qualifier_and_class():
    with pytest.raises(ValueError, match="unknown qualifier"):
        PublishedClaim("toy", "nowhere", "a claim", qualifier="somewhat maybe")
    with pytest.raises(ValueError, match="unknown kind"):
        PublishedClaim("toy", "nowhere", "a claim", kind="opinion")
    setup = PublishedClaim("toy", "nowhere", "a claim", kind="setup")
    assert setup.class_of(cannot("x")) == "setup"
    finding = PublishedClaim("toy", "nowhere", "a claim")
    reproduced = at_least(Figure("r", 5.0, 4.0, 6.0, 3), 2.0, "rule")
    assert finding.class_of(reproduced) == "finding"
    assert finding.class_of(follows_from_setup(reproduced, "the lab's limit")) == "setup"


def test_every_claim_says_its_word_and_the_article_figure():
    claims = [c for study in registry.STUDIES for c in study.claims]
    assert len(claims) >= 38, "issue 46: every testable finding of the five articles"
    for claim in claims:
        assert claim.qualifier in QUALIFIERS, claim.words
        assert claim.article, claim.words


def test_json_and_text_carry_class_word_and_article(fixture_results):
    results, _ = fixture_results
    document = as_dict(results, {"host": "h"})
    claims = [c for s in document["studies"] for c in s["claims"]]
    assert {c["class"] for c in claims} <= {"finding", "setup"}
    assert all("qualifier" in c and "article" in c for c in claims)
    text = render_text(results)
    assert text.count("      the article: ") == len(claims)


def test_a_claim_measured_by_another_studys_run_is_judged_on_it(fixture_results):
    results, base = fixture_results
    store = SqliteResultStore(base / "results.sqlite")
    mine = [StudyResult(r.study, r.spec, r.run_id, claims=list(r.claims)) for r in results[:-1]]
    judge_across(mine, store, QUICK, root=True)
    wash = next(r for r in mine if r.study.name == "cache-wash")
    crossed = [c for r in mine for c in r.claims if c.claim.judged_on]
    assert crossed, "seed 004's report query is judged on seed 000's run"
    for found in crossed:
        assert f"measured by cache-wash's run {wash.run_id}" in found.verdict.reason
    # without cache-wash in this reproduce and no finished run of its spec in the store
    alone = [StudyResult(r.study, r.spec, r.run_id, claims=list(r.claims)) for r in mine
             if r.study.name == "big-cache"]  # fmt: skip
    judge_across(alone, store, QUICK, root=True)
    [found] = [c for c in alone[0].claims if c.claim.judged_on]
    assert found.verdict.outcome == NOT_MEASURED
    assert "pgcachelab reproduce cache-wash" in found.verdict.reason
