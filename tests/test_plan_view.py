"""The plan of a run (`run --plan`) on the specs under experiments/: pure, nothing starts."""

import json
from pathlib import Path

import pytest

from pgcachelab.experiments.plan_text import duration_text, plan_text
from pgcachelab.experiments.plan_view import (
    OVERHEAD_S,
    PlanMachine,
    build_plan,
    major_of,
)
from pgcachelab.experiments.runner import planned_schedule
from pgcachelab.spec import load_spec, parse_spec

EXPERIMENTS = Path(__file__).parent.parent / "experiments"
GiB = 1024**3
MiB = 1024**2
HOST = PlanMachine(ram_bytes=None, ram_source=None, host_memory_bytes=32 * GiB, server_major=18)


def machine_of(spec, memory_bytes: int | None = None, server_major: int | None = 18):
    """What cli/plan.py gives build_plan: --memory over [machine] memory, a 32 GiB host."""
    ram = memory_bytes or spec.memory_bytes
    source = "--memory" if memory_bytes else "machine.memory" if spec.memory_bytes else None
    return PlanMachine(ram, source, 32 * GiB, 2 * MiB, server_major)


def plan_of(name: str, **machine) -> tuple:
    spec = load_spec(EXPERIMENTS / name)
    return spec, build_plan(spec, machine_of(spec, **machine))


def order_of(plan: dict) -> list[tuple[int, int]]:
    return [(entry["point"], entry["repetition"]) for entry in plan["points"]]


@pytest.mark.parametrize("path", sorted(EXPERIMENTS.glob("*.toml")), ids=lambda path: path.name)
def test_every_spec_has_a_plan_in_the_order_the_run_measures_it(path):
    spec = load_spec(path)
    plan = build_plan(spec, machine_of(spec))
    assert order_of(plan) == planned_schedule(spec)
    if not spec.versions:  # a version sweep runs in rounds of its own (version_rounds)
        assert order_of(plan) == spec.schedule()
    assert [entry["position"] for entry in plan["points"]] == list(
        range(1, len(spec.schedule()) + 1)
    )
    assert plan["measurement_count"] == len(spec.points()) * spec.rounds
    assert plan["estimated_seconds"] == pytest.approx(
        sum(entry["estimated_seconds"] for entry in plan["points"])
    )
    points = spec.points()
    for entry in plan["points"]:
        assert entry["settings"] == points[entry["point"]].settings
        assert entry["estimated_seconds"] >= OVERHEAD_S
    assert json.loads(json.dumps(plan)) == plan  # plain JSON, nothing lost
    text = plan_text(plan)
    assert len(text.splitlines()) >= plan["measurement_count"] + 5
    assert "total: ~" in text


def test_cache_split_gives_each_huge_pages_point_its_pool_and_the_rest_of_the_ram():
    spec, plan = plan_of("cache-split.toml")
    entries = plan["points"]
    assert plan["order"] == spec.order and plan["repetitions"] == spec.repetitions == 10
    assert plan["memory"]["ram_bytes"] == spec.memory_bytes == 16 * GiB
    for entry in entries:
        estimate, memory = entry["huge_pages_estimate"], entry["memory"]
        assert memory["ram_bytes"] == 16 * GiB
        if entry["settings"]["huge_pages"] == "off":
            assert estimate is None
            assert memory["cap_bytes"] == 16 * GiB
            continue
        assert estimate["page_size_bytes"] == 2 * MiB
        assert estimate["bytes"] == estimate["pages"] * 2 * MiB
        assert estimate["bytes"] > entry["shared_buffers_bytes"]
        assert memory["cap_bytes"] == 16 * GiB - estimate["bytes"]
        assert entry["problems"] == []  # even 14GB leaves the lab's minimum beside its pool
    # 8GB of shared_buffers: 4222 pages on 18.6 (tests/data/hugepages)
    eight = next(e for e in entries if e["swept"] == {"shared_buffers": "8GB", "huge_pages": "on"})
    assert eight["huge_pages_estimate"]["pages"] == 4222
    # the seed's warm-up of 100 s and the restart, each measurement; the table is built once
    assert {e["estimated_seconds"] for e in entries} == {100 + OVERHEAD_S}
    assert entries[0]["builds_not_estimated"] == ["initdb", "the cache-wash table of 16GB"]
    assert all(not e["builds_not_estimated"] for e in entries[1:])
    count = len(spec.points()) * 10
    assert plan["estimated_seconds"] == pytest.approx(count * (100 + OVERHEAD_S))
    assert any("scan of the table" in item for item in plan["not_estimated"])


