"""The fleet on three hosts (issues 38, 49): agents in network namespaces with their own host
names reach the results store over TCP with scram (fix_netns.py), and claim and measure the
units of one queued run with their own clusters, through the faults a fleet meets: the store
restarting (and a clone of a host trying its identity after it), an outage longer than the
lease, a heartbeat's connection cut (once, or refused past the lease), a host cut off the
network past its lease, an agent killed mid-unit, a host taken twice, a run cancelled.

Every test checks the same end: each unit stored at most once (the store's primary key would
refuse a second row; unit_tries would show a second "stored"), no password in the agents'
output, no server left running on the hosts and nothing in their TMPDIRs. Single-host fleet
tests and the queue's rules are in test_fleet.py.
"""

import contextlib
import json
import re
import signal
import time

import pytest
from fix_cli import run_cli
from fix_processes import processes_mentioning, wait_for
from test_fleet import TINY_SWEEP

pytestmark = pytest.mark.server

UNITS = 4  # TINY_SWEEP: 2 points x 2 repetitions of 2 s
ALL_OK = [(0, 0, "ok"), (0, 1, "ok"), (1, 0, "ok"), (1, 1, "ok")]


def queue_run(fleet, spec_dir, from_host: bool = False) -> str:
    """TINY_SWEEP queued through the store's socket (a forked CLI: no interpreter start), or
    from the first host over TCP; its run id."""
    spec = spec_dir / "tiny.toml"
    spec.write_text(TINY_SWEEP)
    host = fleet.hosts[0]
    if from_host:
        queued = host.run("run", spec, "--queue", "--store", fleet.url, "--lab-dir", host.lab_dir)
    else:
        queued = run_cli("run", spec, "--queue", "--store", fleet.local_url,
                         "--lab-dir", host.lab_dir, tmpdir=host.tmpdir)  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    [(run_id,)] = fleet.query("select run_id from runs")
    return run_id


def agent(fleet, host, *options, host_id: str | None = None) -> list:
    """`agent` on `host` with a short lease, as the host `host_id` (its own name by default)."""
    return ["agent", "--store", fleet.url, "--lab-dir", host.lab_dir,
            "--host-id", host_id or host.name, "--lease", "5s", *options]  # fmt: skip


@contextlib.contextmanager
def agents_on_both(fleet, *options):
    """An agent on each host, killed if the test leaves it running: (first, second)."""
    a, b, _ = fleet.hosts
    with (
        a.process(agent(fleet, a, *options)) as first,
        b.process(agent(fleet, b, *options)) as second,
    ):
        yield first, second


def stored(fleet) -> list[tuple]:
    """(point, repetition, status, metrics["fleet"]) of every stored measurement."""
    return [
        (point, repetition, status, json.loads(metrics)["fleet"])
        for point, repetition, status, metrics in fleet.query(
            "select point_index, repetition, status, metrics from measurements order by 1, 2"
        )
    ]


def tries(fleet) -> list[tuple]:
    """(point, repetition, host id, outcome) of every try, in order."""
    return fleet.query(
        "select point_index, repetition, host_id, outcome from unit_tries order by at, job_id"
    )


def measuring(fleet, host_id: str) -> list[tuple]:
    """(point, repetition) of the units an agent of `host_id` holds."""
    return fleet.query(
        "select (j.args->>'point_index')::int, (j.args->>'repetition')::int"
        " from procrastinate_jobs j join agents a on a.worker_id = j.worker_id"
        " where j.status = 'doing' and a.host_id = %s",
        (host_id,),
    )


def sessions(fleet, role: str) -> list[tuple]:
    """(application_name, client address) of the store's sessions named "pgcachelab ROLE ..."."""
    return fleet.query(
        "select application_name, host(client_addr) from pg_stat_activity"
        " where application_name like %s order by 1, 2",
        (f"pgcachelab {role} %",),
    )


def measuring_with_pgbench(fleet, host) -> list[tuple]:
    """The unit `host` holds while its pgbench measures it (not while it loads the data)."""
    pgbench = [argv for argv in host.running("pgbench") if "-i" not in argv]
    return measuring(fleet, host.name) if pgbench else []


def alive(process, host) -> bool:
    if process.poll() is not None:
        pytest.fail(f"the agent on {host.name} exited with {process.returncode}: {host.stderr()}")
    return True


