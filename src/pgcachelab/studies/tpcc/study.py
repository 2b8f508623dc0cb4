"""Seed 002, "PostgreSQL in TPC-C": a server tuned step by step (a ladder of settings), tpmC per
step."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.kind import PublishedClaim, Reproduction, Study
from pgcachelab.studies.tpcc.ladder import is_tpcc_run, ladder_advice

SEED = "002_b90071d05c712a9c.txt"


class Tpcc(Study):
    name = "tpcc"
    title = "how far does each tuning step take TPC-C's tpmC"
    seed = "002"
    workload = "tpcc"
    spec_table = "tpcc"
    headline_figure = "tpcc_tpmc_per_step"
    reproduction = Reproduction(quick="tpcc-ladder-quick", full="tpcc-ladder")
    claims = (
        PublishedClaim(
            SEED,
            "the ladder",
            "a rate limit silently caps the first runs (111 tpmC); raising it, then the IO "
            "settings, then memory, then removing the limit, then the OS settings each raise "
            "tpmC (1,330 → 10,140 → 15,803 → 22,656 → 180,732 → 193,150)",
        ),
    )

    def recognises(self, data: RunData) -> bool:
        return is_tpcc_run(data)

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        from pgcachelab.studies.tpcc.report import tpcc_section

        return [tpcc_section(data, out_dir)]

    def advice(self, data: RunData) -> list[Advice]:
        return ladder_advice(data)

    def seed_chart(self, data: RunData, out_dir: Path) -> Path | None:
        from pgcachelab.analysis.ladder import ladder_results
        from pgcachelab.studies.tpcc.ladder import step_samples
        from pgcachelab.studies.tpcc.seed_chart import ladder_beside_article

        return ladder_beside_article(ladder_results(step_samples(data)), out_dir)