def test_the_tpcc_ladder_resolves_its_memory_shares_against_the_memory_the_run_has():
    spec, plan = plan_of("tpcc-ladder-quick.toml")
    steps = [e["label"] for e in plan["points"][: len(spec.ladder)]]
    assert steps == [f"step={s.name}" for s in spec.ladder]  # interleaved: every step a round
    by_label = {e["label"]: e for e in plan["points"][: len(spec.ladder)]}
    memory_step, huge_step = by_label["step=memory"], by_label["step=huge-pages"]
    assert memory_step["settings"]["shared_buffers"] == "1024MB"  # 50% of 2GiB
    assert memory_step["huge_pages_estimate"] is None
    assert memory_step["memory"]["cap_bytes"] == 2 * GiB
    pool = huge_step["huge_pages_estimate"]["bytes"]
    assert huge_step["huge_pages_estimate"]["pages"] == 543  # 1GB on 18.6
    assert huge_step["memory"] == {
        "ram_bytes": 2 * GiB,
        "huge_pages_pool_bytes": pool,
        "cap_bytes": 2 * GiB - pool,
    }
    # warm-up 3 s, run 15 s; a run of 100 transactions a terminal is not estimated but for its
    # warm-up; the warehouses loaded once, before the first measurement
    assert {e["estimated_seconds"] for e in plan["points"]} == {3 + 15 + OVERHEAD_S, 3 + OVERHEAD_S}
    assert any("100 transactions" in item for item in plan["not_estimated"])
    assert plan["builds_not_estimated"] == ["initdb", "TPC-C load of 4 warehouses (~400MB)"]
    assert huge_step["workload"]["warehouses"] == 4

    # --memory is the machine's memory, as for the run: the shares follow it
    spec, bigger = plan_of("tpcc-ladder-quick.toml", memory_bytes=4 * GiB)
    assert bigger["memory"] == {
        "ram_bytes": 4 * GiB,
        "ram_source": "--memory",
        "host_memory_bytes": 32 * GiB,
        "huge_page_size_bytes": 2 * MiB,
    }
    steps = {e["label"]: e for e in bigger["points"][: len(spec.ladder)]}
    assert steps["step=memory"]["settings"]["shared_buffers"] == "2048MB"
    assert steps["step=huge-pages"]["memory"]["cap_bytes"] == (
        4 * GiB - steps["step=huge-pages"]["huge_pages_estimate"]["bytes"]
    )


def test_a_version_sweep_builds_each_versions_cluster_and_data_once_per_data_group():
    spec, plan = plan_of("archaeology-quick.toml")
    entries = plan["points"]
    majors = {e["swept"]["version"]: e["server_major"] for e in entries}
    assert majors == {"9.3": 9, "9.5": 9, "9.6": 9, "10": 10, "11": 11, "13": 13, "18": 18,
                      "18 control": 18}  # fmt: skip
    initdbs = [b for e in entries for b in e["builds_not_estimated"] if b.startswith("initdb")]
    assert len(initdbs) == 8 * 3 and len(set(initdbs)) == 8  # a cluster per version and class
    loads = [b for e in entries for b in e["builds_not_estimated"] if b.startswith("pgbench -i")]
    assert len(loads) == 24
    # scale classes on the 1 GiB machine with 128MB of shared_buffers: small, medium, large
    scales = {e["swept"]["scale_class"]: e["workload"]["scale"] for e in entries}
    assert scales == {"small": 4, "medium": 25, "large": 105}
    assert {e["estimated_seconds"] for e in entries} == {1 + 3 + OVERHEAD_S}


