"""The queue of a run measured by agents on many hosts (issues 21, 38, 49): procrastinate's jobs
in the PostgreSQL store, driven by the lab's agent (experiments/fleet.py).

procrastinate (its schema frozen in store/engine/, applied by the store's migrations) owns the
jobs and their life: deferring, fetching with `for update skip locked`, workers and their
heartbeats, retries, cancel and abort, and the history of every job (procrastinate_events);
its own admin tools read the same tables. The lab changes the engine's rows only through its
query catalogue (procrastinate.sql.queries) and its SQL functions (procrastinate_*_v1/_v2),
on the lab's connection and inside the lab's transactions. What is the lab's own lives in the
lab's tables beside them:
- routing: a unit waits in its run's queue, or its run's share for one class when the run
  lists classes (run_queue); which queues an agent fetches from is the lab's rule over
  fleet_runs (fetch_queues), so pinning a hosts = "same" run to a class moves no job;
- the planned order: a run's units are deferred in the order the run measures them, and a fetch
  takes the lowest job id of the queues it names, so a round's units all go out before the
  next round's;
- a lease per agent: an agent whose heartbeat is older than its own lease is stalled, its unit
  goes back (or is given up after max_tries) and its worker is unregistered; a store that
  restarted heard nobody while it was down, so each agent has its lease plus a grace of one
  lease from the store's start (pg_postmaster_start_time) to beat again, and the try of an
  agent last heard of before the restart is not counted (an outage is nobody's fault; F3);
- tries: unit_tries logs every try's outcome, host and reason, and says which count toward
  max_tries (the engine's `attempts` counts every retry, the lab's rule does not);
- exactly once: a measurement is written in the transaction that holds its job row (`for update`)
  and finishes the job, only while the job is still this worker's and not aborted, and a
  succeeded measurement is never replaced (store/sql_store.py record_measurement_once).
Times are the database's `now()`: hosts whose clocks disagree still agree on a lease.
"""

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict, cast

import psycopg
from procrastinate.sql import queries
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

from pgcachelab.clusters.client import one_row
from pgcachelab.store.postgresql import PostgresResultStore
from pgcachelab.store.records import Measurement, ResultStore, from_json, to_json

TASK = "pgcachelab.measure_unit"
QUEUE_PREFIX = "pgcachelab/r/"

# unit_tries.outcome; RETRIED is the operator's `queue retry`: tries are counted afresh after it
STORED, FAILED, DISCARDED, ABANDONED, RELEASED, RETRIED = (
    "stored", "failed", "discarded", "abandoned", "released", "retried"
)  # fmt: skip

# A job's status as the lab names a unit's state.
UNIT_STATE = {
    "todo": "queued",
    "doing": "leased",
    "succeeded": "done",
    "failed": "failed",
    "cancelled": "cancelled",
    "aborted": "cancelled",
}


def _digest(text: str) -> str:
    # procrastinate notifies a queue's listeners on channel "procrastinate_queue_v1#QUEUE",
    # and a channel name is at most 63 bytes: a queue name at most 40
    return hashlib.md5(text.encode()).hexdigest()[:12]


def run_queue(run_id: str, host_class: str | None = None) -> str:
    """The queue a unit waits in: its run's, or its run's share for one class (the run lists
    classes). store/postgresql.py's migration 5 names them alike in SQL."""
    name = f"{QUEUE_PREFIX}{_digest(run_id)}"
    return name if host_class is None else f"{name}/{_digest(host_class)}"


def unit_key(run_id: str, point_index: int, repetition: int) -> str:
    """How people and procrastinate's queueing lock name a unit: RUN/POINT/REPETITION."""
    return f"{run_id}/{point_index}/{repetition}"


def repetition_class(
    repetition: int, hosts: str, host_class: str | None, classes: Sequence[str]
) -> str | None:
    """The class a repetition is for when its run lists classes: repetition r of every point on
    classes[r % n], so every point sees every class in the same proportion; else None (the
    run's queue, fetched by the classes fetch_queues allows)."""
    if host_class is None and hosts != "same" and classes:
        return classes[repetition % len(classes)]
    return None


