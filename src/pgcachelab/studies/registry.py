"""The studies the lab knows, by name: a run records its study when it is created
(spec/study.py), and every reader asks the registry for the study of that name.

A run can also carry a second study's design (an inspect-overhead sweep over versions): its
report shows the sections of each study whose swept key it sweeps too (`Study.swept_key`), its
advice is its own study's. Adding a study: its package under studies/ and one line here (and,
for runs of its own spec design, a line in spec/study.py).
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
# The study of a run whose own is not registered here (a plugin's run, read without it): a
# big-cache run is any sweep, and its report and advice ask nothing of a workload's figures.
FALLBACK = "big-cache"


def register(study: Study) -> None:
    """Add a study (a plugin, or a test's own kind)."""
    if any(known.name == study.name for known in STUDIES):
        raise ValueError(f"a study named {study.name!r} is registered already")
    STUDIES.insert(0, study)


def unregister(name: str) -> None:
    STUDIES[:] = [study for study in STUDIES if study.name != name]


def study_named(name: str) -> Study | None:
    return next((study for study in STUDIES if study.name == name), None)


def study_of(data: RunData) -> Study:
    """The run's own study, as it was recorded when the run was created."""
    found = study_named(data.run.study) or study_named(FALLBACK)
    assert found is not None  # big-cache is never unregistered
    return found


def studies_of(data: RunData) -> list[Study]:
    """The run's own study, then every other study whose swept key the run sweeps too."""
    own = study_of(data)
    swept = set(data.swept_keys)
    return [own, *(s for s in STUDIES if s is not own and s.swept_key in swept)]


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
