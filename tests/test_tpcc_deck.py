"""The mix by the deck of clause 5.2.4.2 and its check against clause 5.2.3 (issue 51): pure.
The server test that pgbench deals what `deck.cards` deals is in test_tpcc_server.py."""

import io
import itertools
import json
from collections import Counter

import pytest

from pgcachelab.exporters import json as json_export
from pgcachelab.studies.tpcc.text import format_run
from pgcachelab.workloads.pgbench_log import LoggedTransaction
from pgcachelab.workloads.tpcc.deck import (
    MINIMUM_SHARES,
    STANDARD_DECK,
    cards,
    check_mix,
    deck_of,
    describe,
    dispatcher,
    initial_variables,
    label,
)
from pgcachelab.workloads.tpcc.driver import RunOptions, TpccRun
from pgcachelab.workloads.tpcc.params import DEFAULT_WEIGHTS, parse_weights
from pgcachelab.workloads.tpcc.results import summarise
from pgcachelab.workloads.tpcc_workload import tpcc_metrics


def test_the_standard_weights_deal_clause_5_2_4_2s_deck():
    assert deck_of(DEFAULT_WEIGHTS) == STANDARD_DECK
    assert sum(STANDARD_DECK.values()) == 23
    # other weights: their own deck, the smallest with those proportions, empty types left out
    assert deck_of(parse_weights("50,50,0,0,0")) == {"new_order": 1, "payment": 1}
    assert deck_of(parse_weights("0,0,0,0,100")) == {"stock_level": 1}
    assert deck_of(parse_weights("44,44,4,4,4")) == {
        "new_order": 11, "payment": 11, "order_status": 1, "delivery": 1, "stock_level": 1,
    }  # fmt: skip


@pytest.mark.parametrize("client", [0, 1, 7, 1000])
@pytest.mark.parametrize("seed", [0, 12345, 2**31 - 1])
def test_every_whole_deck_holds_exactly_its_cards(seed, client):
    dealt = list(itertools.islice(cards(STANDARD_DECK, seed, client), 23 * 50))
    for start in range(0, len(dealt), 23):
        assert Counter(dealt[start : start + 23]) == STANDARD_DECK
    # and so every whole deck meets clause 5.2.3's minimums
    assert check_mix(Counter(dealt), standard=True).met


def test_decks_are_shuffled_differently_per_terminal_deck_and_seed():
    def first_decks(seed, client, decks=20):
        dealt = list(itertools.islice(cards(STANDARD_DECK, seed, client), 23 * decks))
        return [tuple(dealt[start : start + 23]) for start in range(0, len(dealt), 23)]

    decks = first_decks(1, 0)
    assert len(set(decks)) == len(decks)  # no deck repeats the one before
    assert first_decks(1, 1) != decks and first_decks(2, 0) != decks
    assert first_decks(1, 0) == decks  # the same seed deals the same decks again
    # each type turns up in each of the 23 positions over many decks: a shuffle, not a rotation
    many = first_decks(3, 2, decks=400)
    for name in ("order_status", "delivery", "stock_level"):
        assert {deck.index(name) for deck in many} == set(range(23))


def _logged(client, number, latency_us=1000):
    return LoggedTransaction(client, number, latency_us, 0, 1000 + number, 0)


def test_label_names_each_logged_transaction_by_its_card():
    deck = {"new_order": 2, "payment": 2, "delivery": 1}
    seed = 99
    logged = [_logged(client, n) for n in range(10) for client in (0, 1)]
    labelled = label(logged, deck, seed)
    names = list(deck)
    for client in (0, 1):
        expected = list(itertools.islice(cards(deck, seed, client), 10))
        got = [names[t.script] for t in labelled if t.client == client]
        assert got == expected
    assert [(t.client, t.number) for t in labelled] == [(t.client, t.number) for t in logged]


def test_a_failed_transaction_leaves_its_card_to_be_dealt_again():
    deck = {"new_order": 1, "payment": 1, "stock_level": 1}
    dealt = list(itertools.islice(cards(deck, 5, 0), 4))
    logged = [_logged(0, 0), _logged(0, 1, None), _logged(0, 2), _logged(0, 3)]
    names = list(deck)
    got = [names[t.script] for t in label(logged, deck, 5)]
    assert got == [dealt[0], dealt[1], dealt[1], dealt[2]]


