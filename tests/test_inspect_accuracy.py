"""Each pg_cachelab mode's error against exact references (issue 34). Pure functions."""

import pytest

from pgcachelab.analysis.inspect_accuracy import (
    OTHER,
    accuracy_by_mode,
    counts,
    self_checks,
    trial_error,
    trial_rounds,
    trials,
)
from pgcachelab.store.records import StoredSnapshot


def data(buffers: dict, total: int = 1000, dirty: int = 0, other: int = 0) -> dict:
    relations = [{"name": name, "buffers": n, "dirty": 0} for name, n in buffers.items()]
    return {
        "buffers_total": total,
        "buffers_used": sum(buffers.values()) + other,
        "buffers_dirty": dirty,
        "relations": relations,
        "other": {"relations": 1 if other else 0, "buffers": other},
    }


def stored(seq, label, payload, point=0, repetition=0, elapsed_ms=1.0) -> StoredSnapshot:
    mode = "snapshot" if label == "accuracy-reference" else label.rpartition("-")[2]
    return StoredSnapshot(
        point, repetition, seq, seq, label, "extension", mode, elapsed_ms, None, payload
    )


def test_a_count_between_its_references_is_no_error_and_outside_it_is():
    before = data({"accounts": 600, "branches": 10, "history": 100})
    after = data({"accounts": 640, "branches": 10, "history": 60})
    # accounts within 600..640: what the cache held at some moment; history 50 is 10 below
    # its range, branches 14 is 4 above: (10 + 4) / 2 misplaced
    measured = data({"accounts": 620, "branches": 14, "history": 50})
    error = trial_error(trials([stored(0, "accuracy-reference", before),
                                stored(1, "accuracy-fast", measured),
                                stored(2, "accuracy-reference", after)])[0])  # fmt: skip
    assert (error.mode, error.misplaced, error.largest, error.relation) == (
        "fast",
        7.0,
        10,
        "history",
    )
    assert error.misplaced_share == pytest.approx(0.007)
    assert error.drift == 40.0  # accounts +40 and history -40, halved
    assert error.failed_checks == ()


def test_a_round_gives_one_trial_per_mode_each_between_its_own_references():
    reference = data({"a": 100})
    taken = [stored(0, "accuracy-reference", reference)]
    for seq, mode in enumerate(("consistent", "semiconsistent", "fast")):
        taken += [stored(2 * seq + 1, f"accuracy-{mode}", data({"a": 100 + seq})),
                  stored(2 * seq + 2, "accuracy-reference", reference)]  # fmt: skip
    found = trials(list(reversed(taken)))  # stored order is rebuilt from seq
    assert [t.mode for t in found] == ["consistent", "semiconsistent", "fast"]
    modes = accuracy_by_mode(found)
    assert list(modes) == ["consistent", "semiconsistent", "fast"]
    assert [m.misplaced_max for m in modes.values()] == [0.0, 0.5, 1.0]
    assert modes["fast"].drift_share_median == 0.0


def test_a_failed_reference_or_one_of_another_run_makes_no_trial():
    reference = data({"a": 100})
    failed = StoredSnapshot(0, 0, 2, 2, "accuracy-reference", "extension", "snapshot", None,
                            "canceling statement", None)  # fmt: skip
    assert trials([stored(0, "accuracy-reference", reference),
                   stored(1, "accuracy-fast", reference), failed]) == []  # fmt: skip
    assert trials([stored(0, "accuracy-reference", reference),
                   stored(1, "accuracy-fast", reference),
                   stored(2, "accuracy-reference", reference, repetition=1)]) == []  # fmt: skip


def test_pairs_stored_before_the_references_are_fast_against_consistent():
    fast, consistent = data({"big": 990, "small": 1}), data({"big": 1000, "small": 2, "gone": 1})
    found = trials([stored(0, "pair-fast", fast), stored(1, "pair-consistent", consistent),
                    stored(2, "sample", fast), stored(3, "pair-fast", fast)])  # fmt: skip
    assert len(found) == 1 and found[0].reference_mode == "consistent"
    error = trial_error(found[0])
    assert (error.misplaced, error.largest, error.relation, error.drift) == (6.0, 10, "big", None)
    assert accuracy_by_mode(found)["fast"].reference_mode == "consistent"


