"""HTML only from templates (issue 50, item 4): the report's, the studies' and the reproduce
page's HTML is written by report/templates with autoescape, never built in Python strings; text
from a run (names, settings, host classes, cells) is escaped in every part as the pages always
had it."""

import ast
import dataclasses
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

import pgcachelab.report.compare_html as compare_html
import pgcachelab.report.hosts as hosts
import pgcachelab.report.html as page
import pgcachelab.report.offered_load as offered_load
import pgcachelab.report.regimes as regimes
import pgcachelab.report.steps as steps
import pgcachelab.studies.inspect_overhead.report as inspect_overhead
from pgcachelab.analysis.compare import ContextDifference
from pgcachelab.analysis.compare_store import load_comparison
from pgcachelab.analysis.hosts import ClassUse, HostSplit
from pgcachelab.analysis.inspect_accuracy import ModeAccuracy
from pgcachelab.analysis.regimes import DISK, OS_CACHE, Regime
from pgcachelab.analysis.run_data import RunData, load_run
from pgcachelab.store.sqlite import SqliteResultStore

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "pgcachelab"
FIXTURE_STORE = ROOT / "tests" / "data" / "report-runs" / "results.sqlite"
BIG_CACHE_RUN = "20261122-232256-9b0294"
CACHE_SPLIT_RUN = "20261122-232457-9823d7"
INSPECT_RUN = "20261123-165728-1b91c1"  # versions swept: the section lists them
OFFERED_LOAD_RUN = "20261126-214518-844d97"

# An opening tag, a closing one or an entity: HTML, which only a template writes.
HTML_TAGS = (
    "a|b|body|br|code|details|div|em|figcaption|figure|h[1-6]|head|html|i|img|li|link|meta|ol|p"
    "|pre|script|section|small|span|strong|style|sub|summary|sup|table|tbody|td|th|thead|title"
    "|tr|ul"
)
HTML_IN_TEXT = re.compile(rf"<\s*/?\s*(?:{HTML_TAGS})\b[^<>]*>|&(?:[a-z]+|#[0-9]+|#x[0-9a-f]+);")


def html_in_strings(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string literal with HTML in it (f-string parts included);
    docstrings may name a tag."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and HTML_IN_TEXT.search(node.value)
    ]


def test_report_and_studies_build_no_html_in_python():
    found = [
        f"{path.relative_to(SRC)}:{line}: {text[:60]!r}"
        for package in ("report", "studies", "experiments")  # experiments: the reproduce page
        for path in sorted((SRC / package).rglob("*.py"))
        for line, text in html_in_strings(path.read_text())
    ]
    assert found == []


def test_the_scan_would_find_html_built_in_python():
    for source in (
        "body = f\"<p class='note'>{escaped(text)}</p>\"",
        'heading = Markup("<h3>Median tps by host class</h3>")',
        'cell = Markup("<b>{}</b>").format(what)',
        'listed = "".join(f"<li>{line}</li>" for line in items)',
        'note = ("found its mode lost &lt; 3% of "\n    "consistency.")',
        "rows += '<tr><td>' + name + '</td></tr>'",
    ):
        assert html_in_strings(source), source
    for source in (
        '"""A part folded in a <details>."""',
        'start = text.find("<svg")',
        'hint = "systemctl set-property <server unit> MemoryMax=..."',
        'label = "<version> control"',
    ):
        assert not html_in_strings(source), source