def unit_queues(
    run_id: str,
    planned: Sequence[tuple[int, int]],
    hosts: str,
    host_class: str | None,
    classes: Sequence[str],
) -> list[tuple[int, int, str]]:
    """(point, repetition, queue) of each planned unit, in the order they are handed out."""
    return [
        (p, r, run_queue(run_id, repetition_class(r, hosts, host_class, classes)))
        for p, r in planned
    ]


def fetch_queues(
    host_class: str, runs: Sequence[tuple[str, str, str | None, list[str]]]
) -> list[str]:
    """The queues an agent of `host_class` fetches from, of `runs` (run id, hosts, pinned
    class, listed classes) still queued: a run pinned to its class (host_class, or hosts =
    "same" once pinned), its share of a run listing it among classes, any other run with no
    class rule; a hosts = "same" run nobody pinned yet is nobody's until pinned."""
    queues = []
    for run_id, hosts, pinned, classes in runs:
        if pinned is not None:
            if pinned == host_class:
                queues.append(run_queue(run_id))
        elif hosts == "same":
            continue
        elif classes:
            if host_class in classes:
                queues.append(run_queue(run_id, host_class))
        else:
            queues.append(run_queue(run_id))
    return queues


def after_try(tries: int, max_tries: int) -> str:
    """What becomes of a unit whose `tries`-th try failed or was abandoned."""
    return "failed" if tries >= max_tries else "todo"


class UnitArgs(TypedDict):
    """A unit's job arguments, as procrastinate keeps them (JSON)."""

    run_id: str
    point_index: int
    repetition: int


@dataclass(frozen=True)
class Unit:
    """One (point, repetition) of a queued run, as an agent holds it: a procrastinate job."""

    job_id: int
    run_id: str
    point_index: int
    repetition: int
    tries: int  # counted toward max_tries, with this one

    @property
    def key(self) -> str:
        return unit_key(self.run_id, self.point_index, self.repetition)


@dataclass(frozen=True)
class Recorded:
    """What recording a measurement did: stored it, or why not."""

    stored: bool
    reason: str | None = None


_JOB_OF_UNIT = """
    select j.id, j.status from procrastinate_jobs j
    where j.task_name = %s and j.args->>'run_id' = %s
      and (j.args->>'point_index')::int = %s and (j.args->>'repetition')::int = %s
    order by j.id desc limit 1
"""

# When a worker was last heard of, as its lease is judged: its heartbeat, but not before the
# store's start plus a grace of one lease. A store that was down (restarted, or stopped for an
# outage) heard nobody meanwhile: every agent has a lease and a grace from its start to beat
# again (it reconnects with backoff first), and none is stalled by the outage alone.
_LEASE = "make_interval(secs => coalesce(a.lease_s, %(default_lease_s)s))"
_HEARD_OF = f"greatest(w.last_heartbeat, pg_postmaster_start_time() + {_LEASE})"
_LAPSED = f"{_HEARD_OF} < now() - {_LEASE}"

# Doing jobs of the lab whose worker is gone, or whose agent was not heard of for its lease;
# `before_restart`: its last heartbeat is older than the store's start (the outage stopped it).
_STALLED = f"""
    select j.id, f.max_tries, j.args, a.host_id, a.host_name, j.worker_id,
           coalesce(w.last_heartbeat < pg_postmaster_start_time(), false),
           pg_postmaster_start_time()
    from procrastinate_jobs j
    join fleet_runs f on f.run_id = j.args->>'run_id'
    left join procrastinate_workers w on w.id = j.worker_id
    left join agents a on a.worker_id = j.worker_id
    where j.status = 'doing' and j.task_name = %(task)s
      and j.worker_id is distinct from %(worker_id)s
      and (w.id is null or {_LAPSED})
    order by j.id
    for update of j skip locked
"""

# The workers of agents not heard of for their lease (never this agent's own: it is alive,
# whatever its heartbeat could not say), once they hold no unit: a unit _STALLED skipped (its
# row locked meanwhile) keeps its worker, so the next look gives it back naming its host, not
# as a unit of no worker and no host. Each is unregistered by procrastinate's function.
_TO_PRUNE = f"""
    select w.id, extract(epoch from w.last_heartbeat)
    from procrastinate_workers w join agents a on a.worker_id = w.id
    where {_LAPSED} and w.id is distinct from %(worker_id)s
      and not exists (select 1 from procrastinate_jobs j
                      where j.worker_id = w.id and j.status = 'doing')
    order by w.id
"""

