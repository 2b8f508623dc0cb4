"""The studies the lab knows, and the one place that decides which kind a stored run is.

A run is the first study here that recognises it, so the more specific come first and big-cache,
which takes any pgbench sweep, comes last. A run can also carry a second study's design (an
inspect-overhead sweep over versions): its report shows every recognising study's sections, its
advice is its own study's. Adding a study: its package under studies/ and one line here.
"""

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.hosts import CONFOUNDING_REMEDY, run_confounding
from pgcachelab.analysis.run_data import RunData
from pgcachelab.studies.big_cache.study import BigCache
from pgcachelab.studies.cache_wash.study import CacheWash
from pgcachelab.studies.inspect_overhead.study import InspectOverhead
from pgcachelab.studies.kind import Study
from pgcachelab.studies.tpcc.study import Tpcc
from pgcachelab.studies.versions.study import Versions

STUDIES: list[Study] = [CacheWash(), Tpcc(), InspectOverhead(), Versions(), BigCache()]


def register(study: Study) -> None:
    """Add a study ahead of the known ones (a plugin, or a test's own kind)."""
    if any(known.name == study.name for known in STUDIES):
        raise ValueError(f"a study named {study.name!r} is registered already")
    STUDIES.insert(0, study)


def unregister(name: str) -> None:
    STUDIES[:] = [study for study in STUDIES if study.name != name]


def studies_of(data: RunData) -> list[Study]:
    """Every study that recognises the run, its own first."""
    return [study for study in STUDIES if study.recognises(data)]


def study_of(data: RunData) -> Study:
    return studies_of(data)[0]


def advise(data: RunData) -> list[Advice]:
    """Every piece of advice the run's study gives; a note when it gives none."""
    advice = study_of(data).advice(data)
    if not advice:
        swept = ", ".join(data.swept_keys) or "nothing"
        kinds = ", ".join(study.name for study in STUDIES)
        advice.append(
            Advice(
                "run",
                "",
                "no advice: the measurements answer none of the questions advise knows",
                f"the run swept {swept}; advise knows the studies {kinds} (a big-cache run "
                "answers sweeps of clients, scale or rate)",
                [],
            )
        )
    failed = sum(len(r.failures) for r in data.points)
    if failed:
        for item in advice:
            item.caveats.append(f"{failed} measurements failed and are left out")
    confounding = run_confounding(data)  # issue 38: a best point may be the best machine
    if confounding:
        for item in advice:
            item.caveats.append(confounding.text())
    if confounding and confounding.complete:  # said first, not folded beneath each item
        warning = (
            f"WARNING: {confounding.text()}: a best value named below may be the best machine's;"
            f" measure again with {CONFOUNDING_REMEDY}"
        )
        advice.insert(0, Advice("hosts", "", warning, confounding.measured_text()))
    return advice
