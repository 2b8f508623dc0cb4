"""Seed 002, "PostgreSQL in TPC-C": a server tuned step by step (a ladder of settings), tpmC per
step."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.kind import PublishedClaim, Reproduction, Study
from pgcachelab.studies.tpcc.claims import (
    ARTICLE_DATABASE_MB,
    ARTICLE_FIXED_COUNT_TPMC,
    ARTICLE_TIMED_TPMC,
    ARTICLE_TPMC,
    ARTICLE_TRANSACTIONS_PER_TERMINAL,
    ARTICLE_WAREHOUSES,
    BEST_CPU_BUSY_PCT,
    BINDS,
    BINDS_SHARE,
    IO,
    LIFTED,
    MEMORY,
    OS,
    RAISE_AGAIN,
    RAISE_TENFOLD,
    TPMC_PER_CORE,
    WAREHOUSE_MB,
    best_cpu_from_run,
    binds_from_run,
    disk_at_limit_from_run,
    fixed_count_from_run,
    per_core_from_run,
    rung_judge,
    warehouse_size_from_run,
)
from pgcachelab.studies.tpcc.ladder import ladder_advice

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
            qualifier="at least",
            kind="setup",
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
                qualifier="about",
                kind="setup" if rung.setup else "finding",
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
        PublishedClaim(
            SEED,
            "3, the third run: limitTxnsPerMin=50000",
            "at the 50,000 limit the server decides, held back by its disk: the CPU busier, "
            '"but limited by the disk, a great deal of iowait"',
            figure="the machine's CPU time waiting against its time working at the 50,000 "
            "step, below its limit (iowait / busy; on the emulated disk (iowait + idle) / busy)",
            rule='"direction": the 95% interval at least ×1 (the CPU waits more than it works)',
            article="tpmTOTAL 21,420 of 50,000; CPU up, a great deal of iowait (nmon)",
            judge=disk_at_limit_from_run,
            qualifier="direction",
        ),
        PublishedClaim(
            SEED,
            "4.2, the last run",
            "the highest tpmC comes with the CPU 85-95% busy; above that it falls",
            figure="the machine's CPU busy (user + system) at the step with the highest tpmC",
            rule=f'"range": the 95% interval within {BEST_CPU_BUSY_PCT[0]:.0f}-'
            f"{BEST_CPU_BUSY_PCT[1]:.0f}%",
            article="CPU 95% busy at 193,150 tpmC; 85-95% gives the higher values",
            judge=best_cpu_from_run,
            qualifier="range",
        ),
        PublishedClaim(
            SEED,
            "4.2, the last run",
            "a logical core can ideally do 10,000 tpmC",
            figure="tpmC of the fully tuned step (the last timed one free of its limit) a core",
            rule=f'"near" {TPMC_PER_CORE:,}: the 95% interval within '
            f"{TPMC_PER_CORE / 2**0.5:,.0f}-{TPMC_PER_CORE * 2**0.5:,.0f} tpmC a core",
            article=f"{ARTICLE_TPMC:,.0f} tpmC on 16 logical cores: "
            f"{ARTICLE_TPMC / 16:,.0f} a core",
            judge=per_core_from_run,
            qualifier="near",
        ),
        PublishedClaim(
            SEED,
            "3, props.pg: warehouses",
            "each warehouse is about 100 MB",
            figure="the database's size after each measurement over its warehouses",
            rule=f'"near" {WAREHOUSE_MB} MB: the 95% interval within '
            f"{WAREHOUSE_MB / 2**0.5:.0f}-{WAREHOUSE_MB * 2**0.5:.0f} MB",
            article=f"{ARTICLE_DATABASE_MB:,} MB for {ARTICLE_WAREHOUSES} warehouses after the "
            f"load ({ARTICLE_DATABASE_MB / ARTICLE_WAREHOUSES:.0f} MB each)",
            judge=warehouse_size_from_run,
            qualifier="near",
        ),
        PublishedClaim(
            SEED,
            "3, the fourth run: runTxnsPerTerminal=100",
            f"a run of runTxnsPerTerminal = {ARTICLE_TRANSACTIONS_PER_TERMINAL} is quick and "
            "its tpmC is not much different from the timed run's",
            figure="tpmC of the fixed-count step against the timed step before it",
            rule='"same": the 95% interval within ×0.909-×1.1',
            article=f"{ARTICLE_FIXED_COUNT_TPMC:,.1f} against {ARTICLE_TIMED_TPMC:,.2f} tpmC "
            f"(×{ARTICLE_FIXED_COUNT_TPMC / ARTICLE_TIMED_TPMC:.2f}), 6,400 transactions in 18 s",
            judge=fixed_count_from_run,
            qualifier="same",
        ),
    )

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        from pgcachelab.studies.tpcc.report import tpcc_section

        return [tpcc_section(data, out_dir)]

    def advice(self, data: RunData) -> list[Advice]:
        return ladder_advice(data)

    def seed_chart(self, data: RunData, out_dir: Path) -> Path | None:
        from pgcachelab.studies.tpcc.ladder import step_samples
        from pgcachelab.studies.tpcc.seed_chart import ladder_beside_article
        from pgcachelab.studies.tpcc.step_results import ladder_results

        return ladder_beside_article(ladder_results(step_samples(data)), out_dir)
