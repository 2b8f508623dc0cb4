"""One experiment on many hosts (issue 21): `run --queue` stores a run's units, and agents on
each host claim them from the PostgreSQL store and measure each through runner.measure, the
code path of `run`.

An agent keeps its target (cluster, machine) between units of the same run and closes it when
it takes a unit of another run or the queue is empty. While it measures a unit a heartbeat
thread renews the unit's lease; a killed agent stops renewing, the lease expires, and the next
agent that claims takes the unit again. Its cluster is reaped by the next lab command on its
host, like any killed lab's (experiments/reaping.py).
"""

import os
import platform
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg

from pgcachelab.analysis.hosts import host_class
from pgcachelab.clusters import installs
from pgcachelab.clusters.target import Target
from pgcachelab.errors import RunFailed, UserError
from pgcachelab.experiments import runner
from pgcachelab.experiments.reaping import reap_everything
from pgcachelab.experiments.spec import ExperimentSpec
from pgcachelab.failures import store_error_line
from pgcachelab.machine.storage_probe import describe_probe, probe_storage
from pgcachelab.probes.environment import host_facts
from pgcachelab.progress import Progress
from pgcachelab.store.postgresql import PostgresResultStore
from pgcachelab.store.queue import Unit, UnitQueue
from pgcachelab.store.records import Measurement

QUEUE_NEEDS_POSTGRESQL = "a queue needs the shared PostgreSQL store: --store postgresql://..."
DEFAULT_LEASE_S = 60.0
POLL_S = 5.0  # --wait: how often an idle agent looks for new units


def agent_host_facts() -> dict:
    """This host's facts as the hosts table and each unit's measurement record them: its
    class's (analysis/hosts.py), plus what its storage does and the servers it can run."""
    facts = host_facts()
    try:
        storage = describe_probe(probe_storage(Path(tempfile.gettempdir())))
    except OSError as error:  # a full or read-only temp directory: its clusters say so later
        storage = f"not measured: {error.strerror or error}"
    facts["storage"] = storage
    facts["postgresql"] = [f"{k.version} ({k.source})" for k in installs.installed()]
    return facts


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
    if target.kind != "managed":
        raise UserError("--queue with --dsn: each agent runs its own clusters", "drop --dsn")
    run_id = runner.record_run(spec, target, store, progress, measured_here=False)
    queue.enqueue(run_id, runner.planned_schedule(spec), spec.fleet_hosts, spec.fleet_max_tries)
    return run_id


class UnitStore:
    """The store as runner.measure sees it from an agent: a measurement is stored together
    with its unit's state (store/queue.py), and the cluster's directory is this agent's, not
    the run's (a killed agent's is reaped through the owned-resource registry)."""

    def __init__(self, store: PostgresResultStore, queue: UnitQueue, max_tries: int):
        self._store, self._queue, self.max_tries = store, queue, max_tries
        self.unit: Unit | None = None
        self.fleet: dict = {}  # what each measurement says about who measured it
        self.dropped = False

    def __getattr__(self, name):
        return getattr(self._store, name)

    def set_work_dir(self, run_id: str, work_dir: str | None) -> None:
        return None

    def record_measurement(self, run_id: str, m: Measurement) -> None:
        m.metrics["fleet"] = self.fleet
        assert self.unit is not None  # the agent sets it before measuring
        self.dropped = not self._queue.record(self.unit, m, self.max_tries)

    def record_snapshots(self, run_id: str, point_index: int, repetition: int, snapshots):
        """The snapshots of the measurement just stored; none when another agent's was."""
        if not self.dropped:
            self._store.record_snapshots(run_id, point_index, repetition, snapshots)


class Heartbeat:
    """Renews a unit's lease every third of it, on a connection of its own, while the unit is
    measured."""

    def __init__(self, store: PostgresResultStore, queue: UnitQueue, unit: Unit, lease_s: float):
        self.store, self.queue, self.unit, self.lease_s = store, queue, unit, lease_s
        self.stopped = threading.Event()
        self.lost = False
        self.thread = threading.Thread(target=self._beat, name="lease heartbeat", daemon=True)

    def __enter__(self):
        self.db = self.store.another_connection()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()
        self.db.close()

    def _beat(self) -> None:
        while not self.stopped.wait(self.lease_s / 3):
            try:
                renewed = self.queue.renew(self.unit, self.lease_s, self.db)
            except Exception:  # noqa: BLE001 - the store is away: the lease may lapse, try again
                continue
            if not renewed:
                self.lost = True
                return


