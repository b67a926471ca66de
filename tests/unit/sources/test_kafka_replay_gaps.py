"""What a Kafka table's full refresh may replay: the offsets its state shows it was built from
against the broker's first offsets (pure Python; the Spark side is in
tests/spark/test_kafka_source.py (`test_full_refresh_replays_aside_…`))."""

from __future__ import annotations

from mirrorspec.sources.kafka import (KafkaSource, mirrored_from, rebuild_hint, replay_gap_problem,
                                      replay_gaps, staged_name)


def config(starting="earliest", metadata_topic=None) -> KafkaSource:
    return KafkaSource("b:9092", topics=("t",), starting_offsets=starting,
                       metadata_topic=metadata_topic)


def state(*staged: tuple[str, int, int], offsets=None, held=()) -> dict:
    return {"files": {f"/s/kafka/x/{staged_name(t, p, o)}": 1 for t, p, o in staged},
            "held_back": [f"/s/kafka/x/{staged_name(t, p, o)}" for t, p, o in held],
            "kafka": {"offsets": offsets or {}}}


def test_the_first_offset_of_every_partition_the_state_shows():
    found = mirrored_from(state(("t", 0, 5), ("t", 0, 40), ("t", 1, 7), held=[("t", 1, 3)],
                                offsets={"t": {"0": 50, "1": 9, "2": 12}}))
    assert found == {("t", 0): 5, ("t", 1): 3, ("t", 2): 12}
    assert mirrored_from({"files": {"/feed/a.json": 1}}) is None  # no Kafka fetch: unknown


def test_a_gap_where_the_broker_lost_offsets_the_table_was_built_from():
    built = {("t", 0): 0, ("t", 1): 10}
    assert replay_gaps(config(), built, {("t", 0): 0, ("t", 1): 10}) == []
    assert replay_gaps(config(), built, {("t", 0): 4, ("t", 1): 12}) == [("t", 0, 0, 3),
                                                                         ("t", 1, 10, 11)]
    # a partition the table never read from holds nothing of it
    assert replay_gaps(config(), built, {("t", 2): 99}) == []
    # a state that shows no fetch: the table may hold everything from offset 0
    assert replay_gaps(config(), None, {("t", 0): 3}) == [("t", 0, 0, 2)]


def test_starting_offsets_the_user_chose_are_no_gap_unless_the_broker_lost_them():
    built = {("t", 0): 0, ("t", 1): 0}
    first = {("t", 0): 4, ("t", 1): 4}
    assert replay_gaps(config("latest"), built, first) == []
    chosen = config({"t": {"0": 4, "1": -1}})
    assert replay_gaps(chosen, built, first) == []
    assert replay_gaps(config({"t": {"0": 2}}), built, first) == [("t", 0, 2, 3),
                                                                  ("t", 1, 0, 3)]
    # the metadata topic is always read from its beginning
    meta = config("latest", metadata_topic="m")
    assert replay_gaps(meta, {("m", 0): 0}, {("m", 0): 1}) == [("m", 0, 0, 0)]


def test_the_refusal_names_topic_partition_offsets_and_the_starting_offsets_that_accept_it():
    message, hint = replay_gap_problem("dbo.orders", [("t", 0, 0, 3), ("t", 1, 10, 11)])
    assert message.startswith("topic t, partition 0: offsets 0 to 3; topic t, partition 1: "
                              "offsets 10 to 11 are no longer on the broker (retention)")
    assert 'starting_offsets to {"t":{"0":4,"1":12}}' in hint
    assert "--full-refresh --select dbo.orders" in hint and "without --full-refresh" in hint
    assert "starting_offsets" in rebuild_hint("dbo.orders")
