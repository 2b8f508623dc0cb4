"""One experiment, many agents (issues 21, 38): a run queued in a real PostgreSQL store (a
managed cluster of the PG 18 wheel) as procrastinate jobs, measured by agent processes with
their own clusters; a killed agent's unit measured once by another; the queue's rules (lost
leases, tries, classes, cancel, retry) on the store itself.

The pure parts (hand-out order, classes' queues, host classes) are in test_fleet_logic.py; the
same across two emulated hosts with faults is test_fleet_hosts.py.
"""

import html
import re
import signal
from types import SimpleNamespace

import psycopg
import pytest
from fix_cli import run_cli
from fix_lab import lab_process, lab_stderr
from fix_processes import processes_mentioning, wait_for
from test_store_postgresql import new_database

from pgcachelab.analysis.hosts import host_class
from pgcachelab.cli.progress import LineProgress
from pgcachelab.errors import UserError
from pgcachelab.experiments import fleet
from pgcachelab.experiments.fleet import Agent, Heartbeat, agent_host_facts
from pgcachelab.experiments.host_lock import HostBusy, HostLock, lock_path
from pgcachelab.report.hosts import TITLE as HOSTS_TITLE
from pgcachelab.store import postgresql
from pgcachelab.store.postgresql import SCHEMA, PostgresResultStore
from pgcachelab.store.queue import UnitQueue, repetition_class, run_queue
from pgcachelab.store.records import Measurement, to_json

pytestmark = pytest.mark.server

UNIT = "(args->>'point_index')::int, (args->>'repetition')::int"  # a job's unit

# 2 points x 2 repetitions of 2 s, interleaved: 4 units handed out round by round.
TINY_SWEEP = """name = "fleet-tiny"
repetitions = 2
order = "interleaved"

[pgbench]
mode = "select-only"
scale = 1
duration = "2s"

[sweep]
clients = [1, 2]
"""


@pytest.fixture(scope="module")
def store_server(module_cluster):
    module_cluster.apply_settings({})
    yield module_cluster
    module_cluster.stop()


def query(url: str, sql: str, params=()) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"set search_path to {SCHEMA}")
        return conn.execute(sql, params).fetchall()


def queue_tiny_sweep(store_server, name: str, tmp_path, lab_tmp) -> tuple:
    """TINY_SWEEP queued in a new database: (its URL, the spec, the lab dir, run --queue)."""
    url = new_database(store_server, name)
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY_SWEEP)
    lab_dir = tmp_path / "lab"
    queued = run_cli("run", spec, "--queue", "--store", url, "--lab-dir", lab_dir, tmpdir=lab_tmp)
    assert queued.returncode == 0, queued.stderr
    return url, spec, lab_dir, queued


