"""Point and host class confounded (issue 38): a run queued for agents whose host classes
measured the points unevenly, found by a pure function, and said by the report and `advise`
next to any best point."""

import html
from dataclasses import dataclass, field

import pytest
from fix_cli import run_cli
from test_fleet_logic import BIG, SMALL

from pgcachelab.analysis.hosts import (
    host_class,
    overlap_warning,
    overlapping_on_one_host,
    point_class_confounding,
)
from pgcachelab.report.hosts import TITLE as HOSTS_TITLE
from pgcachelab.workloads.parameters import PgbenchParameters

X, Y, Z = "class X", "class Y", "class Z"


def measured(*cells: tuple[str, str, int], status: str = "ok") -> list:
    """(point, class, count) -> that many measurements of the point on the class."""
    return [(label, status, name) for label, name, n in cells for _ in range(n)]


def test_one_class_or_one_point_or_no_class_is_not_confounded():
    assert point_class_confounding(measured(("a", X, 3), ("b", X, 2))) is None
    assert point_class_confounding(measured(("a", X, 2), ("a", Y, 1))) is None
    assert point_class_confounding(measured(("a", None, 3), ("b", None, 3))) is None
    assert point_class_confounding([]) is None


def test_every_point_on_the_classes_in_the_same_proportions_is_balanced():
    # the counts differ from point to point; the shares do not
    balanced = measured(
        ("a", X, 2), ("a", Y, 1), ("b", X, 4), ("b", Y, 2), ("c", Y, 1), ("c", X, 2)
    )
    assert point_class_confounding(balanced) is None


def test_each_point_on_its_own_class_is_completely_confounded():
    found = point_class_confounding(measured(("a", X, 3), ("b", Y, 3), ("c", X, 2)))
    assert found is not None and found.complete
    assert found.groups == [(["a", "c"], [X]), (["b"], [Y])]
    assert found.text() == (
        "point and host class are completely confounded: a, c only on class X; b only on class Y;"
        " a difference between points measured on different classes may be one between the"
        " machines, and no measurement of the run can tell which"
    )
    assert found.measured_text() == "a: 3 on class X; b: 3 on class Y; c: 2 on class X"


def test_points_sharing_no_class_are_completely_confounded_even_with_several_classes_each():
    # a and b are compared on X and Y (unevenly); c never shares a class with them
    found = point_class_confounding(measured(("a", X, 1), ("b", Y, 2), ("b", X, 1), ("c", Z, 3)))
    assert found is not None and found.complete
    assert found.groups == [(["a", "b"], [X, Y]), (["c"], [Z])]


def test_a_class_mix_that_differs_between_points_is_partly_confounded():
    # what [fleet] hosts = "spread" hands out: 3 repetitions, 2 classes, whoever comes first
    found = point_class_confounding(measured(("a", X, 2), ("a", Y, 1), ("b", Y, 2), ("b", X, 1)))
    assert found is not None and not found.complete
    assert found.groups == [(["a", "b"], [X, Y])]
    assert found.shares() == {"a": {X: 2 / 3, Y: 1 / 3}, "b": {X: 1 / 3, Y: 2 / 3}}
    assert found.largest_gap() == pytest.approx(1 / 3)
    assert found.text() == (
        "point and host class are partly confounded: the classes' shares of the points'"
        " measurements differ by up to 33 percentage points (a: 67% on class X and 33% on class Y;"
        " b: 33% on class X and 67% on class Y); each point's median weighs the machines"
        " differently, so part of a difference between points may be one between the machines"
    )
    # a point that one class measured alone, among points the classes shared: partly, 100 - 50
    one_sided = point_class_confounding(measured(("a", X, 1), ("a", Y, 1), ("b", X, 2)))
    assert one_sided is not None and not one_sided.complete
    assert one_sided.largest_gap() == pytest.approx(0.5)