@dataclass
class Agent:
    store: PostgresResultStore
    progress: Progress
    lease_s: float = DEFAULT_LEASE_S
    run_id: str | None = None  # --run: only this run's units
    wait: bool = False
    once: bool = False

    def __post_init__(self):
        self.facts = agent_host_facts()
        self.host_class = host_class(self.facts)
        self.host = self.facts["hostname"] or platform.node()
        agent = f"{self.host}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.queue = UnitQueue(self.store, self.host, agent)
        self.context: runner.RunContext | None = None
        self.opened = False  # the context's target
        self.measured = 0

    def work(self) -> int:
        """Claim and measure units until none waits (or one, with `once`); returns how many."""
        try:
            return self._work()
        except psycopg.Error as error:  # the store went away: one line, the unit's lease lapses
            message, hint = store_error_line(error, self.store.location)
            raise RunFailed(
                message, f"{hint}; the unit this agent held goes back when its lease expires"
            ) from None

    def _work(self) -> int:
        self.queue.record_host(self.host_class, self.facts)
        self.progress.note(f"agent {self.queue.agent}: host class {self.host_class}")
        with self.progress:
            try:
                while True:
                    # Another agent on this host may have been killed since the last unit:
                    # its clusters, mounts and cgroups go before this one starts its own.
                    reap_everything(self.progress.note)
                    unit = self.queue.claim(self.host_class, self.lease_s, self.run_id)
                    if unit is None:
                        self._close()
                        leased = self.queue.leased(self.host_class, self.run_id)
                        if not leased and not self.wait:
                            break
                        # A unit another agent holds may come back when its lease expires.
                        time.sleep(min(POLL_S, self.lease_s / 3) if leased else POLL_S)
                        continue
                    self._measure(unit)
                    if self.once:
                        break
            finally:
                self._close()
        return self.measured

    def _measure(self, unit: Unit) -> None:
        try:
            ctx = self._context_for(unit.run_id)
        except BaseException:
            self.queue.release(unit)  # this host cannot measure the run: not the unit's fault
            raise
        store = ctx.store
        assert isinstance(store, UnitStore)  # _context_for made it
        store.unit = unit
        point = ctx.spec.points()[unit.point_index]
        label = f"run {unit.run_id}: {point.label} #{unit.repetition + 1}"
        try:
            with Heartbeat(self.store, self.queue, unit, self.lease_s) as heartbeat:
                if not self.opened:
                    runner.open_target(ctx)
                    self.opened = True
                runner.measure(ctx, point, unit.repetition)
        except KeyboardInterrupt:
            self.queue.release(unit)
            raise
        except Exception as error:  # noqa: BLE001 - the try fails with its reason, the agent goes on
            reason = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
            self.queue.fail(unit, reason, store.max_tries)
            self.progress.note(f"{label}: {reason}")
            self._close()  # the next unit starts on a new cluster
            return
        if heartbeat.lost or store.dropped:
            self.progress.note(f"{label}: its lease expired and another agent stored it first")
        else:
            self.measured += 1

    def _context_for(self, run_id: str) -> runner.RunContext:
        """The run's context on this host, kept for the run's next unit here."""
        if self.context is not None and self.context.run_id == run_id:
            return self.context
        self._close()
        run = self.store.run(run_id)
        assert run is not None  # the queue's units are of stored runs
        spec, target = runner.target_for_run(run, self.progress)
        unit_store = UnitStore(self.store, self.queue, self.queue.max_tries(run_id))
        unit_store.fleet = {"host": self.host, "host_class": self.host_class, "facts": self.facts}
        self.context = runner.RunContext(spec, target, unit_store, run_id, self.progress)
        waiting = self.queue.waiting(run_id)
        self.progress.start(waiting, 0)
        self.progress.note(f"run {run_id}: {spec.name}: {waiting} unit(s) to measure")
        return self.context

    def _close(self) -> None:
        """Stop and remove the run's cluster: a unit is never resumed, so nothing is kept."""
        context, self.context, opened, self.opened = self.context, None, self.opened, False
        if context is not None and opened:
            context.target.close(finished=True)
