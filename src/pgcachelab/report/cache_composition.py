"""The cache snapshots of a run ([inspect]): composition over time, before/after per point."""

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from markupsafe import Markup
from matplotlib.colors import ListedColormap

from pgcachelab.analysis.cache_composition import (
    OTHER,
    Sample,
    composition,
    point_table,
    split,
)
from pgcachelab.analysis.inspect_accuracy import MEASURED_PREFIX, OLD_PAIR
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.plots import save_figure
from pgcachelab.report.pyplot import plt
from pgcachelab.report.render import Section, render, table
from pgcachelab.units import format_bytes

TITLE = "Cache snapshots: before and after each point"
MIB = 1024 * 1024
TOP_IN_PLOT = 8


def _accuracy(label: str) -> bool:
    """Accuracy trials (and the pairs stored before them): not part of the composition."""
    return label.startswith(MEASURED_PREFIX) or label in OLD_PAIR


def samples(data: RunData) -> list[Sample]:
    """The run's successful snapshots, placed in seconds since the run started."""
    start = data.run.created_at
    return [
        Sample(s.point_index, s.repetition, s.taken_at - start, s.label, s.data)
        for s in data.snapshots
        if s.data is not None and not _accuracy(s.label)
    ]


def _color_map(names: list[str]) -> dict[str, str]:
    colormap = plt.get_cmap("tab10")
    assert isinstance(colormap, ListedColormap)  # tab10 is a list of ten colours
    palette = cast(Sequence, colormap.colors)  # typed as any array-like: here a tuple
    colors = {
        name: palette[i % len(palette)] for i, name in enumerate(n for n in names if n != OTHER)
    }
    colors[OTHER] = "#bbbbbb"
    return colors