def test_a_killed_agents_unit_is_measured_once_by_another(
    store_server, tmp_path, lab_tmp, quick_figures
):
    url, spec, lab_dir, queued = queue_tiny_sweep(store_server, "fleet", tmp_path, lab_tmp)
    [(run_id, status)] = query(url, "select run_id, status from runs")
    assert status == "queued" and f"run {run_id} queued" in queued.stderr
    assert query(url, "select count(*) from measurements") == [(0,)]  # nothing measured
    assert query(url, f"select {UNIT} from procrastinate_jobs order by id") == [
        (0, 0), (1, 0), (0, 1), (1, 1)
    ]  # fmt: skip

    agent = ["agent", "--store", url, "--lab-dir", lab_dir, "--lease", "5s"]
    first_out, second_out = tmp_path / "first", tmp_path / "second"
    first_out.mkdir()
    second_out.mkdir()
    # Two host identities: one measuring agent per host, and this test wants two at once.
    with lab_process([*agent, "--host-id", "first"], first_out, lab_tmp) as first:
        of_first = (
            " from procrastinate_jobs j join agents a on a.worker_id = j.worker_id where a.pid = %s"
        )

        def measuring_its_second_unit():
            if first.poll() is not None:
                pytest.fail(f"the agent exited with {first.returncode}: {lab_stderr(first_out)}")
            [(done, leased)] = query(
                url,
                "select count(*) filter (where j.status = 'succeeded'),"
                " count(*) filter (where j.status = 'doing')" + of_first,
                (first.pid,),
            )
            return done >= 1 and leased == 1

        def frozen_on_its_second_unit():
            # Frozen, then asked again: a loaded machine let the first agent finish the unit
            # between a query and a signal, and the test then killed an idle agent.
            wait_for(measuring_its_second_unit, what="the first agent on its second unit")
            first.send_signal(signal.SIGSTOP)
            held = query(url, f"select {UNIT}" + of_first + " and j.status = 'doing'", (first.pid,))
            if not held:
                first.send_signal(signal.SIGCONT)
            return held

        [killed_unit] = wait_for(frozen_on_its_second_unit, what="the first agent frozen on a unit")
        # A second agent beside it: it takes the next unit while the first holds its own.
        with lab_process([*agent, "--host-id", "second"], second_out, lab_tmp) as second:
            wait_for(
                lambda: (
                    query(url, "select count(*) from procrastinate_jobs where status = 'doing'")
                    == [(2,)]
                    or second.poll() is not None
                ),
                what="both agents holding a unit",
            )
            cluster_dirs = list(lab_tmp.glob("pgcachelab-*"))
            assert cluster_dirs, "the agents' clusters"
            first.send_signal(signal.SIGKILL)
            assert first.wait() == -signal.SIGKILL
            # the second finishes the queue, the killed unit once its lease has expired
            assert second.wait(timeout=300) == 0, lab_stderr(second_out)
    second_err = lab_stderr(second_out)
    assert "Traceback" not in second_err

    jobs = query(url, f"select {UNIT}, status from procrastinate_jobs")
    assert len(jobs) == 4 and {status for *_, status in jobs} == {"succeeded"}
    counted = query(
        url,
        "select point_index, repetition, count(*) filter (where counted) from unit_tries"
        " group by 1, 2",
    )
    assert {(p, r): n for p, r, n in counted}[killed_unit] == 1  # the killed try counted
    tries = query(
        url,
        "select point_index, repetition, host_id, outcome, reason from unit_tries order by at",
    )
    abandoned = [t for t in tries if t[3] == "abandoned"]
    assert [t[:3] for t in abandoned] == [(*killed_unit, "first")]
    assert "stopped renewing its lease" in abandoned[0][4]
    stored = [(p, r, host) for p, r, host, outcome, _ in tries if outcome == "stored"]
    assert len(stored) == 4 and (*killed_unit, "second") in stored
    measured = query(url, "select point_index, repetition, status from measurements order by 1, 2")
    assert measured == [(0, 0, "ok"), (0, 1, "ok"), (1, 0, "ok"), (1, 1, "ok")]
    assert query(url, "select status from runs") == [("done",)]
    assert query(url, "select host_id from hosts order by 1") == [("first",), ("second",)]

    listed = run_cli("runs", "--store", url)
    assert listed.returncode == 0, listed.stderr
    assert run_id in listed.stdout and "4 done" in listed.stdout

    # The killed agent's cluster was reaped by the agent still running here (or by any lab
    # command that started meanwhile: the reaper finds a dead lab's leftovers machine-wide).
    for work_dir in cluster_dirs:
        assert not work_dir.exists() and processes_mentioning(str(work_dir)) == []
    assert list(lab_tmp.glob("pgcachelab-*")) == []

    # The same spec measured by `run` on this host: its report is the fleet run's without the
    # host-class table, and compare finds no host difference between them.
    single = run_cli(
        "run", spec, "--store", url, "--lab-dir", lab_dir, "--no-report", tmpdir=lab_tmp
    )
    assert single.returncode == 0, single.stderr
    [single_id] = re.findall(r"run (\S+) finished", single.stderr)
    fleet_page, single_page = (
        report_page(url, run, tmp_path / f"report-{run}", lab_tmp) for run in (run_id, single_id)
    )
    assert [h for h in headings(fleet_page) if h != HOSTS_TITLE] == headings(single_page)
    assert HOSTS_TITLE in headings(fleet_page) and HOSTS_TITLE not in headings(single_page)
    facts = agent_host_facts()
    assert html.escape(host_class(facts), quote=False) in fleet_page
    assert "One host class measured every unit, on 1 host(s)" in fleet_page  # one host name
    assert "measured by agents on 1 host class(es)" in fleet_page
    compared = run_cli("compare", run_id, single_id, "--store", url, tmpdir=lab_tmp)
    assert compared.returncode == 0, compared.stderr
    assert "host classes" not in compared.stdout and "host" not in context_lines(compared.stdout)


