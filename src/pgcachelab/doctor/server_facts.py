"""Read what the server checks look at from a connection: pg_settings and checkpoint counters.

Only SELECTs and SHOWs; nothing is changed. Settings are kept both as the server prints them and
in bytes or seconds (units.normalise_setting).
"""

from dataclasses import dataclass, field

import psycopg

from pgcachelab.clusters.client import one_row
from pgcachelab.probes.checkpointer import CheckpointerProbe
from pgcachelab.units import normalise_setting


@dataclass
class ServerFacts:
    version_num: int
    server_version: str
    settings: dict[str, float | str] = field(default_factory=dict)  # bytes, seconds or text
    display: dict[str, str] = field(default_factory=dict)  # "shared_buffers" -> "128MB"
    checkpoints: dict = field(default_factory=dict)  # CheckpointerProbe's counters
    observed_seconds: float | None = None  # how long the counters have been counting
    backend_pid: int | None = None

    def number(self, name: str) -> float | None:
        value = self.settings.get(name)
        return value if isinstance(value, int | float) else None

    def text(self, name: str) -> str | None:
        value = self.settings.get(name)
        return None if value is None else str(value)

    def shown(self, name: str) -> str:
        return self.display.get(name, "?")


def read_server_facts(conn: psycopg.Connection) -> ServerFacts:
    facts = ServerFacts(
        version_num=conn.info.server_version,
        server_version=one_row(conn.execute("show server_version"))[0],
        backend_pid=one_row(conn.execute("select pg_backend_pid()"))[0],
    )
    rows = conn.execute(
        "select name, setting, unit, vartype,"
        " case when unit is null then setting"
        "      else current_setting(name) end from pg_settings"
    ).fetchall()
    for name, setting, unit, vartype, display in rows:
        facts.settings[name] = normalise_setting(setting, unit, vartype)
        facts.display[name] = display
    facts.checkpoints = CheckpointerProbe().collect(conn)
    view = "pg_stat_checkpointer" if facts.version_num >= 170000 else "pg_stat_bgwriter"
    # Counters survive clean restarts; without a reset time, count from the postmaster's start.
    facts.observed_seconds = one_row(
        conn.execute(
            "select extract(epoch from now() - coalesce(stats_reset, pg_postmaster_start_time()))"
            f" from {view}"  # a constant view name chosen above, not user input
        )
    )[0]
    facts.observed_seconds = float(facts.observed_seconds)
    return facts
