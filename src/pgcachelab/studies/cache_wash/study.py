"""Seed 000, "Cache can be different": index lookups before and after a sequential scan, over
shared_buffers, with and without huge pages."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.cache_wash.advice import cache_wash_advice
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
            "results",
            "with a small shared_buffers the sequential scan washes the index out of the OS "
            "cache: idx2 is much slower than idx1",
        ),
        PublishedClaim(
            SEED,
            "results",
            "once shared_buffers holds the index, idx2 ≈ idx1 (about 0.08 ms with huge pages, "
            "0.12 ms without)",
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
