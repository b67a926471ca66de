"""GoldenGate, Maxwell and Canal under at-least-once delivery, through the real publish → mirror
pipeline: the property of tests/support/delivery_harness.py on Spark for a few derandomized streams,
every reader a table of ONE run (tests/unit/sources/test_row_image_delivery.py runs many examples in
pure Python).

Each keyed stream is re-sent after a restart (GoldenGate from its first operation, an initial
load included; Maxwell and Canal from a change after their bootstrap or initial load), with
partial images (GoldenGate compressed updates, Maxwell minimal `data`), cut into two batches of
two files; keyless streams are re-sent too. The Delta table must equal the stream's final
table.

`make test-deep-delivery` (MIRRORSPEC_PROPERTY_RANDOM=1, MIRRORSPEC_PROPERTY_EXAMPLES=N) runs
it with N new random examples."""

from __future__ import annotations

import os

from tests.support.delivery_harness import Case, clean_streams, restart_plan, run_pure, run_spark
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.support.row_image_streams import (CanalAdapter, GoldenGateAdapter, MaxwellAdapter,
                               resent_snapshot_after_stream)

DEEP = os.environ.get("MIRRORSPEC_PROPERTY_RANDOM") == "1"

# case → (adapter, keyed, re-send from: the fraction of the stream)
# (GoldenGate's keyless re-sends are told apart as Maxwell's are: the pure tests run both)
CASES = {"goldengate": (GoldenGateAdapter, True, 0.0), "maxwell": (MaxwellAdapter, True, 0.5),
         "canal": (CanalAdapter, True, 0.5), "maxwell_keyless": (MaxwellAdapter, False, 0.3)}


@settings(max_examples=int(os.environ.get("MIRRORSPEC_PROPERTY_EXAMPLES", "1")) if DEEP else 1,
          deadline=None, derandomize=not DEEP, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_row_image_reader_lands_the_same_table_re_sent_split_and_partial(
        spark, tmp_path_factory, data):
    cases, adapters = [], []
    for name, (adapter_type, keyed, back_to) in CASES.items():
        stream = data.draw(clean_streams(keyed=keyed, snapshot=keyed, max_events=6,
                                         truncates=name == "goldengate"), label=name)
        plan = restart_plan(stream, back_to=back_to)
        if adapter_type is not GoldenGateAdapter and resent_snapshot_after_stream(stream, plan):
            plan = restart_plan(stream, back_to=stream.snapshot_size / len(stream.events))
        pure = run_pure(adapter_type(), stream, plan)
        assert pure.error is None and pure.rows == stream.expected(), pure.explain(stream)
        cases.append(Case(name, stream, plan))
        adapters.append(adapter_type())
    run_spark(spark, adapters, cases, str(tmp_path_factory.mktemp("rows")))
    for case in cases:
        outcome = case.outcome
        assert outcome.error is None and outcome.rows == case.stream.expected(), \
            f"{case.name}: {outcome.explain(case.stream)}\nplan: {case.plan}"
