"""Seed 003, "less expensive pg_buffercache on big shmem": how far tps sags while something
reads shared_buffers' contents once a second, per method and lock mode."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.inspect_overhead.advice import overhead_advice
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
            "the proposal",
            "the consistent read of pg_buffercache (every partition lock) makes the database "
            "slower; semiconsistent (one partition at a time) and nonconsistent (no locks) "
            "sag less",
        ),
        PublishedClaim(SEED, "the proposal", "the nonconsistent mode's error is below 3%"),
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