def test_an_agent_holds_its_host_and_outlives_a_store_restart(
    store_server, tmp_path, lab_tmp, quick_figures
):
    url, spec, lab_dir, _ = queue_tiny_sweep(store_server, "faults", tmp_path, lab_tmp)
    again = run_cli("run", spec, "--queue", "--store", url, "--lab-dir", lab_dir, tmpdir=lab_tmp)
    assert again.returncode == 0 and "is queued already, as run" in again.stderr
    [(run_id,), (twice,)] = query(url, "select run_id from runs order by created_at")
    cancelled = run_cli("queue", "cancel", twice, "--store", url, tmpdir=lab_tmp)
    assert cancelled.returncode == 0 and "4 waiting unit(s) cancelled" in cancelled.stderr

    agent = ["agent", "--store", url, "--lab-dir", lab_dir, "--lease", "5s", "--host-id", "h"]
    first_out, second_out = tmp_path / "first", tmp_path / "second"
    first_out.mkdir()
    second_out.mkdir()
    with lab_process(agent, first_out, lab_tmp) as first:
        wait_for(
            lambda: (
                query(url, "select count(*) from procrastinate_jobs where status = 'doing'")
                == [(1,)]
            ),
            what="the agent measuring",
        )
        # A second agent on the same host would measure the first one's noise: refused.
        with lab_process(agent, second_out, lab_tmp) as second:
            assert second.wait(timeout=60) == 2
        busy = lab_stderr(second_out)
        assert f"host 'h' is busy: agent pid {first.pid} measures there" in busy
        assert "Traceback" not in busy
        # The heartbeat's connection terminated, then the whole store restarted.
        wait_for(
            lambda: (
                query(
                    url,
                    "select count(pg_terminate_backend(pid)) from pg_stat_activity"
                    " where application_name = 'pgcachelab heartbeat h'",
                )
                == [(1,)]
            ),
            what="the heartbeat's connection",
        )
        store_server.restart()
        assert first.wait(timeout=300) == 0, lab_stderr(first_out)
    said = lab_stderr(first_out)
    assert "reconnecting" in said and "the store is back" in said and "Traceback" not in said
    measured = query(url, "select point_index, repetition, status from measurements order by 1, 2")
    assert measured == [(0, 0, "ok"), (0, 1, "ok"), (1, 0, "ok"), (1, 1, "ok")]
    by_status = "select status::text, count(*) from procrastinate_jobs group by 1 order by 1"
    assert query(url, by_status) == [("cancelled", 4), ("succeeded", 4)]
    assert query(url, "select status from runs order by created_at") == [
        ("done",), ("cancelled",)
    ]  # fmt: skip
    shown = run_cli("queue", "status", "--store", url, tmpdir=lab_tmp)
    assert shown.returncode == 0, shown.stderr
    assert f"{run_id} (fleet-tiny, done):" in shown.stdout and "4 done (" in shown.stdout
    assert "no agent is running" in shown.stdout
    assert not list(lab_tmp.glob("pgcachelab-*"))  # its clusters gone
    assert not lock_path("h").exists()


def report_page(url: str, run_id: str, out_dir, lab_tmp) -> str:
    made = run_cli("report", run_id, "--store", url, "--output", out_dir, tmpdir=lab_tmp)
    assert made.returncode == 0, made.stderr
    return (out_dir / "index.html").read_text()


def headings(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r"<h2>(.*?)</h2>", page)]


def context_lines(text: str) -> str:
    """compare's lines before its figures: what differs between the runs."""
    return text.split("tps", 1)[0]


def _unit_measurement(point: int, repetition: int, status: str = "ok") -> Measurement:
    return Measurement(point, repetition, status, None if status == "ok" else "it broke",
                       0.0, 1.0, 1.0, None, 100.0, 1.0, 0.1, {})  # fmt: skip


def _queued_run(url: str, units=((0, 0), (1, 0)), max_tries: int = 2, **fleet) -> tuple:
    store = PostgresResultStore(url)
    points = [SimpleNamespace(index=i, label=f"p{i}", swept={}, workload={}, settings={})
              for i in (0, 1)]  # fmt: skip
    run_id = store.create_run("q", "q.toml", "", {}, {}, points, "big-cache")
    UnitQueue(store).enqueue(run_id, list(units), fleet.pop("hosts", "spread"), max_tries, **fleet)
    return store, run_id


