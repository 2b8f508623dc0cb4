"""Seed 004, "A database is a big cache": pgbench over data sizes (and clients, and offered
rates); where throughput steps down as the data leaves shared_buffers, then the OS cache."""

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.sweep_advice import best_value_advice
from pgcachelab.studies.big_cache.advice import offered_load_advice, scale_advice
from pgcachelab.studies.big_cache.claims import (
    DISK_BAND,
    STEP_RATIO,
    disk_decides,
    left_memory,
    left_shared_buffers,
)
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
            "a clear step where the data falls out of shared buffers (scale ≈ 5)",
            figure="tps before / after the break nearest shared_buffers, pooled over each "
            "plateau's repetitions",
            rule=f"tps drops at least ×{STEP_RATIO:g}, its whole 95% interval at or above it",
            article="a drop near scale 4-5 (~64 MB of data) with shared_buffers = 64MB",
            judge=left_shared_buffers,
        ),
        PublishedClaim(
            SEED,
            "the tps-by-scale chart",
            "a second step where the data falls out of the OS cache (scale ≈ 45)",
            figure="tps before / after the break nearest the server's memory (the emulated "
            "machine's limit, else the host's RAM)",
            rule=f"tps drops at least ×{STEP_RATIO:g}, its whole 95% interval at or above it",
            article="a drop near scale 45 (~700 MB) on a VM with 590 MB of RAM",
            judge=left_memory,
        ),
        PublishedClaim(
            SEED,
            "after the chart",
            "beyond that the disk decides: a usual disk gives 100-200 random operations a second",
            figure="past the OS cache, tps × the emulated device's reads per transaction / "
            "its IOPS (the preset's cap, or what the clients can keep busy)",
            rule=f"within ×{DISK_BAND:g} of 1 (tps ≈ IOPS / reads per transaction), its whole "
            "95% interval inside",
            article="100-200 random IOPS",
            judge=disk_decides,
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
