"""max_connections for a point's clients on a managed cluster (issue 34: seed 003's 250)."""

from pgcachelab.experiments.connection_room import with_room_for_clients


def test_the_default_is_kept_while_it_has_room_and_raised_when_it_has_not():
    assert with_room_for_clients({"shared_buffers": "1GB"}, 8) == {"shared_buffers": "1GB"}
    assert with_room_for_clients({}, 90) == {}  # 90 + the lab's 10 sessions fit in 100
    assert with_room_for_clients({}, 250) == {"max_connections": "260"}
    assert with_room_for_clients({}, None) == {}  # a workload without clients
    # no more than MOST_RAISED: beyond it the spec says (the preflight refuses the clients)
    assert with_room_for_clients({}, 100_000) == {"max_connections": "5000"}


def test_a_spec_that_sets_max_connections_keeps_its_value():
    assert with_room_for_clients({"max_connections": "500"}, 250) == {"max_connections": "500"}