# The runs whose units agents may fetch: (run id, hosts, pinned class, listed classes).
_QUEUED_RUNS = """
    select f.run_id, f.hosts, f.host_class, f.classes from fleet_runs f join runs r using (run_id)
    where f.cancelled_at is null and r.status = 'queued'
      and (%(run_id)s::text is null or f.run_id = %(run_id)s)
    order by f.queued_at
"""

# run_queue(run_id) in SQL, of fleet_runs f
_RUN_QUEUE_SQL = f"'{QUEUE_PREFIX}' || left(md5(f.run_id), 12)"

# Tries of a unit that count toward max_tries: since the operator's last `queue retry`.
_COUNTED_TRIES = """
    select count(*) from unit_tries t
    where t.run_id = %(run_id)s and t.point_index = %(point)s and t.repetition = %(repetition)s
      and t.counted and t.seq > coalesce(
        (select max(r.seq) from unit_tries r
         where r.run_id = %(run_id)s and r.point_index = %(point)s
           and r.repetition = %(repetition)s and r.outcome = 'retried'), 0)
"""


class UnitQueue:
    """The queue's statements on the PostgreSQL store's connection (its search_path names the
    store's schema, where procrastinate's objects are). One agent, one queue: its worker id
    names the jobs it holds."""

    def __init__(self, store: PostgresResultStore, host_id: str = "", host_name: str = ""):
        self.store, self.host_id, self.host_name = store, host_id, host_name
        self.worker_id: int | None = None

    @property
    def db(self) -> psycopg.Connection[TupleRow]:
        return self.store.db  # replaced when the store reconnects

    # -- queueing ----------------------------------------------------------------------------

    def enqueue(
        self,
        run_id: str,
        planned: Sequence[tuple[int, int]],
        hosts: str,
        max_tries: int,
        host_class: str | None = None,
        classes: Sequence[str] = (),
    ) -> None:
        """Record a created run's units as jobs, in the order they are to be handed out, and mark
        the run queued: nobody measures it until agents take its units."""
        jobs = [
            (
                queue,
                TASK,
                0,
                None,
                unit_key(run_id, point, repetition),  # procrastinate's queueing lock
                Jsonb({"run_id": run_id, "point_index": point, "repetition": repetition}),
                None,
            )
            for point, repetition, queue in unit_queues(run_id, planned, hosts, host_class, classes)
        ]
        with self.db.transaction():
            self.db.execute(
                "insert into fleet_runs (run_id, hosts, host_class, classes, max_tries, queued_at)"
                " values (%s, %s, %s, %s, %s, %s)",
                (run_id, hosts, host_class, to_json(list(classes)), max_tries, time.time()),
            )
            self.db.execute(queries["defer_jobs"], {"jobs": jobs})
            self.db.execute("update runs set status = 'queued' where run_id = %s", (run_id,))

    def waiting_runs_of_spec(self, spec_text: str) -> list[str]:
        """Queued runs of the same spec text that still have units to measure."""
        rows = self.db.execute(
            "select r.run_id from runs r join fleet_runs f using (run_id)"
            " where r.spec_text = %s and r.status = 'queued' and f.cancelled_at is null"
            " order by f.queued_at",
            (spec_text,),
        ).fetchall()
        return [run_id for (run_id,) in rows]

    # -- agents ------------------------------------------------------------------------------

    def register(
        self, host_class: str, facts: Mapping[str, object], lease_s: float, pid: int
    ) -> int:
        """A new procrastinate worker for this agent, and its host's facts. The agents this
        host had before are over (it holds its host: none of them runs), this one's own
        earlier worker too when it registers again after being pruned."""
        worker_id: int
        with self.db.transaction():
            self.db.execute(
                "update agents set stopped_at = %s where stopped_at is null"
                " and (host_id = %s or worker_id = %s)",
                (time.time(), self.host_id, self.worker_id),
            )
            [worker_id] = one_row(self.db.execute(queries["register_worker"]))
            self.db.execute(
                "insert into agents (worker_id, host_id, host_name, host_class, pid, lease_s,"
                " started_at) values (%s, %s, %s, %s, %s, %s, %s)",
                (worker_id, self.host_id, self.host_name, host_class, pid, lease_s, time.time()),
            )
            self.db.execute(
                "insert into hosts (host_id, host_name, host_class, facts, last_seen)"
                " values (%s, %s, %s, %s, %s) on conflict (host_id) do update set"
                " host_name = excluded.host_name, host_class = excluded.host_class,"
                " facts = excluded.facts, last_seen = excluded.last_seen",
                (self.host_id, self.host_name, host_class, to_json(facts), time.time()),
            )
        self.worker_id = worker_id
        return worker_id

    def registered(self, db: psycopg.Connection[TupleRow] | None = None) -> bool:
        """False when this agent's worker was pruned (its heartbeat stopped for a lease)."""
        return (
            self.worker_id is not None
            and (db or self.db)
            .execute("select 1 from procrastinate_workers where id = %s", (self.worker_id,))
            .fetchone()
            is not None
        )

    def unregister(self) -> None:
        if self.worker_id is None:
            return
        with self.db.transaction():
            self.db.execute(queries["unregister_worker"], {"worker_id": self.worker_id})
            self.db.execute(
                "update agents set stopped_at = %s where worker_id = %s",
                (time.time(), self.worker_id),
            )
        self.worker_id = None

    def heartbeat(self, db: psycopg.Connection[TupleRow]) -> bool:
        """Renew this agent's heartbeat on `db` (the heartbeat thread's own connection); False
        when its worker is gone (pruned by another agent: its heartbeat had lapsed)."""
        db.execute(queries["update_heartbeat"], {"worker_id": self.worker_id})
        return self.registered(db)

    # -- claiming ----------------------------------------------------------------------------

    def recover_stalled(self, default_lease_s: float) -> list[str]:
        """Units held by agents that stopped renewing their lease (killed, or cut off for
        longer than it): back to the queue, or given up after max_tries; the stalled agents'
        workers go. A store restart stops every heartbeat: an agent has its lease and a grace
        from the store's start, and one last heard of before the restart that stays away gives
        its unit back without the try counted. Returns one line per unit."""
        lines = []
        params = {"task": TASK, "worker_id": self.worker_id, "default_lease_s": default_lease_s}
        with self.db.transaction():
            rows = self.db.execute(_STALLED, params).fetchall()
            for job_id, max_tries, args, host_id, host_name, worker_id, *restart in rows:
                before_restart, started = restart
                tries = self._counted_tries(args) + 1
                agent = f"the agent on {host_name or host_id or '?'}"
                if before_restart:
                    reason = (
                        f"{agent} was not heard of again after the store restarted at"
                        f" {started:%Y-%m-%d %H:%M:%S %Z} (a lease and a grace given): the try"
                        " is not counted"
                    )
                else:
                    reason = f"{agent} stopped renewing its lease"
                counted = not before_restart
                self._log_try(
                    job_id, args, tries, worker_id, host_id, host_name, ABANDONED, reason, counted
                )
                key = unit_key(args["run_id"], args["point_index"], args["repetition"])
                if counted and after_try(tries, max_tries) == "failed":
                    self.db.execute(
                        "select procrastinate_finish_job_v1(%s, 'failed', false)", (job_id,)
                    )
                    lines.append(f"unit {key}: given up after {tries} tries: {reason}")
                else:
                    self._retry(job_id, args)
                    lines.append(f"unit {key}: queued again: {reason}")
            for worker_id, last_heard in self.db.execute(_TO_PRUNE, params).fetchall():
                # its row stays, marked: `queue status` shows the agent as stale
                self.db.execute(
                    "update agents set pruned_at = extract(epoch from now()), last_heard = %s"
                    " where worker_id = %s",
                    (last_heard, worker_id),
                )
                self.db.execute(queries["unregister_worker"], {"worker_id": worker_id})
        for run_id in {args["run_id"] for _, _, args, *_ in rows}:
            self._finish_run_if_drained(run_id)
        return lines

    def release_own_strays(self, holding: int | None) -> None:
        """Jobs this worker holds but does not know of (a fetch whose answer was lost with the
        connection): back to the queue, the try not counted."""
        rows = self.db.execute(
            "select id, args from procrastinate_jobs where status = 'doing' and worker_id = %s"
            " and task_name = %s and id is distinct from %s",
            (self.worker_id, TASK, holding),
        ).fetchall()
        for job_id, args in rows:
            with self.db.transaction():
                self._retry(job_id, args)

    def queued_runs(
        self, run_id: str | None = None
    ) -> list[tuple[str, str, str | None, list[str]]]:
        """(run id, hosts, pinned class, listed classes) of the runs agents may take units of."""
        rows = self.db.execute(_QUEUED_RUNS, {"run_id": run_id}).fetchall()
        return [(run, hosts, pinned, classes_of(listed)) for run, hosts, pinned, listed in rows]

    def pin_next_same_run(self, host_class: str) -> str | None:
        """A hosts = "same" run nobody has taken yet, queued before anything this class can
        take: it becomes this class's (fleet_runs.host_class; its units stay in its queue,
        which only that class fetches from now). None if none."""
        mine = fetch_queues(host_class, self.queued_runs())
        with self.db.transaction():
            row = self.db.execute(
                f"""select f.run_id from fleet_runs f join runs r using (run_id)
                where f.hosts = 'same' and f.host_class is null and f.cancelled_at is null
                  and r.status = 'queued'
                  and exists (select 1 from procrastinate_jobs j
                              where j.queue_name = {_RUN_QUEUE_SQL} and j.status = 'todo'
                              and j.id < coalesce((select min(id) from procrastinate_jobs
                                  where status = 'todo' and queue_name = any(%(mine)s)),
                                  9223372036854775807))
                order by f.queued_at limit 1
                for update of f skip locked""",
                {"mine": mine},
            ).fetchone()
            if row is None:
                return None
            run_id: str
            [run_id] = row
            self.db.execute(
                "update fleet_runs set host_class = %s where run_id = %s", (host_class, run_id)
            )
        return run_id

    def claim(self, host_class: str, run_id: str | None = None) -> Unit | None:
        """Fetch the next unit this class may take (of `run_id` only, if given), or None."""
        queues = fetch_queues(host_class, self.queued_runs(run_id))
        if not queues:
            return None
        with self.db.transaction():
            row = self.db.execute(
                queries["fetch_job"], {"queues": queues, "worker_id": self.worker_id}
            ).fetchone()
            if row is None or row[0] is None:
                return None
            job_id, args = row[0], row[6]
            tries = self._counted_tries(args) + 1
        return Unit(job_id, args["run_id"], args["point_index"], args["repetition"], tries)

    # -- finishing ---------------------------------------------------------------------------

    def record(self, unit: Unit, measurement: Measurement, max_tries: int) -> Recorded:
        """Store the unit's measurement and finish its job in one transaction, only while the
        job is this worker's and not aborted: a unit is done exactly when its measurement is
        stored, and a measurement whose lease was lost is discarded."""
        with self.db.transaction():
            lost = self._lost(unit)
            if lost == "stored":  # this very measurement, whose commit answer was lost
                return Recorded(True)
            if lost is not None:
                self._log(unit, DISCARDED, lost)
                return Recorded(False, lost)
            if not self.store.record_measurement_once(unit.run_id, measurement):
                reason = "a succeeded measurement of this unit is stored already"
                self._log(unit, DISCARDED, reason)
                self.db.execute(
                    "select procrastinate_finish_job_v1(%s, 'succeeded', false)", (unit.job_id,)
                )
                return Recorded(False, reason)
            if measurement.status == "ok":
                self.db.execute(
                    "select procrastinate_finish_job_v1(%s, 'succeeded', false)", (unit.job_id,)
                )
                self._log(unit, STORED, None)
            else:
                self._end_try(unit, max_tries)
                self._log(unit, FAILED, measurement.reason)
        self._finish_run_if_drained(unit.run_id)
        return Recorded(True)

    def fail(self, unit: Unit, reason: str, max_tries: int) -> None:
        """A try that ended in an error before a measurement could be stored."""
        with self.db.transaction():
            if self._lost(unit) is not None:
                return
            self._end_try(unit, max_tries)
            self._log(unit, FAILED, reason)
        self._finish_run_if_drained(unit.run_id)

    def release(self, unit: Unit, reason: str) -> None:
        """Give an unfinished unit back (the agent was interrupted, or cannot open the run's
        target): the try does not count."""
        with self.db.transaction():
            if self._lost(unit) is not None:
                return
            self._retry(unit.job_id, self._args(unit))
            self._log(unit, RELEASED, reason)

    def _lost(self, unit: Unit) -> str | None:
        """None while the unit's job is this worker's to finish (locked until the transaction
        ends); "stored" if this worker stored it already; otherwise why it is not."""
        row = self.db.execute(
            "select status, worker_id, abort_requested from procrastinate_jobs"
            " where id = %s for update",
            (unit.job_id,),
        ).fetchone()
        if row is None:
            return "its job was deleted from the queue"
        status, worker_id, abort = row
        if status == "succeeded" and worker_id == self.worker_id and self._stored_by_me(unit):
            return "stored"
        if status != "doing" or worker_id != self.worker_id:
            return (
                "its lease was lost (this agent's heartbeat stopped for longer than its lease)"
                " and the unit went back to the queue"
            )
        if abort:
            self.db.execute(
                "select procrastinate_finish_job_v1(%s, 'aborted', false)", (unit.job_id,)
            )
            return "its run was cancelled (queue cancel)"
        return None

    def _stored_by_me(self, unit: Unit) -> bool:
        return (
            self.db.execute(
                "select 1 from unit_tries where job_id = %s and worker_id = %s and outcome = %s",
                (unit.job_id, self.worker_id, STORED),
            ).fetchone()
            is not None
        )

    def _end_try(self, unit: Unit, max_tries: int) -> None:
        if after_try(unit.tries, max_tries) == "failed":
            self.db.execute(
                "select procrastinate_finish_job_v1(%s, 'failed', false)", (unit.job_id,)
            )
        else:
            self._retry(unit.job_id, self._args(unit))

    def _retry(self, job_id: int, args: UnitArgs) -> None:
        """Back to the queue: procrastinate's retry, into the unit's queue as the lab routes it
        now (a unit deferred before migration 5 leaves the old shared queues so). The engine
        counts an attempt; whether the try counts is the lab's (unit_tries.counted)."""
        self.db.execute(
            queries["retry_job"],
            {
                "job_id": job_id,
                "retry_at": None,
                "new_priority": None,
                "new_queue_name": self._queue_of(args),
                "new_lock": None,
            },
        )

    def _queue_of(self, args: UnitArgs) -> str:
        hosts, pinned, classes = one_row(
            self.db.execute(
                "select hosts, host_class, classes from fleet_runs where run_id = %s",
                (args["run_id"],),
            )
        )
        listed = repetition_class(args["repetition"], hosts, pinned, classes_of(classes))
        return run_queue(args["run_id"], listed)

    def _counted_tries(self, args: UnitArgs) -> int:
        params = {
            "run_id": args["run_id"],
            "point": args["point_index"],
            "repetition": args["repetition"],
        }
        tries: int = one_row(self.db.execute(_COUNTED_TRIES, params))[0]
        return tries

    def counted_tries(self, run_id: str, point_index: int, repetition: int) -> int:
        """How many tries of a unit count toward its run's max_tries now."""
        args: UnitArgs = {"run_id": run_id, "point_index": point_index, "repetition": repetition}
        return self._counted_tries(args)

    @staticmethod
    def _args(unit: Unit) -> UnitArgs:
        return {
            "run_id": unit.run_id,
            "point_index": unit.point_index,
            "repetition": unit.repetition,
        }

    def _log(self, unit: Unit, outcome: str, reason: str | None) -> None:
        self._log_try(
            unit.job_id,
            self._args(unit),
            unit.tries,
            self.worker_id,
            self.host_id,
            self.host_name,
            outcome,
            reason,
            counted=outcome == FAILED,
        )

    def _log_try(
        self,
        job_id: int,
        args: UnitArgs,
        tries: int,
        worker_id: int | None,
        host_id: str | None,
        host_name: str | None,
        outcome: str,
        reason: str | None,
        counted: bool,
    ) -> None:
        self.db.execute(
            "insert into unit_tries (job_id, run_id, point_index, repetition, try, worker_id,"
            " host_id, host_name, outcome, reason, counted)"
            " values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                job_id,
                args["run_id"],
                args["point_index"],
                args["repetition"],
                tries,
                worker_id,
                host_id,
                host_name,
                outcome,
                reason,
                counted,
            ),
        )

    def _finish_run_if_drained(self, run_id: str) -> None:
        """The last unit of a run done or given up: the run is done."""
        if self.waiting(run_id) == 0:
            self.db.execute(
                "update runs set status = 'done', finished_at = %s, lab_pid = null"
                " where run_id = %s and status = 'queued'",
                (time.time(), run_id),
            )

    # -- operating ---------------------------------------------------------------------------

    def cancel(self, run_id: str) -> tuple[int, int]:
        """Cancel a queued run: its waiting units are cancelled, those being measured are
        aborted (their agent discards the measurement). Returns (cancelled, aborting)."""
        with self.db.transaction():
            rows = self.db.execute(
                "select id, status from procrastinate_jobs where task_name = %s"
                " and args->>'run_id' = %s and status in ('todo', 'doing') for update",
                (TASK, run_id),
            ).fetchall()
            for job_id, _ in rows:
                self.db.execute("select procrastinate_cancel_job_v1(%s, true, false)", (job_id,))
            self.db.execute(
                "update fleet_runs set cancelled_at = %s where run_id = %s", (time.time(), run_id)
            )
            self.db.execute(
                "update runs set status = 'cancelled', finished_at = %s, lab_pid = null"
                " where run_id = %s and status = 'queued'",
                (time.time(), run_id),
            )
        doing = sum(1 for _, status in rows if status == "doing")
        return len(rows) - doing, doing

    def retry(self, run_id: str, point_index: int, repetition: int) -> str:
        """Queue a given-up (failed) unit again; returns its state before, or raises
        LookupError with the reason it cannot be."""
        with self.db.transaction():
            row = self.db.execute(
                _JOB_OF_UNIT + " for update", (TASK, run_id, point_index, repetition)
            ).fetchone()
            if row is None:
                raise LookupError("no such unit in the queue")
            status: str
            job_id, status = row
            if status != "failed":
                raise LookupError(f"it is {UNIT_STATE.get(status, status)}, not failed")
            args: UnitArgs = {
                "run_id": run_id,
                "point_index": point_index,
                "repetition": repetition,
            }
            self._retry(job_id, args)
            # its tries are counted afresh from here (_COUNTED_TRIES)
            self._log_try(job_id, args, 0, None, None, None, RETRIED, "queue retry", counted=False)
            self.db.execute(
                "update runs set status = 'queued', finished_at = null where run_id = %s"
                " and status = 'done'",
                (run_id,),
            )
        return status

    # -- reading -----------------------------------------------------------------------------

    def max_tries(self, run_id: str) -> int:
        tries: int = one_row(
            self.db.execute("select max_tries from fleet_runs where run_id = %s", (run_id,))
        )[0]
        return tries

    def waiting(self, run_id: str) -> int:
        """Units of the run still to measure (queued or leased)."""
        units: int = one_row(
            self.db.execute(
                "select count(*) from procrastinate_jobs where task_name = %s"
                " and args->>'run_id' = %s and status in ('todo', 'doing')",
                (TASK, run_id),
            )
        )[0]
        return units

    def held_by_others(self, host_class: str, run_id: str | None = None) -> int:
        """Units this class may take that other agents hold: each is done, or comes back when
        its agent's lease lapses."""
        queues = fetch_queues(host_class, self.queued_runs(run_id))
        units: int = one_row(
            self.db.execute(
                "select count(*) from procrastinate_jobs where task_name = %s and status = 'doing'"
                " and queue_name = any(%s) and worker_id is distinct from %s",
                (TASK, queues, self.worker_id),
            )
        )[0]
        return units

    def waiting_elsewhere(self, host_class: str) -> list[tuple[str, list[str], int]]:
        """(run, the classes it waits for, units) of runs waiting for other classes than
        `host_class`: why an agent took nothing."""
        mine = fetch_queues(host_class, self.queued_runs())
        rows = self.db.execute(
            """select f.run_id, f.host_class, f.classes, count(*)
            from procrastinate_jobs j join fleet_runs f on f.run_id = j.args->>'run_id'
            where j.task_name = %s and j.status = 'todo' and not j.queue_name = any(%s)
              and not (f.hosts = 'same' and f.host_class is null)
            group by 1, 2, 3 order by 1""",
            (TASK, mine),
        ).fetchall()
        return [
            (run_id, [pinned] if pinned else classes_of(classes), count)
            for run_id, pinned, classes, count in rows
        ]

    def known_classes(self) -> set[str]:
        """Every host class a queued run names or an agent has had."""
        rows = self.db.execute(
            "select host_class, classes from fleet_runs"
            " union all select host_class, null from hosts"
        ).fetchall()
        return {name for pinned, listed in rows for name in [pinned, *classes_of(listed)] if name}

    def is_queued(self, run_id: str) -> bool:
        """Whether `run_id` was queued for agents (not measured by `run`)."""
        return (
            self.db.execute("select 1 from fleet_runs where run_id = %s", (run_id,)).fetchone()
            is not None
        )

    def progress(self) -> dict[str, dict[tuple[str, str | None], int]]:
        """run id -> {(state, host): units} of every queued run; a unit's host is the one of
        its last try."""
        found: dict[str, dict[tuple[str, str | None], int]] = {}
        rows = self.db.execute(
            """select j.args->>'run_id', j.status::text,
                coalesce(a.host_name, (select t.host_name from unit_tries t where t.job_id = j.id
                                       order by t.at desc limit 1)),
                count(*)
            from procrastinate_jobs j left join agents a on a.worker_id = j.worker_id
            where j.task_name = %s
            group by 1, 2, 3 order by 1, 2, 3""",
            (TASK,),
        ).fetchall()
        # the row's columns: run, job status, host (None: no try yet), units
        status: str
        host: str | None
        count: int
        for run_id, status, host, count in rows:
            state = UNIT_STATE.get(status, status)
            units = found.setdefault(run_id, {})
            units[(state, host)] = units.get((state, host), 0) + count
        return found

    def agents(self) -> list[TupleRow]:
        """Agents running now, or stale: (worker, host id, host name, class, pid, heartbeat
        age s, lease s, unit held or None, stale). A stale agent was not heard of for its
        lease (cut off, or killed) and its units went back; it shows until it registers
        again or another agent takes its host."""
        return self.db.execute(
            """select a.worker_id, a.host_id, a.host_name, a.host_class, a.pid,
                extract(epoch from now())
                    - coalesce(extract(epoch from w.last_heartbeat), a.last_heard),
                a.lease_s,
                (select j.args->>'run_id' || '/' || (j.args->>'point_index') || '/'
                        || (j.args->>'repetition')
                 from procrastinate_jobs j where j.worker_id = a.worker_id and j.status = 'doing'
                 limit 1),
                w.id is null
            from agents a left join procrastinate_workers w on w.id = a.worker_id
            where a.stopped_at is null and (w.id is not null or a.pruned_at is not null)
            order by a.host_id, a.worker_id"""
        ).fetchall()

    def tries(self, run_id: str) -> list[TupleRow]:
        """A run's tries that did not store a measurement: (unit, try, host, outcome, reason)."""
        return self.db.execute(
            "select run_id || '/' || point_index || '/' || repetition, try, host_name, outcome,"
            " reason from unit_tries where run_id = %s and outcome <> %s order by at",
            (run_id, STORED),
        ).fetchall()


def classes_of(text: str | None) -> list[str]:
    """fleet_runs.classes as stored (a JSON list)."""
    # the JSON list the queue wrote
    return list(cast(list[str] | None, from_json(text)) or []) if text else []


def unit_progress(store: ResultStore) -> dict[str, dict[tuple[str, str | None], int]]:
    """The units of every queued run in `store` by state and host; {} for a store without a
    queue (SQLite)."""
    if not isinstance(store, PostgresResultStore):
        return {}
    return UnitQueue(store).progress()