SPEC_AUTO = """
name = "auto"
repetitions = "auto"
max_repetitions = 10
warmup_repetitions = 1
order = "random"
[machine]
memory = "512MB"
[server.settings]
huge_pages = "on"
[pgbench]
transactions = 1000
warmup = "2s"
[sweep.settings]
shared_buffers = ["16MB", "64MB", "480MB"]
"""


def test_auto_repetitions_plan_the_minimum_rounds_and_say_how_far_they_may_go():
    spec = parse_spec(SPEC_AUTO, Path("auto.toml"))
    plan = build_plan(spec, machine_of(spec))
    assert plan["repetitions"] == "auto"
    assert plan["rounds_planned"] == 1 + 6  # one warm-up round, then the fewest for a 95% CI
    assert plan["max_repetitions"] == 10
    assert plan["measurement_count"] == 3 * 7
    warmups = [e for e in plan["points"] if e["warmup_repetition"]]
    assert {e["repetition"] for e in warmups} == {0} and len(warmups) == 3
    assert plan["estimated_seconds"] == pytest.approx(21 * (2 + OVERHEAD_S))
    assert plan["estimated_seconds_at_most"] == pytest.approx(3 * 11 * (2 + OVERHEAD_S))
    assert any("first 7 rounds" in note for note in plan["notes"])
    # a count of transactions: its time is not known, and said so
    assert any("1,000 transactions" in item for item in plan["not_estimated"])
    assert "duration" not in plan["points"][0]["workload"]
    # 480MB in huge pages leaves less than the lab keeps beside the pool of a 512MB machine
    big = next(e for e in plan["points"] if e["settings"]["shared_buffers"] == "480MB")
    assert big["memory"]["cap_bytes"] is None  # the run refuses it: no cap to show
    assert any("hugepages_exceed_memory" in problem for problem in big["problems"])
    assert any("hugepages_exceed_memory" in note for note in plan["notes"])
    assert "auto (at most 10)" in plan_text(plan)


def test_without_a_memory_limit_shares_and_data_follow_the_hosts_memory():
    text = '[server.settings]\nshared_buffers = "25% of memory"\nhuge_pages = "on"\n'
    spec = parse_spec(text, Path("x.toml"))
    plan = build_plan(spec, HOST)
    entry = plan["points"][0]
    assert entry["settings"]["shared_buffers"] == "8192MB"
    assert entry["memory"] == {
        "ram_bytes": None,
        "huge_pages_pool_bytes": entry["huge_pages_estimate"]["bytes"],
        "cap_bytes": None,
    }
    assert any("no memory limit" in note for note in plan["notes"])
    unknown = build_plan(parse_spec(text, Path("x.toml")), PlanMachine(None, None, 32 * GiB))
    assert any("version is unknown" in note for note in unknown["notes"])


def test_shared_buffers_that_do_not_fit_the_ram_are_a_problem_the_plan_names():
    text = '[machine]\nmemory = "256MB"\n[sweep.settings]\nshared_buffers = ["128MB", "256MB"]\n'
    spec = parse_spec(text, Path("x.toml"))
    plan = build_plan(spec, machine_of(spec))
    problems = {e["settings"]["shared_buffers"]: e["problems"] for e in plan["points"]}
    assert problems["128MB"] == []
    assert "shared_buffers_exceeds_memory" in problems["256MB"][0]


@pytest.mark.parametrize(
    ("text", "major"), [("18", 18), ("18.6", 18), ("9.6", 9), ("/usr/lib/postgresql/15/bin", None)]
)
def test_major_of(text, major):
    assert major_of(text) == major


def test_duration_text():
    assert [duration_text(s) for s in (45, 150, 7300)] == ["~45 s", "~2 min", "~2.0 h"]
