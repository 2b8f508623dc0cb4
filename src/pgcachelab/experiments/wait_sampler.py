"""Wait events during a measurement (issue 22): pg_stat_activity sampled ten times a second
from a thread with a connection of its own, kept in the measurement's metrics.

On PostgreSQL 9.6, pg_buffercache holds every buffer-mapping partition lock while it reads the
buffer headers; a backend that misses and must map a new buffer waits for one of them, and
that wait shows here as LWLockTranche:buffer_mapping. Sampling stops with the workload; a
failed sample is counted with its reason and never fails the measurement.
"""

import threading
import time

import psycopg

from pgcachelab.clusters.target import Target
from pgcachelab.probes.wait_events import (
    WAIT_SAMPLER_APPLICATION_NAME,
    parse_sample,
    wait_events_query,
)
from pgcachelab.spec import InspectOptions

SAMPLE_INTERVAL_S = 0.1  # short against a 9.6 header scan of 4GB (tens of ms to seconds)


class WaitSampler:
    def __init__(self, conn: psycopg.Connection, query: str, server_version_num: int):
        self.conn = conn
        self.query = query
        self.server_version_num = server_version_num
        self.samples: list[list] = []  # [Unix time, {event: active backends}]
        self.failed = 0
        self.first_error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=WAIT_SAMPLER_APPLICATION_NAME, daemon=True
        )

    @classmethod
    def start(
        cls, target: Target, settings: dict, options: InspectOptions | None
    ) -> "WaitSampler | None":
        """A running sampler, or None: no [inspect] wait_events, or a server without them."""
        if options is None or not options.wait_events:
            return None
        conn = target.connect(settings)
        try:
            conn.execute(f"set application_name = '{WAIT_SAMPLER_APPLICATION_NAME}'")
            conn.autocommit = True  # each sample its own statement: no snapshot held open
            version_num = conn.info.server_version
            query = wait_events_query(version_num)
        except BaseException:
            conn.close()
            raise
        if query is None:
            conn.close()
            return None
        sampler = cls(conn, query, version_num)
        sampler._thread.start()
        return sampler

    def _loop(self) -> None:
        next_at = time.monotonic()
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            taken_at = time.time()
            try:
                rows = self.conn.execute(self.query).fetchall()
            except psycopg.Error as error:
                self.failed += 1
                self.first_error = self.first_error or str(error).strip().splitlines()[0]
                if self.conn.closed:
                    return
            else:
                sample = parse_sample(taken_at, rows)
                self.samples.append([round(sample.taken_at, 3), sample.backends])
            next_at = max(next_at + SAMPLE_INTERVAL_S, time.monotonic())

    def close(self) -> dict:
        """Stop sampling; what the measurement keeps."""
        self._stop.set()
        self._thread.join()
        self.conn.close()
        return {
            "interval_s": SAMPLE_INTERVAL_S,
            "server_version_num": self.server_version_num,
            "samples": self.samples,
            "failed": self.failed,
            "first_error": self.first_error,
        }
