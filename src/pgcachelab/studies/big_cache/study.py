"""Seed 004, "A database is a big cache": pgbench over data sizes (and clients, and offered
rates); where throughput steps down as the data leaves shared_buffers, then the OS cache."""

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.sweep_advice import best_value_advice
from pgcachelab.studies.big_cache.advice import offered_load_advice, scale_advice
from pgcachelab.studies.kind import PublishedClaim, Reproduction, Study

SEED = "004_132f91e615112a1d.txt"


class BigCache(Study):
    """Every pgbench sweep no other study claims: its sections (steps, regimes, offered load)
    are the report's common ones, as any run over data sizes or rates has them."""

    name = "big-cache"
    title = "where does throughput fall as the data outgrows shared_buffers, then RAM"
    seed = "004"
    headline_figure = "tps-by-size"
    reproduction = Reproduction(
        quick="big-cache-quick", full="big-cache", quick_without_root="big-cache-quick-noroot"
    )
    claims = (
        PublishedClaim(
            SEED,
            "the tps-by-scale chart",
            "two clear steps: where the data falls out of shared buffers (scale ≈ 5) and where "
            "it falls out of the OS cache (scale ≈ 45); beyond that the disk's IOPS decide",
        ),
    )

    def recognises(self, data: RunData) -> bool:
        return True  # the registry's last entry: what no other study claims

    def advice(self, data: RunData) -> list[Advice]:
        keys = data.swept_keys
        advice: list[Advice] = []
        if "clients" in keys:
            advice += best_value_advice(data, "clients", "gives the peak throughput")
        if "scale" in keys:
            advice += scale_advice(data)
        if "rate" in keys:
            advice += offered_load_advice(data)
        return advice
