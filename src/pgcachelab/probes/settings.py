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


def catalogue_rows(conn: psycopg.Connection) -> list[tuple]:
    """Rows for clusters.guc.catalogue_from_pg_settings."""
    return conn.execute(
        "select name, context, vartype, unit, min_val, max_val, enumvals from pg_settings"
    ).fetchall()
