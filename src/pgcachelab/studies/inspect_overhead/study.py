"""Seed 003, "less expensive pg_buffercache on big shmem": how far tps sags while something
reads shared_buffers' contents once a second, per method and lock mode."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.inspect_overhead.advice import overhead_advice
from pgcachelab.studies.inspect_overhead.claims import (
    LOSS_PERCENT,
    SAG_PERCENT,
    consistent_read_sags,
    fast_error,
    lighter_modes_sag_less,
)
from pgcachelab.studies.inspect_overhead.sags import is_overhead_run
from pgcachelab.studies.kind import PublishedClaim, Reproduction, Study

SEED = "003_493116ef3620a22a.txt"


class InspectOverhead(Study):
    name = "inspect-overhead"
    title = "what looking inside shared_buffers costs the workload, per method"
    seed = "003"
    spec_table = "inspect"
    headline_figure = "inspect-snapshot-time"
    reproduction = Reproduction(quick="inspect-overhead-quick", full="inspect-overhead")
    claims = (
        PublishedClaim(
            SEED,
            "problem description; testing the implementation",
            "pg_buffercache's consistent read (an exclusive lock on all of shared buffers) "
            "greatly affects performance: tps sags while it runs",
            figure="tps sag of the read that takes every buffer-mapping partition lock "
            "(pg_cachelab snapshot, or pg_buffercache before PostgreSQL 10) against no polling, "
            "at the largest shared_buffers measured",
            rule=f"a sag of at least {SAG_PERCENT:g}% of tps, its whole 95% interval at or "
            "above it",
            article="no figure: pgbench -c 250 -s 1000 on 144 CPUs with 200GB of "
            "shared_buffers, tps compared while each mode runs",
            judge=consistent_read_sags,
        ),
        PublishedClaim(
            SEED,
            "results of testing",
            "semiconsistent (one partition lock at a time) affects the system less than "
            "consistent; nonconsistent (no locks) does not noticeably affect it",
            figure="the consistent read's sag minus each lighter mode's (semiconsistent, fast), "
            "percentage points, under the same shared_buffers",
            rule="above 0 by the whole 95% interval (Welch's) for every lighter mode measured",
            article="semiconsistent: less effect than consistent; nonconsistent: no noticeable "
            "effect",
            judge=lighter_modes_sag_less,
        ),
        PublishedClaim(
            SEED,
            "results of testing",
            "the nonconsistent mode's maximum loss of accuracy was less than 3%",
            figure="the share of shared_buffers fast counts under the wrong relation, against "
            "exact snapshots taken just before and after it, mean over the trials",
            rule=f"below {LOSS_PERCENT:g}% by its whole 95% interval, and its worst trial too",
            article="< 3% lost of snapshot consistency",
            judge=fast_error,
        ),
    )

    shows_cache_composition = False
    needs_extension = True

    def recognises(self, data: RunData) -> bool:
        return is_overhead_run(data)

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        from pgcachelab.studies.inspect_overhead.report import inspect_overhead_section

        return [inspect_overhead_section(data, out_dir)]

    def advice(self, data: RunData) -> list[Advice]:
        return overhead_advice(data)