# Text from a run, as html.escape writes it: the entities the pages have always had.
BAD = "x<'&\">y"
ESCAPED = "x&lt;&#x27;&amp;&quot;&gt;y"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A copy of the fixture store: opening a store writes to it (as tiny_runs does)."""
    path = tmp_path_factory.mktemp("store") / "results.sqlite"
    shutil.copyfile(FIXTURE_STORE, path)
    return SqliteResultStore(path)


def _run(store, run_id: str) -> RunData:
    return load_run(store, run_id)


def _escaped_only(html: str, count: int = 1) -> None:
    assert html.count(ESCAPED) >= count, html
    assert "x<" not in html and "'&" not in html


def test_steps_escape_the_disk_label(store, monkeypatch):
    data = _run(store, BIG_CACHE_RUN)
    finding = steps.run_steps(data)
    assert finding is not None and finding.steps
    on_disk = dataclasses.replace(
        finding,
        steps=[dataclasses.replace(s, boundary=DISK) for s in finding.steps],
        boundaries=[dataclasses.replace(b, step=None) for b in finding.boundaries],
    )
    monkeypatch.setattr(steps, "run_steps", lambda d: on_disk)
    monkeypatch.setattr(steps, "disk_label", lambda d: BAD)
    html = steps.steps_html(data)
    assert f'<td class="text">past memory: {ESCAPED} decides</td>' in html
    assert f"<th>the disk: {ESCAPED}</th>" in html
    _escaped_only(html, 2)


def test_regimes_escape_the_disk_label(store, monkeypatch):
    found = [Regime(OS_CACHE, ("a",), 1e6, 2e6, 1000.0), Regime(DISK, ("b",), 3e9, 4e9, 250.0)]
    monkeypatch.setattr(regimes, "run_regimes", lambda d: found)
    monkeypatch.setattr(regimes, "disk_label", lambda d: BAD)
    html = regimes.regimes_html(_run(store, BIG_CACHE_RUN))
    assert f"<th>disk: {ESCAPED}</th>" in html
    assert "<b>4.0× lower</b>" in html
    _escaped_only(html)


def test_offered_load_escapes_the_cell_and_its_finding(store, monkeypatch, tmp_path):
    data = _run(store, OFFERED_LOAD_RUN)
    steps_of_cell = next(iter(offered_load.offered_load_steps(data).values()))
    monkeypatch.setattr(offered_load, "offered_load_steps", lambda d: {BAD: steps_of_cell})
    monkeypatch.setattr(offered_load, "finding", lambda s: BAD)
    html = offered_load.offered_load_section(data, tmp_path).body
    assert f"<p><b>{ESCAPED}: {ESCAPED}</b></p><table>" in html
    _escaped_only(html, 2)


def test_host_classes_escape_names_facts_and_warnings(store, monkeypatch):
    facts = {"memory_total_bytes": 2**30, "storage": BAD, "postgresql": [BAD]}
    split = HostSplit(
        [ClassUse(BAD, facts, {BAD}, 3, 1), ClassUse("c2", {}, {"h2"}, 2, 0)],
        {BAD: {BAD: 1234.5, "c2": 99.0}},
    )
    confounding = SimpleNamespace(text=lambda: BAD, complete=False)
    monkeypatch.setattr(hosts, "run_host_split", lambda d: split)
    monkeypatch.setattr(hosts, "run_confounding", lambda d: confounding)
    monkeypatch.setattr(hosts, "run_overlaps", lambda d: ["one"])
    monkeypatch.setattr(hosts, "overlap_warning", lambda o: SimpleNamespace(problem=BAD))
    html = hosts.host_classes_section(_run(store, BIG_CACHE_RUN)).body
    assert html.count("<p class='warning'><strong>WARNING</strong>: X&lt;&#x27;&amp;") == 2
    assert (
        f"<h3>Median tps by host class</h3><table>\n<thead><tr><th>point</th><th>{ESCAPED}" in html
    )
    _escaped_only(html, 6)


def test_the_page_escapes_the_run_name_and_differing_settings(store, monkeypatch, tmp_path):
    data = _run(store, BIG_CACHE_RUN)
    data = dataclasses.replace(data, run=dataclasses.replace(data.run, name=BAD))
    monkeypatch.setattr(page, "differing_settings", lambda by_point: {BAD: {"1": BAD, "2": ""}})
    html = page.render_html(data, [], tmp_path / "index.html").read_text()
    assert f"<title>pgcachelab: {ESCAPED} (" in html
    assert f'<tr><th>{ESCAPED}</th><td class="text">{ESCAPED}, (empty)</td></tr>' in html


def test_inspect_overhead_escapes_cells_relations_and_checks(store, monkeypatch, tmp_path):
    accuracy = ModeAccuracy("fast", 3, 0.01, 0.02, 10.0, 20.0, 7, BAD, 0.005, 0.001, (BAD,))
    monkeypatch.setattr(
        inspect_overhead,
        "cell_accuracy",
        lambda d: {(("shared_buffers", BAD),): {"fast": accuracy}},
    )
    monkeypatch.setattr(inspect_overhead, "_version_lines", lambda d, points, prefix: [BAD])
    html = inspect_overhead.inspect_overhead_section(_run(store, INSPECT_RUN), tmp_path).body
    assert f"<li>{ESCAPED}</li>" in html
    assert "<h3>How wrong each mode is under this load</h3><p class='note'>" in html
    assert "lost &lt; 3% of snapshot consistency" in html
    _escaped_only(html, 4)


def test_compare_escapes_context_differences(store, tmp_path):
    comparison = load_comparison(store, BIG_CACHE_RUN, store, CACHE_SPLIT_RUN, (None, None))
    context = [
        ContextDifference(BAD, BAD, BAD, serious=True),
        ContextDifference(BAD, "a", "b", serious=False),
    ]
    comparison = dataclasses.replace(comparison, context=context)
    html = compare_html.render_html(comparison, tmp_path / "compare.html").read_text()
    # a serious difference's name is escaped as markupsafe writes it, as it always was
    cell = '<td class="text">'
    assert f"<tr>{cell}<b>x&lt;&#39;&amp;&#34;&gt;y</b></td>{cell}{ESCAPED}</td>" in html
    assert f"<tr>{cell}{ESCAPED}</td>{cell}a</td>{cell}b</td></tr>" in html