def assert_stored_once(fleet) -> list[tuple]:
    """Every unit stored once, ok; every job succeeded; the measurements' fleet facts."""
    measured = stored(fleet)
    assert [(p, r, s) for p, r, s, _ in measured] == ALL_OK
    stores = [(p, r) for p, r, _, outcome in tries(fleet) if outcome == "stored"]
    assert sorted(stores) == [(p, r) for p, r, _ in ALL_OK]  # no unit stored twice
    assert fleet.query("select status, count(*) from procrastinate_jobs group by 1") == [
        ("succeeded", UNITS)
    ]
    return measured


def assert_clean_end(fleet) -> None:
    """No password in any agent's output, no traceback; no server left running on the hosts
    and nothing of the lab's in their TMPDIRs (a killed agent's: reaped by the other)."""
    password = fleet.store.password
    assert password
    for host in fleet.hosts:
        for output in host.out_dir.glob("*.std*"):
            text = output.read_text()
            assert password not in text and "Traceback" not in text, f"{output}: {text}"
    # A killed agent's postmaster dies with it (a parent-death signal), a moment later.
    wait_for(lambda: not any(host.running("postgres") for host in fleet.hosts),
             what="no postgres left on the hosts")  # fmt: skip
    for host in fleet.hosts:
        assert [p.name for p in host.tmpdir.iterdir()] == [host.registry.name]


def assert_refused_as_a_clone(clone, host_id: str) -> None:
    """An agent with another host's identity, refused by the store's lock: exit 2, one line."""
    assert clone.returncode == 2, clone.stderr
    assert re.match(
        rf"pgcachelab: agent: host id '{re.escape(host_id)}' is held in the store by host"
        rf" {re.escape(host_id)}, pid",
        clone.stderr,
    ), clone.stderr


def test_two_hosts_measure_one_run_over_tcp(fleet_hosts, tmp_path):
    fleet = fleet_hosts
    run_id = queue_run(fleet, tmp_path, from_host=True)
    a, b, _ = fleet.hosts
    with agents_on_both(fleet) as (first, second):
        # Each agent's sessions come from its own host's address, named for its host id.
        wait_for(
            lambda: alive(first, a) and alive(second, b) and len(sessions(fleet, "agent")) == 2,
            what="both agents connected",
        )
        assert sessions(fleet, "agent") == [
            (f"pgcachelab agent {a.name}", a.address),
            (f"pgcachelab agent {b.name}", b.address),
        ]
        assert first.wait(timeout=300) == 0, a.stderr()
        assert second.wait(timeout=300) == 0, b.stderr()
    measured = assert_stored_once(fleet)
    assert {fleet_facts["host_id"] for *_, fleet_facts in measured} == {a.name, b.name}
    assert all(f["host"] == f["host_id"] for *_, f in measured)  # their UTS host names
    assert sorted(fleet.query("select host_id, host_name from hosts")) == [
        (a.name, a.name), (b.name, b.name)
    ]  # fmt: skip
    status = b.run("queue", "status", "--store", fleet.url)
    assert status.returncode == 0 and run_id in status.stdout, status.stderr
    assert_clean_end(fleet)


def test_agents_outlive_a_store_restart(fleet_hosts, tmp_path):
    fleet = fleet_hosts
    queue_run(fleet, tmp_path)
    a, b, _ = fleet.hosts
    with agents_on_both(fleet) as (first, second):
        wait_for(
            lambda: alive(first, a) and alive(second, b)
            and measuring(fleet, a.name) and measuring(fleet, b.name),
            what="both agents measuring",
        )  # fmt: skip
        # Fast shutdown ends every session; the store stays away until both agents found it
        # gone (each needs it once its unit is measured), then comes back.
        fleet.store.stop()
        wait_for(lambda: all(": reconnecting\n" in host.stderr() for host in (a, b)),
                 what="both agents reconnecting")  # fmt: skip
        fleet.store.start()
        assert first.wait(timeout=300) == 0, a.stderr()
        assert second.wait(timeout=300) == 0, b.stderr()
    assert_stored_once(fleet)
    for host in (a, b):  # each saw it go, and come back
        said = host.stderr()
        assert ": reconnecting\n" in said and "the store is back\n" in said, said
    assert_clean_end(fleet)


