"""pg_stat_io (PostgreSQL 16+) summed by backend type: who read, wrote, extended, hit and
evicted buffers, and who had to fsync (a backend doing the checkpointer's job). Older servers
have no such view: the probe is absent there."""

import psycopg

# Counts, then the milliseconds spent (zero unless track_io_timing is on).
COUNTERS = ("reads", "writes", "extends", "hits", "evictions", "fsyncs")
TIMES_MS = ("read_time", "write_time")


class IoProbe:
    name = "io"

    def available(self, conn: psycopg.Connection) -> bool:
        return conn.info.server_version >= 160000

    def collect(self, conn: psycopg.Connection) -> dict:
        # NULL means "never happens for this kind of backend, object and context": zero.
        sums = [f"sum(coalesce({c}, 0))::bigint" for c in COUNTERS]
        sums += [f"sum(coalesce({t}, 0))::float8" for t in TIMES_MS]
        rows = conn.execute(
            f"select backend_type, {', '.join(sums)} from pg_stat_io group by backend_type"
        ).fetchall()
        names = (*COUNTERS, *(f"{t}_ms" for t in TIMES_MS))
        return {
            backend_type: {
                name: int(value) if name in COUNTERS else float(value)
                for name, value in zip(names, values, strict=True)
            }
            for backend_type, *values in rows
        }