def test_the_relations_beyond_top_count_as_one_and_the_self_checks_catch_double_counting():
    assert counts(data({"a": 5}, other=7)) == {"a": 5, OTHER: 7}
    assert self_checks(data({"a": 5}, other=7)) == []
    too_many = data({"a": 800, "b": 300})  # 1,100 buffers counted in 1,000
    assert self_checks(too_many) == ["used 1100 > shared_buffers 1000"]
    dirty = data({"a": 10}, dirty=11)
    assert self_checks(dirty) == ["dirty 11 > used 10"]
    torn = data({"a": 10})
    torn["buffers_used"] = 12
    assert self_checks(torn) == ["the relations do not add up to the buffers used"]


def test_the_finding_grades_fast_against_the_seeds_three_percent():
    from pgcachelab.analysis.inspect_accuracy import accuracy_finding

    reference = data({"a": 500})

    def modes(fast_count: int) -> dict:
        taken = [stored(0, "accuracy-reference", reference),
                 stored(1, "accuracy-fast", data({"a": 500 - fast_count, "b": fast_count})),
                 stored(2, "accuracy-reference", reference)]  # fmt: skip
        return accuracy_by_mode(trials(taken))

    assert accuracy_finding(modes(10)) == (
        "fast misplaced 1.00% of shared_buffers (median), at most 1.00% over 1 trials: fast "
        "stays within the seed's < 3% under this load"
    )  # 10 buffers under b instead of a, of 1,000
    assert "fast goes beyond the seed's < 3%" in accuracy_finding(modes(40))


def timed_round(start_seq, times_ms, references_ms, point=0, repetition=0):
    """One accuracy round: a reference, then each mode and a reference after it."""
    payload = data({"a": 100})
    taken = [stored(start_seq, "accuracy-reference", payload, point, repetition,
                    references_ms[0])]  # fmt: skip
    for i, (mode, ms) in enumerate(times_ms.items()):
        seq = start_seq + 2 * i + 1
        taken += [stored(seq, f"accuracy-{mode}", payload, point, repetition, ms),
                  stored(seq + 1, "accuracy-reference", payload, point, repetition,
                         references_ms[i + 1])]  # fmt: skip
    return taken


def test_each_rounds_modes_are_timed_beside_the_references_around_them():
    modes = {"consistent": 9.0, "semiconsistent": 500.0, "fast": 6.0}
    taken = timed_round(0, modes, [10.0, 8.0, 9.0, 7.0])
    taken += timed_round(7, modes, [11.0, 11.0, 11.0, 11.0])
    rounds = trial_rounds(list(reversed(taken)))
    assert len(rounds) == 2 and list(rounds[0]) == ["consistent", "semiconsistent", "fast"]
    fast = rounds[0]["fast"]
    assert (fast.elapsed_ms, fast.reference_ms) == (6.0, 8.0)  # the references 9 and 7
    assert rounds[0]["consistent"].reference_ms == 9.0 and rounds[1]["fast"].reference_ms == 11
    assert fast.cpu_ms is None and fast.reference_cpu_ms is None  # no server CPU stored


def test_a_rounds_server_cpu_is_kept_beside_its_time():
    taken = timed_round(0, {"fast": 6.0}, [10.0, 12.0])
    for snapshot, cpu_ms in zip(taken, (7.0, 5.0, 9.0), strict=True):
        snapshot.data = {**snapshot.data, "server_cpu_ms": cpu_ms}
    (found,) = trial_rounds(taken)
    assert (found["fast"].cpu_ms, found["fast"].reference_cpu_ms) == (5.0, 8.0)


def test_a_round_cut_or_of_another_measurement_starts_a_new_one_and_untimed_trials_drop():
    modes = {"consistent": 9.0, "semiconsistent": 500.0, "fast": 6.0}
    taken = timed_round(0, modes, [10.0] * 4) + timed_round(0, modes, [10.0] * 4, repetition=1)
    untimed = timed_round(0, {"fast": 5.0}, [10.0, 10.0], point=1)
    untimed[1] = stored(1, "accuracy-fast", data({"a": 100}), point=1, elapsed_ms=None)
    rounds = trial_rounds(taken + untimed)
    assert [list(r) for r in rounds] == [["consistent", "semiconsistent", "fast"]] * 2
    # a round the warm-up cut after its first trial: the next round's trials start afresh
    cut = timed_round(0, {"consistent": 9.0}, [10.0, 10.0])
    cut += timed_round(3, modes, [10.0] * 4)
    assert [list(r) for r in trial_rounds(cut)] == [
        ["consistent"],
        ["consistent", "semiconsistent", "fast"],
    ]
