"""Seed 004, "A database is a big cache": pgbench over data sizes (and clients, and offered
rates); where throughput steps down as the data leaves shared_buffers, then the OS cache."""

from pgcachelab.analysis.advice import Advice
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.sweep_advice import best_value_advice
from pgcachelab.studies.big_cache.advice import offered_load_advice, scale_advice
from pgcachelab.studies.big_cache.claims import (
    STEP_DRIFT,
    WASH_STUDY,
    disk_decides,
    left_memory,
    left_shared_buffers,
    report_washes_caches,
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
            'a clear step where the data falls out of shared buffers (scale ≈ 5): "a dip is '
            "visible around scale factor 5 … two clear steps: falling out of shared buffers "
            'and out of the disk cache"',
            figure="tps before / after the break nearest shared_buffers, pooled over each "
            "plateau's repetitions",
            rule='"clear" = noticeably: tps drops at least ×1.1 by its whole 95% interval, '
            f"and reproduced only when that interval also clears ×{STEP_DRIFT:g}, this "
            "machine's drift between points",
            article="a dip around scale factor 5 (the shared_buffers boundary crossed at "
            "scale 4-5) with shared_buffers = 64MB; no size given",
            judge=left_shared_buffers,
            qualifier="noticeably",
        ),
        PublishedClaim(
            SEED,
            "the tps-by-scale chart",
            'a second clear step where the data falls out of the OS cache (scale ≈ 45): "the '
            'next dip around scale factor 45"',
            figure="tps before / after the break nearest the server's memory (the emulated "
            "machine's limit, else the host's RAM)",
            rule='"clear" = noticeably: tps drops at least ×1.1 by its whole 95% interval, '
            f"and reproduced only when that interval also clears ×{STEP_DRIFT:g}, this "
            "machine's drift between points",
            article="a dip around scale factor 45 on a t1.micro with 590 MB of RAM (scale 50 "
            "≈ 750 MB); no size given",
            judge=left_memory,
            qualifier="noticeably",
        ),
        PublishedClaim(
            SEED,
            "after the chart",
            'if the data is not in the disk cache the OS goes to the disk, "and that is very, '
            'very long": "a usual disk can give 100-200 random operations a second"',
            figure="past the OS cache, tps × the device's reads per transaction / its IOPS "
            "(the preset's cap, or what the clients can keep busy)",
            rule="near 1: the whole 95% interval within ×0.71-×1.41 (tps ≈ IOPS / reads per "
            "transaction); on the emulated disk it follows from the setup",
            article="100-200 random IOPS",
            judge=disk_decides,
            qualifier="near",
        ),
        PublishedClaim(
            SEED,
            "the closing paragraphs",
            "\"as soon as an analytical report starts, it washes the data out of the OS's and "
            'the database\'s cache, and the site literally goes down" ("only if the database '
            "is considerably larger than the server's RAM\")",
            figure="the site's lookups after / before one big report query, and the site's "
            "pages in shared_buffers and in the OS cache before / after it",
            rule="greatly: every part at least ×1.5 by its whole 95% interval (the site "
            "slower, fewer of its pages in each cache)",
            article='seen "more than once at our clients\'"; no figure given',
            judge=report_washes_caches,
            qualifier="greatly",
            judged_on=WASH_STUDY,
        ),
    )

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