def test_a_terminated_heartbeat_contaminates_nothing(fleet_hosts, tmp_path):
    fleet = fleet_hosts
    queue_run(fleet, tmp_path)
    a, b, _ = fleet.hosts
    with agents_on_both(fleet) as (first, second):
        wait_for(
            lambda: alive(first, a) and alive(second, b)
            and measuring(fleet, a.name)
            and (f"pgcachelab heartbeat {a.name}", a.address) in sessions(fleet, "heartbeat"),
            what="an agent measuring with its heartbeat",
        )  # fmt: skip
        held = measuring(fleet, a.name)  # none if it finished its unit meanwhile
        [(terminated,)] = fleet.query(
            "select array_agg(pid) filter (where pg_terminate_backend(pid))"
            " from pg_stat_activity where application_name = %s",
            (f"pgcachelab heartbeat {a.name}",),
        )
        assert len(terminated) == 1
        # the heartbeat comes back on a new session, from the same host
        wait_for(
            lambda: fleet.query(
                "select host(client_addr) from pg_stat_activity where application_name = %s"
                " and pid <> %s",
                (f"pgcachelab heartbeat {a.name}", terminated[0]),
            ) == [(a.address,)],
            what="the heartbeat's new session",
        )  # fmt: skip
        assert first.wait(timeout=300) == 0, a.stderr()
        assert second.wait(timeout=300) == 0, b.stderr()
    measured = assert_stored_once(fleet)
    # The unit it held: stored by it, or, if it lost its lease meanwhile, measured again by the
    # other host and its own late try discarded, not stored beside the new one.
    by_unit = {(p, r): fleet_facts["host_id"] for p, r, _, fleet_facts in measured}
    for unit in held:
        unit_tries = [(host, outcome) for p, r, host, outcome in tries(fleet) if (p, r) == unit]
        assert by_unit[unit] == a.name or (a.name, "discarded") in unit_tries, unit_tries
    assert {outcome for *_, outcome in tries(fleet)} <= {"stored", "discarded"}
    assert_clean_end(fleet)


# Refuses the store's heartbeat logins (PostgreSQL 17+ login event trigger): the heartbeats stay
# away while the agents' work connections go on, as when a pooler or firewall drops only them.
REFUSE_HEARTBEATS = """
create function public.refuse_heartbeats() returns event_trigger language plpgsql as $$
begin
    if current_setting('application_name') like 'pgcachelab heartbeat %%' then
        raise exception 'heartbeats refused by the test';
    end if;
end $$;
create event trigger refuse_heartbeats on login execute function public.refuse_heartbeats()
"""


def test_agents_whose_heartbeats_stay_away_past_their_lease_go_on(fleet_hosts, tmp_path):
    fleet = fleet_hosts
    queue_run(fleet, tmp_path)
    fleet.execute(REFUSE_HEARTBEATS)
    a, b, _ = fleet.hosts
    lease = ["--lease", "3s"]  # the shortest: each agent's first unit outlasts it
    with agents_on_both(fleet, *lease) as (first, second):
        # Each agent stalls past its lease on its first unit, unrenewed: the first to look
        # gives the other's unit back (then finds its own measurement refused in turn).
        wait_for(
            lambda: first.poll() is not None or second.poll() is not None
            or any(outcome == "abandoned" for *_, outcome in tries(fleet)),
            what="a unit given back",
        )  # fmt: skip
        fleet.execute("drop event trigger refuse_heartbeats")
        assert first.wait(timeout=300) == 0, a.stderr()
        assert second.wait(timeout=300) == 0, b.stderr()
    assert_stored_once(fleet)
    assert {outcome for *_, outcome in tries(fleet)} <= {"stored", "discarded", "abandoned"}
    # Every try given back was still being measured by a live agent: its result discarded.
    given_back = [(p, r, host) for p, r, host, outcome in tries(fleet) if outcome == "abandoned"]
    discarded = [(p, r, host) for p, r, host, outcome in tries(fleet) if outcome == "discarded"]
    assert given_back and sorted(given_back) == sorted(discarded)
    assert_clean_end(fleet)


