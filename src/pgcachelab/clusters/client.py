"""How a client program (pgbench) reaches a server: what a target hands the workloads."""

import os
from dataclasses import dataclass

from psycopg import Cursor
from psycopg.conninfo import make_conninfo
from psycopg.rows import Row


@dataclass(frozen=True)
class PgbenchTarget:
    """How pgbench reaches the server. The password travels only in the environment."""

    conninfo: dict  # host, port, user, dbname, ... without password
    password: str | None = None
    session_options: dict | None = None  # settings applied per session through PGOPTIONS

    def connection_string(self) -> str:
        return make_conninfo(**self.conninfo)

    def environment(self) -> dict:
        """The lab's environment for pgbench: the target's own password when it has one, else
        the caller's PGPASSWORD kept, so pgbench logs in as the lab's own connection did (a
        --dsn without a password relies on it, as the README advises: issue 35)."""
        env = dict(os.environ)
        if self.password is not None:
            env["PGPASSWORD"] = self.password
        if self.session_options:
            env["PGOPTIONS"] = pgoptions(self.session_options)
        return env


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
