"""The study registry (studies/registry.py): every stored run records exactly one study, chosen
from its spec when it is created (spec/study.py), and a new study, registered from
here, runs, reports and advises through the lab's own commands without a line of runner, report
or advise knowing it."""

import json
import statistics
from pathlib import Path

import pytest
from fix_cli import SPECS_DIR, run_cli_forked
from markupsafe import Markup

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.claims import CONTRADICTED, NOISE, REPRODUCED, Figure, Verdict, at_least
from pgcachelab.analysis.run_data import RunData, load_run
from pgcachelab.analysis.versions import welch_log_ratio
from pgcachelab.experiments.reproduce import spec_path
from pgcachelab.report.render import Section, table
from pgcachelab.spec import load_spec, parse_spec
from pgcachelab.spec.load import stored_spec
from pgcachelab.spec.schema import SpecFile
from pgcachelab.spec.study import SPEC_STUDIES, study_name
from pgcachelab.store.records import ResultStore
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.studies import registry
from pgcachelab.studies.kind import PublishedClaim, Reproduction, Study
from pgcachelab.workloads.registry import WORKLOADS

# The fixture store's tiny runs (tests/data/report-runs) and the study each one is.
FIXTURE_STUDIES = {
    "big-cache-tiny": "big-cache",
    "offered-load-tiny": "big-cache",
    "archaeology-tiny": "versions",
    "cache-split-tiny": "cache-wash",
    "tpcc-ladder-tiny": "tpcc",
    "inspect-overhead-tiny": "inspect-overhead",
    "inspect-history-tiny": "inspect-overhead",  # an overhead sweep over versions...
}
ALSO = {"inspect-history-tiny": ["versions"]}  # ...carries the versions study's sections too


@pytest.fixture(scope="module")
def fixture_runs(tiny_runs) -> dict[str, RunData]:
    return tiny_runs


@pytest.mark.parametrize("name", sorted(FIXTURE_STUDIES))
def test_each_fixture_run_is_its_study(fixture_runs, name):
    data = fixture_runs[name]
    assert registry.study_of(data).name == FIXTURE_STUDIES[name]
    found = [s.name for s in registry.studies_of(data) if s.name != "big-cache"]
    assert found == [FIXTURE_STUDIES[name], *ALSO.get(name, [])] or found == []


@pytest.mark.parametrize(
    "text, study",
    [
        ('workload = "cache-wash"\n', "cache-wash"),
        ('workload = "tpcc"\n[[ladder]]\nname = "a"\n[[ladder]]\nname = "b"\n', "tpcc"),
        ('workload = "tpcc"\n[inspect]\nevery = "1s"\n[sweep]\n'
         'inspect_method = ["none", "pg_buffercache"]\n', "tpcc"),
        ("[sweep]\nclients = [1, 2]\n", "big-cache"),
        ("[sweep]\nrate = [100, 200]\n", "big-cache"),
        ('[sweep]\nversion = ["15", "18"]\n', "versions"),
        ('control = true\n[sweep]\nversion = ["15", "18"]\n', "versions"),
        ('[inspect]\nevery = "1s"\n[sweep]\ninspect_method = ["none", "pg_buffercache"]\n',
         "inspect-overhead"),
        ('[inspect]\nevery = "1s"\n[sweep]\ninspect_method = ["none", "pg_buffercache"]\n'
         'version = ["15", "18"]\n', "inspect-overhead"),  # and the versions' sections
    ],
)  # fmt: skip
def test_a_spec_of_each_workload_and_design_makes_a_run_of_its_study(text, study):
    spec = parse_spec(text, Path("x.toml"))
    assert spec.study == study == study_name(stored_spec(text, "x.toml"))


def test_the_studies_a_spec_makes_are_the_registrys():
    names = [s.name for s in registry.STUDIES]
    assert sorted(SPEC_STUDIES) == sorted(names)
    for study in registry.STUDIES:  # each study's own specs make runs of it
        reproduction = study.reproduction
        assert reproduction is not None, study.name
        for name in filter(None, (reproduction.quick, reproduction.full,
                                  reproduction.quick_without_root)):  # fmt: skip
            assert load_spec(spec_path(name)).study == study.name, name


@pytest.mark.parametrize("name", sorted(FIXTURE_STUDIES))
def test_the_fixture_runs_spec_makes_the_study_they_were_recognised_as(fixture_runs, name):
    run = fixture_runs[name].run
    spec = stored_spec(run.spec_text, run.spec_path)
    assert spec is not None and study_name(spec) == run.study == FIXTURE_STUDIES[name]


def test_a_stored_spec_that_no_longer_validates_is_read_as_none():
    assert stored_spec("not = [toml", "x.toml") is None
    assert stored_spec('workload = "pgbench"\nkey_of_an_older_lab = 1\n', "x.toml") is None
    # a custom script the run read is not looked for again: it may have moved since
    spec = stored_spec('[pgbench]\nmode = "custom"\nscripts = ["gone.sql"]\n', "/nowhere/x.toml")
    assert spec is not None and spec.workload == "pgbench"