def _agent(store, host: str, host_class: str = "class", lease_s: float = 60.0) -> UnitQueue:
    queue = UnitQueue(store, host, host)
    queue.register(host_class, {}, lease_s, 1)
    return queue


def _stall(store, queue: UnitQueue) -> None:
    """The agent stops renewing its heartbeat for longer than its lease (killed, cut off),
    after the store started: last heard of at its start, its lease a quarter of the time
    since (a heartbeat from before the start would be the store's outage: issue 49, F3)."""
    store.db.execute(
        "update procrastinate_workers set last_heartbeat = pg_postmaster_start_time()"
        " where id = %s",
        (queue.worker_id,),
    )
    store.db.execute(
        "update agents set lease_s = extract(epoch from now() - pg_postmaster_start_time()) / 4"
        " where worker_id = %s",
        (queue.worker_id,),
    )


def _statuses(store) -> list[tuple]:
    return store.db.execute(f"select {UNIT}, status from procrastinate_jobs order by id").fetchall()


def test_a_measurement_whose_lease_was_lost_is_discarded_never_stored(store_server, lab_tmp):
    url = new_database(store_server, "lost")
    store, run_id = _queued_run(url)
    cut_off = _agent(store, "host-a")
    unit = cut_off.claim("class")
    assert (unit.point_index, unit.repetition, unit.tries) == (0, 0, 1)
    _stall(store, cut_off)  # its heartbeat connection was lost for longer than its lease
    other = _agent(store, "host-b")
    assert [line.split(":")[0] for line in other.recover_stalled(60)] == [f"unit {unit.key}"]
    # Cut off, not gone from view: `queue status` shows it stale (issue 49) until it comes
    # back (registers again) or another agent takes its host.
    assert {row[1]: row[-1] for row in other.agents()} == {"host-a": True, "host-b": False}
    shown = run_cli("queue", "status", "--store", url, tmpdir=lab_tmp)
    assert shown.returncode == 0, shown.stderr
    [row_a] = [line for line in shown.stdout.splitlines() if line.startswith("host-a ")]
    assert "stale: its units went back" in row_a
    taken = other.claim("class")
    assert (taken.key, taken.tries) == (unit.key, 2)  # back first: the lowest in the order
    assert other.record(taken, _unit_measurement(0, 0), 2).stored
    # The first agent finishes its measurement: refused, logged, the stored one untouched.
    late = cut_off.record(unit, _unit_measurement(0, 0, "ok"), 2)
    assert not late.stored and "lease was lost" in late.reason
    outcomes = store.db.execute(
        "select host_id, outcome from unit_tries where job_id = %s order by at", (unit.job_id,)
    ).fetchall()
    assert outcomes == [("host-a", "abandoned"), ("host-b", "stored"), ("host-a", "discarded")]
    assert store.db.execute("select count(*) from measurements").fetchone() == (1,)
    # the answer to a commit lost with the connection: recording again is not a second row
    assert other.record(taken, _unit_measurement(0, 0), 2).stored
    assert store.db.execute("select count(*) from measurements").fetchone() == (1,)
    cut_off.register("class", {}, 60.0, 1)  # back: its stale row is over
    assert sorted(row[1:2] + row[-1:] for row in other.agents()) == [
        ("host-a", False), ("host-b", False)
    ]  # fmt: skip
    store.close()


def test_a_succeeded_measurement_is_never_replaced(store_server):
    store, run_id = _queued_run(new_database(store_server, "once"))
    assert store.record_measurement_once(run_id, _unit_measurement(0, 0, "failed"))
    assert store.record_measurement_once(run_id, _unit_measurement(0, 0))  # a failed try: replaced
    assert not store.record_measurement_once(run_id, _unit_measurement(0, 0))
    assert not store.record_measurement_once(run_id, _unit_measurement(0, 0, "failed"))
    assert store.db.execute("select status from measurements").fetchall() == [("ok",)]
    store.close()


