"""Seed 003, "less expensive pg_buffercache on big shmem": how far tps sags while something
reads shared_buffers' contents once a second, per method and lock mode."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.inspect_overhead.advice import overhead_advice
from pgcachelab.studies.inspect_overhead.claims import (
    APPROACHING,
    FASTER,
    GREATLY,
    LESS,
    LOSS_PERCENT,
    NOT_NOTICEABLY,
    SLOWER,
    consistent_read_sags,
    fast_error,
    fast_not_noticeable,
    lighter_modes_sag_less,
    nonconsistent_faster,
    semiconsistent_approaches_fast,
    semiconsistent_slower,
)
from pgcachelab.studies.inspect_overhead.sags import KEY
from pgcachelab.studies.kind import SETUP_KIND, PublishedClaim, Reproduction, Study

SEED = "003_493116ef3620a22a.txt"


class InspectOverhead(Study):
    name = "inspect-overhead"
    swept_key = KEY
    title = "what looking inside shared_buffers costs the workload, per method"
    seed = "003"
    spec_table = "inspect"
    headline_figure = "inspect-snapshot-time"
    reproduction = Reproduction(quick="inspect-overhead-quick", full="inspect-overhead")
    claims = (
        PublishedClaim(
            SEED,
            "problem description; testing the implementation",
            'pg_buffercache v1.1 and prior "takes an exclusive lock on all shared buffers, '
            'which greatly affects system performance"',
            figure="tps without polling / tps while polling with the read that takes every "
            "buffer-mapping partition lock (pg_cachelab snapshot, or pg_buffercache before "
            "PostgreSQL 10), alternating windows, at the largest shared_buffers measured (the "
            "seed's: 200GB)",
            rule='"greatly": the whole 95% interval at or above ×1.5 (a sag of a third)',
            article='no figure ("greatly"): pgbench -c 250 -s 1000 -T 200 on 144 CPUs with '
            "200GB of shared_buffers, tps compared while each mode runs",
            judge=consistent_read_sags,
            qualifier=GREATLY,
        ),
        PublishedClaim(
            SEED,
            "results of testing; what works",
            'semiconsistent "made less affects on system compared to consistent", and '
            'nonconsistent "doesn`t noticeably affects on the systems" where consistent '
            "slows it: both lighter modes slow the server less than the consistent read",
            figure="tps while each lighter mode (semiconsistent, fast) polls / tps while the "
            "consistent read polls, each against its unpolled windows, under the same "
            "shared_buffers (Welch's interval on the logs)",
            rule='"direction": the whole 95% interval above ×1 for every lighter mode (one '
            "combining rule: reproduced only when both are)",
            article='no figure: "less affects" (semiconsistent)',
            judge=lighter_modes_sag_less,
            qualifier=LESS,
        ),
        PublishedClaim(
            SEED,
            "results of testing: nonconsistent",
            'nonconsistent "doesn`t noticeably affects on the systems"',
            figure="tps without polling / tps while polling with pg_cachelab fast, alternating "
            "windows, at the largest shared_buffers measured (the seed's: 200GB)",
            rule='"same": the whole 95% interval within ×0.909–×1.1',
            article='no figure ("doesn`t noticeably")',
            judge=fast_not_noticeable,
            qualifier=NOT_NOTICEABLY,
        ),
        PublishedClaim(
            SEED,
            "results of testing: nonconsistent",
            'nonconsistent is "10% faster then consistent method"',
            figure="the time of one read of shared_buffers in snapshot mode (the seed's "
            "consistent) / in fast mode, the two exact references around each fast trial of "
            "the accuracy rounds (moments apart, same load), geometric mean over the rounds, "
            "at the largest shared_buffers measured (the seed's: 200GB)",
            rule=f'"about ×{FASTER:g}": the whole 95% interval within ×1.05–×1.15',
            article="10% faster (×1.1)",
            judge=nonconsistent_faster,
            qualifier="about",
        ),
        PublishedClaim(
            SEED,
            "results of testing: semiconsistent",
            'semiconsistent is "5 time slower then nonconsistent"',
            figure="the time of one read of shared_buffers in semiconsistent mode / in fast "
            "mode, in the same accuracy round (moments apart, same load), geometric mean over "
            "the rounds, at the largest shared_buffers measured (the seed's: 200GB)",
            rule=f'"about ×{SLOWER:g}": the whole 95% interval within ×2.24–×11.2',
            article="5 times slower (×5)",
            judge=semiconsistent_slower,
            qualifier="about",
            # the ratio is the lab's own semiconsistent design (128 passes), not the seed's
            kind=SETUP_KIND,
        ),
        PublishedClaim(
            SEED,
            "results of testing: overall results",
            '"Semiconsistent show results approaching to nonconsistent on SELECTONLY '
            "queries\" (the seed's test compares how tps sags: its results are the sags)",
            figure="tps while fast polls / tps while semiconsistent polls, each against its "
            "unpolled windows, pgbench select-only, at the largest shared_buffers measured "
            "(Welch's interval on the logs)",
            rule='"same": the whole 95% interval within ×0.909–×1.1',
            article='no figure ("approaching")',
            judge=semiconsistent_approaches_fast,
            qualifier=APPROACHING,
        ),
        PublishedClaim(
            SEED,
            "results of testing: nonconsistent",
            'nonconsistent: "the maximum loss of accuracy was less then 3%"',
            figure="the share of shared_buffers fast counts under the wrong relation, against "
            "exact snapshots taken just before and after it, mean over the trials",
            rule=f'"up to {LOSS_PERCENT:g}%": the whole 95% interval at or below it, and '
            "the worst trial below it too (the seed's figure is its maximum)",
            article='< 3% ("less then 3%", its maximum)',
            judge=fast_error,
            qualifier="up to",
        ),
    )

    shows_cache_composition = False
    needs_extension = True

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        from pgcachelab.studies.inspect_overhead.report import inspect_overhead_section

        return [inspect_overhead_section(data, out_dir)]

    def advice(self, data: RunData) -> list[Advice]:
        return overhead_advice(data)
