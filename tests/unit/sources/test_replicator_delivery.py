"""Qlik Replicate, Arcion and AWS DMS under at-least-once delivery, in pure Python
(tests/support/delivery_harness.py, adapters in tests/support/replicator_streams.py): a clean stream lands its
final table; the same stream re-sent in part (a suffix after a restart, in a later file, a
later batch or the same file), split into other files and batches, with partial images, lands
the same table — or, for a keyless table whose positions several changes share (DMS commit
times), stops at a located error. tests/spark/test_seed_readers_delivery.py runs the real
pipeline on a few.

These producers send their full load again only as a reload of the table (Qlik REFRESH, an
Arcion snapshot, DMS full-load files), never after its changes: restarts here re-send changes,
and a restarted full load repeats reads before any change (`full_load_restart`).

`make test` runs the derandomized examples below; `make test-deep-delivery` sets
MIRRORSPEC_PROPERTY_RANDOM=1 and MIRRORSPEC_PROPERTY_EXAMPLES for many more, new each run."""

from __future__ import annotations

import os

import pytest
from tests.support.delivery_harness import Delivered, clean_plan, clean_streams, deliveries, run_pure
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.support.replicator_streams import ArcionAdapter, DmsAdapter, QlikAdapter

DEEP = os.environ.get("MIRRORSPEC_PROPERTY_RANDOM") == "1"
EXAMPLES = int(os.environ.get("MIRRORSPEC_PROPERTY_EXAMPLES", "10"))

ADAPTERS = {"qlik_replicate": QlikAdapter, "arcion": ArcionAdapter, "aws_dms": DmsAdapter}
# DMS files are named by the harness, not LOAD…: its streams have no full load
SNAPSHOT = {"qlik_replicate": True, "arcion": True, "aws_dms": False}
EXACT = ("qlik_replicate", "arcion")  # positions that name one change


def examples(times: int):
    return settings(max_examples=max(1, EXAMPLES * times), deadline=None, database=None,
                    derandomize=not DEEP, phases=[Phase.explicit, Phase.generate, Phase.shrink],
                    suppress_health_check=list(HealthCheck))


@st.composite
def full_load_restart(draw, stream, plan):
    """`plan` with its full load restarted before any change: a prefix of the reads sent
    again right after them (in the first file)."""
    size = stream.snapshot_size
    if not size or not draw(st.booleans()):
        return plan
    again = [Delivered(i) for i in range(draw(st.integers(0, size - 1)), size)]
    first = plan[0][0]
    at = next((n for n, d in enumerate(first) if d.index >= size), len(first))
    return [[first[:at] + again + first[at:], *plan[0][1:]], *plan[1:]]


@pytest.mark.parametrize("reader", sorted(ADAPTERS))
@examples(6)
@given(data=st.data())
def test_a_keyed_table_is_the_same_under_every_perturbation(reader, data):
    stream = data.draw(clean_streams(keyed=True, snapshot=SNAPSHOT[reader]))
    adapter = ADAPTERS[reader]()
    clean = run_pure(adapter, stream, clean_plan(stream))
    assert clean.error is None and clean.rows == stream.expected(), clean.explain(stream)
    plan = data.draw(deliveries(stream, resend_snapshot=False))
    plan = data.draw(full_load_restart(stream, plan))
    outcome = run_pure(adapter, stream, plan)
    assert outcome.error is None and outcome.rows == stream.expected(), \
        f"{outcome.explain(stream)}\nplan: {plan}"


@pytest.mark.parametrize("reader", sorted(ADAPTERS))
@examples(3)
@given(data=st.data())
def test_a_keyless_table_lands_the_same_rows_or_stops_where_it_cannot_tell(reader, data):
    """Keyless: a re-sent row and a second identical row look alike. Qlik's changeSequence and
    Arcion's cursor name one change, so every re-send is told apart; DMS's commit time is
    shared by a transaction's rows, so the table may stop at a located error instead."""
    stream = data.draw(clean_streams(keyed=False, snapshot=SNAPSHOT[reader]))
    plan = data.draw(deliveries(stream, resend_snapshot=False))
    outcome = run_pure(ADAPTERS[reader](), stream, plan)
    assert outcome.acceptable(stream), f"{outcome.explain(stream)}\nplan: {plan}"
    if reader in EXACT:
        assert outcome.error is None, outcome.explain(stream)
