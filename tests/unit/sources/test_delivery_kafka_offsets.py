"""Re-sends at a later Kafka offset, for every reader whose producer writes to Kafka (Debezium,
GoldenGate, Maxwell, Canal, Qlik Replicate), in pure Python (tests/support/delivery_harness.py).

The other property tests name feed files `b000-f000.json`: one channel, re-sends in a later
file or batch. Here every file is a Kafka Connect sink file of one topic-partition,
`<topic>+<partition>+<start offset>.json` (Confluent S3/GCS/Azure Blob sinks'
`topics.dir/<topic>/partition=<p>/<topic>+<p>+<offset>.<ext>`), so each event the producer
re-sends after a restart arrives at a new, later offset of that partition and its position
is checked per topic-partition (`delivery.channel_of`). The table must come out the same."""

from __future__ import annotations

import pytest
from tests.support.debezium_stream import DebeziumAdapter
from tests.support.delivery_harness import clean_streams, deliveries, run_pure
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from tests.support.replicator_streams import QlikAdapter
from tests.support.row_image_streams import (CanalAdapter, GoldenGateAdapter, MaxwellAdapter,
                               resent_snapshot_after_stream)

from tests.support import delivery_harness
from mirrorspec.sources.delivery import channel_of

ADAPTERS = {"debezium_postgresql": lambda: DebeziumAdapter("postgresql"),
            "debezium_mysql": lambda: DebeziumAdapter("mysql"),
            "debezium_oracle": lambda: DebeziumAdapter("oracle"),
            "goldengate": GoldenGateAdapter, "maxwell": MaxwellAdapter, "canal": CanalAdapter,
            "qlik_replicate": QlikAdapter}
# a restarted snapshot after the stream began is no documented behaviour of these (their
# snapshots carry no position: a reload is sent whole, not as stale reads)
NO_SNAPSHOT_POSITION = ("maxwell", "canal", "qlik_replicate")
# positions that name one event: a keyless table's re-sends are all told apart
EXACT = ("debezium_mysql", "goldengate", "maxwell")


def sink_name(batch: int, index: int) -> str:
    """A sink file of topic `shop.items`, partition 0, starting at a later offset each file."""
    return f"shop.items+0+{batch * 1000 + index * 100:010d}.json"


@pytest.fixture(autouse=True)
def _sink_files(monkeypatch):
    monkeypatch.setattr(delivery_harness, "file_name", sink_name)


def test_sink_files_are_one_topic_partition():
    assert {channel_of(sink_name(b, i)) for b in range(3) for i in range(3)} == {"shop.items/0"}


PROPERTY = settings(max_examples=8, deadline=None, database=None, derandomize=True,
                    phases=[Phase.explicit, Phase.generate, Phase.shrink],
                    suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("reader", sorted(ADAPTERS))
@PROPERTY
@given(data=st.data())
def test_a_suffix_resent_at_later_offsets_lands_the_same_table(reader, data):
    keyed = reader not in EXACT or data.draw(st.booleans(), label="keyed")
    snapshot = keyed or reader.startswith("debezium")
    stream = data.draw(clean_streams(keyed=keyed, snapshot=snapshot,
                                     truncates=keyed and reader not in ("maxwell", "qlik_replicate")))
    resend_snapshot = reader not in NO_SNAPSHOT_POSITION and (keyed or reader not in EXACT)
    plan = data.draw(deliveries(stream, resend_snapshot=resend_snapshot))
    if reader in NO_SNAPSHOT_POSITION:
        assume(not resent_snapshot_after_stream(stream, plan))
    outcome = run_pure(ADAPTERS[reader](), stream, plan)
    assert outcome.error is None and outcome.rows == stream.expected(), \
        f"{outcome.explain(stream)}\nplan: {plan}"
