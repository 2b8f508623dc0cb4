"""The server's whole pg_settings, with numbers normalised to bytes and seconds."""

import psycopg

from pgcachelab.units import normalise_setting


def collect_settings(conn: psycopg.Connection) -> dict:
    rows = conn.execute(
        "select name, setting, unit, vartype, context, source from pg_settings"
    ).fetchall()
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
