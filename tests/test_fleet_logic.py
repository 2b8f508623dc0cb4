"""The fleet's pure parts (issue 21): the hand-out order of a queued run, what a claim does with
a waiting unit, host classes, a run's figures by class, and what `compare` and `runs` say."""

from dataclasses import replace

import pytest
from test_compare_pure import run, side

from pgcachelab.analysis.compare import compare_runs
from pgcachelab.analysis.hosts import classes_text, host_class, host_split
from pgcachelab.experiments.spec.plan import schedule
from pgcachelab.report.tables import fleet_line
from pgcachelab.store.queue import (
    ALREADY_MEASURED,
    CLAIM,
    GIVE_UP,
    after_failure,
    claim_decision,
    units_in_order,
)

SMALL = {"cpu_model": "Xeon", "cores": 2, "memory_total_bytes": 8 << 30, "kernel": "6.1"}
BIG = {**SMALL, "cores": 16, "memory_total_bytes": 64 << 30}


def test_units_are_handed_out_in_the_runs_planned_order_round_by_round():
    planned = [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]  # interleaved, 3 points x 2
    units = units_in_order(planned)
    assert [(u.point_index, u.repetition) for u in units] == planned
    assert [u.seq for u in units] == list(range(6))
    # every unit of round 0 goes out before any of round 1: drift on a host cannot line up
    # with a point
    rounds = [u.round for u in units]
    assert rounds == sorted(rounds)


def test_a_random_order_is_kept_as_planned():
    planned = schedule(4, 3, "random", seed=7)
    assert [(u.point_index, u.repetition) for u in units_in_order(planned)] == planned


@pytest.mark.parametrize(
    ("expired", "tries", "measured", "decision"),
    [
        (False, 0, False, CLAIM),  # a fresh unit
        (False, 1, False, CLAIM),  # queued again after a failed try
        (True, 1, False, CLAIM),  # its agent died on the first of 3 tries
        (True, 3, False, GIVE_UP),  # died on the last try: given up, not a fourth time
        (True, 1, True, ALREADY_MEASURED),  # died after storing it: never measured twice
        (False, 3, True, ALREADY_MEASURED),
    ],
)
def test_a_waiting_unit_is_claimed_given_up_or_found_done(expired, tries, measured, decision):
    assert claim_decision(expired, tries, 3, measured) == decision


def test_a_failed_try_queues_the_unit_again_until_the_last():
    assert [after_failure(tries, 3) for tries in (1, 2, 3)] == ["queued", "queued", "failed"]
    assert after_failure(1, 1) == "failed"


def test_host_classes_tell_hardware_apart_not_hostnames():
    assert host_class({**SMALL, "hostname": "a"}) == host_class({**SMALL, "hostname": "b"})
    assert host_class(SMALL) != host_class(BIG)
    assert host_class(SMALL) == "Xeon x2, 8GB, Linux 6.1"
    assert host_class({}) == "unknown CPU x?, ? memory, Linux ?"


def fleet(host: str, facts: dict) -> dict:
    return {"host": host, "host_class": host_class(facts), "facts": facts}


def test_a_runs_figures_split_by_host_class():
    measured = [
        ("clients=1", "ok", 100.0, fleet("a1", SMALL)),
        ("clients=1", "ok", 110.0, fleet("a2", SMALL)),
        ("clients=1", "ok", 400.0, fleet("b1", BIG)),
        ("clients=2", "failed", None, fleet("b1", BIG)),
        ("clients=2", "ok", 700.0, fleet("b1", BIG)),
        ("clients=2", "ok", 1.0, None),  # measured by `run`: not a fleet measurement
    ]
    split = host_split(measured)
    small, big = split.classes
    assert (small.hosts, small.ok, small.failed) == ({"a1", "a2"}, 2, 0)
    assert (big.hosts, big.ok, big.failed) == ({"b1"}, 2, 1)
    assert split.mixed and split.differing_facts() == ["cores", "memory"]
    assert split.medians == {
        "clients=1": {small.host_class: 105.0, big.host_class: 400.0},
        "clients=2": {big.host_class: 700.0},
    }
    assert not host_split(measured[:2]).mixed
    assert host_split([m for m in measured if m[3] is None]).classes == []


def test_compare_says_when_the_hosts_differ():
    points = [side({"clients": 1})]
    single = run(points, **SMALL)  # measured by `run` on its own host
    alike = replace(run(points, hostname="queuer"), host_classes=(host_class(SMALL),))
    bigger = replace(run(points, hostname="queuer"), host_classes=(host_class(BIG),))
    mixed = replace(alike, host_classes=(host_class(SMALL), host_class(BIG)))

    def context(a, b):
        return {d.what: (d.a, d.b, d.serious) for d in compare_runs(a, b).context}

    # the queueing host's name and hardware are not the measuring hosts': not a difference
    assert context(single, alike) == {}
    assert context(single, bigger) == {"host classes": (host_class(SMALL), host_class(BIG), True)}
    both = classes_text((host_class(SMALL), host_class(BIG)))
    assert both.startswith("2 host classes mixed: ")
    assert context(mixed, mixed) == {"host classes": (both, both, True)}
    # two runs by `run` on different hosts: their hardware, as before
    assert "host classes" not in context(single, run(points, **BIG))


def test_runs_lists_a_queued_runs_units_by_state_and_host():
    units = {("done", "a"): 2, ("done", "b"): 1, ("leased", "b"): 1, ("queued", None): 3}
    assert fleet_line(units) == "3 done (a 2, b 1), 1 leased (b 1), 3 queued, 0 failed"
