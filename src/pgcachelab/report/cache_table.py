"""`inspect`'s terminal table: where each relation's data is, from one CacheSnapshot."""

from pgcachelab.probes.buffercache import CacheSnapshot, RelationCache
from pgcachelab.probes.method_costs import method_cost
from pgcachelab.report.tables import format_table
from pgcachelab.units import format_bytes

# "% of relation": how much of the relation fork is in shared_buffers; "% in OS cache": how much
# of its files the page cache holds (the two may overlap: a page can be in both).
HEADER = [
    "relation",
    "kind",
    "buffers",
    "in shared_buffers",
    "% of shared_buffers",
    "% of relation",
    "% in OS cache",
    "dirty",
    "pinned",
    "usage 0/1/2/3/4/5",
]


def _percent(part: float | None, whole: float | None) -> str:
    if part is None or not whole:
        return "-"
    return f"{100.0 * part / whole:.1f}"


def relation_row(relation: RelationCache, snapshot: CacheSnapshot) -> list[str]:
    cached_bytes = relation.buffers * snapshot.block_size
    return [
        relation.qualified_name,
        relation.kind or "-",
        f"{relation.buffers:,}",
        format_bytes(cached_bytes),
        _percent(relation.buffers, snapshot.buffers_total),
        _percent(cached_bytes, relation.size_bytes),
        _percent(relation.os_cached_bytes, relation.size_bytes),
        f"{relation.dirty:,}",
        f"{relation.pinned:,}",
        "/".join(str(count) for count in relation.usage_counts),
    ]


def totals_lines(snapshot: CacheSnapshot) -> list[str]:
    total, used = snapshot.buffers_total, snapshot.buffers_used
    lines = [
        f"shared_buffers: {total:,} buffers ({format_bytes(total * snapshot.block_size)}),"
        f" used {used:,} ({_percent(used, total)}%), free {snapshot.buffers_free:,},"
        f" dirty {snapshot.buffers_dirty:,}, pinned {snapshot.buffers_pinned:,}",
    ]
    if snapshot.usage_counts is not None:
        histogram = "/".join(str(count) for count in snapshot.usage_counts)
        lines.append(f"usage counts 0/1/2/3/4/5 of used buffers: {histogram}")
    mode = f", {snapshot.mode}" if snapshot.mode and snapshot.method == "extension" else ""
    elapsed = "" if snapshot.elapsed_ms is None else f" in {snapshot.elapsed_ms:.1f} ms"
    lines.append(f"method: {snapshot.method}{mode}{elapsed}")
    if snapshot.server_version_num is not None:
        lines.append("cost: " + snapshot_cost(snapshot))
    return lines


def snapshot_cost(snapshot: CacheSnapshot) -> str:
    assert snapshot.server_version_num is not None  # probes.buffercache.collect sets it
    return method_cost(
        snapshot.method, snapshot.mode, snapshot.server_version_num, snapshot.elapsed_ms
    )


def cache_table(snapshot: CacheSnapshot, top: int) -> str:
    """The `top` relations by buffers (all when top is 0), then the totals."""
    relations = snapshot.relations if top == 0 else snapshot.relations[:top]
    parts = []
    if snapshot.method != "summary":
        parts.append(format_table(HEADER, [relation_row(r, snapshot) for r in relations]))
        hidden = len(snapshot.relations) - len(relations)
        if hidden:
            parts.append(f"... and {hidden} more relation forks (--top 0 shows all)")
    parts.extend(totals_lines(snapshot))
    return "\n".join(parts)
