"""One experiment on many hosts (issues 21, 38): `run --queue` defers a run's units as jobs in
the PostgreSQL store (store/queue.py, on procrastinate), and an agent on each host takes them
and measures each through runner.measure, the code path of `run`.

An agent holds its host for its life (experiments/host_lock.py), is a procrastinate worker
whose heartbeat a thread renews every third of its lease, and keeps its target (cluster,
machine) between units of the same run. The store may go away (restarted, connections
terminated): every store operation reconnects with backoff and runs again, and a measurement
is stored only while its unit is still this agent's (a lease lost meanwhile discards it, with
the reason logged) and while the agent still holds its host (a store restart dropped the
store's host lock: it is verified and taken again, and an agent that lost its host to another
with its identity stops, its measurement not stored). A killed agent stops renewing; the next
agent that looks finds its unit stalled and queues it again, and its cluster is reaped by the
next lab command on its host (experiments/reaping.py).
"""

import contextlib
import os
import platform
import re
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import psycopg

from pgcachelab.analysis.hosts import host_class
from pgcachelab.clusters import installs
from pgcachelab.clusters.target import Target, is_managed
from pgcachelab.errors import RunFailed, UserError
from pgcachelab.experiments import runner
from pgcachelab.experiments.host_lock import HostBusy, HostLock
from pgcachelab.experiments.reaping import reap_everything
from pgcachelab.failures import store_error_line
from pgcachelab.machine import owned
from pgcachelab.machine.storage_probe import describe_probe, probe_storage
from pgcachelab.probes.environment import host_facts
from pgcachelab.progress import Progress
from pgcachelab.quantities import duration
from pgcachelab.spec import ExperimentSpec
from pgcachelab.store.metric_types import FleetMetrics
from pgcachelab.store.postgresql import PostgresResultStore
from pgcachelab.store.queue import Recorded, Unit, UnitQueue
from pgcachelab.store.records import Measurement, Run, StoredSnapshot

QUEUE_NEEDS_POSTGRESQL = "a queue needs the shared PostgreSQL store: --store postgresql://..."
DEFAULT_LEASE_S = 60.0
MIN_LEASE_S = 3.0  # the heartbeat renews every third of the lease: a second at least
MAX_LEASE_S = 86400.0  # a day: a killed agent's unit goes back to the queue within one
POLL_S = 5.0  # --wait: how often an idle agent looks for new units
RECONNECT_FOR_S = 600.0  # how long an agent keeps trying a store that went away
BACKOFF_S = (0.5, 15.0)  # first and longest wait between reconnection attempts
MACHINE_ID = Path("/etc/machine-id")
HOST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,99}")

T = TypeVar("T")


def lease_seconds(value: str | float, name: str = "--lease") -> float:
    """An agent's lease in seconds, from MIN_LEASE_S to MAX_LEASE_S: refused before the agent
    starts (a lease of 400 digits was infinity, and its heartbeat thread died on it)."""
    return duration(value, name, MIN_LEASE_S, MAX_LEASE_S, example=f"{name} 60s")


def agent_host_facts() -> dict:
    """This host's facts as the hosts table and each unit's measurement record them: its
    class's (analysis/hosts.py), plus what its storage does and the servers it can run."""
    facts = host_facts()
    try:
        # in a directory of the owned registry's: an agent killed mid-probe leaves no 16 MB file
        # in its TMPDIR that no reaper knows of
        with owned.scratch_dir("pgcachelab-storage-probe-") as scratch:
            storage = describe_probe(probe_storage(scratch))
    except OSError as error:  # a full or read-only temp directory: its clusters say so later
        storage = f"not measured: {error.strerror or error}"
    facts["storage"] = storage
    facts["postgresql"] = [f"{k.version} ({k.source})" for k in installs.installed()]
    return facts