def test_failed_measurements_and_those_without_a_class_are_left_out():
    lined_up = measured(("a", X, 3), ("b", Y, 3))
    # b's failures on X would have made it look measured by both classes
    failed = measured(("b", X, 3), status="failed")
    found = point_class_confounding(lined_up + failed + measured(("a", None, 2), ("b", None, 1)))
    assert found is not None and found.complete and found.counts == {"a": {X: 3}, "b": {Y: 3}}
    # the classes measured a and b alike; a failure on X does not unbalance them
    even = measured(("a", X, 1), ("a", Y, 1), ("b", X, 1), ("b", Y, 1))
    assert point_class_confounding(even + measured(("a", X, 1), status="failed")) is None


# -- the report, from a store -----------------------------------------------------------------


@dataclass
class StoredSweepPoint:
    """A point as the store takes it (store.records.PointToStore)."""

    index: int
    swept: dict
    workload: PgbenchParameters = field(default_factory=PgbenchParameters)
    settings: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return ", ".join(f"{key}={value}" for key, value in self.swept.items())


def _queued_run(lab_dir, classes_by_point: list[list[dict]], at_once: bool = False) -> str:
    """A clients sweep measured by agents, each repetition on the host facts given: stored as
    the agents store it (metrics["fleet"]), clients=2 at twice the tps of clients=1 and the big
    class at four times the small one's; one after another (or all `at_once`)."""
    from pgcachelab.store.records import Measurement
    from pgcachelab.store.sqlite import SqliteResultStore

    store = SqliteResultStore.in_lab_dir(lab_dir)
    points = [StoredSweepPoint(i, {"clients": i + 1}) for i in range(len(classes_by_point))]
    schedule = {"order": "interleaved", "seed": 1, "repetitions": 3, "max_repetitions": None,
                "target_ci": None, "warmup_repetitions": 0}  # fmt: skip
    environment = {"hostname": "queuer", "server_version": "17.2", "schedule": schedule}
    spec = 'name = "fleet-sweep"\n[sweep]\nclients = [1, 2]\n'
    run_id = store.create_run(
        "fleet-sweep", "s.toml", spec, {"kind": "managed"}, environment, points, "big-cache"
    )
    for point, hosts in zip(points, classes_by_point, strict=True):
        for repetition, facts in enumerate(hosts):
            tps = 1000.0 * (point.index + 1) * (4 if facts is BIG else 1) + repetition
            host = "big-1" if facts is BIG else "small-1"
            fleet = {"host": host, "host_class": host_class(facts), "facts": facts}
            start = 0.0 if at_once else 20.0 * (repetition * len(points) + point.index)
            store.record_measurement(
                run_id,
                Measurement(point.index, repetition, "ok", None, start, start + 10.0, 10.0,
                            "restart", tps, 1.0 / tps, 0.0, {"fleet": fleet}),
            )  # fmt: skip
    store.finish_run(run_id, "done")
    store.close()
    return run_id


def _report(lab_dir, run_id) -> str:
    from pgcachelab.store.sqlite import SqliteResultStore
    from pgcachelab.studies.pages import build_report

    store = SqliteResultStore.in_lab_dir(lab_dir)
    index = build_report(store, run_id, lab_dir / "report")
    store.close()
    return index.read_text()


def _between(page: str, start: str, end: str) -> str:
    return page[page.index(start) : page.index(end, page.index(start))]


def test_the_report_warns_when_each_point_had_its_own_class(tmp_path, quick_figures):
    # clients=1 only on the small class, clients=2 only on the big one: "2 is best" is the
    # big machine's four times the throughput
    run_id = _queued_run(tmp_path, [[SMALL] * 3, [BIG] * 3])
    page = html.unescape(_report(tmp_path, run_id))
    small, big = host_class(SMALL), host_class(BIG)
    lined_up = (
        f"point and host class are completely confounded: clients=1 only on {small}; clients=2"
        f" only on {big}"
    )
    remedy = '[fleet] host_class = "..." (every point on one class) or [fleet] classes = [...]'

    # what the run shows: the warning first, before the best value it casts doubt on
    findings = _between(page, "<section id='findings'", "</section>")
    assert findings.index(f"WARNING: {lined_up}") < findings.index("clients = 2 gives the peak")
    assert remedy in findings
    # the run's warnings, among those of measurement quality
    quality = _between(page, "<h2>Measurement quality</h2>", "<h2>Context</h2>")
    assert "<b>points and host classes confounded</b>: " + lined_up in quality
    assert "try " + remedy in quality
    # the host-class section
    hosts = _between(page, f"<h2>{HOSTS_TITLE}</h2>", "<h2>Plots</h2>")
    assert f"<p class='warning'><strong>WARNING</strong>: P{lined_up[1:]}" in hosts
    assert "Measure it again with " + remedy in hosts

    # `advise` says it too, before the best value and beneath it
    lines = run_cli("advise", run_id, "--lab-dir", tmp_path).stdout.splitlines()
    assert lines[1].startswith(f"- hosts: WARNING: {lined_up}")
    assert lines[2] == f"    evidence: clients=1: 3 on {small}; clients=2: 3 on {big}"
    best = next(i for i, line in enumerate(lines) if "clients = 2 gives the peak" in line)
    assert f"    cannot tell: {lined_up}" in [line[: len(lined_up) + 17] for line in lines[best:]]


