"""Debezium under at-least-once delivery, in pure Python (tests/support/delivery_harness.py): for every
connector's position type, a clean stream re-sent in part (a suffix after a restart, the
snapshot restarted, a topic dump read twice), split into other files and batches, with partial
images, lands the same table. The parser and a model of the publisher run here, many examples
per connector; tests/spark/test_debezium_delivery_e2e.py runs the real pipeline on a few.

`make test` runs the derandomized examples below; `make test-deep` sets
MIRRORSPEC_PROPERTY_RANDOM=1 and MIRRORSPEC_PROPERTY_EXAMPLES for many more, new each run."""

from __future__ import annotations

import os

import pytest
from tests.support.debezium_stream import CONNECTORS, EXACT, DebeziumAdapter
from tests.support.delivery_harness import clean_plan, clean_streams, deliveries, run_pure
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

DEEP = os.environ.get("MIRRORSPEC_PROPERTY_RANDOM") == "1"
EXAMPLES = int(os.environ.get("MIRRORSPEC_PROPERTY_EXAMPLES", "10"))


def examples(times: int):
    return settings(max_examples=max(1, EXAMPLES * times), deadline=None, database=None,
                    derandomize=not DEEP, phases=[Phase.explicit, Phase.generate, Phase.shrink],
                    suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("connector", CONNECTORS)
@examples(6)
@given(data=st.data())
def test_a_keyed_table_is_the_same_under_every_perturbation(connector, data):
    stream = data.draw(clean_streams(keyed=True, truncates=True))
    adapter = DebeziumAdapter(connector)
    clean = run_pure(adapter, stream, clean_plan(stream))
    assert clean.error is None and clean.rows == stream.expected(), clean.explain(stream)
    plan = data.draw(deliveries(stream))
    outcome = run_pure(adapter, stream, plan)
    assert outcome.error is None and outcome.rows == stream.expected(), \
        f"{outcome.explain(stream)}\nplan: {plan}"


@pytest.mark.parametrize("connector", CONNECTORS)
@examples(3)
@given(data=st.data())
def test_a_keyless_table_lands_the_same_rows_or_stops_where_it_cannot_tell(connector, data):
    """Keyless: a re-sent row and a second identical row look alike. Where positions name one
    event (MySQL, SQL Server, Db2) and the snapshot is not re-sent, every re-send is told apart;
    elsewhere the table may stop at a located error instead — never land a wrong table."""
    stream = data.draw(clean_streams(keyed=False))
    exact = connector in EXACT
    plan = data.draw(deliveries(stream, resend_snapshot=not exact))
    outcome = run_pure(DebeziumAdapter(connector), stream, plan)
    assert outcome.acceptable(stream), f"{outcome.explain(stream)}\nplan: {plan}"
    if exact:
        assert outcome.error is None, outcome.explain(stream)