def test_a_unit_stops_after_its_tries_with_their_reasons(store_server):
    store, run_id = _queued_run(new_database(store_server, "tries"), units=((0, 0),))
    queue = _agent(store, "host-a")
    first = queue.claim("class")
    assert queue.record(first, _unit_measurement(0, 0, "failed"), 2).stored
    second = queue.claim("class")
    assert second.tries == 2
    _stall(store, queue)  # killed on its last try: given up, not taken a third time
    [line] = _agent(store, "host-b").recover_stalled(60)
    assert "given up after 2 tries" in line and "stopped renewing its lease" in line
    assert queue.claim("class") is None
    assert _statuses(store) == [(0, 0, "failed")]
    [(status, why)] = store.db.execute("select status, reason from measurements").fetchall()
    assert (status, why) == ("failed", "it broke")
    assert store.run(run_id).status == "done"
    # queue retry: the given-up unit is queued again, with its tries from the start
    assert queue.retry(run_id, 0, 0) == "failed"
    assert store.run(run_id).status == "queued"
    again = _agent(store, "host-c").claim("class")
    assert again is not None and again.tries == 1
    with pytest.raises(LookupError, match="it is leased, not failed"):
        queue.retry(run_id, 0, 0)
    store.close()


def test_hosts_same_keeps_a_run_on_the_class_that_started_it(store_server):
    store, run_id = _queued_run(new_database(store_server, "same"), hosts="same")
    a, b, c = _agent(store, "a", "class A"), _agent(store, "b", "class B"), _agent(store, "c")
    assert a.pin_next_same_run("class A") == run_id
    assert b.pin_next_same_run("class B") is None
    assert a.claim("class A") is not None
    assert b.claim("class B") is None  # another class
    assert b.held_by_others("class B") == 0  # nothing to wait for
    assert b.waiting_elsewhere("class B") == [(run_id, ["class A"], 1)]
    assert c.claim("class A") is not None
    store.close()


def test_units_go_to_the_class_named_or_spread_over_the_classes_listed(
    store_server, tmp_path, lab_tmp
):
    url = new_database(store_server, "classes")
    units = ((0, 0), (1, 0), (0, 1), (1, 1))
    store, pinned = _queued_run(url, units, hosts="same", host_class="X")
    second_store, spread = _queued_run(url, units, classes=("X", "Y"))
    second_store.close()
    x, y = _agent(store, "x", "X"), _agent(store, "y", "Y")
    # what `agent --class` is checked against: 'X, Y' is a list of these, not a class
    assert UnitQueue(store).known_classes() == {"X", "Y"}
    refused = run_cli("agent", "--store", url, "--lab-dir", tmp_path / "lab", "--class", "X, Y",
                      "--once", tmpdir=lab_tmp)  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.splitlines() == [
        "pgcachelab: --class: invalid value 'X, Y': an agent has one host class, and 'X' and"
        " 'Y' are classes of their own",
        "hint: give this host's one class: --class X",
    ]  # fmt: skip
    assert y.pin_next_same_run("Y") is None  # a run named for X is never pinned to Y
    taken_by_y = [y.claim("Y") for _ in range(3)]
    assert [(u.run_id, u.repetition) for u in taken_by_y if u] == [(spread, 1), (spread, 1)]
    taken_by_x = [x.claim("X") for _ in range(7)]
    assert [(u.run_id, u.repetition) for u in taken_by_x if u] == [
        (pinned, 0), (pinned, 0), (pinned, 1), (pinned, 1), (spread, 0), (spread, 0)
    ]  # fmt: skip
    store.close()


def test_a_cancelled_run_stops_its_units_and_discards_the_one_being_measured(store_server):
    store, run_id = _queued_run(new_database(store_server, "cancel"))
    queue = _agent(store, "host-a")
    unit = queue.claim("class")
    assert queue.cancel(run_id) == (1, 1)
    assert store.run(run_id).status == "cancelled"
    assert queue.heartbeat(store.db)  # the agent goes on measuring; its result is not kept
    recorded = queue.record(unit, _unit_measurement(0, 0), 2)
    assert not recorded.stored and "cancelled" in recorded.reason
    assert _statuses(store) == [(0, 0, "aborted"), (1, 0, "cancelled")]
    assert store.db.execute("select count(*) from measurements").fetchone() == (0,)
    assert queue.claim("class") is None
    store.close()


