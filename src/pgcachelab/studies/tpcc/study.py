"""Seed 002, "PostgreSQL in TPC-C": a server tuned step by step (a ladder of settings), tpmC per
step."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.kind import PublishedClaim, Reproduction, Study
from pgcachelab.studies.tpcc.claims import (
    BINDS,
    BINDS_SHARE,
    IO,
    LIFTED,
    MEMORY,
    OS,
    RAISE_AGAIN,
    RAISE_TENFOLD,
    binds_from_run,
    rung_judge,
)
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
            "3 (the test procedure), the first run: limitTxnsPerMin=300",
            BINDS.words,
            figure="tpmTOTAL as a share of the first limited step's limit",
            rule=f"at least {BINDS_SHARE:.0%} of the limit (95% interval of the mean share)",
            article="tpmTOTAL 250 of 300 (83%): 111 tpmC",
            judge=binds_from_run,
        ),
        *(
            PublishedClaim(
                SEED,
                where,
                rung.words,
                figure="tpmC of the rung's step against the step before it",
                rule=rung.rule,
                article=rung.article,
                judge=rung_judge(rung),
            )
            for rung, where in (
                (RAISE_TENFOLD, "3, the second run: limitTxnsPerMin=3000"),
                (RAISE_AGAIN, "3, the third run: limitTxnsPerMin=50000"),
                (IO, "4.1.1 IO tuning"),
                (MEMORY, "4.1.2 memory tuning"),
                (LIFTED, "4.1.2, the limit raised to 500,000"),
                (OS, "4.2 hardware: huge pages, NUMA, THP, IO scheduler, read-ahead, sysctl"),
            )
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
