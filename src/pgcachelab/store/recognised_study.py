"""The study of a run stored before runs recorded theirs (SQLite schema 3, PostgreSQL 6), found
once by the migration that adds the column, as the lab recognised it until then.

Until then each reader guessed a run's kind from what it measured and swept, asking the studies
in the registry's order: cache-wash if a counted repetition measured cache_wash lookups, tpcc
if one ran TPC-C, inspect-overhead if the run swept inspect_method, versions if it swept the
version, else big-cache. An old run keeps exactly the study its reports showed; a new run's is
chosen from its spec (spec/study.py). Nothing but the migrations uses this.
"""

from collections.abc import Iterable

from pgcachelab.store.records import Measurement, StoredPoint, from_json
from pgcachelab.store.sql_store import SqlResultStore


def recognised_study(
    environment: object, points: Iterable[StoredPoint], measurements: Iterable[Measurement]
) -> str:
    """The study the registry recognised the run as, from its points and measurements."""
    # A report counted the repetitions after the warm-up ones (analysis/run_data.py): so did
    # the recognition. Runs stored before the schedule was recorded had no warm-up.
    schedule = environment.get("schedule") if isinstance(environment, dict) else None
    warmup = (schedule or {}).get("warmup_repetitions") or 0
    counted = [m.metrics for m in measurements if m.status == "ok" and m.repetition >= warmup]
    if any(metrics.get("cache_wash") for metrics in counted):
        return "cache-wash"
    if any("tpcc" in metrics for metrics in counted):
        return "tpcc"
    swept = {key for point in points for key in point.swept}
    if "inspect_method" in swept:
        return "inspect-overhead"
    if "version" in swept:
        return "versions"
    return "big-cache"


def record_recognised_studies(store: SqlResultStore) -> None:
    """Give every run without a study (the migration's new column, '') the one it was
    recognised as; in the migration's transaction, on the store's own statements."""
    found = store._execute("select run_id, environment from runs where study = ''").fetchall()
    for run_id, environment in found:
        study = recognised_study(
            from_json(environment) if environment else {},
            store.points(run_id),
            # every figure, decoded here: a pick by the database's JSON functions fails on a
            # NaN, and in PostgreSQL that would abort the migration's transaction
            store.measurements(run_id),
        )
        store._execute("update runs set study = ? where run_id = ?", (study, run_id))