# -- issue 49: the host lock after a store restart (F1), an outage (F3), an agent on a busy host


def _host_locks(url: str, host_id: str) -> list[tuple]:
    """The sessions holding `host_id`'s advisory lock in the store, by application_name."""
    return query(
        url,
        "select a.application_name from pg_locks l join pg_stat_activity a on a.pid = l.pid"
        " where l.locktype = 'advisory' and l.granted and l.objsubid = 2"
        " and l.classid = hashtext('pgcachelab.host')::oid and l.objid = hashtext(%s)::oid",
        (host_id,),
    )


def _host_lock(url: str, host_id: str, path=None) -> HostLock:
    """A HostLock of its own store; `path`: its lock file, as on another machine."""
    lock = HostLock(PostgresResultStore(url), host_id, f"pgcachelab host lock {host_id}")
    if path is not None:
        lock.path = path
    return lock


def test_the_host_lock_is_verified_and_taken_again_after_a_store_restart(store_server, tmp_path):
    """Issue 49, F1: after `pg_ctl restart -m fast` the original agent's idle connection
    still looked open, so its advisory lock was never taken again and a clone with the same
    machine-id was admitted beside it."""
    url = new_database(store_server, "hostlock")
    original = _host_lock(url, "twin")
    original.acquire(False, print)
    clone = _host_lock(url, "twin", tmp_path / "clone.lock")  # another machine's lock file
    with pytest.raises(HostBusy, match="host id 'twin' is held in the store by"):
        clone.acquire(False, print)
    session = original.db
    original.retake_in_store()  # held: verified by pg_locks, on the same session
    assert original.db is session and _host_locks(url, "twin") == [("pgcachelab host lock twin",)]

    store_server.restart()
    assert _host_locks(url, "twin") == []  # the restart dropped it...
    assert not session.closed and not session.broken  # ...unknown to the idle connection
    original.retake_in_store()
    assert original.db is not session and original.lost is None
    assert _host_locks(url, "twin") == [("pgcachelab host lock twin",)]
    with pytest.raises(HostBusy, match="held in the store by"):
        clone.acquire(False, print)  # refused after the restart as before it

    # The clone first after a restart: the original has lost its host, for good.
    store_server.restart()
    clone.acquire(False, print)
    with pytest.raises(HostBusy, match="host id 'twin' is held in the store by"):
        original.retake_in_store()
    assert original.lost is not None and "held in the store" in original.lost
    clone.release()
    with pytest.raises(HostBusy):
        original.retake_in_store()  # lost stays lost: the agent stops
    original.release()

    # This agent's own earlier session, cut on its side only, still holds it: ended, retaken.
    ghost = psycopg.connect(url, autocommit=True, application_name="ghost")
    ghost.execute("select pg_advisory_lock(hashtext('pgcachelab.host'), hashtext('ghost'))")
    ghostly = _host_lock(url, "ghost")
    ghostly.session = tuple(ghost.execute(
        "select pid, backend_start from pg_stat_activity where pid = pg_backend_pid()"
    ).fetchone())  # fmt: skip
    ghostly.retake_in_store()
    assert _host_locks(url, "ghost") == [("pgcachelab host lock ghost",)]
    with pytest.raises(psycopg.OperationalError):
        ghost.execute("select 1")
    ghost.close()
    ghostly.release()
    other = psycopg.connect(url, autocommit=True)  # another session: not ended, refused
    other.execute("select pg_advisory_lock(hashtext('pgcachelab.host'), hashtext('ghost'))")
    ghostly.session = (0, None)
    with pytest.raises(HostBusy, match="held in the store"):
        ghostly.retake_in_store()
    assert other.execute("select 1").fetchone() == (1,)
    other.close()
    for lock in (original, clone, ghostly):
        lock.store.close()