def test_a_host_cut_off_past_its_lease_has_its_measurement_discarded(fleet_hosts, tmp_path):
    fleet = fleet_hosts
    queue_run(fleet, tmp_path)
    a, b, _ = fleet.hosts
    with agents_on_both(fleet) as (first, second):
        [held] = wait_for(
            lambda: alive(first, a) and alive(second, b) and measuring_with_pgbench(fleet, a),
            what="the first host's pgbench measuring",
        )
        # Its cable pulled mid-unit: pgbench goes on (a local socket), its heartbeat and its
        # store connections hang. The other host finds the lease lapsed and measures the unit.
        a.unplug()
        try:
            wait_for(
                lambda: alive(first, a)
                and [host for p, r, host, _ in tries(fleet) if (p, r) == held] == [a.name, b.name],
                what="the other host storing the cut-off host's unit",
            )  # fmt: skip
        finally:
            a.plug()
        # Back on the network, its own measurement of the unit is refused, not stored beside.
        assert first.wait(timeout=300) == 0, a.stderr()
        assert second.wait(timeout=300) == 0, b.stderr()
    measured = assert_stored_once(fleet)
    by_unit = {(p, r): fleet_facts["host_id"] for p, r, _, fleet_facts in measured}
    assert by_unit[held] == b.name
    held_tries = [(host, outcome) for p, r, host, outcome in tries(fleet) if (p, r) == held]
    assert held_tries == [(a.name, "abandoned"), (b.name, "stored"), (a.name, "discarded")]
    assert "measured but not stored: its lease was lost" in a.stderr()
    assert_clean_end(fleet)


def test_a_killed_agents_unit_is_measured_once_by_the_other_host(fleet_hosts, tmp_path):
    fleet = fleet_hosts
    queue_run(fleet, tmp_path)
    a, b, _ = fleet.hosts
    with agents_on_both(fleet) as (first, second):
        wait_for(
            lambda: alive(first, a) and alive(second, b) and measuring_with_pgbench(fleet, a),
            what="the first host's pgbench measuring",
        )
        # Frozen before its unit is read, so it cannot finish the unit in between.
        first.send_signal(signal.SIGSTOP)
        [killed_unit] = measuring(fleet, a.name)
        clusters = [pid_file.parents[1] for pid_file in a.tmpdir.glob("pgcachelab-*/pgdata/*.pid")]
        assert clusters, "the first host's cluster"
        first.send_signal(signal.SIGKILL)
        assert first.wait() == -signal.SIGKILL
        # the other host finishes the queue, the killed unit once its lease lapses
        assert second.wait(timeout=300) == 0, b.stderr()
    measured = assert_stored_once(fleet)
    by_unit = {(p, r): fleet_facts["host_id"] for p, r, _, fleet_facts in measured}
    assert by_unit[killed_unit] == b.name
    assert (*killed_unit, a.name, "abandoned") in tries(fleet)
    # The dead agent's cluster stopped with it (its postmaster dies with its parent); the other
    # host's agent leaves its directory alone, the next lab command on its own host reaps it.
    assert all(work_dir.exists() for work_dir in clusters)
    status = a.run("queue", "status", "--store", fleet.url)
    assert status.returncode == 0, status.stderr
    for work_dir in clusters:
        assert f"removed the cluster {work_dir}" in status.stderr, status.stderr
        assert not work_dir.exists() and processes_mentioning(str(work_dir)) == []
    assert_clean_end(fleet)


def test_a_host_is_measured_by_one_agent_at_a_time(fleet_hosts):
    fleet = fleet_hosts
    a, b, _ = fleet.hosts
    # Nothing queued: with --wait the first agent holds its host and waits for units.
    with a.process(agent(fleet, a, "--wait")) as holder:
        lock = (f"pgcachelab host lock {a.name}", a.address)
        # holding it, then registered: its host's facts (a storage probe) measured once it holds
        # the host, so that a second agent is refused at once (issue 49)
        registered = "select count(*) from agents where host_id = %s and stopped_at is null"
        wait_for(lambda: alive(holder, a) and lock in sessions(fleet, "host lock")
                 and fleet.query(registered, (a.name,)) == [(1,)],
                 what="the first agent holding its host")  # fmt: skip
        # A second agent on the same host: its lock file says the host is busy.
        again = a.run(*agent(fleet, a))
        assert again.returncode == 2, again.stderr
        busy = rf"pgcachelab: agent: host '{re.escape(a.name)}' is busy"
        assert re.match(busy, again.stderr), again.stderr
        # Another machine with the same identity (a cloned VM): the store's lock refuses it.
        clone = b.run(*agent(fleet, b, host_id=a.name))
        assert_refused_as_a_clone(clone, a.name)
        # With --wait it waits for the host, and takes it when the first agent is gone.
        with b.process(agent(fleet, b, "--wait", host_id=a.name), name="waiting") as waiting:
            wait_for(lambda: alive(waiting, b) and "waiting for it" in b.stderr("waiting"),
                     what="the clone waiting for the host")  # fmt: skip
            assert sessions(fleet, "host lock") == [lock]
            holder.send_signal(signal.SIGKILL)
            holder.wait()
            taken = "select count(*) from agents where host_name = %s and stopped_at is null"
            wait_for(
                lambda: alive(waiting, b)
                and sessions(fleet, "host lock") == [(f"pgcachelab host lock {a.name}", b.address)]
                and fleet.query(taken, (b.name,)) == [(1,)],  # its host's facts measured
                what="the waiting agent taking the host",
            )  # fmt: skip
    assert_clean_end(fleet)


