"""Scale classes (seed 001): data sizes named for where the data lives, not for a number.

A scale factor means nothing across machines; "fits shared_buffers", "fits memory but not
shared_buffers" and "bigger than memory" do. The lab turns the class into a pgbench scale from
the point's shared_buffers and the memory available to the server (emulated or real). Pure.
"""

import math
from typing import Literal, get_args

# pgbench's data per unit of scale: 100,000 pgbench_accounts rows (about 13.1 MB of heap at the
# default fillfactor) and their primary key (about 2.1 MB); the other tables are negligible.
BYTES_PER_SCALE = 15_400_000
ScaleClass = Literal["small", "medium", "large"]
SCALE_CLASSES: tuple[str, ...] = get_args(ScaleClass)
SMALL_SHARE_OF_SHARED_BUFFERS = 0.5  # room for the catalogs and pgbench's other tables
LARGE_MULTIPLE_OF_MEMORY = 1.5  # big enough that a third of the data is never cached


class ScaleClassError(ValueError):
    """The class cannot be had with these sizes; the message says which and why."""


def target_bytes(scale_class: str, shared_buffers_bytes: int, memory_bytes: int) -> int:
    """How big the data of each class should be.

    medium is the geometric mean of shared_buffers and memory: as far from both boundaries as
    a ratio can be, so it is past the one and short of the other on any machine.
    """
    if scale_class not in SCALE_CLASSES:
        raise ScaleClassError(f"unknown scale class {scale_class!r}")
    if shared_buffers_bytes * 4 > memory_bytes:
        raise ScaleClassError(
            f"shared_buffers ({shared_buffers_bytes // 2**20} MB) is over a quarter of the "
            f"memory ({memory_bytes // 2**20} MB): no room for a medium class between them"
        )
    if scale_class == "small":
        return int(shared_buffers_bytes * SMALL_SHARE_OF_SHARED_BUFFERS)
    if scale_class == "medium":
        return int(math.sqrt(shared_buffers_bytes * memory_bytes))
    return int(memory_bytes * LARGE_MULTIPLE_OF_MEMORY)


def scale_for_class(scale_class: str, shared_buffers_bytes: int, memory_bytes: int) -> int:
    return max(
        1, round(target_bytes(scale_class, shared_buffers_bytes, memory_bytes) / BYTES_PER_SCALE)
    )