def composition_plot(data: RunData, out_dir: Path) -> list[Path]:
    """Stacked areas per relation over the run, one panel per cache; each measurement is
    drawn on its own (nothing is sampled between them) and its start marked."""
    found = samples(data)
    if not found:
        return []
    comp = composition(found, TOP_IN_PLOT)
    caches = [("shared_buffers", comp.shared_buffers)]
    if comp.os_cache is not None:
        caches.append(("OS page cache (mincore)", comp.os_cache))
    colors = _color_map(comp.names)
    figure, axes = plt.subplots(
        len(caches), 1, figsize=(12, 3.6 * len(caches)), sharex=True, squeeze=False
    )
    labels_shown = len(comp.segments) <= 40
    for axis, (title, series) in zip(axes[:, 0], caches, strict=True):
        offset = 0
        for segment in comp.segments:
            xs = [s.seconds for s in segment]
            end = offset + len(segment)
            stacks = [[v / MIB for v in series[name][offset:end]] for name in comp.names]
            if len(xs) == 1:  # one snapshot: a thin bar instead of an invisible area
                xs = [xs[0] - 0.5, xs[0] + 0.5]
                stacks = [values * 2 for values in stacks]
            axis.stackplot(
                xs, stacks, colors=[colors[n] for n in comp.names], alpha=0.85, linewidth=0
            )
            if title == "shared_buffers":
                totals = [v / MIB for v in comp.shared_buffers_total_bytes[offset:end]]
                axis.plot([s.seconds for s in segment], totals, color="black", linewidth=0.8)
            axis.axvline(segment[0].seconds, color="black", linestyle=":", linewidth=0.7)
            if labels_shown and title == "shared_buffers":
                axis.annotate(
                    f"p{segment[0].point_index}",
                    (segment[0].seconds, 1.0),
                    xycoords=("data", "axes fraction"),
                    fontsize=6,
                    va="bottom",
                )
            for sample in segment:
                if sample.label.startswith("after ") and sample.label != "after":
                    axis.axvline(sample.seconds, color="gray", linestyle="-", linewidth=0.3)
            offset = end
        axis.set_ylabel(f"{title} (MiB)")
        axis.set_xlabel("seconds since the run started (s)")
        axis.grid(alpha=0.3)
        handles = [plt.Rectangle((0, 0), 1, 1, color=colors[n]) for n in comp.names]
        axis.legend(handles, comp.names, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.suptitle(
        f"{data.run.name}: cache composition by relation\n(dotted: a measurement starts, pN its"
        " point; thin gray: between phases; black line: shared_buffers size)",
        fontsize=10,
    )
    return save_figure(figure, out_dir, "cache-composition")


def _bytes(value) -> str:
    return "–" if value is None else format_bytes(value)


def _table(head: list[str], rows: list[tuple[str, list[str]]]) -> str:
    """Relations down the side, figures across."""
    return table(head, [[name, *cells] for name, cells in rows], {0})


def _split_cells(at) -> list[str]:
    """The four-way split of one relation at one snapshot, then its size."""
    if at is None or at.os_cached_bytes is None or at.size_bytes is None:
        return ["–"] * 4 + [_bytes(at.size_bytes if at else None)]
    parts = split(int(at.shared_buffers_bytes), int(at.os_cached_bytes), int(at.size_bytes))
    return [
        f"{_bytes(parts.both_bytes)} ({_bytes(parts.both_low_bytes)}.."
        f"{_bytes(parts.both_high_bytes)})",
        _bytes(parts.shared_buffers_only_bytes),
        _bytes(parts.os_cache_only_bytes),
        _bytes(parts.disk_only_bytes),
        _bytes(parts.size_bytes),
    ]


def _point_tables(point_label: str, point_samples: list[Sample]) -> dict | None:
    """Two tables: each snapshot's bytes in shared_buffers / the OS cache, then the split at
    the last snapshot (one table of both would not fit a page); None without a relation."""
    labels, by_relation = point_table(point_samples)
    if not by_relation:
        return None
    last = labels[-1]
    moments = [
        (
            name,
            [
                "–"
                if (at := by_label.get(label)) is None
                else f"{_bytes(at.shared_buffers_bytes)} / {_bytes(at.os_cached_bytes)}"
                for label in labels
            ],
        )
        for name, by_label in by_relation.items()
    ]
    split_rows = [
        (name, _split_cells(by_label.get(last))) for name, by_label in by_relation.items()
    ]
    return {
        "label": point_label,
        "moments": Markup(
            _table(
                ["relation", *(f"{label}: shared_buffers / OS cache" for label in labels)], moments
            )
        ),
        "last": last,
        "split": Markup(
            _table(
                [
                    "relation",
                    "in both (estimate)",
                    "shared_buffers only",
                    "OS cache only",
                    "disk only",
                    "size",
                ],
                split_rows,
            )
        ),
    }


def _method_note(data: RunData) -> str:
    taken = [s for s in data.snapshots if not _accuracy(s.label)]
    failed = [s for s in taken if s.error]
    methods = sorted({f"{s.method}" + (f"/{s.mode}" if s.mode else "") for s in taken})
    times = [s.elapsed_ms for s in taken if s.elapsed_ms is not None]
    notes: set[str] = {note for s in taken if s.data and (note := s.data.get("os_cache_note"))}
    text = (
        f"{len(taken)} snapshots ({', '.join(methods)}), median snapshot query "
        f"{statistics.median(times):.1f} ms"
        if times
        else f"{len(taken)} snapshots"
    )
    if failed:
        text += f"; {len(failed)} failed (first: {failed[0].error})"
    for note in sorted(notes):
        text += f"; {note}"
    return text


def snapshots_html(data: RunData) -> str:
    """Before/after tables per point (medians over repetitions), with the four-way split."""
    found = samples(data)
    if not found:
        return ""
    labels_by_point = {p.point.point_index: p.point.label for p in data.points}
    points = [
        _point_tables(
            f"#{point_index}: {labels_by_point.get(point_index, '')}",
            [s for s in found if s.point_index == point_index],
        )
        for point_index in sorted({s.point_index for s in found})
    ]
    return render(
        "snapshots.html.j2",
        method_note=_method_note(data),
        points=[point for point in points if point is not None],
    )


def cache_composition_section(data: RunData, out_dir: Path) -> Section:
    """The composition plot and the before/after tables; empty without snapshots."""
    if not samples(data):
        return Section(TITLE)
    return Section(TITLE, Markup(snapshots_html(data)), composition_plot(data, out_dir))