def host_identity(given: str | None, machine_id: Path = MACHINE_ID) -> str:
    """The host's stable identity: the operator's --host-id, else the machine-id (a host name
    is not one: two machines or namespaces can share it)."""
    if given is not None:
        if not HOST_ID.fullmatch(given):
            raise UserError(
                f"--host-id: invalid value {given!r}",
                "give 1-100 letters, digits or . _ : @ - (starting with a letter or digit)",
            )
        return given
    try:
        found = machine_id.read_text().strip()
    except OSError:
        found = ""
    if not found:
        raise UserError(
            f"agent: this host has no {machine_id} to tell it from others",
            "give each host its own identity: --host-id NAME",
        )
    return found


def class_names_text(classes: list[str]) -> str:
    """Host classes as a message names them: each quoted on its own (a class's name may
    hold a comma: 'Xeon x2, 8GB, Linux 6.1'), so 'a' or 'b' is not read as one 'a, b'."""
    quoted = [repr(name) for name in classes]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def check_given_class(given: str | None, known: set[str]) -> None:
    """--class names one class: a list of classes the store knows ('a, b', as a message
    once quoted them) is refused, where an agent of class 'a, b' would take nothing. A class
    of its own may hold commas ('Xeon x2, 8GB, Linux 6.1'): only a name the store does not know
    whose parts it knows is refused."""
    if given is None or given in known or "," not in given:
        return
    listed = [name for name in (part.strip() for part in given.split(",")) if name in known]
    if listed:
        named = class_names_text(listed).replace(" or ", " and ")
        are = "are classes of their own" if len(listed) > 1 else "is a class of its own"
        raise UserError(
            f"--class: invalid value {given!r}: an agent has one host class, and {named} {are}",
            f"give this host's one class: --class {shlex.quote(listed[0])}",
        )


def check_queue_location(location, option: str) -> None:
    """A queue lives in the PostgreSQL store only: anything else is refused before it is
    opened (a SQLite file would be created for nothing)."""
    if location.kind != "postgresql":
        raise UserError(
            f"{option}: {location.masked()!r}: {QUEUE_NEEDS_POSTGRESQL}",
            "give --store postgresql://user@host/dbname, shared by every host",
        )


def queue_run(spec: ExperimentSpec, target: Target, store, progress: Progress) -> str:
    """Record the run and its units in the order the run would measure them; nothing runs."""
    queue = UnitQueue(store)
    if spec.auto_repetitions:
        raise UserError(
            f'{spec.path}: repetitions = "auto" cannot be queued: its later rounds depend on'
            " the results of the earlier ones",
            "give a number of repetitions to queue the run",
        )
    if not is_managed(target):
        raise UserError("--queue with --dsn: each agent runs its own clusters", "drop --dsn")
    earlier = queue.waiting_runs_of_spec(spec.text)
    run_id = runner.record_run(spec, target, store, progress, measured_here=False)
    queue.enqueue(
        run_id,
        runner.planned_schedule(spec),
        spec.fleet_hosts,
        spec.fleet_max_tries,
        spec.fleet_host_class,
        spec.fleet_classes,
    )
    if earlier:
        progress.note(
            f"warning: {spec.path} is queued already, as run {', '.join(earlier)} with units"
            f" still waiting; run {run_id} measures it again (queue cancel RUN drops one)"
        )
    return run_id


class StoreGone(RunFailed):
    """The store stayed away for RECONNECT_FOR_S: the agent stops."""


class HostLost(RunFailed):
    """Another agent with this host's identity took the store's host lock (after a store
    restart dropped this one's): the agent stops, and what it measured since is not stored."""


def lost_host(busy: HostBusy | str) -> HostLost:
    return HostLost(f"agent: {busy}", "stop one of the agents")


