"""The measurement pipeline's watches and Recording, alone: how a failed point's reason is made
(a dead disk, then a dead server, then an OOM kill), what a failed point keeps, and that an
error which is not a point's passes through. The target here only answers the questions the
watches ask of it; the runner's tests run the same pipeline against real servers."""

import contextlib

import pytest

from pgcachelab.errors import ClusterError
from pgcachelab.experiments.instruments import DiskWatch, MachineWatch, ServerWatch
from pgcachelab.experiments.recording import MetricKeyCollision, PointErrors, Recording
from pgcachelab.spec.schema import WORKLOADS as SPEC_WORKLOADS
from pgcachelab.workloads.outcome import Outcome
from pgcachelab.workloads.registry import WORKLOADS


class Machine:
    def __init__(self):
        self.oom_kills = 0

    def stats(self) -> dict:
        return {"cgroup": {"oom_kills": self.oom_kills, "limit_bytes": 1 << 30}}


class Target:
    kind = "managed"

    def __init__(self, machine=None, died=None, disk_failed=None):
        self.machine, self.died, self.disk_failed = machine, died, disk_failed
        self.device_reads = 10
        self.asked_about_the_server = False

    def server_failure(self):
        self.asked_about_the_server = True
        return self.died

    def disk_failure(self):
        return self.disk_failed

    def disk_record(self) -> dict:
        return {"profile": None, "probe": {}, "counters": {"reads": self.device_reads}}


def measure(target, body):
    """The watches entered as the runner enters them, around `body(machine, disk, recording)`."""
    recording = Recording(point_index=3, repetition=1)
    machine, disk = MachineWatch(target, recording), DiskWatch(target, recording)
    with contextlib.ExitStack() as stack:
        for watch in (machine, ServerWatch(target, recording), disk, PointErrors(recording)):
            stack.enter_context(watch)
        body(machine, disk, recording)
    return recording.measurement()


def a_run(outcome_tps=100.0, during=None):
    def body(machine, disk, recording):
        machine.start_run()
        disk.start_run()
        if during is not None:
            during()
        recording.outcome = Outcome(metrics={"pgbench": {}}, tps=outcome_tps, summary="100 tps")
        recording.run_metrics["probes"] = {"database": {}}

    return body


def test_a_run_that_ended_well_keeps_its_figures_the_disk_and_the_machine():
    target = Target(machine=Machine())

    def more_reads():
        target.device_reads = 25

    measurement = measure(target, a_run(during=more_reads))
    assert (measurement.status, measurement.reason, measurement.tps) == ("ok", None, 100.0)
    metrics = measurement.metrics
    assert metrics["disk"]["device"] == {"reads": 15}
    assert metrics["machine"]["cgroup"]["oom_kills"] == 0
    assert {"pgbench", "probes", "load_average_1m"} <= set(metrics)
    assert not target.asked_about_the_server


def test_a_point_error_is_explained_by_the_disk_then_the_server():
    target = Target(died="the server died (signal 9)", disk_failed="emulated disk failed: gone")

    def fails(machine, disk, recording):
        raise ClusterError("pgbench aborted\nclient 0 lost its connection")

    measurement = measure(target, fails)
    assert measurement.status == "failed"
    assert measurement.reason == "the server died (signal 9); emulated disk failed: gone"
    assert "machine" not in measurement.metrics  # no emulated machine: nothing to say


def test_an_oom_kill_explains_a_failure_whatever_else_was_said():
    machine = Machine()
    target = Target(machine=machine, died="the server died (signal 9)")

    def killed(machine_watch, disk, recording):
        machine.oom_kills = 2
        raise ClusterError("pgbench aborted")

    measurement = measure(target, killed)
    assert measurement.reason.startswith("oom_killed: the OOM killer ended 2 server process(es)")
    assert measurement.metrics["machine"]["cgroup"]["oom_kills"] == 2


def test_an_oom_kill_during_a_run_that_ended_fails_the_point_without_its_figures():
    machine = Machine()
    target = Target(machine=machine)

    def kill():
        machine.oom_kills += 1

    measurement = measure(target, a_run(during=kill))
    assert measurement.status == "failed" and measurement.reason.startswith("oom_killed")
    assert measurement.tps is None
    assert not {"pgbench", "probes", "load_average_1m"} & set(measurement.metrics)
    assert "disk" in measurement.metrics and "machine" in measurement.metrics


def test_a_disk_that_died_under_a_run_that_ended_fails_the_point():
    target = Target()

    def die():
        target.disk_failed = "emulated disk failed: the daemon died"

    measurement = measure(target, a_run(during=die))
    assert (measurement.status, measurement.reason) == ("failed", target.disk_failed)
    assert "disk" not in measurement.metrics


def test_an_error_that_is_not_a_points_passes_the_watches_untouched():
    target = Target(machine=Machine(), died="the server died (signal 9)")

    def interrupted(machine, disk, recording):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        measure(target, interrupted)
    assert not target.asked_about_the_server


def test_every_workload_a_spec_can_name_is_registered():
    assert set(WORKLOADS) == set(SPEC_WORKLOADS)


def test_a_metric_key_set_twice_is_refused_with_its_name():
    recording = Recording(point_index=0, repetition=0)
    recording.metrics["latency"] = {"p99_ms": 2.0}
    recording.run_metrics["probes"] = {}
    recording.outcome = Outcome(tps=1.0, metrics={"latency": {"p99_ms": 1.0}})
    with pytest.raises(MetricKeyCollision, match="'latency' is set by both the recording"):
        recording.measurement()
    # a failed point keeps only its own metrics: nothing to merge, nothing refused
    recording.fail("pgbench aborted")
    assert recording.measurement().metrics == {"latency": {"p99_ms": 2.0}}