def test_the_report_warns_when_two_agents_measured_on_one_host_at_once(tmp_path, quick_figures):
    run_id = _queued_run(tmp_path, [[SMALL] * 3, [SMALL] * 3], at_once=True)
    page = html.unescape(_report(tmp_path, run_id))
    overlapped = "measurements overlapped others on the same host, so two agents measured there"
    quality = _between(page, "<h2>Measurement quality</h2>", "<h2>Context</h2>")
    assert f"<b>two agents on one host at once</b>: {overlapped}" in quality
    assert "small-1 (6)" in quality
    hosts = _between(page, f"<h2>{HOSTS_TITLE}</h2>", "<h2>Plots</h2>")
    assert f"<strong>WARNING</strong>: M{overlapped[1:]}" in hosts
    assert "overlapped" not in html.unescape(
        _report(tmp_path, _queued_run(tmp_path, [[SMALL] * 3] * 2))
    )


def test_the_report_warns_of_a_class_mix_that_differs_between_points(tmp_path, quick_figures):
    run_id = _queued_run(tmp_path, [[SMALL, SMALL, BIG], [BIG, BIG, SMALL]])
    page = html.unescape(_report(tmp_path, run_id))
    partly = "point and host class are partly confounded: the classes' shares of the points'"
    hosts = _between(page, f"<h2>{HOSTS_TITLE}</h2>", "<h2>Plots</h2>")
    assert f"<strong>WARNING</strong>: P{partly[1:]}" in hosts
    assert f"(clients=1: 67% on {host_class(SMALL)} and 33% on {host_class(BIG)};" in hosts
    quality = _between(page, "<h2>Measurement quality</h2>", "<h2>Context</h2>")
    assert "<b>points and host classes confounded</b>: " + partly in quality
    # not the opening warning (an uneven mix is what "spread" gives), a limit of the advice
    findings = _between(page, "<section id='findings'", "</section>")
    assert "WARNING" not in findings and f"cannot tell: {partly}" in findings


def test_a_run_measured_by_every_class_alike_has_no_warning(tmp_path, quick_figures):
    run_id = _queued_run(tmp_path, [[SMALL, BIG], [BIG, SMALL]])
    page = html.unescape(_report(tmp_path, run_id))
    assert "2 host classes measured this run" in page
    assert "confounded" not in page.replace("(point and machine confounded)", "")


def test_measurements_that_overlapped_on_one_host_are_flagged():
    measured = [
        ("box", "id-1", 0.0, 10.0),
        ("box", "id-2", 5.0, 15.0),  # a second agent on the same machine, another identity
        ("box", "id-1", 20.0, 30.0),  # after both: fine
        ("other", "id-3", 0.0, 30.0),  # another host, at the same time: fine
        ("ns-a", "same-id", 40.0, 50.0),
        ("ns-b", "same-id", 45.0, 55.0),  # one identity given to two hosts
    ]
    assert overlapping_on_one_host(measured) == {"box": 2, "ns-a": 1, "ns-b": 1}
    assert overlapping_on_one_host(measured[2:4]) == {}
    assert overlapping_on_one_host([("box", None, 0.0, 10.0), ("box", None, 10.0, 20.0)]) == {}
    warning = overlap_warning({"box": 2})
    assert "two agents measured there at once" in warning.problem and "box (2)" in warning.problem
