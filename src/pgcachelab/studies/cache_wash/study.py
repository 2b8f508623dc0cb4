"""Seed 000, "Cache can be different": index lookups before and after a sequential scan, over
shared_buffers, with and without huge pages."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.cache_wash import claims as c
from pgcachelab.studies.cache_wash.advice import cache_wash_advice
from pgcachelab.studies.cache_wash.figures import SEED_HUGE_PAGES_RATIO, SEED_WARMUP_PER_INDEX_PAGE
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
            "results: the second index lookup (idx2)",
            "if the file system's cache is used (PostgreSQL's cache set small), the sequential "
            "read of the table washes the index out of the cache, which the long repeated index "
            "lookup shows",
            figure=f"{c.WASHED}, per huge pages value, after a warm-up of the seed's ~"
            f"{SEED_WARMUP_PER_INDEX_PAGE:g} lookups per index page (the geometric mean of "
            "the repetitions' ratios of median lookups)",
            rule=f"{c.rule(c.WASHED_WORD, c.WASHED)}, with huge pages on and off; decided only "
            f"at the seed's warm-up, {c.SEED_WARMUP_BAND[0]:.2g}–{c.SEED_WARMUP_BAND[1]:.2g} "
            "lookups per index page",
            article='idx2 "long" after the scan with a small PostgreSQL cache; expected a '
            'difference "noticeable" (заметна) with the OS cache and "minimal" with '
            "PostgreSQL's (16 GB RAM, shared_buffers from 128kB, ~1M warm-up lookups)",
            judge=c.scan_washes_index,
            qualifier=c.WASHED_WORD,
        ),
        PublishedClaim(
            SEED,
            "results: the second index lookup (idx2)",
            "this effect disappears roughly when PostgreSQL's cache becomes large enough for the "
            "index to be kept in it rather than in the file system's cache, and the chart "
            "becomes similar to the one before the sequential read",
            figure=f"{c.KEPT}, per huge pages value (every one must hold)",
            rule=f"{c.rule(c.KEPT_WORD, c.KEPT)} at every such shared_buffers, huge pages on "
            "and off; wholly below ×0.91, idx1 itself was cold: not shown",
            article='"about 0.08 ms with HugePages and 0.12 ms without", as before the scan',
            judge=c.shared_buffers_keeps_index,
            qualifier=c.KEPT_WORD,
        ),
        PublishedClaim(
            SEED,
            "results: the first index lookup (idx1)",
            "as PostgreSQL's cache grows, only with HugePages does PostgreSQL's cache begin to "
            "win slightly over the file system's cache",
            figure=f"{c.HUGE_PAGES_LOOKUPS}: PostgreSQL's cache against the OS cache (Welch's "
            "interval on the logs of the repetitions' median lookups)",
            rule=c.rule(c.HUGE_PAGES_LOOKUPS_WORD, c.HUGE_PAGES_LOOKUPS),
            article='"begins to win slightly" (незначительно), no figure (box plots of 251 '
            "iterations, shared_buffers up to 14GB of 16 GB); once the index is kept, "
            f"~0.08 ms with HugePages against ~0.12 ms without (×{SEED_HUGE_PAGES_RATIO:.2f})",
            judge=c.huge_pages_lookups,
            qualifier=c.HUGE_PAGES_LOOKUPS_WORD,
        ),
        PublishedClaim(
            SEED,
            "results: the first index lookup (idx1)",
            "as PostgreSQL's cache grows the chart splits in two: without HugePages the speed "
            "of the query, a simple index lookup, falls",
            figure=f"{c.NO_HUGE_PAGES_LOOKUPS} (Welch's interval on the logs of the "
            "repetitions' median lookups)",
            rule=c.rule(c.NO_HUGE_PAGES_LOOKUPS_WORD, c.NO_HUGE_PAGES_LOOKUPS),
            article='"falls" (падает), no figure (box plots, shared_buffers 128kB to 14GB)',
            judge=c.lookups_slow_without_huge_pages,
            qualifier=c.NO_HUGE_PAGES_LOOKUPS_WORD,
        ),
        PublishedClaim(
            SEED,
            "results: the sequential scan (seq)",
            "over most of the chart using HugePages slows the query (the sequential read of "
            "the table)",
            figure=f"{c.SCAN_MOST} (the geometric mean of the pairs' ratios)",
            rule=c.rule(c.SCAN_MOST_WORD, c.SCAN_MOST),
            article='"slows" (замедляет) over most of the chart, no figure; "interesting '
            '(and incomprehensible to me)"',
            judge=c.huge_pages_slow_scan,
            qualifier=c.SCAN_MOST_WORD,
        ),
        PublishedClaim(
            SEED,
            "results: the sequential scan (seq)",
            "only at very large values of PostgreSQL's cache does the win of HugePages on the "
            "scan become noticeable",
            figure=f"{c.SCAN_LARGE}, paired by repetition",
            rule=c.rule(c.SCAN_LARGE_WORD, c.SCAN_LARGE),
            article='the win "becomes noticeable" (становится заметен) only at the largest '
            "shared_buffers (up to 14GB of 16 GB), no figure",
            judge=c.huge_pages_scan_large,
            qualifier=c.SCAN_LARGE_WORD,
        ),
        PublishedClaim(
            SEED,
            "results: the sequential scan (seq)",
            "the query speeds up noticeably if PostgreSQL's cache is larger than the file "
            "system's cache",
            figure=f"{c.SCAN_SPEEDS_UP}, per huge pages value (Welch's interval on the logs of "
            "the scans' times)",
            rule=f"{c.rule(c.SCAN_SPEEDS_UP_WORD, c.SCAN_SPEEDS_UP)}, huge pages on and off",
            article='"a noticeable speed-up" (заметно ускорение), no figure',
            judge=c.larger_shared_buffers_speeds_scan,
            qualifier=c.SCAN_SPEEDS_UP_WORD,
        ),
        PublishedClaim(
            SEED,
            "conclusions",
            "do not trust the unconfirmed ancient recommendation that PostgreSQL's cache be a "
            "quarter of RAM: with its own cache it works noticeably better",
            figure=f"{c.QUARTER}, per huge pages value: the seed's whole test (100 lookups, the "
            "scan, 100 lookups; Welch's interval on the logs)",
            rule=f"{c.rule(c.QUARTER_WORD, c.QUARTER)}, huge pages on and off",
            article='"works noticeably better" (заметно лучше) with its own cache, no figure '
            "(4GB against up to 14GB of 16 GB)",
            judge=c.own_cache_beats_quarter,
            qualifier=c.QUARTER_WORD,
        ),
        PublishedClaim(
            SEED,
            "description of the experiment",
            'the experiment showed that pg_prewarm, although it fills the cache, "warms" it '
            "insufficiently, so after it the author warms further with pgbench",
            figure=f"{c.PREWARM}, per huge pages value (the geometric mean of the repetitions' "
            "ratios of median lookups)",
            rule=f"{c.rule(c.PREWARM_WORD, c.PREWARM)}, huge pages on and off",
            article='"fills the cache but warms insufficiently" (заполняет кеш, но прогревает '
            "недостаточно), no figure; hence 100 s of pgbench lookups after pg_prewarm",
            judge=c.prewarm_does_not_warm,
            qualifier=c.PREWARM_WORD,
        ),
    )

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        # matplotlib only where a report is drawn: advise reads the advice alone
        from pgcachelab.studies.cache_wash.report import cache_wash_section

        return [cache_wash_section(data, out_dir)]

    def advice(self, data: RunData) -> list[Advice]:
        return cache_wash_advice(data)

    def text_table(self, data: RunData) -> str | None:
        from pgcachelab.studies.cache_wash.table import cache_wash_table

        return cache_wash_table(data)