def advisory_holders(fleet) -> list[str]:
    """The host ids whose store-side host lock (an advisory lock of a "host lock" session) is
    held now, as pg_locks says: not as any agent believes."""
    return [
        name.removeprefix("pgcachelab host lock ")
        for (name,) in fleet.query(
            "select a.application_name from pg_locks l join pg_stat_activity a using (pid)"
            " where l.locktype = 'advisory' and l.granted"
            " and a.application_name like 'pgcachelab host lock %%' order by 1"
        )
    ]


def assert_no_password(fleet, *outputs: str) -> None:
    for output in outputs:
        assert fleet.store.password not in output and "Traceback" not in output, output


def test_a_clone_is_refused_after_a_store_restart(fleet_hosts, tmp_path):
    """Issue 49, F1: after a store restart the agent's advisory lock was gone (2 locks before,
    0 eight seconds after) and a clone with its identity, refused before, measured beside it.
    The agent takes its lock again on its new session, verified by a query, and the clone is
    refused as before."""
    fleet = fleet_hosts
    queue_run(fleet, tmp_path)
    a, b, _ = fleet.hosts
    with a.process(agent(fleet, a)) as original:
        wait_for(lambda: alive(original, a) and measuring(fleet, a.name)
                 and advisory_holders(fleet) == [a.name],
                 what="the agent measuring, holding its host")  # fmt: skip
        fleet.store.stop()  # every session goes, and the advisory lock with it
        fleet.store.start()
        assert advisory_holders(fleet) == []
        wait_for(lambda: alive(original, a) and advisory_holders(fleet) == [a.name],
                 what="the agent's host lock taken again")  # fmt: skip
        clone = b.run(*agent(fleet, b, host_id=a.name))
        assert_refused_as_a_clone(clone, a.name)
        assert original.wait(timeout=300) == 0, a.stderr()
    measured = assert_stored_once(fleet)
    assert {fleet_facts["host_id"] for *_, fleet_facts in measured} == {a.name}
    assert fleet.query("select count(*) from agents where host_name = %s", (b.name,)) == [(0,)]
    assert_no_password(fleet, clone.stdout, clone.stderr)
    assert_clean_end(fleet)


