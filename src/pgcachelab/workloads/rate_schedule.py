"""pgbench's -R schedule: transactions start on a Poisson timetable at the rate. Pure functions.

Over a run of T seconds at R transactions per second it schedules about R x T of them, give or
take the square root of that, so a short run's count wanders a few percent around the rate even
when the server keeps up with every transaction (300 tps for 2 s: 600 +- 24.5).
"""

import math

# A count within this many standard deviations of what the schedule lets through is the
# schedule's own noise, not a server that fell behind.
SIGMAS = 3.0


def kept_to_schedule(completed: float, rate_per_s: float, duration_s: float) -> bool:
    """Did `completed` transactions in `duration_s` do what a `rate_per_s` schedule allowed?"""
    scheduled = rate_per_s * duration_s
    return completed >= scheduled - SIGMAS * math.sqrt(scheduled)
