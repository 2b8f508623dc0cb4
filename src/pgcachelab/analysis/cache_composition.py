"""Cache snapshots taken during a run, as stored and as the report draws them. Pure functions.

A stored snapshot is a compact dict (see `compact`): per relation fork its bytes in
shared_buffers and, when the data directory was readable, in the OS page cache; the smaller
relations summed into `other`. The report draws the composition over time (the largest
relations of the whole run, the rest as "other") and before/after tables per point.
"""

import statistics
from dataclasses import dataclass

from pgcachelab.probes.buffercache import CacheSnapshot
from pgcachelab.store.run_types import CachedRelation, SnapshotData

OTHER = "other"


# -- compacting a snapshot for the store -----------------------------------------------------


def _weight(relation: CachedRelation, block_size: int) -> int:
    return relation["buffers"] * block_size + (relation.get("os_cached_bytes") or 0)


def compact(snapshot: CacheSnapshot, top: int) -> SnapshotData:
    """A CacheSnapshot as a small dict: its `top` relations by bytes cached in either cache,
    the rest summed into `other` (so totals stay exact)."""
    relations: list[CachedRelation] = [
        {
            "name": r.qualified_name,
            "kind": r.kind,
            "buffers": r.buffers,
            "dirty": r.dirty,
            "size_bytes": r.size_bytes,
            "os_cached_bytes": r.os_cached_bytes,
        }
        for r in snapshot.relations
    ]
    relations.sort(key=lambda r: (-_weight(r, snapshot.block_size), r["name"]))
    kept, rest = relations[:top], relations[top:]
    return {
        "method": snapshot.method,
        "mode": snapshot.mode,
        "block_size": snapshot.block_size,
        "buffers_total": snapshot.buffers_total,
        "buffers_used": snapshot.buffers_used,
        "buffers_dirty": snapshot.buffers_dirty,
        "os_cache_note": snapshot.os_cache_note,
        "relations": kept,
        "other": {
            "relations": len(rest),
            "buffers": sum(r["buffers"] for r in rest),
            "os_cached_bytes": sum(r.get("os_cached_bytes") or 0 for r in rest),
        },
    }


def os_cache_known(data: SnapshotData) -> bool:
    return any(r.get("os_cached_bytes") is not None for r in data.get("relations", []))


# -- in both caches, one only, or on disk only -----------------------------------------------


@dataclass(frozen=True)
class CacheSplit:
    """A relation's bytes by where they are; `both` is an estimate between its bounds."""

    size_bytes: int
    both_bytes: int
    shared_buffers_only_bytes: int
    os_cache_only_bytes: int
    disk_only_bytes: int
    both_low_bytes: int
    both_high_bytes: int


def split(shared_buffers_bytes: int, os_cached_bytes: int, size_bytes: int) -> CacheSplit:
    """Split a relation by where its pages are, from counts alone.

    Counts do not say which pages are in both caches, only bounds: at least what does not fit
    otherwise (B + O - S), at most the smaller cache's share. The estimate assumes the two
    caches pick pages independently (both = B * O / S), clamped to the bounds: a page read
    into shared_buffers went through the OS cache, so the true overlap tends to the high bound
    just after reads and falls as the OS evicts what shared_buffers keeps (double buffering).
    """
    size = max(size_bytes, shared_buffers_bytes, os_cached_bytes, 0)
    if size == 0:
        return CacheSplit(0, 0, 0, 0, 0, 0, 0)
    low = max(0, shared_buffers_bytes + os_cached_bytes - size)
    high = min(shared_buffers_bytes, os_cached_bytes)
    both = min(high, max(low, round(shared_buffers_bytes * os_cached_bytes / size)))
    return CacheSplit(
        size_bytes=size,
        both_bytes=both,
        shared_buffers_only_bytes=shared_buffers_bytes - both,
        os_cache_only_bytes=os_cached_bytes - both,
        disk_only_bytes=size - shared_buffers_bytes - os_cached_bytes + both,
        both_low_bytes=low,
        both_high_bytes=high,
    )


# -- the composition over time ---------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One stored snapshot, placed in the run: seconds since the run started."""

    point_index: int
    repetition: int
    seconds: float
    label: str
    data: SnapshotData


@dataclass
class Composition:
    """Stacked series: per name (largest relations, then "other"), bytes at each sample."""

    names: list[str]
    segments: list[list[Sample]]  # one per measurement, in time order: drawn apart
    shared_buffers: dict[str, list[float]]  # name -> bytes, per sample of all segments in order
    os_cache: dict[str, list[float]] | None  # None when no snapshot knew the OS cache
    shared_buffers_total_bytes: list[float]


