"""pg_stat_database counters and the size of the measured database."""

import psycopg

from pgcachelab.clusters.client import one_row

COUNTERS = (
    "xact_commit",
    "xact_rollback",
    "blks_read",
    "blks_hit",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "temp_bytes",
)


class DatabaseProbe:
    name = "database"

    def available(self, conn: psycopg.Connection) -> bool:
        return True

    def collect(self, conn: psycopg.Connection) -> dict:
        columns = ", ".join(COUNTERS)
        row = one_row(
            conn.execute(
                f"select {columns}, pg_database_size(datname) from pg_stat_database"
                " where datname = current_database()"
            )
        )
        values = dict(zip(COUNTERS, (int(v) for v in row[:-1]), strict=True))
        values["size_bytes"] = int(row[-1])
        return values


class StatioProbe:
    """Block reads and hits of each user table and its indexes (pg_statio_user_tables)."""

    name = "statio"

    def available(self, conn: psycopg.Connection) -> bool:
        return True

    def collect(self, conn: psycopg.Connection) -> dict:
        rows = conn.execute(
            "select schemaname, relname, heap_blks_read, heap_blks_hit,"
            " coalesce(idx_blks_read, 0), coalesce(idx_blks_hit, 0),"
            " pg_total_relation_size(relid) from pg_statio_user_tables"
        ).fetchall()
        return {
            f"{schema}.{table}": {
                "heap_blks_read": int(heap_read),
                "heap_blks_hit": int(heap_hit),
                "idx_blks_read": int(idx_read),
                "idx_blks_hit": int(idx_hit),
                "total_size_bytes": int(size),
            }
            for schema, table, heap_read, heap_hit, idx_read, idx_hit, size in rows
        }