def test_the_heartbeat_takes_the_host_lock_again_after_a_store_restart(store_server):
    """Issue 49, F1: the lock is checked each beat, not only when the agent's own connection
    finds the store gone (an agent waiting for units, or measuring, does not use it)."""
    url = new_database(store_server, "heartlock")
    store, _ = _queued_run(url)
    queue = _agent(store, "beating", lease_s=3.0)
    lock = _host_lock(url, "beating")
    lock.acquire(False, print)
    with Heartbeat(store, queue, 3.0, "pgcachelab heartbeat beating", lock):
        store_server.restart()
        wait_for(
            lambda: _host_locks(url, "beating") == [("pgcachelab host lock beating",)],
            what="the heartbeat taking the host's lock again",
        )
        wait_for(
            lambda: query(
                url,
                "select count(*) from procrastinate_workers"
                " where last_heartbeat > pg_postmaster_start_time()",
            ) == [(1,)],
            what="a heartbeat after the restart",
        )  # fmt: skip
    assert lock.lost is None
    lock.release()
    lock.store.close()
    store.close()


def test_an_outage_is_nobodys_fault(store_server):
    """Issue 49, F3: with the default 60 s lease and a 60 s outage, the agent that came back
    first gave the other's unit back ("stopped renewing its lease"), its finished measurement
    was discarded and the try counted. Heartbeats are judged against the store's start: each
    agent has its lease and a grace of one lease from it, and an agent last heard of before
    the restart that stays away longer gives its unit back without a try counted."""
    url = new_database(store_server, "outage")
    units = ((0, 0), (1, 0), (0, 1), (1, 1))
    store, run_id = _queued_run(url, units, max_tries=1)  # a try counted gives a unit up
    measuring = {host: _agent(store, host) for host in ("in-lease", "in-grace", "away", "dead")}
    held = {host: queue.claim("class") for host, queue in measuring.items()}
    looking = _agent(store, "looking")

    store_server.restart()  # the outage: every session cut, no heartbeat heard meanwhile
    store.reconnect()
    with store.db.transaction():  # one now(): the leases are set against it, not a clock
        [(since_start,)] = store.db.execute(
            "select extract(epoch from now() - pg_postmaster_start_time())::float"
        ).fetchall()
        # Every heartbeat from before the outage, an hour old; "dead" beat once after the
        # restart, then stopped (killed): its lease is judged as before.
        heard = {
            "in-lease": ("pg_postmaster_start_time() - interval '1 hour'", 60.0),
            "in-grace": ("pg_postmaster_start_time() - interval '1 hour'", since_start * 0.75),
            "away": ("pg_postmaster_start_time() - interval '1 hour'", since_start * 0.4),
            "dead": ("pg_postmaster_start_time() + make_interval(secs => %s)", since_start * 0.3),
        }
        for host, (beat, lease_s) in heard.items():
            worker = measuring[host].worker_id
            store.db.execute(
                f"update procrastinate_workers set last_heartbeat = {beat} where id = %s",
                (since_start * 0.1, worker) if "%s" in beat else (worker,),
            )
            store.db.execute("update agents set lease_s = %s where worker_id = %s",
                             (lease_s, worker))  # fmt: skip
        lines = looking.recover_stalled(60)
    away, dead = held["away"].key, held["dead"].key
    assert len(lines) == 2 and lines[0].startswith(f"unit {away}: queued again: the agent on away")
    assert "was not heard of again after the store restarted at" in lines[0]
    assert lines[0].endswith("the try is not counted")
    assert lines[1] == (
        f"unit {dead}: given up after 1 tries: the agent on dead stopped renewing its lease"
    )
    jobs = dict(store.db.execute(
        "select args->>'point_index' || '/' || (args->>'repetition'), status::text"
        " from procrastinate_jobs"
    ).fetchall())  # fmt: skip
    key = {host: f"{unit.point_index}/{unit.repetition}" for host, unit in held.items()}
    counted = {
        host: looking.counted_tries(run_id, unit.point_index, unit.repetition)
        for host, unit in held.items()
    }
    hosts = ("in-lease", "in-grace", "away", "dead")
    assert [(jobs[key[host]], counted[host]) for host in hosts] == [
        ("doing", 0), ("doing", 0), ("todo", 0), ("failed", 1)
    ]  # fmt: skip
    # The agents that came back store their measurements: nothing discarded.
    for host in ("in-lease", "in-grace"):
        unit = held[host]
        measured = _unit_measurement(unit.point_index, unit.repetition)
        assert measuring[host].record(unit, measured, 1).stored
    # The unit given back without its try counted is measured on its next try, its first.
    again = looking.claim("class")
    assert (again.key, again.tries) == (away, 1)
    outcomes = store.db.execute(
        "select host_id, outcome from unit_tries order by at, host_id"
    ).fetchall()
    assert sorted(outcomes) == [("away", "abandoned"), ("dead", "abandoned"),
                                ("in-grace", "stored"), ("in-lease", "stored")]  # fmt: skip
    assert store.db.execute("select count(*) from measurements").fetchone() == (2,)
    store.close()


