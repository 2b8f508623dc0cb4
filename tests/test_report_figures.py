"""Every chart a report draws has a title, axis labels with units, a legend, and a log axis for
geometric sweeps. Pure: the figures are built from the fixture store of real tiny runs
(tests/data/report-runs) by the `tiny_reports` fixture, which keeps each figure it saves."""

from matplotlib.figure import Figure

GEOMETRIC_AXES = ("clients", "scale factor")  # swept by factors in every tiny run


def _problems(figure: Figure) -> list[str]:
    problems = []
    suptitle = figure._suptitle.get_text() if figure._suptitle else ""
    for axis in figure.axes:
        if not axis.get_visible() or not axis.has_data():
            continue
        name = axis.get_title() or suptitle or "an untitled chart"
        if not (axis.get_title() or suptitle):
            problems.append("a chart without a title")
        xlabel, ylabel = axis.get_xlabel(), axis.get_ylabel()
        for which, label in (("x", xlabel), ("y", ylabel)):
            if not label:
                problems.append(f"{name}: no {which} label")
            elif "(" not in label:
                problems.append(f"{name}: {which} label {label!r} names no unit")
        if axis.get_legend() is None:
            problems.append(f"{name}: no legend")
        if any(word in xlabel for word in GEOMETRIC_AXES) and axis.get_xscale() != "log":
            problems.append(f"{name}: {xlabel!r} is a geometric sweep on a linear axis")
        # box plots: one evenly spaced box per setting, which is what a log axis would show
        categorical = "evenly spaced" in xlabel
        if xlabel.startswith("shared_buffers") and axis.get_xscale() != "log" and not categorical:
            problems.append(f"{name}: shared_buffers on a linear axis")
    return problems


def test_every_report_draws_charts(tiny_reports):
    assert set(tiny_reports) == {
        "big-cache-tiny", "archaeology-tiny", "cache-split-tiny", "tpcc-ladder-tiny",
        "inspect-overhead-tiny", "inspect-history-tiny", "offered-load-tiny",
    }  # fmt: skip
    for name, report in tiny_reports.items():
        assert report.figures, f"{name}: no chart"
    assert "latency-by-offered-load" in tiny_reports["offered-load-tiny"].figures
    assert "tps-by-scale" in tiny_reports["big-cache-tiny"].figures
    assert "tps-by-clients-per-version" in tiny_reports["archaeology-tiny"].figures
    assert "cache-wash-idx2" in tiny_reports["cache-split-tiny"].figures
    # the seed's own charts beside them: one mean per iteration and phase
    for phase in ("idx1", "seq", "idx2"):
        assert f"cache-wash-seed-{phase}" in tiny_reports["cache-split-tiny"].figures
    # [inspect] snapshots after idx1 and after seq: the index and the table around the scan
    assert "cache-wash-around-the-scan" in tiny_reports["cache-split-tiny"].figures
    assert "tpcc_tpmc_per_step" in tiny_reports["tpcc-ladder-tiny"].figures


def test_every_chart_has_title_labels_with_units_legend_and_log_axes(tiny_reports):
    problems = [
        f"{name}/{figure_name}: {problem}"
        for name, report in tiny_reports.items()
        for figure_name, figure in report.figures.items()
        for problem in _problems(figure)
    ]
    assert problems == []


def test_the_checks_see_a_bare_chart():
    figure = Figure()
    figure.add_subplot().plot([1, 2, 4, 8], [3, 4, 5, 6])
    figure.axes[0].set_xlabel("clients")
    assert _problems(figure) == [
        "a chart without a title",
        "an untitled chart: x label 'clients' names no unit",
        "an untitled chart: no y label",
        "an untitled chart: no legend",
        "an untitled chart: 'clients' is a geometric sweep on a linear axis",
    ]