class StoreKeeper:
    """Runs store operations again after a lost connection: reconnects with backoff for up to
    RECONNECT_FOR_S, then gives up with the store's reason. `after_reconnect` restores what
    a session held (the host's advisory lock, units fetched whose answer was lost)."""

    def __init__(self, store: PostgresResultStore, application_name: str, note):
        self.store, self.application_name, self.note = store, application_name, note
        self.after_reconnect: Callable[[], None] = lambda: None

    def run(self, operation: Callable[[], T]) -> T:
        deadline = None
        delay = BACKOFF_S[0]
        while True:
            try:
                return operation()
            except psycopg.OperationalError as error:
                if not (self.store.db.closed or self.store.db.broken):
                    raise  # the statement failed, not the connection
                if deadline is None:
                    deadline = time.monotonic() + RECONNECT_FOR_S
                    message, _ = store_error_line(error, self.store.location)
                    self.note(f"{message}: reconnecting")
                self._reconnect(deadline, delay, error)
                delay = min(delay * 2, BACKOFF_S[1])

    def _reconnect(self, deadline: float, delay: float, error: Exception) -> None:
        while True:
            if time.monotonic() > deadline:
                message, hint = store_error_line(error, self.store.location)
                raise StoreGone(
                    f"{message} (for {RECONNECT_FOR_S:g} s)",
                    f"{hint}; a unit this agent held goes back when its lease expires",
                ) from None
            time.sleep(delay)
            try:
                self.store.reconnect(self.application_name)
                self.after_reconnect()
            except psycopg.OperationalError as again:
                error = again
                delay = min(delay * 2, BACKOFF_S[1])
                continue
            self.note("the store is back")
            return


class UnitStore:
    """The store as runner.measure sees it from an agent: every call survives a lost
    connection (StoreKeeper), a measurement is stored together with its unit's state
    (store/queue.py), and the cluster's directory is this agent's, not the run's (a killed
    agent's is reaped through the owned-resource registry)."""

    def __init__(
        self,
        store: PostgresResultStore,
        queue: UnitQueue,
        keeper: StoreKeeper,
        host_lost: Callable[[], str | None] = lambda: None,
    ):
        self._store, self._queue, self._keeper = store, queue, keeper
        self._host_lost = host_lost
        self.max_tries = 1
        self.unit: Unit | None = None
        self.fleet: FleetMetrics = {}  # what each measurement says about who measured it
        self.recorded: Recorded | None = None

    # What runner.RunStore asks, each call through the keeper (a lost connection is made again).
    @property
    def location(self) -> str:
        return self._store.location

    def run(self, run_id: str) -> Run | None:
        return self._keeper.run(lambda: self._store.run(run_id))

    def completed(self, run_id: str) -> set[tuple[int, int]]:
        return self._keeper.run(lambda: self._store.completed(run_id))

    def measurements(self, run_id: str, metrics: Sequence[str] | None = None) -> list[Measurement]:
        return self._keeper.run(lambda: self._store.measurements(run_id, metrics))

    def mark_running(self, run_id: str, lab_pid: int, work_dir: str | None) -> None:
        self._keeper.run(lambda: self._store.mark_running(run_id, lab_pid, work_dir))

    def finish_run(
        self, run_id: str, status: str, failure: str | None = None, kept_dir: str | None = None
    ) -> None:
        self._keeper.run(lambda: self._store.finish_run(run_id, status, failure, kept_dir))

    def record_server_settings(self, run_id: str, point_index: int, settings: dict) -> None:
        self._keeper.run(lambda: self._store.record_server_settings(run_id, point_index, settings))

    def set_work_dir(self, run_id: str, work_dir: str | None) -> None:
        return None

    def record_measurement(self, run_id: str, m: Measurement) -> None:
        m.metrics["fleet"] = self.fleet
        unit = self.unit
        assert unit is not None  # the agent sets it before measuring
        lost = self._host_lost()
        if lost is not None:  # measured beside another agent: neither the unit's fault nor kept
            reason = f"this agent lost its host: {lost}"
            self._keeper.run(lambda: self._queue.release(unit, reason))
            self.recorded = Recorded(False, reason)
            return
        self.recorded = self._keeper.run(lambda: self._queue.record(unit, m, self.max_tries))

    def record_snapshots(
        self, run_id: str, point_index: int, repetition: int, snapshots: Sequence[StoredSnapshot]
    ) -> None:
        """The snapshots of the measurement just stored; none when it was not."""
        if self.recorded is not None and self.recorded.stored:
            self._keeper.run(
                lambda: self._store.record_snapshots(run_id, point_index, repetition, snapshots)
            )


