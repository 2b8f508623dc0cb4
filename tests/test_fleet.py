"""One experiment, many agents (issue 21): a run queued in a real PostgreSQL store (a managed
cluster of the PG 18 wheel), its units leased with `for update skip locked`, measured by agent
processes with their own clusters; a killed agent's unit measured once by another.

The pure parts (hand-out order, lease decisions, host classes) are in test_fleet_logic.py.
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
from pgcachelab.experiments.fleet import agent_host_facts
from pgcachelab.report.hosts import TITLE as HOSTS_TITLE
from pgcachelab.store.postgresql import SCHEMA, PostgresResultStore
from pgcachelab.store.queue import UnitQueue
from pgcachelab.store.records import Measurement

pytestmark = pytest.mark.server

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


def test_a_killed_agents_unit_is_measured_once_by_another(
    store_server, tmp_path, lab_tmp, quick_figures
):
    url = new_database(store_server, "fleet")
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY_SWEEP)
    lab_dir = tmp_path / "lab"
    queued = run_cli("run", spec, "--queue", "--store", url, "--lab-dir", lab_dir, tmpdir=lab_tmp)
    assert queued.returncode == 0, queued.stderr
    [(run_id, status)] = query(url, "select run_id, status from runs")
    assert status == "queued" and f"run {run_id} queued" in queued.stderr
    assert query(url, "select count(*) from measurements") == [(0,)]  # nothing measured
    assert query(url, "select point_index, repetition from units order by seq") == [
        (0, 0), (1, 0), (0, 1), (1, 1)
    ]  # fmt: skip

    agent = ["agent", "--store", url, "--lab-dir", lab_dir, "--lease", "5s"]
    first_out, second_out = tmp_path / "first", tmp_path / "second"
    first_out.mkdir()
    second_out.mkdir()
    with lab_process(agent, first_out, lab_tmp) as first:
        prefix = f"%:{first.pid}:%"

        def measuring_its_second_unit():
            if first.poll() is not None:
                pytest.fail(f"the agent exited with {first.returncode}: {lab_stderr(first_out)}")
            [(done, leased)] = query(
                url,
                "select count(*) filter (where state = 'done'),"
                " count(*) filter (where state = 'leased') from units where agent like %s",
                (prefix,),
            )
            return done >= 1 and leased == 1

        wait_for(measuring_its_second_unit, what="the first agent on its second unit")
        # A second agent beside it: it takes the next unit while the first measures its own.
        with lab_process(agent, second_out, lab_tmp) as second:
            wait_for(
                lambda: (
                    query(url, "select count(*) from units where state = 'leased'") == [(2,)]
                    or second.poll() is not None
                ),
                what="both agents measuring",
            )
            # Frozen before its unit is read: a loaded machine let the first agent finish the
            # unit between this query and the kill, and the test then killed an idle agent.
            first.send_signal(signal.SIGSTOP)
            [killed_unit] = query(
                url,
                "select point_index, repetition from units where state = 'leased'"
                " and agent like %s",
                (prefix,),
            )
            cluster_dirs = list(lab_tmp.glob("pgcachelab-*"))
            assert cluster_dirs, "the agents' clusters"
            first.send_signal(signal.SIGKILL)
            assert first.wait() == -signal.SIGKILL
            # the second finishes the queue, the killed unit once its lease has expired
            assert second.wait(timeout=300) == 0, lab_stderr(second_out)
    second_err = lab_stderr(second_out)
    assert "Traceback" not in second_err

    units = query(url, "select point_index, repetition, state, agent, tries from units")
    assert len(units) == 4 and {state for *_, state, _, _ in units} == {"done"}
    by_unit = {(p, r): (agent_id, tries) for p, r, _, agent_id, tries in units}
    agent_id, tries = by_unit[killed_unit]
    assert f":{first.pid}:" not in agent_id and tries == 2  # the killed try counted
    measured = query(url, "select point_index, repetition, status from measurements order by 1, 2")
    assert measured == [(0, 0, "ok"), (0, 1, "ok"), (1, 0, "ok"), (1, 1, "ok")]
    assert query(url, "select status from runs") == [("done",)]
    [(hosts,)] = query(url, "select count(*) from hosts")
    assert hosts == 1  # both agents ran here

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
    assert "One host class measured every unit, on 1 host(s)" in fleet_page
    assert "measured by agents on 1 host class(es)" in fleet_page
    compared = run_cli("compare", run_id, single_id, "--store", url, tmpdir=lab_tmp)
    assert compared.returncode == 0, compared.stderr
    assert "host classes" not in compared.stdout and "host" not in context_lines(compared.stdout)


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


def _queued_run(url: str, hosts: str = "spread", units=((0, 0), (1, 0))) -> tuple:
    store = PostgresResultStore(url)
    points = [SimpleNamespace(index=i, label=f"p{i}", swept={}, workload={}, settings={})
              for i in (0, 1)]  # fmt: skip
    run_id = store.create_run("q", "q.toml", "", {}, {}, points)
    UnitQueue(store).enqueue(run_id, list(units), hosts, max_tries=2)
    return store, run_id


def _expire_leases(store) -> None:
    store.db.execute("update units set lease_until = now() - interval '1 second'")


def test_a_unit_stored_by_a_dead_agent_is_never_measured_again(store_server):
    store, run_id = _queued_run(new_database(store_server, "stored"))
    dead = UnitQueue(store, "host-a", "host-a:1:dead")
    unit = dead.claim("class", 60)
    store.record_measurement(run_id, _unit_measurement(unit.point_index, unit.repetition))
    _expire_leases(store)  # died between storing its row and marking its unit done
    other = UnitQueue(store, "host-b", "host-b:2:live")
    next_unit = other.claim("class", 60)
    assert (next_unit.point_index, next_unit.repetition) == (1, 0)
    states = store.db.execute("select point_index, state from units order by 1").fetchall()
    assert states == [(0, "done"), (1, "leased")]
    assert other.record(next_unit, _unit_measurement(1, 0), 2)
    assert store.run(run_id).status == "done"  # the last unit finished the run
    # the dead agent coming back to store it again is refused: the unit is done
    assert not dead.record(unit, _unit_measurement(0, 0), 2)
    store.close()


def test_a_unit_stops_after_its_tries_with_their_reasons(store_server):
    store, run_id = _queued_run(new_database(store_server, "tries"), units=((0, 0),))
    queue = UnitQueue(store, "host-a", "host-a:1:x")
    first = queue.claim("class", 60)
    assert queue.record(first, _unit_measurement(0, 0, "failed"), 2)
    second = queue.claim("class", 60)
    assert second.tries == 2
    _expire_leases(store)  # killed on its last try: given up, not claimed a third time
    assert queue.claim("class", 60) is None
    [(state, tries, reason)] = store.db.execute(
        "select state, tries, last_reason from units"
    ).fetchall()
    assert (state, tries) == ("failed", 2) and "stopped renewing its lease" in reason
    [(status, why)] = store.db.execute("select status, reason from measurements").fetchall()
    assert (status, why) == ("failed", "it broke")
    assert store.run(run_id).status == "done"
    store.close()


def test_hosts_same_keeps_a_run_on_the_class_that_started_it(store_server):
    store, _ = _queued_run(new_database(store_server, "same"), hosts="same")
    first = UnitQueue(store, "host-a", "a").claim("class A", 60)
    assert first is not None
    assert UnitQueue(store, "host-b", "b").claim("class B", 60) is None  # another class
    assert UnitQueue(store, "host-b", "b").leased("class B") == 0  # nothing to wait for
    assert UnitQueue(store, "host-c", "c").claim("class A", 60) is not None
    store.close()
