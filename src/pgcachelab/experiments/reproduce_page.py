"""`reproduce`'s answer: each study's published claims graded on this machine, as one HTML page
(a summary table, then per study its chart and claims, linked to the full reports), as text for
the terminal, and as JSON."""

import shutil
from pathlib import Path

from markupsafe import Markup

from pgcachelab.analysis.claims import (
    CANNOT,
    CONTRADICTED,
    NOISE,
    NOT_MEASURED,
    REPRODUCED,
    SETUP,
)
from pgcachelab.analysis.qualifiers import table_rows
from pgcachelab.analysis.run_data import load_run
from pgcachelab.experiments.reproduce import StudyResult
from pgcachelab.report.render import Row, render, table
from pgcachelab.report.tables import format_table
from pgcachelab.store.records import ResultStore

VERDICT_CLASS = {
    REPRODUCED: "reproduced",
    CONTRADICTED: "contradicted",
    NOISE: "noise",
    CANNOT: "cannot",
    NOT_MEASURED: "unmeasured",
    SETUP: "setup",
}
SUMMARY_HEAD = [
    "study",
    "claim (the article's words)",
    "verdict",
    "our figure",
    "the article's",
    "class",
]
CLASS_WORDS = {"finding": "a finding", "setup": "follows from the setup"}


def _class(claim_result) -> str:
    return CLASS_WORDS[claim_result.claim.class_of(claim_result.verdict)]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def _status(result: StudyResult) -> str:
    if result.reason:
        return f"did not finish: {result.reason}"
    took = _minutes(result.run_seconds if result.run_seconds is not None else result.seconds)
    if result.reused:
        return f"run {result.run_id} ({took}), read again: a finished run of the same spec"
    return f"run {result.run_id}, measured in {took}"


def busy_warning(result: StudyResult) -> str | None:
    """What other work on the machine may have done to the study's figures, or None."""
    if not result.machine_was_busy:
        return None
    moments = " and ".join(
        f"{share:.0f}% in use {when}"
        for share, when in (
            (result.other_work_before_pct, "just before it"),
            (result.other_work_after_pct, "just after"),
        )
        if share is not None
    )
    return (
        f"WARNING: other work kept the machine busy around this run (its CPU {moments}, while"
        " the lab ran nothing): its figures, and so its verdicts, may show that work as much"
        " as PostgreSQL; run it again on a quiet machine (reproduce --again)"
    )


def summary_rows(results: list[StudyResult]) -> list[list[str]]:
    return [
        [
            f"{r.study.seed} {r.study.name}",
            c.claim.words,
            c.verdict.outcome,
            c.verdict.figure.text() if c.verdict.figure else c.verdict.reason,
            c.claim.article or "-",
            _class(c),
        ]
        for r in results
        for c in r.claims
    ]


def render_text(results: list[StudyResult]) -> str:
    lines = []
    for r in results:
        lines.append(f"{r.study.seed} {r.study.name} ({r.spec}): {_status(r)}")
        if busy := busy_warning(r):
            lines.append(f"  {busy}")
        for c in r.claims:
            lines.append(f"  - {c.verdict.outcome} ({_class(c)}): {c.claim.words}")
            lines.append(f"      the article: {c.claim.article or '-'}")
            lines.append(f"      here: {c.verdict.text()}")
    counts = {outcome: 0 for outcome in VERDICT_CLASS}
    for r in results:
        for c in r.claims:
            counts[c.verdict.outcome] += 1
    lines.append("")
    lines.append(format_table(list(counts), [list(map(str, counts.values()))]))
    return "\n".join(lines)


