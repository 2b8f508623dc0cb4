"""Seed 001, "OLTP performance since PostgreSQL 8.3": pgbench against every major version, with
an A/A control (one version on two clusters) that says whether the run can tell versions apart."""

from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData, load_run
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore
from pgcachelab.studies.kind import PublishedClaim, Reproduction, Study
from pgcachelab.studies.versions.advice import control_advice, version_advice
from pgcachelab.studies.versions.claims import CLAIMS, claim_judge

SEED = "001_85c58d99413b8c4f.txt"


def previous_run(store: ResultStore, data: RunData) -> RunData | None:
    """The newest finished run of the same spec (by name) before this one, to check that the
    two agree (issue 19); None when there is none."""
    earlier = [
        run
        for run in store.runs()
        if run.name == data.run.name
        and run.status == "done"
        and run.created_at < data.run.created_at
        and run.run_id != data.run.run_id
    ]
    return load_run(store, earlier[-1].run_id) if earlier else None


class Versions(Study):
    name = "versions"
    swept_key = "version"
    title = "did a release change throughput: each major version against the one before"
    seed = "001"
    headline_figure = "tps-by-version"
    reproduction = Reproduction(quick="archaeology-quick", full="archaeology")
    claims = tuple(
        PublishedClaim(
            SEED,
            claim.where,
            claim.words,
            figure=claim.figure,
            rule=claim.rule,
            article=claim.article,
            judge=claim_judge(claim),
            qualifier=claim.qualifier,
        )
        for claim in CLAIMS
    )

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        from pgcachelab.studies.versions.report import versions_section

        return [versions_section(data, out_dir, previous_run(store, data))]

    def advice(self, data: RunData) -> list[Advice]:
        control = control_advice(data)
        advice = version_advice(data)
        if control and control[0].caveats:  # untrustworthy: every version verdict says so
            for item in advice:
                item.caveats.append(f"the run's A/A control says: {control[0].evidence}")
        return control + advice
