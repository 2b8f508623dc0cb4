"""The mix by the deck of clause 5.2.4.2, and its check against clause 5.2.3. Pure.

pgbench picks each transaction's script independently by weight (`-f script@weight`), so a
mix set on 5.2.3's minimums falls below one of them in most runs (issue 51: Payment 42.73%,
Stock-Level 3.87%). Clause 5.2.4.2 deals each terminal's transactions from a shuffled deck
instead: 10 New-Order, 10 Payment and one card each of the others, reshuffled when used up,
so every whole deck meets every minimum.

pgbench has no arrays and no per-client deck, so the run sends one dispatcher script: each
pgbench client (a terminal) keeps the cards left in its deck in its own variables, which
persist from one transaction to the next, deals a card uniformly among those left (dealing
without replacement is a shuffle), runs that card's transaction behind an `\\if`, and only
then takes the card out. A transaction pgbench retries starts again from the script's first
command with the same card; one that fails for good leaves the card in the deck, to be dealt
again. The draw is pgbench's `hash_murmur2` of the terminal and how many cards it has dealt,
seeded per run, so that the driver can deal the same decks again here (`label`) and name the
transaction behind each line of pgbench's log, which records one script number for all.

A mix other than the standard one (`--weights`) is dealt the same way from a deck of its
weights over their greatest common divisor (50,50,0,0,0: one New-Order, one Payment).
"""

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

from pgcachelab.workloads.pgbench_log import LoggedTransaction
from pgcachelab.workloads.tpcc.params import DEFAULT_WEIGHTS, TRANSACTIONS

# Clause 5.2.4.2's deck for the standard mix (the weights 45,43,4,4,4 name it).
STANDARD_DECK = {
    "new_order": 10,
    "payment": 10,
    "order_status": 1,
    "delivery": 1,
    "stock_level": 1,
}
# Clause 5.2.3: the least share of the completed transactions each type may have.
MINIMUM_SHARES = {"payment": 0.43, "order_status": 0.04, "delivery": 0.04, "stock_level": 0.04}
_MASK64 = (1 << 64) - 1
_MM2_MUL = 0xC6A4A7935BD1E995
_MM2_MUL_TIMES_8 = 0x35253C9ADE8F4CA8
_MM2_ROT = 47
# A terminal's draw hashes client_id * 2^32 + cards dealt: unique per terminal and card.
_CLIENT_STRIDE = 1 << 32
_DRAW_MASK = 0x7FFFFFFF  # a non-negative draw, whatever the sign of the hash