def _bytes_by_name(data: SnapshotData, cache: str) -> dict[str, float]:
    block_size = data["block_size"]
    values: dict[str, float]
    if cache == "shared_buffers":
        values = {r["name"]: r["buffers"] * block_size for r in data["relations"]}
        values[OTHER] = data["other"]["buffers"] * block_size
    else:
        values = {r["name"]: r.get("os_cached_bytes") or 0 for r in data["relations"]}
        values[OTHER] = data["other"]["os_cached_bytes"]
    return values


def top_relations(samples: list[Sample], count: int) -> list[str]:
    """The `count` relations with the most bytes in either cache at any sample."""
    peak: dict[str, float] = {}
    for sample in samples:
        for cache in ("shared_buffers", "os_cache"):
            for name, value in _bytes_by_name(sample.data, cache).items():
                if name != OTHER:
                    peak[name] = max(peak.get(name, 0), value)
    ranked = sorted(peak, key=lambda name: (-peak[name], name))
    return [name for name in ranked[:count] if peak[name] > 0]


def composition(samples: list[Sample], count: int = 8) -> Composition:
    """Series for stacked areas: the top relations of the run, all else in "other"."""
    samples = sorted(samples, key=lambda s: s.seconds)
    names = top_relations(samples, count)
    segments: dict[tuple[int, int], list[Sample]] = {}
    for sample in samples:
        segments.setdefault((sample.point_index, sample.repetition), []).append(sample)
    ordered = sorted(segments.values(), key=lambda members: members[0].seconds)
    knows_os = any(os_cache_known(s.data) for s in samples)
    series: dict[str, dict[str, list[float]]] = {
        "shared_buffers": {n: [] for n in [*names, OTHER]},
        "os_cache": {n: [] for n in [*names, OTHER]},
    }
    totals: list[float] = []
    for members in ordered:
        for sample in members:
            for cache, by_name in series.items():
                values = _bytes_by_name(sample.data, cache)
                for name in names:
                    by_name[name].append(values.pop(name, 0))
                by_name[OTHER].append(sum(values.values()))
            totals.append(sample.data["buffers_total"] * sample.data["block_size"])
    return Composition(
        names=[*names, OTHER],
        segments=ordered,
        shared_buffers=series["shared_buffers"],
        os_cache=series["os_cache"] if knows_os else None,
        shared_buffers_total_bytes=totals,
    )


# -- before and after, per point -------------------------------------------------------------


@dataclass(frozen=True)
class RelationAt:
    """A relation's place in both caches at one labelled moment (medians over repetitions)."""

    shared_buffers_bytes: float
    os_cached_bytes: float | None
    size_bytes: float | None


def labels_in_order(samples: list[Sample]) -> list[str]:
    """The labelled moments of a point (before, after a phase, after), periodic ones left out."""
    labels: list[str] = []
    for sample in sorted(samples, key=lambda s: s.seconds):
        if sample.label != "sample" and sample.label not in labels:
            labels.append(sample.label)
    return labels


def point_table(
    samples: list[Sample], count: int = 10
) -> tuple[list[str], dict[str, dict[str, RelationAt]]]:
    """(labels, {relation: {label: RelationAt}}) for one point, medians over its repetitions;
    the relations are the point's `count` largest."""
    labels = labels_in_order(samples)
    labelled = [s for s in samples if s.label in labels]
    names = top_relations(labelled, count)
    table: dict[str, dict[str, RelationAt]] = {name: {} for name in names}
    for name in names:
        for label in labels:
            found = [
                next((r for r in s.data["relations"] if r["name"] == name), None)
                for s in labelled
                if s.label == label
            ]
            rows = [
                (r, s)
                for r, s in zip(found, [s for s in labelled if s.label == label], strict=True)
            ]
            sb = [r["buffers"] * s.data["block_size"] if r else 0 for r, s in rows]
            if not sb:
                continue
            os_values = [v for r, _ in rows if r and (v := r.get("os_cached_bytes")) is not None]
            # A relation missing from every snapshot of this moment has no buffer; its OS
            # cache share is known only for user relations, which are always listed.
            knows_os = any(r is not None and os_cache_known(s.data) for r, s in rows)
            sizes = [v for r, _ in rows if r and (v := r.get("size_bytes")) is not None]
            table[name][label] = RelationAt(
                shared_buffers_bytes=statistics.median(sb),
                os_cached_bytes=(statistics.median(os_values) if os_values else 0)
                if knows_os
                else None,
                size_bytes=statistics.median(sizes) if sizes else None,
            )
    return labels, table
