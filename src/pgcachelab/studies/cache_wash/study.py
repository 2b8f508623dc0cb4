"""Seed 000, "Cache can be different": index lookups before and after a sequential scan, over
shared_buffers, with and without huge pages."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.cache_split_claims import SEED_HUGE_PAGES_RATIO
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.cache_wash.advice import cache_wash_advice
from pgcachelab.studies.cache_wash.claims import (
    KEPT_RATIO,
    WASHED_RATIO,
    huge_pages_lookups,
    huge_pages_scan,
    larger_shared_buffers_speeds_scan,
    scan_washes_index,
    shared_buffers_keeps_index,
)
from pgcachelab.studies.kind import PublishedClaim, Reproduction, Study

SEED = "000_80b0f9f99e057656.txt"


class CacheWash(Study):
    name = "cache-wash"
    title = "does the scan wash the index out of the OS cache, and from which shared_buffers not"
    seed = "000"
    workload = "cache-wash"
    spec_table = "cache_wash"
    headline_figure = "cache-wash-seed-idx2"
    reproduction = Reproduction(quick="cache-split-quick", full="cache-split")
    claims = (
        PublishedClaim(
            SEED,
            "results: the second index lookup",
            "with a small shared_buffers the sequential scan washes the index out of the OS "
            "cache: the repeated lookup (idx2) is much slower than the first (idx1)",
            figure="idx2/idx1 at the smallest shared_buffers below the index's size, the "
            "geometric mean of the repetitions",
            rule=f"idx2/idx1 at least ×{WASHED_RATIO:g}, its whole 95% interval at or above it "
            "(the report's survival rule)",
            article="idx2 far slower than idx1 while the cache is the OS's (16 GB RAM, "
            "shared_buffers from 128kB)",
            judge=scan_washes_index,
        ),
        PublishedClaim(
            SEED,
            "results: the second index lookup",
            "once shared_buffers holds the index the effect disappears: idx2 ≈ idx1",
            figure="idx2/idx1 at each shared_buffers larger than the index (the one that breaks "
            "the claim is quoted)",
            rule=f"idx2/idx1 at most ×{KEPT_RATIO:g} at every such shared_buffers, by its whole "
            "95% interval",
            article="about 0.08 ms with huge pages and 0.12 ms without, as before the scan",
            judge=shared_buffers_keeps_index,
        ),
        PublishedClaim(
            SEED,
            "results: the first index lookup",
            "as shared_buffers grows, only with huge pages does PostgreSQL's cache beat the OS "
            "cache on index lookups",
            figure="idx1 and idx2 latency with huge pages on / off at the largest shared_buffers "
            "measured both ways, paired by repetition",
            rule="on/off below 1 by its whole 95% interval; contradicted when above 1, or "
            f"wholly above the seed's ×{SEED_HUGE_PAGES_RATIO:.2f}",
            article="~0.08 ms with huge pages against ~0.12 ms without (×0.67)",
            judge=huge_pages_lookups,
        ),
        PublishedClaim(
            SEED,
            "results: the sequential scan",
            "huge pages slow the scan over most of the chart; only at very large shared_buffers "
            "does their win become noticeable",
            figure="the scan's time with huge pages on / off at the largest shared_buffers "
            "measured both ways, paired by repetition",
            rule="on/off at most 1 by its whole 95% interval",
            article="a noticeable win only at the largest shared_buffers (up to 14GB of 16 GB)",
            judge=huge_pages_scan,
        ),
        PublishedClaim(
            SEED,
            "results: the sequential scan",
            "the scan speeds up noticeably once PostgreSQL's cache is larger than the OS cache",
            figure="the scan's time at the largest shared_buffers / at the smallest, ratio of "
            "geometric means (Welch's interval on the logs)",
            rule="below 1 by its whole 95% interval; contradicted when wholly above 1",
            article="faster scans at large shared_buffers",
            judge=larger_shared_buffers_speeds_scan,
        ),
    )

    def recognises(self, data: RunData) -> bool:
        return any(m.metrics.get("cache_wash") for r in data.points for m in r.ok)

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        # matplotlib only where a report is drawn: advise reads the advice alone
        from pgcachelab.studies.cache_wash.report import cache_wash_section

        return [cache_wash_section(data, out_dir)]

    def advice(self, data: RunData) -> list[Advice]:
        return cache_wash_advice(data)

    def text_table(self, data: RunData) -> str | None:
        from pgcachelab.studies.cache_wash.table import cache_wash_table

        return cache_wash_table(data)
