"""Checkpointer and background writer counters; the views split in PostgreSQL 17."""

import psycopg

from pgcachelab.clusters.client import one_row

# The same counters under the names they had before the split.
_COUNTERS = (
    "checkpoints_timed",
    "checkpoints_requested",
    "buffers_checkpoint",
    "buffers_clean",
    "maxwritten_clean",
    "buffers_alloc",
)


class CheckpointerProbe:
    name = "checkpointer"

    def available(self, conn: psycopg.Connection) -> bool:
        return True

    def collect(self, conn: psycopg.Connection) -> dict:
        if conn.info.server_version >= 170000:
            checkpoints = one_row(
                conn.execute(
                    "select num_timed, num_requested, buffers_written from pg_stat_checkpointer"
                )
            )
            writer = one_row(
                conn.execute(
                    "select buffers_clean, maxwritten_clean, buffers_alloc from pg_stat_bgwriter"
                )
            )
            return dict(zip(_COUNTERS, (int(v) for v in checkpoints + writer), strict=True))
        row = one_row(
            conn.execute(
                "select checkpoints_timed, checkpoints_req, buffers_checkpoint, buffers_clean,"
                " maxwritten_clean, buffers_alloc, buffers_backend from pg_stat_bgwriter"
            )
        )
        # Backend writes left pg_stat_bgwriter in 17 (they are in pg_stat_io there).
        names = (*_COUNTERS, "buffers_backend")
        return dict(zip(names, (int(v) for v in row), strict=True))


class WalProbe:
    """WAL position in bytes since 0/0; 9.6 still calls it xlog."""

    name = "wal"

    def available(self, conn: psycopg.Connection) -> bool:
        in_recovery = one_row(conn.execute("select pg_is_in_recovery()"))[0]
        return not in_recovery

    def collect(self, conn: psycopg.Connection) -> dict:
        if conn.info.server_version >= 100000:
            query = "select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"
        else:
            query = "select pg_xlog_location_diff(pg_current_xlog_location(), '0/0')"
        return {"bytes": int(one_row(conn.execute(query))[0])}
