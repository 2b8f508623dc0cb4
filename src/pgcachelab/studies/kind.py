"""What a study provides. A study is one kind of experiment: the lab recognises a stored run as
its kind, asks the study for the run's report sections and advice, and never branches on the kind
anywhere else (studies/registry.py). A new study is a subclass in its own package plus one line
in the registry."""

from dataclasses import dataclass
from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore


@dataclass(frozen=True)
class PublishedClaim:
    """A finding of the study's seed article, in its words (translated), with where it says so;
    `reproduce` (issue 37) grades each against this machine's figures."""

    seed: str  # the article's file under ../shared/seeds
    where: str  # its section, figure or table
    words: str


class Study:
    """One kind of run. Subclasses set the class attributes and override what they add."""

    name: str = ""  # as people and `advise` name the kind: "cache-wash"
    title: str = ""  # one line: what the study asks
    seed: str | None = None  # the seed article it turns into a command, if any
    workload: str = "pgbench"  # the workload (workloads/registry.py) its specs run
    spec_table: str | None = None  # the spec table only its runs carry ("cache_wash", "tpcc")
    claims: tuple[PublishedClaim, ...] = ()
    # The report's cache composition shows what is cached; a study that polls the cache for the
    # cost of polling (inspect-overhead) has no composition to show.
    shows_cache_composition: bool = True

    def recognises(self, data: RunData) -> bool:
        """Whether the stored run is this study's kind, from what it measured and swept."""
        raise NotImplementedError

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        """The study's own report sections with their plots, written under out_dir; the store
        for studies that compare with an earlier run of the same spec."""
        return []

    def advice(self, data: RunData) -> list[Advice]:
        """What the run shows, with intervals: `advise` and the report's opening."""
        return []

    def text_table(self, data: RunData) -> str | None:
        """`show RUN`'s table when the study's figures are not tps; None for the common one."""
        return None