class Heartbeat:
    """Renews the agent's heartbeat every third of its lease, on a connection of its own,
    for the agent's life; a lost connection is made again at once, and while the store stays
    away at the next beat. Each beat also verifies the host's lock in the store (`lock`: a
    store restart drops it, and an idle connection does not know), so a lock lost is taken
    again within a third of the lease, or found taken by another agent (`lock.lost`). (A unit
    cancelled meanwhile is found when its measurement is recorded, and discarded.)"""

    def __init__(
        self,
        store: PostgresResultStore,
        queue: UnitQueue,
        lease_s: float,
        name: str,
        lock: HostLock | None = None,
    ):
        self.store, self.queue, self.lease_s, self.name = store, queue, lease_s, name
        self.lock = lock
        self.unregistered = False  # the worker was pruned: the agent registers again
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="agent heartbeat", daemon=True)
        self.db: psycopg.Connection | None = None

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()
        self._close()

    def _beat(self) -> None:
        while not self.stopped.wait(self.lease_s / 3):
            alive = self._renew()
            if alive is False:
                self.unregistered = True
            if self.lock is not None:
                # HostBusy: lock.lost says so, and the agent stops; the store away: next beat
                with contextlib.suppress(HostBusy, psycopg.Error):
                    self.lock.retake_in_store()

    def _renew(self) -> bool | None:
        """The heartbeat renewed: whether the worker is still registered; None while the store
        is away. A connection found cut (the store restarted) is made again at once."""
        for _ in range(2):
            try:
                if self.db is None:
                    self.db = self.store.another_connection(self.name)
                return self.queue.heartbeat(self.db)
            except psycopg.Error:
                self._close()
        return None

    def _close(self) -> None:
        db, self.db = self.db, None
        if db is not None:
            with contextlib.suppress(psycopg.Error):
                db.close()