def test_the_dispatcher_deals_from_its_variables_and_runs_one_branch():
    scripts = {name: f"select '{name}';\n" for name in STANDARD_DECK}
    text = dispatcher(STANDARD_DECK, scripts)
    assert text.startswith("\\if :deck_left = 0\n\\set deck_left 23\n\\set deck_new_order 10\n")
    assert (
        "\\set deck_draw (hash_murmur2(:client_id * 4294967296 + :deck_dealt, :deck_seed)"
        " & 2147483647) % :deck_left" in text
    )
    assert "when :deck_draw < :deck_new_order + :deck_payment then 1" in text
    # the card leaves the deck after the transaction's statements, not before
    assert "select 'delivery';\n\\set deck_delivery :deck_delivery - 1\n" in text
    assert text.endswith(
        "\\endif\n\\set deck_left :deck_left - 1\n\\set deck_dealt :deck_dealt + 1\n"
    )
    assert text.count("\\elif") == 4
    assert initial_variables(STANDARD_DECK, 8) == {
        "deck_seed": 8, "deck_dealt": 0, "deck_left": 0, "deck_new_order": 0,
        "deck_payment": 0, "deck_order_status": 0, "deck_delivery": 0, "deck_stock_level": 0,
    }  # fmt: skip
    one = dispatcher({"payment": 1}, {"payment": "select 1;\n"})
    assert "\\set deck_card 0\n\\if :deck_card = 0\nselect 1;\n" in one


def test_a_mix_below_a_minimum_is_flagged():
    # issue 51's runs: independent draws on the minimums
    check = check_mix(
        {"new_order": 4536, "payment": 4273, "order_status": 394, "delivery": 410,
         "stock_level": 387}, standard=True)  # fmt: skip
    assert not check.met
    assert set(check.below) == {"payment", "order_status", "stock_level"}
    line = describe(check)
    assert "BELOW clause 5.2.3's minimums: payment 42.73% < 43%" in line
    met = check_mix({"new_order": 10, "payment": 10, "order_status": 1, "delivery": 1,
                     "stock_level": 1}, standard=True)  # fmt: skip
    assert met.met and "minimums met" in describe(met)
    assert set(MINIMUM_SHARES) == {"payment", "order_status", "delivery", "stock_level"}
    assert not check_mix({}, standard=True).met  # nothing completed meets nothing


def _run(completed: dict[str, int]) -> TpccRun:
    names = list(completed)
    logged = [
        LoggedTransaction(0, n, 1000, names.index(name), 1000, n)
        for n, name in enumerate(name for name, count in completed.items() for _ in range(count))
    ]
    summary = summarise(logged, names, 60.0)
    return TpccRun(summary=summary, warehouses=1, c_last_load=1, c_last_run=70, rollbacks=0,
                   retries=0, failures_by_kind={}, client_cpu_s=0.01, rate_limited=False,
                   pgbench_version="15.8", options=RunOptions(), settings={}, checks=[],
                   script_names=names, mix=check_mix(completed, standard=True))  # fmt: skip


def test_a_run_below_a_minimum_says_so_in_text_json_and_the_store():
    below = _run({"new_order": 50, "payment": 42, "order_status": 5, "delivery": 5,
                  "stock_level": 5})  # fmt: skip
    text = format_run(below)
    assert "BELOW clause 5.2.3's minimums: payment 39.25% < 43%" in text
    assert "warning: the run's mix is below clause 5.2.3's minimums" in text
    document = json.loads(run_json(below))
    assert document["mix_meets_minimums"] is False
    assert document["run"]["mix"]["below"] == {"payment": pytest.approx(42 / 107)}
    stored = tpcc_metrics(below)["mix"]
    assert stored["below_minimums"] == {"payment": pytest.approx(42 / 107)}
    assert stored["standard_deck"] is True
    fine = _run(dict(STANDARD_DECK))
    assert "minimums met" in format_run(fine) and "warning: the run's mix" not in format_run(fine)
    assert json.loads(run_json(fine))["mix_meets_minimums"] is True


def test_the_study_report_says_which_runs_fell_below_the_minimums():
    from pgcachelab.studies.tpcc.report import mix_text

    met = {"mix": {"shares": {}, "below_minimums": {}, "standard_deck": True}}
    below = {"mix": {"shares": {}, "below_minimums": {"payment": 0.4273}, "standard_deck": False}}
    assert mix_text([{}]) == ""  # stored before issue 51
    assert mix_text([met, met]) == "; the mix of every run (2) met clause 5.2.3's minimums"
    text = mix_text([met, below, {}])
    assert text.startswith("; the mix of 1 of 2 runs was BELOW clause 5.2.3's minimums")
    assert "(lowest: payment 42.73%)" in text


def run_json(run) -> str:
    """`tpcc run --format json`'s output for `run` (no load)."""
    out = io.StringIO()
    json_export.tpcc_run(run, None, out)
    return out.getvalue()
