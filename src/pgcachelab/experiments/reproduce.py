"""`reproduce`: each study's spec run one after another on this machine, then every published
claim of the study judged on its run (studies/*/claims, analysis/claims.py).

Resumable like any run: a study whose run of the same spec was interrupted is resumed, one
that finished is read again rather than measured twice (unless asked to measure again). A study
that cannot run here (no root for the emulated machine, a version it cannot install) or fails is
a row with its reason, and the others go on.
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from pgcachelab.analysis.claims import (
    BadFigure,
    Verdict,
    cannot,
    noise,
    not_measured,
    with_reason,
)
from pgcachelab.analysis.run_data import load_run
from pgcachelab.clusters import extension
from pgcachelab.clusters.binaries import find_install
from pgcachelab.clusters.installs import resolve
from pgcachelab.errors import RunFailed, UserError
from pgcachelab.experiments import runner
from pgcachelab.probes.host_resources import busy_pct
from pgcachelab.progress import Progress
from pgcachelab.spec import load_spec
from pgcachelab.store.records import ResultStore, Run
from pgcachelab.studies.kind import PublishedClaim, Study

# The checkout's ready specs (experiments/*.toml), which `reproduce` runs as shipped.
EXPERIMENTS_DIR = Path(__file__).resolve().parents[3] / "experiments"
QUICK, FULL = "quick", "full"
# Other work on the machine, sampled for a few seconds before and after each study's run while
# the lab runs nothing: an idle VM shows 0-3% of its CPU in use. 20% of 2 cores is 0.4 of a
# core taken from the server and pgbench, enough to move tps by more than a claim's margin
# (a ×1.2 step): in the first run as an ordinary user, helpers' tests beside it (load 32) made
# tps rise with the database size and big-cache's step read "contradicted".
BUSY_PCT = 20.0
OTHER_WORK_SAMPLE_S = 2.0


@dataclass(frozen=True)
class ClaimResult:
    claim: PublishedClaim
    verdict: Verdict


@dataclass
class StudyResult:
    study: Study
    spec: str  # the spec's file name under experiments/
    run_id: str | None = None
    seconds: float = 0.0
    reused: bool = False  # a finished run of the same spec, read again
    run_seconds: float | None = None  # how long its run measured, start to finish (stored)
    reason: str = ""  # why the study did not run or finish here; "" when it did
    # the run stopped because the disk or the store failed (RunFailed): the command exits 1
    environment_failure: RunFailed | None = None
    claims: list[ClaimResult] = field(default_factory=list)
    # The machine's CPU in use just before and just after the study measured, while the lab
    # ran nothing (OTHER_WORK_PCT): None when it measured nothing here
    other_work_before_pct: float | None = None
    other_work_after_pct: float | None = None

    @property
    def other_work_pct(self) -> float | None:
        """The busier of the two moments around the run, or None."""
        shares = [
            s for s in (self.other_work_before_pct, self.other_work_after_pct) if s is not None
        ]
        return max(shares) if shares else None

    @property
    def machine_was_busy(self) -> bool:
        """Busy around a run that measured: a study refused before it ran has no figures."""
        share = self.other_work_pct
        return self.run_id is not None and share is not None and share >= BUSY_PCT


def spec_for(study: Study, mode: str, root: bool) -> str:
    """The spec `reproduce` runs for the study: its quick spec, or the variant without root when
    not root and the study has one; its full spec for --full."""
    reproduction = study.reproduction
    if reproduction is None:
        raise ValueError(f"study {study.name!r} has no specs to reproduce")
    if mode == FULL:
        return reproduction.full
    if not root and reproduction.quick_without_root:
        return reproduction.quick_without_root
    return reproduction.quick


def spec_path(name: str) -> Path:
    """A shipped spec by name (experiments/NAME.toml), or a spec file given by its path."""
    return Path(name) if name.endswith(".toml") else EXPERIMENTS_DIR / f"{name}.toml"


def latest_run_of(store: ResultStore, spec_text: str, name: str) -> Run | None:
    """The newest run of exactly this spec (its name and text), or None."""
    same = [r for r in store.runs() if r.name == name and r.spec_text == spec_text]
    return max(same, key=lambda r: r.created_at) if same else None


def judge(study: Study, run_id: str | None, store: ResultStore, reason: str) -> list[ClaimResult]:
    """Each claim's verdict on the study's run; without a run, each "cannot be shown here"
    with the reason the study did not run."""
    if run_id is None:
        return [ClaimResult(claim, cannot(reason)) for claim in study.claims]
    data = load_run(store, run_id)
    return [
        ClaimResult(
            claim,
            not_measured(f"measured by {claim.judged_on}'s run, once every study has run")
            if claim.judged_on
            else judge_claim(claim, data),
        )
        for claim in study.claims
    ]


def judge_claim(claim: PublishedClaim, data) -> Verdict:
    """The claim's verdict; a figure the rules refuse (a failed repetition's ratio of 0, a
    non-finite value) leaves it undecided with the reason, never judged on what remains."""
    try:
        return claim.judge(data)
    except BadFigure as error:
        return noise(f"undecided: the figure was refused: {error}")


def reproduce_study(
    study: Study,
    mode: str,
    store: ResultStore,
    progress: Progress,
    again: bool = False,
    pg_bin: str | None = None,
    root: bool | None = None,
    measure: Callable | None = None,
) -> StudyResult:
    """Run (or resume, or reuse) the study's spec and judge its claims. `measure(spec, store,
    progress) -> run_id` starts a new run; the runner's by default."""
    root = os.geteuid() == 0 if root is None else root
    name = spec_for(study, mode, root)
    result = StudyResult(study, name)
    started = time.monotonic()
    try:
        spec = load_spec(spec_path(name))
        spec.study = study.name  # the study's own spec, run as that study (spec/study.py)
        if study.needs_extension:
            _ensure_extension(pg_bin, progress)
        earlier = None if again else latest_run_of(store, spec.text, spec.name)
        if earlier is not None and earlier.status == "done":
            result.run_id, result.reused = earlier.run_id, True
        elif earlier is not None and earlier.status != "queued":
            result.run_id = earlier.run_id  # stored before the failure: kept whatever happens
            result.other_work_before_pct = other_work_pct()
            runner.resume_run(earlier.run_id, store, progress, pg_bin=pg_bin)
            result.other_work_after_pct = other_work_pct()
        else:
            result.other_work_before_pct = other_work_pct()
            result.run_id = (measure or _measure)(spec, store, progress, pg_bin)
            result.other_work_after_pct = other_work_pct()
        run = store.run(result.run_id)
        if run is not None and run.finished_at is not None:
            result.run_seconds = run.finished_at - run.created_at
        if run is not None and run.status != "done":
            result.reason = f"run {run.run_id} ended {run.status}: {run.failure or 'no reason'}"
    except UserError as error:  # refused here (no root, a version it cannot install) or failed
        result.reason = error.message + (f" ({error.hint})" if error.hint else "")
        if isinstance(error, RunFailed):
            result.environment_failure = error
    except Exception as error:  # noqa: BLE001 (one study's failure is its row; the others go on)
        result.reason = f"failed: {type(error).__name__}: {error}"
    result.seconds = time.monotonic() - started
    measured = result.run_id is not None and _measured_anything(store, result.run_id)
    result.claims = judge(
        study, result.run_id if measured else None, store, result.reason or "nothing measured"
    )
    return result


def judge_across(
    results: list[StudyResult], store: ResultStore, mode: str, root: bool | None = None
) -> None:
    """Judge again the claims measured by another study's run (`PublishedClaim.judged_on`):
    on that study's run in this reproduce, else on the newest finished run of its spec in the
    store; without either, "not measured" naming the command that measures it."""
    root = os.geteuid() == 0 if root is None else root
    by_name = {r.study.name: r for r in results}
    for result in results:
        for index, found in enumerate(result.claims):
            other_name = found.claim.judged_on
            if not other_name:
                continue
            verdict = _judged_on_other(other_name, by_name, store, mode, root, found.claim)
            result.claims[index] = ClaimResult(found.claim, verdict)


def _judged_on_other(
    name: str,
    by_name: dict[str, StudyResult],
    store: ResultStore,
    mode: str,
    root: bool,
    claim: PublishedClaim,
) -> Verdict:
    from pgcachelab.studies.registry import STUDIES

    other = by_name.get(name)
    study = other.study if other else next((s for s in STUDIES if s.name == name), None)
    if study is None:
        raise ValueError(f"claim {claim.words[:40]!r} is judged on an unknown study {name!r}")
    spec_name = spec_for(study, mode, root)
    run_id = None
    if other is not None and other.run_id and _measured_anything(store, other.run_id):
        run_id = other.run_id
    elif other is not None and other.reason:
        return cannot(f"measured by {name}'s run ({spec_name}), which did not run: {other.reason}")
    else:
        spec = load_spec(spec_path(spec_name))
        earlier = latest_run_of(store, spec.text, spec.name)
        if earlier is not None and earlier.status == "done":
            run_id = earlier.run_id
    if run_id is None:
        return not_measured(
            f"measured by {name}'s run ({spec_name}), which this reproduce did not run and "
            f"the store has not finished: `pgcachelab reproduce {name}` measures it"
        )
    verdict = judge_claim(claim, load_run(store, run_id))
    return with_reason(verdict, f"measured by {name}'s run {run_id} ({spec_name})")


def other_work_pct(seconds: float = OTHER_WORK_SAMPLE_S) -> float | None:
    """The machine's CPU in use over `seconds` while the lab runs nothing: other work's."""
    before = psutil.cpu_times()._asdict()
    time.sleep(seconds)
    return busy_pct(before, psutil.cpu_times()._asdict())


def _ensure_extension(pg_bin: str | None, progress: Progress) -> None:
    """Build pg_cachelab for the lab's default binaries when it is missing, as `pgcachelab
    extension install` would: the study's spec reads shared_buffers with it."""
    install = find_install(resolve(pg_bin) if pg_bin else None)
    if not extension.is_installed(install):
        progress.note(f"building pg_cachelab for PostgreSQL {install.version}")
        extension.install_for_lab(install)


def _measure(spec, store: ResultStore, progress: Progress, pg_bin: str | None) -> str:
    target = runner.make_target(spec, pg_bin, None, None, progress.note)
    return runner.start_run(spec, target, store, progress)


def _measured_anything(store: ResultStore, run_id: str) -> bool:
    return any(m.status == "ok" for m in store.measurements(run_id, ["warm"]))
