"""What the experiments layer asks of the server it measures, whoever runs it.

`Target` is what every server offers: a managed throwaway cluster (targets.ManagedTarget), one
per version (targets.VersionedTarget) and one given by --dsn (targets.ExistingTarget).
`ManagedServer` adds what only a server the lab runs has (its disk, its death); callers ask
`is_managed(target)` before using it, as they asked `target.kind == "managed"`. targets.py
checks that each class satisfies its protocol.
"""

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import psycopg

from pgcachelab.clusters.client import PgbenchTarget
from pgcachelab.clusters.guc import SettingInfo

if TYPE_CHECKING:  # targets.py imports it only when a target is made: its type is enough
    from pgcachelab.machine.emulated import EmulatedMachine


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


def is_managed(target: Target) -> TypeGuard[ManagedServer]:
    """Whether the lab runs this server (and so may ask for its disk and its death)."""
    return target.kind == "managed"
