"""Issue 19's pure parts: the rounds of a version sweep, the A/A control in a spec, its verdict,
and whether two runs' significant changes agree in direction."""

import html
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from test_spec import error_of, spec

from pgcachelab.analysis.run_data import load_run
from pgcachelab.analysis.versions import (
    VersionChange,
    control_base,
    control_changes,
    control_verdict,
    direction_disagreements,
    version_changes,
    version_order,
)
from pgcachelab.experiments.version_rounds import version_rounds
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.studies.pages import build_report
from pgcachelab.studies.registry import advise as run_advice

SWEEP = ('repetitions = 3\norder = "interleaved"\ncontrol = true\n'
         '[sweep]\nversion = ["13", "18"]\nscale_class = ["small", "large"]\n'
         'mode = ["simple-update", "select-only"]\n')  # fmt: skip


def test_every_round_gives_every_version_a_turn_in_every_data_group():
    parsed = spec(SWEEP)
    points = parsed.points()
    planned, record = version_rounds(points, parsed.rounds, parsed.order, parsed.seed)
    assert len(planned) == len(points) * 3 and len(set(planned)) == len(planned)
    assert [(r["round"], r["group"]) for r in record] == [
        (r, g) for r in range(3) for g in ("scale_class=small", "scale_class=large")
    ]
    turns = []  # (round, version, scale class) in the order they ran
    for point_index, repetition in planned:
        workload = points[point_index].workload
        turn = (repetition, workload.version, workload.scale_class)
        if not turns or turns[-1] != turn:
            turns.append(turn)
    assert len(turns) == 3 * 2 * 3  # one turn per round, data group and version: never split
    for entry in record:  # each turn ran in the recorded order, each version once
        ran = [
            v for r, v, c in turns if r == entry["round"] and f"scale_class={c}" == entry["group"]
        ]
        assert ran == entry["versions"]
        assert sorted(ran) == ["13", "18", "18 control"]
    orders = {tuple(entry["versions"]) for entry in record}
    assert len(orders) > 1  # shuffled per round, not one fixed order


def test_read_only_points_run_first_in_a_turn():
    parsed = spec(SWEEP)
    points = parsed.points()
    planned, _ = version_rounds(points, parsed.rounds, parsed.order, parsed.seed)
    modes = [points[p].workload.mode for p, _ in planned]
    assert modes == ["select-only", "simple-update"] * (len(planned) // 2)


def test_the_order_follows_the_seed():
    parsed = spec(SWEEP)
    first = version_rounds(parsed.points(), 3, "random", 1)
    assert first == version_rounds(parsed.points(), 3, "random", 1)
    assert first[1] != version_rounds(parsed.points(), 3, "random", 2)[1]


# -- the A/A control in a spec -------------------------------------------------------------------


def test_control_repeats_the_last_version_or_the_one_named():
    assert spec(SWEEP).versions == ["13", "18", "18 control"]
    named = spec(SWEEP.replace("control = true", 'control = "13"'))
    assert named.versions == ["13", "18", "13 control"]
    assert len(named.points()) == 3 * 2 * 2
    assert spec(SWEEP.replace("control = true", "control = false")).versions == ["13", "18"]


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("control = true\n", r"control: an A/A control repeats a version", r"sweep versions"),
        (SWEEP.replace("control = true", 'control = "15"'),
         r'control: invalid value "15": not one of the swept versions', r"one of 13, 18"),
        (SWEEP.replace("control = true", "control = [18]"),
         r"control: invalid value \[18\]: not true, false or a version", r"use true"),
        (SWEEP.replace("control = true", 'control = "eighteen"'),
         r'control: invalid value "eighteen": not a PostgreSQL major version', r"9.6"),
    ],
)  # fmt: skip
def test_bad_controls(text, message, hint):
    error = error_of(text)
    assert re.search(message, error.message), error.message
    assert re.search(hint, error.hint), error.hint


# -- the control's verdict ----------------------------------------------------------------------


def _cell(clients: int) -> tuple:
    return (("clients", clients),)


def test_the_control_is_compared_with_its_twin_and_kept_out_of_the_chain():
    samples = {
        _cell(1): {"13": [500, 505, 495], "18": [1000, 1010, 990], "18 control": [1005, 995, 1000]},
        _cell(4): {"13": [500, 505, 495], "18": [1000, 1010, 990], "18 control": [700, 705, 695]},
    }
    assert [(c.previous, c.version) for c in version_changes(samples)] == [("13", "18")] * 2
    controls = control_changes(samples)
    assert [(c.previous, c.version, c.significant) for c in controls] == [
        ("18", "18 control", False), ("18", "18 control", True)
    ]  # fmt: skip
    verdict = control_verdict(controls)
    assert (verdict.cells, verdict.significant, verdict.trustworthy) == (2, 1, False)
    assert version_order(["18 control", "9.6", "18", "13"]) == ["9.6", "13", "18", "18 control"]
    assert control_base("18 control") == "18" and control_base("18") is None


def test_a_share_of_significant_control_cells_up_to_five_percent_is_trusted():
    def change(significant: bool) -> VersionChange:
        low, high = (1.1, 1.3) if significant else (0.9, 1.1)
        return VersionChange(_cell(1), "18", "18 control", 1.0, low, high, (3, 3))

    assert control_verdict([change(True)] + [change(False)] * 19).trustworthy  # 5%
    assert not control_verdict([change(True)] * 2 + [change(False)] * 18).trustworthy  # 10%
    assert (
        control_verdict([VersionChange(_cell(1), "18", "18 control", 1.0, None, None, (1, 1))])
        is None
    )


