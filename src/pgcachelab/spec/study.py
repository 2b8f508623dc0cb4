"""Which study a run of a spec is: decided from the validated spec when the run is created, and
stored with it (runs.study), so that no reader guesses it again from what the run measured.

The studies are the registry's (studies/registry.py; a test keeps the names equal). `reproduce`
runs a study's own spec as that study, which is how a study registered from outside (a test's,
a plugin's) gets its runs: its spec alone would make a big-cache run.
"""

from pgcachelab.spec.schema import SpecFile

# The studies a spec's own design makes; another study's run is recorded by `reproduce`.
SPEC_STUDIES = ("cache-wash", "tpcc", "inspect-overhead", "versions", "big-cache")


def study_name(spec: SpecFile) -> str:
    """The study a run of the spec is: its workload's, for the workloads that are a study of
    their own (seed 000's cache-wash, seed 002's TPC-C); for pgbench, the design its sweep
    makes: of the inspect methods (an overhead sweep over versions too: the report adds the
    versions' sections), of the versions, else a big-cache sweep of anything else."""
    if spec.workload in ("cache-wash", "tpcc"):
        return spec.workload
    swept = spec.sweep.workload()
    if "inspect_method" in swept:
        return "inspect-overhead"
    if "version" in swept:
        return "versions"
    return "big-cache"
