"""The queue of a run measured by agents on many hosts (issue 21), in the PostgreSQL store.

A unit is one (point, repetition) of a queued run, one row of `units`; an agent leases it with
`select ... for update skip locked` and renews the lease from a heartbeat thread. No job library
or broker: the store already is a PostgreSQL database every host reaches, and a lease is one
row, so the queue is three tables and a handful of statements (schema version 3,
store/postgresql.py). Lease times are the database's `now()`: hosts' clocks never disagree.

Units are handed out in their run's planned order (`seq`), so the interleaved or random order of
a run holds across the fleet: a round's units all go out before the next round's.
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass

from pgcachelab.clusters.client import one_row
from pgcachelab.store.postgresql import PostgresResultStore
from pgcachelab.store.records import Measurement, to_json

# What a claimed row becomes (see claim_decision).
CLAIM, ALREADY_MEASURED, GIVE_UP = "claim", "already measured", "give up"


@dataclass(frozen=True)
class Unit:
    """One (point, repetition) of a queued run, as an agent holds it."""

    run_id: str
    point_index: int
    repetition: int
    tries: int  # with this one


@dataclass(frozen=True)
class QueuedUnit:
    """A unit row as it is queued: its place in the run's planned order."""

    point_index: int
    repetition: int
    seq: int
    round: int


def units_in_order(planned: Sequence[tuple[int, int]]) -> list[QueuedUnit]:
    """The queue rows of a planned schedule ((point, repetition) pairs in the order they run):
    `seq` is the hand-out order, `round` the repetition the pair belongs to."""
    return [
        QueuedUnit(point, repetition, seq, repetition)
        for seq, (point, repetition) in enumerate(planned)
    ]


def claim_decision(expired_lease: bool, tries: int, max_tries: int, measured: bool) -> str:
    """What to do with a unit found waiting (queued, or leased by an agent whose lease expired).

    A unit whose measurement is stored already (its agent died after storing it) is done, never
    measured twice; an expired lease counts as a failed try (the agent may have died of the unit,
    e.g. the OOM killer), and the unit stops after `max_tries` of them."""
    if measured:
        return ALREADY_MEASURED
    if expired_lease and tries >= max_tries:
        return GIVE_UP
    return CLAIM


def after_failure(tries: int, max_tries: int) -> str:
    """The state of a unit whose measurement failed on its `tries`-th try."""
    return "failed" if tries >= max_tries else "queued"


# The units this host may take: of the run asked for, if any, and with hosts = "same" only
# those of a run its class measures (or that nobody has started).
_MAY_TAKE = """(%(run_id)s::text is null or u.run_id = %(run_id)s)
      and (f.hosts <> 'same' or f.host_class is null or f.host_class = %(host_class)s)"""
_CANDIDATE = f"""
    select u.run_id, u.point_index, u.repetition, u.state = 'leased', u.tries, f.max_tries,
           u.host, f.hosts, f.host_class
    from units u join fleet_runs f using (run_id)
    where (u.state = 'queued' or (u.state = 'leased' and u.lease_until < now()))
      and {_MAY_TAKE}
    order by f.queued_at, u.seq
    limit 1
    for update of u skip locked
"""
_LEASED_ELSEWHERE = f"""
    select count(*) from units u join fleet_runs f using (run_id)
    where u.state = 'leased' and {_MAY_TAKE}
"""
_UNIT_KEY = "run_id = %s and point_index = %s and repetition = %s"