def test_status_renders_after_a_requeue_and_after_a_cancel(fleet_hosts, tmp_path):
    """Issue 49, F2: `queue status` and `runs` failed (a TypeError sorting hosts) once some
    units had no last host beside others that had: after an agent of another class gave a
    killed agent's unit back, and after a run partly measured was cancelled."""
    fleet = fleet_hosts
    run_id = queue_run(fleet, tmp_path)
    a, b, c = fleet.hosts

    def status_and_runs(host, *expected: str) -> list[str]:
        outputs = []
        for command in (("queue", "status"), ("runs",)):
            done = host.run(*command, "--store", fleet.url)
            assert done.returncode == 0, done.stderr
            outputs += [done.stdout, done.stderr]
        for text in expected:
            assert text in outputs[0], outputs[0]
        assert run_id in outputs[2], outputs[2]
        return outputs

    with a.process(agent(fleet, a)) as first:
        wait_for(lambda: alive(first, a) and measuring_with_pgbench(fleet, a),
                 what="the first host's pgbench measuring")  # fmt: skip
        first.send_signal(signal.SIGSTOP)
        [killed_unit] = measuring(fleet, a.name)
        first.send_signal(signal.SIGKILL)
        assert first.wait() == -signal.SIGKILL
    # An agent of a class no unit is for gives the killed agent's unit back once its lease
    # lapses, and measures nothing.
    with b.process(agent(fleet, b, "--wait", "--class", "elsewhere")) as requeuer:
        wait_for(lambda: alive(requeuer, b)
                 and (*killed_unit, a.name, "abandoned") in tries(fleet),
                 what="the killed agent's unit given back")  # fmt: skip
        requeuer.send_signal(signal.SIGINT)
        requeuer.wait(timeout=60)
    # on the killed agent's host: its first lab command also reaps the clusters it left
    outputs = status_and_runs(a, "queued", a.name)
    # A third host measures; the run is cancelled while it holds a unit: that measurement is
    # discarded, the units nobody measured are cancelled.
    with c.process(agent(fleet, c)) as third:

        def frozen_while_measuring():
            # Frozen, then asked again: under load the agent finished its unit between the
            # query and the cancel, and the cancel then cut nothing short.
            wait_for(lambda: alive(third, c) and measuring_with_pgbench(fleet, c),
                     what="the third host's pgbench measuring")  # fmt: skip
            third.send_signal(signal.SIGSTOP)
            held = measuring(fleet, c.name)
            if not held:
                third.send_signal(signal.SIGCONT)
            return held

        [cut_short] = wait_for(frozen_while_measuring, what="the third agent frozen on a unit")
        cancelled = b.run("queue", "cancel", run_id, "--store", fleet.url)
        third.send_signal(signal.SIGCONT)  # it goes on, and finds its unit cancelled
        assert cancelled.returncode == 0, cancelled.stderr
        third.wait(timeout=300)
    outputs += [cancelled.stdout, cancelled.stderr, *status_and_runs(c, "cancelled")]
    # Exactly once: what is stored is what a try stored, each unit at most once, and the unit
    # measured when the run was cancelled is not among them.
    stores = sorted((p, r) for p, r, _, outcome in tries(fleet) if outcome == "stored")
    assert sorted((p, r) for p, r, *_ in stored(fleet)) == stores == sorted(set(stores))
    assert cut_short not in stores and (*cut_short, c.name, "discarded") in tries(fleet)
    assert fleet.query(
        "select count(*) from procrastinate_jobs where status in ('todo', 'doing')"
    ) == [(0,)]  # fmt: skip
    assert_no_password(fleet, *outputs)
    assert_clean_end(fleet)


def test_three_hosts_through_an_outage_longer_than_the_lease(fleet_hosts, tmp_path):
    """Issue 49, F3: after a store outage about a lease long, the agent that came back first
    gave back the unit of one not yet back as stalled: its finished measurement discarded, a
    try counted. Heartbeats are judged from the store's start with a grace of one lease: an
    outage longer than the lease, and an agent back a while after it, stall nobody; every
    unit is stored once, by the agent that held it."""
    fleet = fleet_hosts
    queue_run(fleet, tmp_path)
    hosts = fleet.hosts
    late = hosts[2]
    lease_s = 12
    with contextlib.ExitStack() as stack:
        agents = [
            stack.enter_context(host.process(agent(fleet, host, "--lease", f"{lease_s}s")))
            for host in hosts
        ]
        wait_for(
            lambda: (
                all(alive(process, host) for process, host in zip(agents, hosts, strict=True))
                and fleet.query("select count(*) from agents where stopped_at is null") == [(3,)]
                and measuring(fleet, late.name)
            ),
            what="three agents registered, the third measuring",
        )
        # The third comes back last (frozen through the outage and a while after it): the
        # others reconnect, store what they measured and look for stalled units meanwhile.
        agents[2].send_signal(signal.SIGSTOP)
        held = {host.name: measuring(fleet, host.name) for host in hosts}
        fleet.store.stop()
        time.sleep(lease_s * 1.1)
        fleet.store.start()
        # The others are back within 15.5 s of the outage's start (their backoff), and look
        # for stalled units then and every third of a lease; the third's heartbeat comes back
        # after that, within the grace (a lease from the store's start, and its own lease).
        time.sleep(lease_s * 1.5)
        agents[2].send_signal(signal.SIGCONT)
        for process, host in zip(agents, hosts, strict=True):
            assert process.wait(timeout=300) == 0, host.stderr()
    measured = assert_stored_once(fleet)
    # nobody was stalled by the outage: nothing given back, nothing discarded, and each unit
    # held when the store went was stored by its own agent
    assert {outcome for *_, outcome in tries(fleet)} == {"stored"}
    by_unit = {(p, r): fleet_facts["host_id"] for p, r, _, fleet_facts in measured}
    assert held[late.name]
    for host_id, units in held.items():
        for unit in units:
            assert by_unit[unit] == host_id
    assert {fleet_facts["host_id"] for *_, fleet_facts in measured} == {h.name for h in hosts}
    for host in hosts:
        said = host.stderr()
        assert ": reconnecting\n" in said and "the store is back\n" in said, said
    assert_clean_end(fleet)
