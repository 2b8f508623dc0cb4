"""The fleet on two hosts (issue 38): agents in two network namespaces with their own host
names reach the results store over TCP with scram (fix_netns.py), and claim and measure the
units of one queued run with their own clusters.

Single-host fleet tests (a killed agent, the queue's rules) are in test_fleet.py.
"""

import json

import pytest
from test_fleet import TINY_SWEEP

pytestmark = pytest.mark.server

UNITS = 4  # TINY_SWEEP: 2 points x 2 repetitions


def queue_run(fleet, spec_dir) -> str:
    """TINY_SWEEP queued from the first host, over TCP; its run id."""
    spec = spec_dir / "tiny.toml"
    spec.write_text(TINY_SWEEP)
    host = fleet.hosts[0]
    queued = host.run("run", spec, "--queue", "--store", fleet.url, "--lab-dir", host.lab_dir)
    assert queued.returncode == 0, queued.stderr
    [(run_id,)] = fleet.query("select run_id from runs")
    return run_id


def stored(fleet) -> list[tuple]:
    """(point, repetition, status, measuring host) of every stored measurement."""
    return [
        (point, repetition, status, json.loads(metrics)["fleet"]["host"])
        for point, repetition, status, metrics in fleet.query(
            "select point_index, repetition, status, metrics from measurements order by 1, 2"
        )
    ]


def test_two_hosts_measure_one_run_over_tcp(fleet_hosts, tmp_path):
    fleet = fleet_hosts
    queue_run(fleet, tmp_path)
    agents = [
        ["agent", "--store", fleet.url, "--lab-dir", host.lab_dir, "--lease", "5s"]
        for host in fleet.hosts
    ]
    a, b = fleet.hosts
    with a.process(agents[0]) as first, b.process(agents[1]) as second:
        assert first.wait(timeout=300) == 0, a.stderr()
        assert second.wait(timeout=300) == 0, b.stderr()
    measured = stored(fleet)
    assert [(p, r, s) for p, r, s, _ in measured] == [
        (0, 0, "ok"), (0, 1, "ok"), (1, 0, "ok"), (1, 1, "ok")
    ]  # fmt: skip
    assert {host for *_, host in measured} == {a.name, b.name}
    assert sorted(fleet.query("select host from hosts")) == [(a.name,), (b.name,)]
    password = fleet.store.password
    assert password and all(password not in host.stderr() for host in fleet.hosts)