# -- two runs of one spec ------------------------------------------------------------------------


def test_two_runs_agree_or_their_disagreements_are_listed():
    first = version_changes({
        _cell(1): {"13": [100, 101, 99], "18": [200, 202, 198]},
        _cell(4): {"13": [100, 101, 99], "18": [150, 151, 149]},
    })  # fmt: skip
    agreeing = version_changes({
        _cell(1): {"13": [100, 102, 98], "18": [190, 195, 185]},
        _cell(4): {"13": [100, 140, 60], "18": [100, 150, 50]},
    })  # fmt: skip
    assert direction_disagreements(first, agreeing) == (1, [])  # cell 4: significant once only
    opposite = version_changes({_cell(1): {"13": [200, 202, 198], "18": [100, 101, 99]}})
    both, disagreeing = direction_disagreements(first, opposite)
    assert both == 1
    assert [(d.cell, d.ratio > 1, d.other_ratio > 1) for d in disagreeing] == [
        (_cell(1), True, False)
    ]


# -- two stored runs of one spec, through the report ---------------------------------------------

ARCHAEOLOGY_RUN = "20261122-232406-992f58"  # archaeology-tiny in tests/data/report-runs
CELL = "version=%s, scale_class=small, mode=select-only, clients=1"


def _second_run(db: sqlite3.Connection, first: str, second: str) -> None:
    """Every row of `first` again under `second`, an hour later: the spec run again."""
    for table in ("runs", "points", "measurements", "point_server_settings", "cache_snapshots"):
        columns = [row[1] for row in db.execute(f"pragma table_info({table})")]
        values = ["?" if c == "run_id" else "created_at + 3600" if c == "created_at" else c
                  for c in columns]  # fmt: skip
        db.execute(f"insert into {table} ({', '.join(columns)}) select {', '.join(values)} "
                   f"from {table} where run_id = ?", (second, first))  # fmt: skip


def _set_tps(db: sqlite3.Connection, run_id: str, version: str, values: list[float]) -> None:
    (point,) = db.execute("select point_index from points where run_id = ? and label = ?",
                          (run_id, CELL % version)).fetchone()  # fmt: skip
    for repetition, tps in enumerate(values):
        db.execute("update measurements set tps = ? where run_id = ? and point_index = ? "
                   "and repetition = ?", (tps, run_id, point, repetition))  # fmt: skip


def test_the_report_states_where_two_runs_of_a_spec_disagree(tmp_path, quick_figures):
    store_path = tmp_path / "results.sqlite"
    shutil.copy(Path(__file__).parent / "data" / "report-runs" / "results.sqlite", store_path)
    db = sqlite3.connect(store_path)
    _second_run(db, ARCHAEOLOGY_RUN, "second")
    _set_tps(db, ARCHAEOLOGY_RUN, "15", [1000, 1010])
    _set_tps(db, ARCHAEOLOGY_RUN, "18", [1500, 1490])  # 18 faster...
    _set_tps(db, "second", "15", [1000, 1010])
    _set_tps(db, "second", "18", [600, 590])  # ...then slower: significant both times
    db.commit()
    db.close()
    store = SqliteResultStore(store_path)
    try:
        first = build_report(store, ARCHAEOLOGY_RUN, tmp_path / "first").read_text()
        second = build_report(store, "second", tmp_path / "second").read_text()
    finally:
        store.close()
    assert "previous run of this spec" not in first  # nothing stored before it
    assert "The runs disagree" in second
    disagreement = f"scale_class=small: 15 → 18 ×0.592 here, ×1.488 in run {ARCHAEOLOGY_RUN}"
    assert disagreement in html.unescape(second)


def test_a_control_that_tells_its_twins_apart_flags_the_run(tmp_path, quick_figures):
    store_path = tmp_path / "results.sqlite"
    shutil.copy(Path(__file__).parent / "data" / "report-runs" / "results.sqlite", store_path)
    db = sqlite3.connect(store_path)
    twins = db.execute("select point_index, label, swept from points where run_id = ? "
                       "and label like 'version=18,%'", (ARCHAEOLOGY_RUN,)).fetchall()  # fmt: skip
    for point, label, swept in twins:  # 18 again, three times as fast: no noise does that
        db.execute("insert into points select run_id, ?, ?, ?, workload, settings from points "
                   "where run_id = ? and point_index = ?",
                   (point + 100, label.replace("version=18", "version=18 control"),
                    swept.replace('"18"', '"18 control"'), ARCHAEOLOGY_RUN, point))  # fmt: skip
        db.execute("insert into measurements select run_id, ?, repetition, status, reason, "
                   "started_at, finished_at, wall_s, server_action, tps * 3, latency_avg_ms, "
                   "latency_stddev_ms, metrics from measurements where run_id = ? and "
                   "point_index = ?", (point + 100, ARCHAEOLOGY_RUN, point))  # fmt: skip
    db.commit()
    db.close()
    store = SqliteResultStore(store_path)
    try:
        report = build_report(store, ARCHAEOLOGY_RUN, tmp_path / "report").read_text()
        advice = run_advice(load_run(store, ARCHAEOLOGY_RUN))
    finally:
        store.close()
    assert "UNTRUSTWORTHY RUN:" in report
    assert re.search(r"differ significantly in (\d+) of 8 cells", report)
    assert advice[0].topic == "control" and advice[0].recommendation.startswith("UNTRUSTWORTHY")
    assert all("A/A control says" in item.caveats[-1] for item in advice[1:])
    assert all("18 control" not in item.recommendation for item in advice[1:])
