"""What a study provides. A study is one kind of experiment: a run records its study when it is
created, the lab asks that study for the run's report sections and advice, and never branches
on the kind anywhere else (studies/registry.py). A new study is a subclass in its own package
plus one line in the registry."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.claims import SETUP, Verdict, cannot
from pgcachelab.analysis.qualifiers import QUALIFIERS
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.render import Section
from pgcachelab.store.records import ResultStore

FINDING = "finding"
SETUP_KIND = "setup"


def _not_judged(data: RunData) -> Verdict:
    return cannot("no rule judges this claim yet")


@dataclass(frozen=True)
class PublishedClaim:
    """A finding of the study's seed article, in its words (translated), with where it says so,
    and the rule that grades it on a run of the study (`reproduce`, analysis/claims.py)."""

    seed: str  # the article's file under ../shared/seeds
    where: str  # its section, figure or table
    words: str
    figure: str = ""  # the figure that decides it: "idx2/idx1 at the smallest shared_buffers"
    rule: str = ""  # the rule with its thresholds, as the verdict states it
    article: str = ""  # the article's own figure, quoted beside ours
    judge: Callable[[RunData], Verdict] = _not_judged
    # The article's word that sets the rule's threshold (a key of analysis/qualifiers.py's
    # QUALIFIERS: "greatly", "about", ...); every claim judges through that table.
    qualifier: str = ""
    # FINDING: about PostgreSQL or the OS. SETUP: its figure follows from the benchmark's
    # setup (a rate limit the spec chose, the emulated disk's IOPS): shown, never counted.
    # A judge may also say SETUP for one run (a claim on the emulated disk is a finding on
    # real storage).
    kind: str = FINDING
    # Another study whose run measures this claim ("cache-wash"), "" for the study's own run:
    # seed 004's report query that washes both caches is what seed 000's scan between two
    # rounds of lookups measures, on a table larger than the memory limit.
    judged_on: str = ""

    def __post_init__(self) -> None:
        if self.qualifier and self.qualifier not in QUALIFIERS:
            raise ValueError(f"claim {self.words[:40]!r}: unknown qualifier {self.qualifier!r}")
        if self.kind not in (FINDING, SETUP_KIND):
            raise ValueError(f"claim {self.words[:40]!r}: unknown kind {self.kind!r}")

    def class_of(self, verdict: Verdict) -> str:
        """The claim's class on this run: a finding, or a consequence of the setup."""
        return SETUP_KIND if verdict.outcome == SETUP or self.kind == SETUP_KIND else FINDING


@dataclass(frozen=True)
class Reproduction:
    """The experiment specs (experiments/<name>.toml) `reproduce` runs for the study: --quick on
    the emulated small machine where root, its variant without root, and --full (the seed's
    design scaled to the host)."""

    quick: str
    full: str
    quick_without_root: str | None = None  # None: the quick spec needs no root


class Study:
    """One kind of run. Subclasses set the class attributes and override what they add."""

    name: str = ""  # as people and `advise` name the kind: "cache-wash"
    title: str = ""  # one line: what the study asks
    seed: str | None = None  # the seed article it turns into a command, if any
    workload: str = "pgbench"  # the workload (workloads/registry.py) its specs run
    spec_table: str | None = None  # the spec table only its runs carry ("cache_wash", "tpcc")
    claims: tuple[PublishedClaim, ...] = ()
    reproduction: Reproduction | None = None  # None: `reproduce` does not run this study
    headline_figure: str | None = None  # the report figure (file stem) `reproduce` shows
    needs_extension: bool = False  # its specs read shared_buffers with pg_cachelab
    # The report's cache composition shows what is cached; a study that polls the cache for the
    # cost of polling (inspect-overhead) has no composition to show.
    shows_cache_composition: bool = True
    # The swept key that makes a run this study's design ("version"): a run of another study
    # that sweeps it shows this study's sections too (an overhead sweep over versions)
    swept_key: str | None = None

    def sections(self, data: RunData, out_dir: Path, store: ResultStore) -> list[Section]:
        """The study's own report sections with their plots, written under out_dir; the store
        for studies that compare with an earlier run of the same spec."""
        return []

    def advice(self, data: RunData) -> list[Advice]:
        """What the run shows, with intervals: `advise` and the report's opening."""
        return []

    def seed_chart(self, data: RunData, out_dir: Path) -> Path | None:
        """The seed article's own figures redrawn beside the run's, for `reproduce`'s page;
        None where the study's report already draws the run in the article's form."""
        return None

    def text_table(self, data: RunData) -> str | None:
        """`show RUN`'s table when the study's figures are not tps; None for the common one."""
        return None
