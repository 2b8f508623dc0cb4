"""What the experiments layer asks of the server it measures, whoever runs it.

`Target` is what every server offers: a managed throwaway cluster (targets.ManagedTarget), one
per version (targets.VersionedTarget) and one given by --dsn (targets.ExistingTarget).
`ManagedServer` adds what only a server the lab runs has (its disk, its death); callers ask
`is_managed(target)` before using it, the one place that reads `kind`. What the runner needs
to know of a target (its servers before a run, its pgbench, where a kept cluster lives, which
server a point runs on) is a method here, never a question about its class (issue 50).
targets.py checks that each class satisfies its protocol.
"""

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import psycopg

from pgcachelab.clusters.binaries import PgInstall
from pgcachelab.clusters.client import PgbenchTarget
from pgcachelab.clusters.guc import SettingInfo

if TYPE_CHECKING:  # targets.py imports it only when a target is made: its type is enough
    from pgcachelab.machine.emulated import EmulatedMachine


@dataclass(frozen=True)
class ServerFacts:
    """One server a run measures (one per version of a version sweep), as the checks before
    the run judge the spec by it."""

    name: str  # the server in a refusal: "the server given by --dsn", "PostgreSQL 15"
    catalogue: dict[str, SettingInfo]
    contexts: set[str] | None = None  # the setting contexts a point may set; None: all
    install: PgInstall | None = None  # the binaries the lab runs it from; None: not the lab's
    skipped: tuple[str, ...] = ()  # the run's settings this version does not know
    translated: dict[str, str] = field(default_factory=dict)  # spec's name -> this version's


@dataclass(frozen=True)
class Preflight:
    """What a target tells the checks before a run (experiments/preflight.py), read before
    any server starts."""

    servers: tuple[ServerFacts, ...]
    # The server's own max_connections; None: the lab sets it per point (connection_room).
    max_connections: int | None = None
    # Whether the session may run CHECKPOINT (the lab's own cluster: always), and as whom.
    may_checkpoint: bool = True
    role: str | None = None


class Target(Protocol):
    """A server to measure: opened once, given each point's settings, connected to, closed."""

    @property
    def kind(self) -> str:
        """ "managed" (the lab runs it) or "existing" (given by --dsn)."""
        ...

    @property
    def machine(self) -> "EmulatedMachine | None":
        """The emulated machine the server runs in; None when the lab does not run it."""
        ...

    @property
    def data_dir(self) -> Path | None:
        """The server's data directory, when the lab knows it."""
        ...

    @property
    def server_version(self) -> str: ...

    @property
    def server_major(self) -> int: ...

    def catalogue(self) -> dict[str, SettingInfo]:
        """pg_settings of the server: units, enum values, ranges."""
        ...

    def applicable_contexts(self) -> set[str] | None:
        """The setting contexts a point may set; None: all of them."""
        ...

    def describe(self) -> dict[str, Any]:
        """What the run record says about the server (never a password)."""
        ...

    def preflight(self, setting_names: set[str]) -> Preflight:
        """What the checks before a run need to know of the server(s); `setting_names`, the
        settings the run sets, for a target whose versions may each lack some."""
        ...

    def pgbench(self) -> Path:
        """The pgbench the run's clients are: the install's own, else the newest the lab has."""
        ...

    def label_kept(self, kept_for: dict[str, str]) -> None:
        """Name the run (store, id) a cluster kept for --resume belongs to (machine/owned.py);
        a target that keeps no cluster ignores it."""
        ...

    def switch(self, version: str | None, group: tuple) -> tuple[dict, dict] | None:
        """Make the server of a point's version and data group current. Returns its workload
        state and what was dropped from the OS cache, or None when it was current already (a
        target of one server: always)."""
        ...

    def open(self, record_work_dir: Callable[[str], None]) -> None: ...

    def apply(self, settings: dict) -> str:
        """Put a point's settings in force; returns what that took (e.g. "restart")."""
        ...

    def connect(self, settings: dict | None = None) -> psycopg.Connection: ...

    def pgbench_target(self, settings: dict) -> PgbenchTarget: ...

    def close(self, finished: bool = True) -> str | None:
        """Stop; returns the directory kept for --resume, if any."""
        ...


class ManagedServer(Target, Protocol):
    """A server the lab runs: on an emulated disk perhaps, and able to say why it died."""

    @property
    def emulated_disk(self) -> bool: ...

    def data_parent(self) -> Path:
        """Where the cluster's work directory goes: its file system holds the data."""
        ...

    def use_disk(self, disk: str | None) -> bool:
        """Put the server on the point's disk; True when that changed it."""
        ...

    def loading_data(self) -> AbstractContextManager[Any]:
        """A context in which data is built with no emulated latency."""
        ...

    def server_failure(self) -> str | None: ...

    def disk_failure(self) -> str | None: ...

    def disk_record(self) -> dict[str, Any]: ...

    def postmaster_pid(self) -> int | None:
        """The running server's postmaster, whose process tree is the server's CPU."""
        ...


def is_managed(target: Target) -> TypeGuard[ManagedServer]:
    """Whether the lab runs this server (and so may ask for its disk and its death)."""
    return target.kind == "managed"