def as_dict(results: list[StudyResult], machine: dict) -> dict:
    return {
        "machine": machine,
        "studies": [
            {
                "study": r.study.name,
                "seed": r.study.seed,
                "spec": r.spec,
                "run_id": r.run_id,
                "seconds": round(r.seconds, 1),
                "run_seconds": None if r.run_seconds is None else round(r.run_seconds, 1),
                "reused": r.reused,
                "reason": r.reason or None,
                "other_work_pct": {
                    "before": r.other_work_before_pct,
                    "after": r.other_work_after_pct,
                    "busy": r.machine_was_busy,
                },
                "claims": [
                    {
                        "words": c.claim.words,
                        "source": f"{c.claim.seed}: {c.claim.where}",
                        "rule": c.claim.rule,
                        "qualifier": c.claim.qualifier or None,
                        "class": c.claim.class_of(c.verdict),
                        "article": c.claim.article,
                        "verdict": c.verdict.outcome,
                        "reason": c.verdict.reason,
                        "figure": None
                        if c.verdict.figure is None
                        else {
                            "what": c.verdict.figure.what,
                            "value": c.verdict.figure.value,
                            "ci_low": c.verdict.figure.ci_low,
                            "ci_high": c.verdict.figure.ci_high,
                            "repetitions": c.verdict.figure.repetitions,
                            "unit": c.verdict.figure.unit,
                        },
                    }
                    for c in r.claims
                ],
            }
            for r in results
        ],
    }


def _headline(result: StudyResult, reports_dir: Path, out_dir: Path) -> str | None:
    """The study's headline chart from its run's report, copied beside the page."""
    name = result.study.headline_figure
    if result.run_id is None or name is None:
        return None
    source = reports_dir / result.run_id / f"{name}.png"
    if not source.is_file():
        return None
    target = out_dir / f"{result.study.name}-{name}.png"
    shutil.copyfile(source, target)
    return target.name


def _seed_chart(result: StudyResult, store: ResultStore, out_dir: Path) -> str | None:
    if result.run_id is None:
        return None
    chart = result.study.seed_chart(load_run(store, result.run_id), out_dir)
    return chart.name if chart else None


def render_html(
    results: list[StudyResult],
    machine: dict,
    store: ResultStore,
    reports_dir: Path,
    out_dir: Path,
) -> Path:
    """The page at out_dir/index.html; the runs' reports are under reports_dir/RUN."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [Row(cells, VERDICT_CLASS[cells[2]]) for cells in summary_rows(results)]
    used = {c.claim.qualifier for r in results for c in r.claims if c.claim.qualifier}
    words = [row for row in table_rows() if row[0] in used]
    studies = []
    for r in results:
        report = reports_dir / (r.run_id or "") / "index.html"
        claims = [
            Row(
                [
                    c.claim.words,
                    f"{c.claim.seed}, {c.claim.where}",
                    c.claim.rule or "-",
                    c.verdict.outcome,
                    c.verdict.text(),
                    c.claim.article or "-",
                    _class(c),
                ],
                VERDICT_CLASS[c.verdict.outcome],
            )
            for c in r.claims
        ]
        studies.append(
            {
                "name": r.study.name,
                "seed": r.study.seed,
                "title": r.study.title,
                "spec": r.spec,
                "status": _status(r),
                "busy": busy_warning(r),
                "report": Path("..", r.run_id, "index.html").as_posix()
                if r.run_id and report.is_file()
                else None,
                "chart": _headline(r, reports_dir, out_dir),
                "seed_chart": _seed_chart(r, store, out_dir),
                "claims": Markup(
                    table(
                        [
                            "claim",
                            "source",
                            "rule",
                            "verdict",
                            "our figure",
                            "the article's",
                            "class",
                        ],
                        claims,
                        {0, 1, 2, 3, 4, 5, 6},
                    )
                ),
            }
        )
    page = render(
        "reproduce.html.j2",
        machine=machine,
        summary=Markup(table(SUMMARY_HEAD, rows, {0, 1, 2, 3, 4, 5})),
        words=Markup(table(["word", "the articles say", "the rule", "why"], words, {0, 1, 2, 3}))
        if words
        else None,
        studies=studies,
    )
    index = out_dir / "index.html"
    index.write_text(page)
    return index