def test_every_study_declares_what_it_is():
    names = [study.name for study in registry.STUDIES]
    assert len(set(names)) == len(names)
    assert registry.FALLBACK in names  # the study of a run whose own is not registered here
    for study in registry.STUDIES:
        assert study.title and study.seed and study.claims, study.name
        assert study.workload in WORKLOADS, study.name
        assert study.spec_table is None or study.spec_table in SpecFile.model_fields
        for claim in study.claims:
            seed = Path(__file__).parents[2] / "shared" / "seeds" / claim.seed
            assert claim.seed.startswith(study.seed) and claim.words, claim
            assert not seed.parent.is_dir() or seed.is_file(), f"{claim.seed}: no such seed"


def test_a_second_study_of_the_same_name_is_refused():
    with pytest.raises(ValueError, match="'tpcc' is registered already"):
        registry.register(registry.STUDIES[1].__class__())


TOY_SPEC = SPECS_DIR / "toy-study.toml"


# -- a toy study, end to end --------------------------------------------------------------------


class Toy(Study):
    """Its runs are those `reproduce toy` records as its own (its spec alone makes a big-cache
    run); judges which clients count gave the higher median."""

    name = "toy"
    title = "which clients count is faster (a test's own study)"
    seed = "toy"
    reproduction = Reproduction(quick=str(TOY_SPEC), full=str(TOY_SPEC))

    @staticmethod
    def more_clients(data: RunData) -> Verdict:
        tps = {r.point.swept["clients"]: [m.tps for m in r.ok] for r in data.points}
        ratio, low, high = welch_log_ratio(tps[1], tps[2])
        figure = Figure("tps 2 clients / 1", ratio, low, high, min(len(tps[1]), len(tps[2])))
        return at_least(figure, 1.01, "2 clients' tps at least 1.01× 1 client's")

    claims = (PublishedClaim("toy", "nowhere", "two clients beat one", judge=more_clients),)

    def medians(self, data: RunData) -> dict[int, float]:
        return {
            r.point.swept["clients"]: statistics.median(m.tps for m in r.ok) for r in data.points
        }

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        rows = [[clients, f"{tps:.0f}"] for clients, tps in self.medians(data).items()]
        return [Section("Toy study: tps per clients", Markup(table(["clients", "tps"], rows)))]

    def advice(self, data: RunData) -> list[Advice]:
        medians = self.medians(data)
        best = max(medians, key=medians.get)
        return [Advice("toy", "", f"the toy prefers clients = {best}", f"medians {medians}", [])]

    def text_table(self, data: RunData) -> str | None:
        return "toy table: " + ", ".join(f"{c}={t:.0f}" for c, t in self.medians(data).items())


@pytest.fixture
def toy():
    study = Toy()
    registry.register(study)
    yield study
    registry.unregister(study.name)


@pytest.mark.server
def test_a_toy_study_reproduces_reports_and_advises_through_the_cli(toy, tmp_path, lab_tmp):
    lab = tmp_path / "lab"
    done = run_cli_forked("reproduce", "toy", "--lab-dir", lab, tmpdir=lab_tmp)
    assert done.returncode == 0, done.stderr
    assert "[1/1] toy: reproducing seed toy's claims (quick)" in done.stderr
    assert "two clients beat one" in done.stdout
    assert "2 clients' tps at least 1.01× 1 client's" in done.stdout
    store = SqliteResultStore.in_lab_dir(lab)
    [run] = store.runs()
    data = load_run(store, run.run_id)
    assert registry.study_of(data) is toy
    best = max(toy.medians(data), key=toy.medians(data).get)

    page = (lab / "reports" / run.run_id / "index.html").read_text()
    assert "<h2>Toy study: tps per clients</h2>" in page
    assert f"the toy prefers clients = {best}" in page  # the page opens with the toy's advice
    reproduced = (lab / "reports" / "reproduce" / "index.html").read_text()
    assert "two clients beat one" in reproduced
    assert f'href="../{run.run_id}/index.html"' in reproduced
    advised = run_cli_forked("advise", "last", "--lab-dir", lab)
    assert advised.returncode == 0, advised.stderr
    assert f"- toy: the toy prefers clients = {best}" in advised.stdout
    shown = run_cli_forked("show", "last", "--lab-dir", lab)
    assert shown.returncode == 0 and shown.stdout.startswith("toy table: 1="), shown.stderr

    # Again: the finished run is read again, not measured a second time.
    again = run_cli_forked("reproduce", "toy", "--json", "--lab-dir", lab, tmpdir=lab_tmp)
    assert again.returncode == 0, again.stderr
    [study] = json.loads(again.stdout)["studies"]
    assert study["reused"] is True and study["run_id"] == run.run_id
    assert len(SqliteResultStore.in_lab_dir(lab).runs()) == 1
    assert study["claims"][0]["verdict"] in (REPRODUCED, CONTRADICTED, NOISE)

    # Unregistered, the run keeps its study's name, read as the fallback's: a plain clients
    # sweep, big-cache's advice, no toy.
    assert data.run.study == "toy"
    registry.unregister(toy.name)
    assert registry.study_of(data).name == "big-cache"
    assert registry.advise(data)[0].topic == "clients"
