"""The server's whole pg_settings, with numbers normalised to bytes and seconds."""

import psycopg

from pgcachelab.clusters.guc import shown_unit
from pgcachelab.units import normalise_setting


def collect_settings(conn: psycopg.Connection) -> dict:
    rows = conn.execute(
        "select name, setting, unit, vartype, context, source from pg_settings"
    ).fetchall()
    rows = [(n, s, shown_unit(n, u, v), v, c, src) for n, s, u, v, c, src in rows]
    return {
        name: {
            "setting": setting,
            "unit": unit,
            "vartype": vartype,
            "context": context,
            "source": source,
            "normalised": normalise_setting(setting, unit, vartype),
        }
        for name, setting, unit, vartype, context, source in rows
    }