def deck_of(weights: dict[str, int]) -> dict[str, int]:
    """The cards of each type in a deck for `weights` (types with no card left out)."""
    if weights == DEFAULT_WEIGHTS:
        return dict(STANDARD_DECK)
    divisor = math.gcd(*(weights[name] for name in TRANSACTIONS))
    return {name: weights[name] // divisor for name in TRANSACTIONS if weights[name]}


def is_standard(deck: dict[str, int]) -> bool:
    return deck == STANDARD_DECK


def murmur2(value: int, seed: int) -> int:
    """pgbench's hash_murmur2(value, seed) (getHashMurmur2 in pgbench.c), as an unsigned
    64-bit number."""
    result = (seed & _MASK64) ^ _MM2_MUL_TIMES_8
    k = value & _MASK64
    k = (k * _MM2_MUL) & _MASK64
    k ^= k >> _MM2_ROT
    k = (k * _MM2_MUL) & _MASK64
    result ^= k
    result = (result * _MM2_MUL) & _MASK64
    result ^= result >> _MM2_ROT
    result = (result * _MM2_MUL) & _MASK64
    result ^= result >> _MM2_ROT
    return result


def _draw(client: int, dealt: int, seed: int, left: int) -> int:
    return (murmur2(client * _CLIENT_STRIDE + dealt, seed) & _DRAW_MASK) % left


def cards(deck: dict[str, int], seed: int, client: int) -> Iterator[str]:
    """The transactions terminal `client` is dealt, in order, as the script deals them."""
    names = list(deck)
    left: dict[str, int] = dict.fromkeys(names, 0)
    dealt = 0
    while True:
        if not any(left.values()):
            left = dict(deck)
        draw = _draw(client, dealt, seed, sum(left.values()))
        for name in names:
            if draw < left[name]:
                break
            draw -= left[name]
        yield name
        left[name] -= 1
        dealt += 1


def label(
    transactions: list[LoggedTransaction], deck: dict[str, int], seed: int
) -> list[LoggedTransaction]:
    """`transactions` from pgbench's log with each one's script number made its card's
    position in `deck` (the order of the run's script names). A failed transaction leaves
    its card in the deck: the terminal's next one is dealt it again."""
    position = {name: index for index, name in enumerate(deck)}
    by_client: dict[int, list[LoggedTransaction]] = {}
    for transaction in transactions:
        by_client.setdefault(transaction.client, []).append(transaction)
    labelled = {}
    for client, own in by_client.items():
        dealer = cards(deck, seed, client)
        card = next(dealer)
        for transaction in sorted(own, key=lambda t: t.number):
            labelled[(client, transaction.number)] = replace(transaction, script=position[card])
            if transaction.latency_us is not None and not transaction.skipped:
                card = next(dealer)
    return [labelled[(t.client, t.number)] for t in transactions]


def _variable(name: str) -> str:
    return f"deck_{name}"


def initial_variables(deck: dict[str, int], seed: int) -> dict[str, int]:
    """pgbench's -D values: an empty deck, so that each terminal shuffles a full one first."""
    return {
        "deck_seed": seed,
        "deck_dealt": 0,
        "deck_left": 0,
        **dict.fromkeys(map(_variable, deck), 0),
    }


def dispatcher(deck: dict[str, int], scripts: dict[str, str]) -> str:
    """One pgbench script that deals a card and runs the script of its transaction."""
    names = list(deck)
    lines = [
        "\\if :deck_left = 0",
        f"\\set deck_left {sum(deck.values())}",
        *(f"\\set {_variable(name)} {count}" for name, count in deck.items()),
        "\\endif",
        f"\\set deck_draw (hash_murmur2(:client_id * {_CLIENT_STRIDE} + :deck_dealt,"
        f" :deck_seed) & {_DRAW_MASK}) % :deck_left",
    ]
    bounds = []
    running = ""
    for index, name in enumerate(names[:-1]):
        running = f"{running} + :{_variable(name)}" if running else f":{_variable(name)}"
        bounds.append(f"when :deck_draw < {running} then {index}")
    lines.append(
        f"\\set deck_card case {' '.join(bounds)} else {len(names) - 1} end"
        if bounds
        else "\\set deck_card 0"
    )
    for index, name in enumerate(names):
        lines.append(f"\\{'if' if index == 0 else 'elif'} :deck_card = {index}")
        lines.append(scripts[name].rstrip("\n"))
        # after the transaction's last statement: a retried one deals the same card again
        lines.append(f"\\set {_variable(name)} :{_variable(name)} - 1")
    lines += ["\\endif", "\\set deck_left :deck_left - 1", "\\set deck_dealt :deck_dealt + 1"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class MixCheck:
    """The achieved mix of a run against clause 5.2.3's minimums."""

    shares: dict[str, float]  # of the completed transactions, each type's share
    below: dict[str, float]  # the types under their minimum, with their share
    standard: bool  # the run dealt clause 5.2.4.2's deck

    @property
    def met(self) -> bool:
        return not self.below


def check_mix(completed: dict[str, int], standard: bool) -> MixCheck:
    """Each type's share of `completed` and the minimums it misses (none completed: all)."""
    total = sum(completed.values())
    shares = {name: completed.get(name, 0) / total if total else 0.0 for name in TRANSACTIONS}
    below = {name: shares[name] for name, least in MINIMUM_SHARES.items() if shares[name] < least}
    return MixCheck(shares, below, standard)


def describe(check: MixCheck) -> str:
    """One line: the achieved mix and whether it meets clause 5.2.3's minimums."""
    shares = ", ".join(f"{name} {share * 100:.2f}%" for name, share in check.shares.items())
    dealt = "clause 5.2.4.2's deck" if check.standard else "a deck of the given weights"
    if check.met:
        return f"mix ({dealt}): {shares}; clause 5.2.3's minimums met"
    missed = ", ".join(
        f"{name} {share * 100:.2f}% < {MINIMUM_SHARES[name] * 100:.0f}%"
        for name, share in check.below.items()
    )
    return f"mix ({dealt}): {shares}; BELOW clause 5.2.3's minimums: {missed}"