class UnitQueue:
    """The queue's statements, on the PostgreSQL store's connection (its search_path names the
    store's schema). One agent, one queue: `agent` names it in the rows it leases."""

    def __init__(self, store: PostgresResultStore, host: str = "", agent: str = ""):
        self.store, self.db, self.host, self.agent = store, store.db, host, agent

    # -- queueing ----------------------------------------------------------------------------

    def enqueue(
        self, run_id: str, planned: Sequence[tuple[int, int]], hosts: str, max_tries: int
    ) -> None:
        """Record a created run's units, in the order they are to be handed out, and mark the
        run queued: nobody measures it until agents claim its units."""
        with self.db.transaction():
            self.db.execute(
                "insert into fleet_runs (run_id, hosts, host_class, max_tries, queued_at)"
                " values (%s, %s, null, %s, %s)",
                (run_id, hosts, max_tries, time.time()),
            )
            with self.db.cursor() as cursor:
                cursor.executemany(
                    "insert into units (run_id, point_index, repetition, seq, round, state)"
                    " values (%s, %s, %s, %s, %s, 'queued')",
                    [
                        (run_id, u.point_index, u.repetition, u.seq, u.round)
                        for u in units_in_order(planned)
                    ],
                )
            self.db.execute("update runs set status = 'queued' where run_id = %s", (run_id,))

    # -- hosts -------------------------------------------------------------------------------

    def record_host(self, host_class: str, facts: dict) -> None:
        self.db.execute(
            "insert into hosts (host, host_class, facts, last_seen) values (%s, %s, %s, %s)"
            " on conflict (host) do update set host_class = excluded.host_class,"
            " facts = excluded.facts, last_seen = excluded.last_seen",
            (self.host, host_class, to_json(facts), time.time()),
        )

    # -- claiming ----------------------------------------------------------------------------

    def claim(self, host_class: str, lease_s: float, run_id: str | None = None) -> Unit | None:
        """Lease the next waiting unit (of `run_id`, or of any queued run) for `lease_s`, or
        None when no unit waits that this host may take."""
        while True:
            with self.db.transaction():
                row = self.db.execute(
                    _CANDIDATE, {"run_id": run_id, "host_class": host_class}
                ).fetchone()
                if row is None:
                    return None
                run, point, repetition, expired, tries, max_tries, last_host, hosts, pinned = row
                key = (run, point, repetition)
                if hosts == "same" and pinned is None and not self._pin_class(run, host_class):
                    continue  # another class took the run's first unit meanwhile
                measured = self._measured(key)
                decision = claim_decision(expired, tries, max_tries, measured)
                if decision == ALREADY_MEASURED:
                    self._set_state(key, "done", None)
                elif decision == GIVE_UP:
                    reason = f"the agent on {last_host} stopped renewing its lease (killed?)"
                    self._set_state(key, "failed", reason)
                else:
                    self.db.execute(
                        "update units set state = 'leased', host = %s, agent = %s,"
                        " lease_until = now() + make_interval(secs => %s), heartbeat_at = now(),"
                        f" tries = tries + 1 where {_UNIT_KEY}",
                        (self.host, self.agent, lease_s, *key),
                    )
                    return Unit(run, point, repetition, tries + 1)
            self._finish_run_if_drained(run)

    def leased(self, host_class: str, run_id: str | None = None) -> int:
        """Units this host may take that other agents hold: each is done, or comes back
        when its lease expires (its agent was killed)."""
        return one_row(
            self.db.execute(_LEASED_ELSEWHERE, {"run_id": run_id, "host_class": host_class})
        )[0]

    def _pin_class(self, run_id: str, host_class: str) -> bool:
        """With hosts = "same": the run's class becomes this host's; False if another class
        pinned it first (the update waits for that transaction, then sees its class)."""
        self.db.execute(
            "update fleet_runs set host_class = %s where run_id = %s and host_class is null",
            (host_class, run_id),
        )
        pinned = one_row(
            self.db.execute("select host_class from fleet_runs where run_id = %s", (run_id,))
        )[0]
        return pinned == host_class

    def _measured(self, key: tuple) -> bool:
        return (
            self.db.execute(
                f"select 1 from measurements where status = 'ok' and {_UNIT_KEY}", key
            ).fetchone()
            is not None
        )

    def _set_state(self, key: tuple, state: str, reason: str | None) -> None:
        self.db.execute(
            "update units set state = %s, lease_until = null,"
            f" last_reason = coalesce(%s, last_reason) where {_UNIT_KEY}",
            (state, reason, *key),
        )

    def renew(self, unit: Unit, lease_s: float, db=None) -> bool:
        """Extend this agent's lease (from the heartbeat, on its own connection `db`);
        False if the unit is not leased by this agent any more."""
        found = (db or self.db).execute(
            "update units set lease_until = now() + make_interval(secs => %s),"
            f" heartbeat_at = now() where {_UNIT_KEY} and state = 'leased' and agent = %s",
            (lease_s, unit.run_id, unit.point_index, unit.repetition, self.agent),
        )
        return found.rowcount == 1

    # -- finishing ---------------------------------------------------------------------------

    def record(self, unit: Unit, measurement: Measurement, max_tries: int) -> bool:
        """Store the unit's measurement and its unit's new state in one transaction, so that a
        unit is done exactly when its measurement is stored. False (nothing written) if another
        agent stored it first: this agent's lease had expired and the unit was measured again.
        """
        key = (unit.run_id, unit.point_index, unit.repetition)
        with self.db.transaction():
            [state] = one_row(
                self.db.execute(f"select state from units where {_UNIT_KEY} for update", key)
            )
            if state in ("done", "failed"):
                return False
            self.store.record_measurement(unit.run_id, measurement)
            if measurement.status == "ok":
                self._finish(key, "done", None)
            else:
                self._finish(key, after_failure(unit.tries, max_tries), measurement.reason)
        self._finish_run_if_drained(unit.run_id)
        return True

    def fail(self, unit: Unit, reason: str, max_tries: int) -> None:
        """A try that ended in an error before a measurement could be stored."""
        key = (unit.run_id, unit.point_index, unit.repetition)
        with self.db.transaction():
            self._finish(key, after_failure(unit.tries, max_tries), reason)
        self._finish_run_if_drained(unit.run_id)

    def release(self, unit: Unit) -> None:
        """Give an unfinished unit back (the agent was interrupted): the try does not count."""
        self.db.execute(
            "update units set state = 'queued', lease_until = null, tries = tries - 1"
            f" where {_UNIT_KEY} and state = 'leased' and agent = %s",
            (unit.run_id, unit.point_index, unit.repetition, self.agent),
        )

    def _finish(self, key: tuple, state: str, reason: str | None) -> None:
        self.db.execute(
            "update units set state = %s, lease_until = null, host = %s, agent = %s,"
            f" last_reason = coalesce(%s, last_reason) where {_UNIT_KEY}",
            (state, self.host, self.agent, reason, *key),
        )

    def _finish_run_if_drained(self, run_id: str) -> None:
        """The last unit of a run done or given up: the run is done."""
        waiting = self.db.execute(
            "select 1 from units where run_id = %s and state in ('queued', 'leased') limit 1",
            (run_id,),
        ).fetchone()
        if waiting is None:
            self.db.execute(
                "update runs set status = 'done', finished_at = %s, lab_pid = null"
                " where run_id = %s and status = 'queued'",
                (time.time(), run_id),
            )

    # -- reading -----------------------------------------------------------------------------

    def max_tries(self, run_id: str) -> int:
        return one_row(
            self.db.execute("select max_tries from fleet_runs where run_id = %s", (run_id,))
        )[0]

    def waiting(self, run_id: str) -> int:
        """Units of the run still to measure (queued or leased)."""
        return one_row(
            self.db.execute(
                "select count(*) from units where run_id = %s and state in ('queued', 'leased')",
                (run_id,),
            )
        )[0]

    def progress(self) -> dict[str, dict[tuple[str, str | None], int]]:
        """run id -> {(state, host): units} of every queued run."""
        found: dict[str, dict] = {}
        rows = self.db.execute(
            "select run_id, state, host, count(*) from units group by run_id, state, host"
            " order by run_id, state, host"
        ).fetchall()
        for run_id, state, host, count in rows:
            found.setdefault(run_id, {})[(state, host)] = count
        return found


def unit_progress(store) -> dict[str, dict[tuple[str, str | None], int]]:
    """The units of every queued run in `store` by state and host; {} for a store without a
    queue (SQLite)."""
    if not isinstance(store, PostgresResultStore):
        return {}
    return UnitQueue(store).progress()