@dataclass
class Agent:
    store: PostgresResultStore
    progress: Progress
    lease_s: float = DEFAULT_LEASE_S
    run_id: str | None = None  # --run: only this run's units
    wait: bool = False
    once: bool = False
    host_id: str | None = None  # --host-id, else the machine-id
    given_class: str | None = None  # --class, else from the host's facts
    wait_for_host: bool = False
    measured: int = field(default=0, init=False)

    def __post_init__(self):
        self.lease_s = lease_seconds(self.lease_s, "lease")  # before anything starts
        # The host's facts (its storage probe takes seconds) once it is held (`work`): a
        # second agent on a busy host is refused at once.
        self.facts: dict = {}
        self.host_class = self.given_class or ""
        self.host_name = platform.node()
        self.host_id = host_identity(self.host_id)
        self.queue = UnitQueue(self.store, self.host_id, self.host_name)
        self.keeper = StoreKeeper(self.store, f"pgcachelab agent {self.host_id}", self._note)
        self.keeper.after_reconnect = self._after_reconnect
        self.lock = HostLock(self.store, self.host_id, f"pgcachelab host lock {self.host_id}")
        self.heartbeat: Heartbeat | None = None
        self.context: runner.RunContext | None = None
        self.opened = False  # the context's target
        self.holding: Unit | None = None

    def _note(self, line: str) -> None:
        self.progress.note(line)

    def work(self) -> int:
        """Take and measure units until none waits (or one, with `once`); returns how many."""
        try:
            self.store.reconnect(f"pgcachelab agent {self.host_id}")
            try:
                self.lock.acquire(self.wait_for_host, self._note)
            except HostBusy as busy:
                raise UserError(
                    f"agent: {busy}",
                    "one agent measures on a host at a time: wait for it, or give --wait",
                ) from None
            try:
                self._learn_host()
                return self._work()
            finally:
                self._stop()
        except psycopg.Error as error:  # the store refused (not a lost connection)
            message, hint = store_error_line(error, self.store.location)
            raise RunFailed(
                message, f"{hint}; the unit this agent held goes back when its lease expires"
            ) from None

    def _learn_host(self) -> None:
        """This host's facts and class, measured once the host is this agent's."""
        self.facts = agent_host_facts()
        self.host_class = self.given_class or host_class(self.facts)
        self.host_name = self.facts["hostname"] or platform.node()
        self.queue.host_name = self.host_name

    def _work(self) -> int:
        self.keeper.run(self._register)
        self._note(
            f"agent {self.host_name} (host id {self.host_id}, worker {self.queue.worker_id}):"
            f" host class {self.host_class}"
        )
        name = f"pgcachelab heartbeat {self.host_id}"
        beat = Heartbeat(self.store, self.queue, self.lease_s, name, self.lock)
        with self.progress, beat:
            self.heartbeat = beat
            while True:
                self._check_host()
                # Another agent on this host may have been killed since the last unit:
                # its clusters, mounts and cgroups go before this one starts its own.
                reap_everything(self._note)
                unit = self.keeper.run(self._next_unit)
                if unit is None:
                    self._close()
                    held = self.keeper.run(
                        lambda: self.queue.held_by_others(self.host_class, self.run_id)
                    )
                    if not held and not self.wait:
                        break
                    # A unit another agent holds may come back when its lease lapses.
                    time.sleep(min(POLL_S, self.lease_s / 3) if held else POLL_S)
                    continue
                self._measure(unit)
                self._check_host()
                if self.once:
                    break
        if self.measured == 0:
            self._say_why_nothing()
        return self.measured

    def _register(self) -> None:
        self.queue.register(self.host_class, self.facts, self.lease_s, os.getpid())

    def _next_unit(self) -> Unit | None:
        pruned = self.heartbeat is not None and self.heartbeat.unregistered
        if pruned or not self.queue.registered():
            self._note("this agent's heartbeat lapsed for longer than its lease: registering again")
            self._register()
            if self.heartbeat is not None:
                self.heartbeat.unregistered = False
        for line in self.queue.recover_stalled(self.lease_s):
            self._note(line)
        pinned = self.queue.pin_next_same_run(self.host_class)
        if pinned is not None:
            self._note(f'run {pinned}: hosts = "same": its units are this host class\'s now')
        try:
            return self.queue.claim(self.host_class, self.run_id)
        except psycopg.errors.ForeignKeyViolation:  # pruned by another agent since registered()
            self._note(
                "this agent's worker was pruned while it looked for a unit: registering again"
            )
            self._register()
            return self.queue.claim(self.host_class, self.run_id)

    def _check_host(self) -> None:
        """HostLost once the heartbeat found the host's lock taken by another agent."""
        if self.lock.lost is not None:
            raise lost_host(self.lock.lost)

    def _host_lost(self) -> str | None:
        """Why this agent no longer holds its host, verified now (before a measurement is
        stored); None while it does, or while the store is away: the statement that stores it
        then finds the store gone, and its reconnection verifies the lock again."""
        with contextlib.suppress(HostBusy, psycopg.OperationalError):
            self.lock.retake_in_store()
        return self.lock.lost

    def _after_reconnect(self) -> None:
        try:
            self.lock.retake_in_store()
        except HostBusy as busy:
            raise lost_host(busy) from None
        if self.queue.worker_id is not None and self.queue.registered():
            holding = self.holding.job_id if self.holding is not None else None
            self.queue.release_own_strays(holding)

    def _measure(self, unit: Unit) -> None:
        self.holding = unit
        try:
            ctx = self._context_for(unit.run_id)
        except BaseException as error:
            reason = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
            self.keeper.run(lambda: self.queue.release(unit, f"cannot measure here: {reason}"))
            self.holding = None
            raise
        store = ctx.store
        assert isinstance(store, UnitStore)  # _context_for made it
        store.unit, store.recorded = unit, None
        point = ctx.spec.points()[unit.point_index]
        label = f"unit {unit.key} ({point.label} #{unit.repetition + 1}, try {unit.tries})"
        try:
            if not self.opened:
                runner.open_target(ctx)
                self.opened = True
            runner.measure(ctx, point, unit.repetition)
        except KeyboardInterrupt:
            self.keeper.run(lambda: self.queue.release(unit, "the agent was interrupted"))
            raise
        except StoreGone:
            raise  # the unit comes back when the lease lapses
        except HostLost as lost:  # found on a reconnection while storing: not the unit's fault
            with contextlib.suppress(psycopg.Error):
                self.queue.release(unit, f"this agent lost its host: {lost.message}")
            raise
        except Exception as error:  # noqa: BLE001 - the try fails with its reason, the agent goes on
            reason = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
            self.keeper.run(lambda: self.queue.fail(unit, reason, store.max_tries))
            self._note(f"{label}: {reason}")
            self._close()  # the next unit starts on a new cluster
            return
        finally:
            self.holding = None
        recorded = store.recorded
        if recorded is not None and recorded.stored:
            self.measured += 1
        elif recorded is not None:
            self._note(f"{label}: measured but not stored: {recorded.reason}")

    def _context_for(self, run_id: str) -> runner.RunContext:
        """The run's context on this host, kept for the run's next unit here."""
        if self.context is not None and self.context.run_id == run_id:
            return self.context
        self._close()
        run = self.keeper.run(lambda: self.store.run(run_id))
        assert run is not None  # the queue's units are of stored runs
        spec, target = runner.target_for_run(run, self.progress, resumable=False)
        unit_store = UnitStore(self.store, self.queue, self.keeper, self._host_lost)
        unit_store.max_tries = self.keeper.run(lambda: self.queue.max_tries(run_id))
        unit_store.fleet = {
            "host": self.host_name,
            "host_id": self.host_id,
            "host_class": self.host_class,
            "facts": self.facts,
        }
        self.context = runner.RunContext(spec, target, unit_store, run_id, self.progress)
        waiting = self.keeper.run(lambda: self.queue.waiting(run_id))
        self.progress.start(waiting, 0)
        self._note(f"run {run_id}: {spec.name}: {waiting} unit(s) to measure")
        return self.context

    def _say_why_nothing(self) -> None:
        """An agent that took nothing says what waits for other classes."""
        elsewhere = self.keeper.run(lambda: self.queue.waiting_elsewhere(self.host_class))
        if not elsewhere:
            self._note("no queued unit waits for this agent")
            return
        for run_id, classes, count in elsewhere:
            self._note(
                f"run {run_id}: {count} unit(s) wait for host class {class_names_text(classes)};"
                f" this agent is {self.host_class!r} (an agent of that class takes them:"
                " --class names one)"
            )

    def _close(self) -> None:
        """Stop and remove the run's cluster: a unit is never resumed, so nothing is kept."""
        context, self.context, opened, self.opened = self.context, None, self.opened, False
        if context is not None and opened:
            context.target.close(finished=True)

    def _stop(self) -> None:
        """Give the worker and the host back; the store may be away (then the lease lapses)."""
        try:
            self._close()
        finally:
            with contextlib.suppress(psycopg.Error, RunFailed):
                if not (self.store.db.closed or self.store.db.broken):
                    self.queue.unregister()
            self.lock.release()