def test_an_agent_on_a_busy_host_is_refused_before_it_measures_the_host(
    store_server, tmp_path, lab_tmp, monkeypatch
):
    """Issue 49: a second agent on a busy host was refused after ~13 s, its host facts and
    storage probe measured first; and one stopped while waiting for the host said "the server
    was stopped" when it had run none."""
    url = new_database(store_server, "busyhost")
    PostgresResultStore(url).close()
    holder = _host_lock(url, "busy")
    holder.acquire(False, print)
    learned: list[str] = []
    monkeypatch.setattr(fleet, "agent_host_facts", lambda: learned.append("facts") or {})
    second = Agent(PostgresResultStore(url), LineProgress(), host_id="busy")
    with pytest.raises(UserError, match=r"agent: host 'busy' is busy: agent pid \d+"):
        second.work()
    assert learned == []  # refused before anything of the host was measured
    second.store.close()

    waiting = ["agent", "--store", url, "--lab-dir", tmp_path / "lab", "--wait"]
    waiting += ["--host-id", "busy"]
    with lab_process(waiting, tmp_path, lab_tmp) as agent:
        wait_for(
            lambda: agent.poll() is not None or "waiting for it" in lab_stderr(tmp_path),
            what="the agent waiting for the host",
        )
        agent.send_signal(signal.SIGINT)
        assert agent.wait(timeout=60) == 130, lab_stderr(tmp_path)
    said = lab_stderr(tmp_path)
    assert said.splitlines()[-1] == "pgcachelab: interrupted" and "Traceback" not in said
    holder.release()
    holder.store.close()


def test_a_measurement_made_after_the_host_was_lost_is_not_stored(store_server):
    """Issue 49, F1: an agent whose host another agent of its identity took (after a store
    restart) stores nothing it measured then: its unit goes back, the try not counted."""
    store, run_id = _queued_run(new_database(store_server, "hostlost"))
    queue = _agent(store, "lost")
    unit = queue.claim("class")
    keeper = fleet.StoreKeeper(store, "pgcachelab agent lost", print)
    taken = "host id 'lost' is held in the store by host clone, pid 7"
    unit_store = fleet.UnitStore(store, queue, keeper, lambda: taken)
    unit_store.unit = unit
    unit_store.record_measurement(run_id, _unit_measurement(0, 0))
    assert unit_store.recorded == fleet.Recorded(False, f"this agent lost its host: {taken}")
    assert store.db.execute("select count(*) from measurements").fetchone() == (0,)
    assert _statuses(store)[0] == (0, 0, "todo")
    assert queue.counted_tries(run_id, 0, 0) == 0
    assert store.db.execute("select outcome from unit_tries").fetchall() == [("released",)]
    store.close()


def test_the_migrations_queue_names_are_the_queues_own(store_server):
    """Migration 5 names a unit's queue in SQL (_UNIT_QUEUE_SQL), the queue in Python
    (run_queue): the two agree for every kind of run, or a migrated unit is never fetched."""
    store = PostgresResultStore(new_database(store_server, "queuenames"))
    runs = {"spread": ("spread", None, []), "same": ("same", None, []),
            "pinned": ("same", "X", []), "split": ("spread", None, ["X", "Y", "Z"])}  # fmt: skip
    expression = postgresql._UNIT_QUEUE_SQL.replace("%", "%%")  # a modulo, not a parameter
    for run_id, (hosts, pinned, classes) in runs.items():
        for repetition in range(4):
            [(in_sql,)] = store.db.execute(
                f"select {expression} from (select %s::text as run_id, %s::text as hosts,"
                " %s::text as host_class, %s::text as classes) f,"
                " (select jsonb_build_object('repetition', %s::int) as args) l",
                (run_id, hosts, pinned, to_json(classes), repetition),
            ).fetchall()
            listed = repetition_class(repetition, hosts, pinned, classes)
            assert in_sql == run_queue(run_id, listed), (run_id, repetition)
    store.close()
