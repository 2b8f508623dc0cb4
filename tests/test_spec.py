"""Spec parsing, validation and expansion: pure, no server."""

import json
import re
from pathlib import Path

import pytest

from pgcachelab.clusters.guc import catalogue_from_pg_settings
from pgcachelab.errors import UserError
from pgcachelab.spec import parse_spec, schedule, validate_settings

DATA = Path(__file__).parent / "data"


def captured_catalogue(major: str) -> dict:
    """The pg_settings catalogue of a real install (tests/data/server/capture_pg_settings.py)."""
    captured = json.loads((DATA / "server" / f"pg-settings-{major}.json").read_text())
    return catalogue_from_pg_settings(captured["rows"])


CATALOGUE_18 = captured_catalogue("18")
REPO = Path(__file__).parent.parent


def spec(text: str, path: Path = Path("exp.toml")):
    return parse_spec(text, path)


def error_of(text: str) -> UserError:
    with pytest.raises(UserError) as caught:
        parsed = spec(text)
        validate_settings(parsed, CATALOGUE_18)
    return caught.value


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("colour = 1", r"exp.toml: colour: unknown key", r"use one of"),
        ("[pgbench]\nclinets = 4", r"pgbench.clinets: unknown key", r"clients"),
        ("[sweep]\nscale = []", r"sweep.scale: empty sweep", r"at least one value"),
        ("[sweep]\nfoo = [1]", r"sweep.foo: unknown sweep key", r"sweep.settings"),
        ('[server.settings]\nshared_buffers = "12XB"',
         r'server.settings.shared_buffers: invalid value "12XB": unknown unit', r"fix the value"),
        ('[sweep.settings]\nshared_bufers = ["1MB"]',
         r'sweep.settings.shared_bufers: unknown server setting "shared_bufers"',
         r"did you mean shared_buffers"),
        ('[sweep.settings]\nwork_mem = ["1MB", "1MB"]', r"repeats a value", r"once"),
        ('repetitions = "many"', r'repetitions: invalid value "many"', r'"auto"'),
        ("repetitions = 3\ntarget_ci = 0.02", r'target_ci: only used with repetitions = "auto"',
         r'repetitions = "auto"'),
        ('repetitions = "auto"\ntarget_ci = 2', r"target_ci: invalid value 2", r"0.02 for ±2%"),
        ('repetitions = "auto"\nmax_repetitions = 3', r"max_repetitions: invalid value 3",
         r"use 6 or more"),
        ("warmup_repetitions = -1", r"warmup_repetitions: invalid value -1", r"0 or more"),
        ('[fleet]\nhosts = "all"', r'fleet.hosts: invalid value "all"', r"same, spread"),
        ("[fleet]\nmax_tries = 0", r"fleet.max_tries: invalid value 0", r"1 or more"),
        ('[fleet]\nhosts = "spread"\nhost_class = "X"',
         r'host_class keeps every unit on one class: hosts must be',
         r'hosts = "same"'),
        ('[fleet]\nhosts = "same"\nhost_class = ""', r"fleet.host_class: invalid value",
         r"."),
        ('[fleet]\nhosts = "same"\nclasses = ["X", "Y"]', r'hosts must be "spread"',
         r"host_class"),
        ('repetitions = 3\n[fleet]\nclasses = ["X", "Y"]',
         r"repetitions: invalid value 3: 2 classes", r"set repetitions = 2"),
        ('repetitions = 2\n[fleet]\nclasses = ["X", "X"]', r"a class is listed twice", r"once"),
        ('[fleet]\nhosts = "same"\nhost_class = "X"\nclasses = ["X"]',
         r"cannot also be spread", r"host_class"),
        ('workload = "cache-wash"\nrepetitions = "auto"', r'repetitions: invalid value "auto"',
         r"number of repetitions"),
        ('[pgbench]\nprogress_warmup = "soon"', r'pgbench.progress_warmup: invalid value "soon"',
         r"20s"),
        ('[pgbench]\nmode = "read-only"', r'pgbench.mode: invalid value "read-only"',
         r"select-only"),
        ('[pgbench]\nduration = "ten"', r'pgbench.duration: invalid value "ten"', r"20s"),
        ("[pgbench]\nclients = 0", r"pgbench.clients: invalid value 0", r"1 or more"),
        ("repetitions = -1", r"repetitions: invalid value -1", r"1 or more"),
        ('order = "backwards"', r'order: invalid value "backwards"', r"interleaved"),
        ('[server.settings]\nfsync = "maybe"', r"fsync is a boolean", r"fix the value"),
        ("[sweep.settings]\nshared_buffers = [4]", r"below its minimum 16", r"fix the value"),
        ('[pgbench]\nmode = "custom"', r"custom mode needs scripts", r"scripts ="),
        ("name = [", r"not valid TOML", r"syntax"),
        # pydantic's own errors, in our words (spec/errors.py)
        ("[server]\nsettings = 5", r"^exp.toml: server.settings: must be a table$",
         r"\[server.settings\]"),
        ("[pgbench]\nper_statement = 1", r"pgbench.per_statement: invalid value 1: not a boolean",
         r"true or false"),
        ('[server]\npg_bin = 5', r"server.pg_bin: invalid value 5: not a string",
         r'server.pg_bin = "..."'),
        ('[machine]\nos_cache = "cold"', r'machine.os_cache: invalid value "cold": unknown',
         r"^use one of keep, drop-cluster, drop-all$"),
        ('[inspect]\nmode = "slow"', r'inspect.mode: invalid value "slow"', r"consistent, fast"),
        ("[[ladder]]\nname = 3", r"ladder\[0\].name: a step needs a name", r'name = "io"'),
        ('[[ladder]]\nname = "a"\nsettings = 1', r"ladder\[0\].settings: must be a table",
         r"ladder\[0\].settings"),
        ('[sweep]\nclients = { from = 1, to = 4, by = 2 }',
         r"sweep.clients: invalid value \{.*\}: not a range", r"factor = 2"),
        ('[sweep]\nclients = [1, "2"]', r'sweep.clients: invalid value "2": not an integer >= 1',
         r"1 or more"),
        ('[report]\ntitle = "t"\ncolour = 1',
         r"report.colour: unknown key", r"^use one of title$"),
    ],
)  # fmt: skip
def test_bad_specs_name_key_value_and_fix(text, message, hint):
    error = error_of(text)
    assert "\n" not in error.message
    assert re.search(message, error.message), error.message
    assert re.search(hint, error.hint), error.hint


