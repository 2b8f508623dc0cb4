"""How a client program (pgbench) reaches a server: what a target hands the workloads.

A secret never goes on a command line, where every local user reads it (`ps`, /proc/PID/cmdline:
issue 48): the password travels in PGPASSWORD; the others (sslpassword, ...), which libpq reads
from no environment variable, in a service file of the lab's own (0600, in a 0700 directory,
removed when the program ends), named by PGSERVICEFILE and PGSERVICE.
"""

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from psycopg import Cursor
from psycopg.conninfo import make_conninfo
from psycopg.rows import Row

from pgcachelab.machine import owned
from pgcachelab.secrets import service_file_text, split_secrets

SERVICE = "pgcachelab"  # the group of the lab's service file
SERVICE_FILE = "pg_service.conf"


@dataclass(frozen=True)
class PgbenchTarget:
    """How pgbench reaches the server; its secrets travel only in the environment (above)."""

    conninfo: dict  # host, port, user, dbname, ... (a secret given here is moved out of argv)
    password: str | None = None
    session_options: dict | None = None  # settings applied per session through PGOPTIONS
    secrets: dict | None = None  # the secrets but the password (sslpassword, ...)

    def connection_string(self) -> str:
        """The command line's connection string: never a secret."""
        return make_conninfo(**split_secrets(self.conninfo)[0])

    def _secrets(self) -> tuple[str | None, dict]:
        """(the password, the other secrets), wherever they were given."""
        given = {**split_secrets(self.conninfo)[1], **(self.secrets or {})}
        password = given.pop("password", None)
        return (self.password if self.password is not None else password), given

    def environment(self) -> dict:
        """The lab's environment for pgbench: the target's own password when it has one, else
        the caller's PGPASSWORD kept, so pgbench logs in as the lab's own connection did (a
        --dsn without a password relies on it, as the README advises: issue 35). The other
        secrets need a service file: `child_environment`."""
        env = dict(os.environ)
        password = self._secrets()[0]
        if password is not None:
            env["PGPASSWORD"] = str(password)
        if self.session_options:
            env["PGOPTIONS"] = pgoptions(self.session_options)
        return env

    @contextlib.contextmanager
    def child_environment(self) -> Iterator[dict]:
        """`environment()`, and with secrets besides the password, the service file that holds
        them for as long as the block runs (a killed lab's successor removes its directory)."""
        env = self.environment()
        others = self._secrets()[1]
        if not others:
            yield env
            return
        text = service_file_text(SERVICE, others)
        with owned.scratch_dir("pgcachelab-service-") as scratch:
            path = scratch / SERVICE_FILE
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as service_file:
                service_file.write(text)
            env["PGSERVICEFILE"] = str(path)
            env["PGSERVICE"] = SERVICE
            yield env


def one_row(cursor: Cursor[Row]) -> Row:
    """The row of a statement that always returns one (an aggregate, SHOW, a function call)."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("the statement returned no row")
    return row


def pgoptions(settings: dict) -> str:
    """PGOPTIONS text for `-c name=value` per setting; spaces and backslashes escaped (libpq)."""
    parts = []
    for name, value in settings.items():
        escaped = str(value).replace("\\", "\\\\").replace(" ", "\\ ")
        parts.append(f"-c {name}={escaped}")
    return " ".join(parts)
