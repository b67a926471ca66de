"""GoldenGate, Maxwell and Canal under at-least-once delivery, in pure Python
(tests/support/delivery_harness.py, adapters in tests/support/row_image_streams.py): a clean stream lands the
source table; re-sent in part (a suffix after a restart, a restarted bootstrap or initial
load, a topic dump read twice), split into other files and batches, with partial images, it
lands the same table — or, keyless without positions, lands every row as sent (a re-sent row
may land again, as documented). tests/spark/test_row_image_delivery_e2e.py runs the real pipeline
on a few.

`make test` runs the derandomized examples below; `make test-deep-delivery` sets
MIRRORSPEC_PROPERTY_RANDOM=1 and MIRRORSPEC_PROPERTY_EXAMPLES for many more, new each run."""

from __future__ import annotations

import os

import pytest
from tests.support.delivery_harness import clean_plan, clean_streams, deliveries, run_pure
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from tests.support.row_image_streams import (CanalAdapter, GoldenGateAdapter, MaxwellAdapter,
                               resent_snapshot_after_stream)

from mirrorspec.sources.delivery import KEYLESS_HINT


DEEP = os.environ.get("MIRRORSPEC_PROPERTY_RANDOM") == "1"
EXAMPLES = int(os.environ.get("MIRRORSPEC_PROPERTY_EXAMPLES", "10"))
ADAPTERS = {"goldengate": GoldenGateAdapter, "maxwell": MaxwellAdapter, "canal": CanalAdapter}
# the producers whose snapshot (an initial load's trail) carries positions like any change
POSITIONED_SNAPSHOT = ("goldengate",)


def examples(times: int):
    return settings(max_examples=max(1, EXAMPLES * times), deadline=None, database=None,
                    derandomize=not DEEP, phases=[Phase.explicit, Phase.generate, Phase.shrink],
                    suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("reader", list(ADAPTERS))
@examples(6)
@given(data=st.data())
def test_a_keyed_table_is_the_same_under_every_perturbation(reader, data):
    stream = data.draw(clean_streams(keyed=True, truncates=reader != "maxwell"))
    clean = run_pure(ADAPTERS[reader](), stream, clean_plan(stream))
    assert clean.error is None and clean.rows == stream.expected(), clean.explain(stream)
    plan = data.draw(deliveries(stream))
    if reader not in POSITIONED_SNAPSHOT:
        assume(not resent_snapshot_after_stream(stream, plan))
    outcome = run_pure(ADAPTERS[reader](), stream, plan)
    assert outcome.error is None and outcome.rows == stream.expected(), \
        f"{outcome.explain(stream)}\nplan: {plan}"


@pytest.mark.parametrize("reader", ["goldengate", "maxwell"])
@examples(3)
@given(data=st.data())
def test_a_keyless_table_with_positions_lands_the_same_rows(reader, data):
    """GoldenGate's `pos` and Maxwell's position with `xoffset` name one row each, so every
    re-send of a keyless table's rows is told apart (in the same file, another file of the
    batch, or below the marks of an earlier batch)."""
    stream = data.draw(clean_streams(keyed=False, snapshot=False))
    plan = data.draw(deliveries(stream))
    outcome = run_pure(ADAPTERS[reader](), stream, plan)
    assert outcome.error is None and outcome.rows == stream.expected(), \
        f"{outcome.explain(stream)}\nplan: {plan}"


@pytest.mark.parametrize("reader", ["canal", "maxwell"])
@examples(2)
@given(data=st.data())
def test_a_keyless_table_without_positions_lands_its_rows_as_sent(reader, data):
    """Canal's FlatMessage has no position, nor has Maxwell without output_binlog_position:
    a keyless table's rows land as sent, as Fabric lands inserts. A clean stream lands the
    source table; a re-sent one loses nothing (a re-sent row may land again: the documented
    limit, docs/sources/canal.md and maxwell.md), or stops at a change equal to one its file
    sent before."""
    from collections import Counter

    adapter = ADAPTERS[reader]()
    if reader == "maxwell":
        adapter.render = _without_positions(adapter.render)
    stream = data.draw(clean_streams(keyed=False, snapshot=False, truncates=False))
    clean = run_pure(adapter, stream, clean_plan(stream))
    assert clean.error is None and clean.rows == stream.expected(), clean.explain(stream)
    outcome = run_pure(adapter, stream, data.draw(deliveries(stream)))
    if outcome.error is not None:  # a change the file sent before: located, never a duplicate
        assert outcome.error.hint == KEYLESS_HINT and outcome.error.line, outcome.explain(stream)
    else:
        assert not Counter(map(repr, stream.expected())) - Counter(map(repr, outcome.rows))


def _without_positions(render):
    def bare(stream, events, file):
        return "\n".join(line.replace('"position"', '"_position"')
                         for line in render(stream, events, file).splitlines())
    return bare