def test_session_only_target_refuses_restart_settings():
    parsed = spec('[sweep.settings]\nshared_buffers = ["16MB", "32MB"]')
    with pytest.raises(UserError, match="needs a restart of the server given by --dsn"):
        validate_settings(
            parsed, CATALOGUE_18, {"user", "superuser"}, target="the server given by --dsn"
        )
    validate_settings(spec('[sweep.settings]\nwork_mem = ["4MB"]'), CATALOGUE_18, {"user"})


def test_product_expansion_first_key_outermost():
    parsed = spec(
        '[pgbench]\nduration = "5s"\n[sweep]\nscale = [1, 2]\nclients = [1, 4]\n'
        '[sweep.settings]\nshared_buffers = ["16MB", "64MB"]'
    )
    points = parsed.points()
    assert len(points) == 8
    assert [p.swept for p in points[:3]] == [
        {"scale": 1, "clients": 1, "shared_buffers": "16MB"},
        {"scale": 1, "clients": 1, "shared_buffers": "64MB"},
        {"scale": 1, "clients": 4, "shared_buffers": "16MB"},
    ]
    assert points[2].workload.clients == 4 and points[2].workload.duration == 5.0
    assert points[2].settings == {"shared_buffers": "16MB"}
    assert points[2].label == "scale=1, clients=4, shared_buffers=16MB"


def test_ranges_expand():
    parsed = spec(
        "[sweep]\nscale = { from = 1, to = 16, factor = 2 }\n"
        "clients = { from = 2, to = 6, step = 2 }"
    )
    assert parsed.sweep_workload == {"scale": [1, 2, 4, 8, 16], "clients": [2, 4, 6]}


def test_schedules():
    assert schedule(2, 2, "sequential", 1) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert schedule(2, 2, "interleaved", 1) == [(0, 0), (1, 0), (0, 1), (1, 1)]
    shuffled = schedule(5, 3, "random", 7)
    assert sorted(shuffled) == sorted(schedule(5, 3, "sequential", 1))
    assert shuffled == schedule(5, 3, "random", 7)  # reproducible from the seed


def test_warmup_and_auto_repetitions_set_the_rounds_scheduled_up_front():
    fixed = spec("repetitions = 3\nwarmup_repetitions = 1\n[sweep]\nclients = [1, 2]")
    assert (fixed.repetitions, fixed.rounds, fixed.auto_repetitions) == (3, 4, False)
    assert len(fixed.schedule()) == 8  # the warm-up round is run and stored like the others
    auto = spec('repetitions = "auto"\ntarget_ci = 0.05\nmax_repetitions = 9')
    assert (auto.repetitions, auto.rounds, auto.target_ci) == (9, 6, 0.05)
    default = spec('repetitions = "auto"')
    assert (default.repetitions, default.target_ci) == (20, 0.02)
    assert spec("").parameters.progress_warmup == 1


@pytest.mark.parametrize(
    "name", ["big-cache.toml", "big-cache-quick.toml", "big-cache-quick-noroot.toml"]
)
def test_shipped_experiments_are_valid(name):
    parsed = parse_spec((REPO / "experiments" / name).read_text(), REPO / "experiments" / name)
    validate_settings(parsed, CATALOGUE_18)
    assert parsed.sweep_workload["scale"][0] == 1
    # the seed's pgbench -S; the quick runs 16 lookups a transaction on the same tables
    assert parsed.parameters.mode == ("select-only" if name == "big-cache.toml" else "custom")


@pytest.mark.parametrize(
    "path", sorted((REPO / "experiments").glob("*.toml")), ids=lambda path: path.name
)
def test_every_shipped_experiment_loads_and_expands(path):
    parsed = parse_spec(path.read_text(), path)
    parsed.memory_for_shares = 2 * 1024**3  # as the runner sets it: "25% of memory" resolves
    validate_settings(parsed, CATALOGUE_18)
    assert parsed.points() and parsed.schedule()


def test_full_big_cache_is_the_seed():
    parsed = parse_spec((REPO / "experiments" / "big-cache.toml").read_text(), Path("x.toml"))
    assert parsed.sweep_workload["scale"] == list(range(1, 51))
    assert parsed.settings == {"shared_buffers": "64MB"}
    assert (parsed.parameters.clients, parsed.parameters.threads) == (40, 4)
    assert parsed.parameters.duration == 20


def test_custom_scripts_resolve_relative_to_the_spec(tmp_path):
    (tmp_path / "a.sql").write_text("select 1;\n")
    parsed = spec(
        '[pgbench]\nmode = "custom"\nscripts = [{ file = "a.sql", weight = 7 }]',
        tmp_path / "exp.toml",
    )
    assert parsed.parameters.scripts[0].file == tmp_path / "a.sql"
    assert parsed.parameters.scripts[0].weight == 7
    with pytest.raises(UserError, match=r'scripts\[0\].file: invalid value "b.sql": no such'):
        spec('[pgbench]\nmode = "custom"\nscripts = ["b.sql"]', tmp_path / "exp.toml")
