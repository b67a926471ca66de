"""Debezium under at-least-once delivery, through the real publish → mirror pipeline.

1. The property of tests/support/delivery_harness.py on Spark: a few derandomized streams, each
   re-sent after a restart (one with its snapshot restarted), with partial images, cut into
   two batches of two files, every connector's position type a table of ONE run; the Delta
   table must equal the stream's final table (and the pure pipeline's answer).
2. One fixture per Debezium behaviour of the at-least-once issue, each a table of one run, each
   failing on the publisher that landed creates as plain inserts. Shapes after Debezium's
   documentation and tests at https://github.com/debezium/debezium commit aad5519902:
   `documentation/modules/ROOT/pages/connectors/postgresql.adoc` ("Kafka Connect process
   crashes": tasks resume from the last recorded offset and re-send; "If the connector stops
   during a snapshot, the connector begins a new snapshot when it restarts"),
   `partials/modules/all-connectors/con-connector-incremental-snapshot.adoc` and
   `proc-running-an-ad-hoc-snapshot-with-additional-conditions.adoc` (`op: r` with
   `snapshot: incremental`), `debezium-connector-postgres/.../UnchangedToastedPlaceholder.java`
   and `RecordsStreamProducerIT.java` (DBZ-5936: `int[]` placeholders as byte values).

`make test-deep` (MIRRORSPEC_PROPERTY_RANDOM=1, MIRRORSPEC_PROPERTY_EXAMPLES=N) runs part 1
with N new random examples."""

from __future__ import annotations

import json
import os

from tests.support.debezium_stream import DebeziumAdapter
from tests.support.delivery_harness import (KEY, Case, FeedCase, clean_streams, restart_plan, run_feeds,
                              run_pure, run_spark)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

DEEP = os.environ.get("MIRRORSPEC_PROPERTY_RANDOM") == "1"

# connector → how its stream is perturbed: (keyed, snapshot restarted). `make test` runs one
# connector of each kind of position (shared with a restarted snapshot, per key, exact on a
# keyless table, exact with truncates); the pure tests run all of them with many examples,
# `make test-deep-delivery` all of them here too.
SPARK_CASES = {"postgresql": (True, True), "postgresql_lsn": (True, False),
               "mysql": (False, False), "sqlserver": (True, False), "vitess": (True, True),
               "oracle": (True, False), "mongodb": (True, False), "db2": (False, False),
               "mariadb": (True, True)}
if not DEEP:
    SPARK_CASES = dict(list(SPARK_CASES.items())[:4])


@settings(max_examples=int(os.environ.get("MIRRORSPEC_PROPERTY_EXAMPLES", "1")) if DEEP else 1,
          deadline=None, derandomize=not DEEP, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_connector_lands_the_same_table_re_sent_split_and_partial(spark, tmp_path_factory,
                                                                       data):
    cases, adapters = [], []
    for connector, (keyed, restart_snapshot) in SPARK_CASES.items():
        # a keyless table's snapshot re-sent at its own position stops it (by design): the
        # keyless cases stream without one
        stream = data.draw(clean_streams(keyed=keyed, snapshot=keyed, max_events=8,
                                         truncates=keyed and connector == "sqlserver"),
                           label=connector)
        plan = restart_plan(stream, back_to=0 if restart_snapshot else 0.4)
        adapter = DebeziumAdapter(connector)
        pure = run_pure(adapter, stream, plan)
        assert pure.error is None and pure.rows == stream.expected(), pure.explain(stream)
        cases.append(Case(connector, stream, plan))
        adapters.append(adapter)
    # one plan, one run: every connector's table published and mirrored side by side
    run_spark(spark, adapters, cases, str(tmp_path_factory.mktemp("delivery")))
    for case in cases:
        assert case.outcome.error is None and case.outcome.rows == case.stream.expected(), \
            f"{case.name}: {case.outcome.explain(case.stream)}\nplan: {case.plan}"


# --- one fixture per behaviour ----------------------------------------------------------------------

COLUMNS = ((KEY, "Int32"), ("name", "String"), ("ints", "String"))


def event(op: str, key: int, name: str | None = None, lsn: int = 0, snapshot: str | None = None,
          ints=None, before: dict | None = None, sequence: bool = True) -> str:
    row = {KEY: key, "name": name, "ints": ints if ints is not None else [key]}
    source = {"connector": "postgresql", "name": "shop", "db": "shop", "table": "items",
              "lsn": lsn, "ts_ms": 1_700_000_000_000}
    if sequence:
        source["sequence"] = json.dumps([None if snapshot else str(lsn - 1), str(lsn)])
    if snapshot:
        source["snapshot"] = snapshot
    after = None if op == "d" else row
    return json.dumps({"before": row if op == "d" else before, "after": after, "op": op,
                       "source": source, "ts_ms": 1_700_000_000_000})


def lines(*events: str) -> str:
    return "\n".join(events) + "\n"


PLACEHOLDER_INTS = list(b"__debezium_unavailable_value")  # DBZ-5936


def test_each_at_least_once_behaviour_lands_the_source_table(spark, tmp_path):
    stream = [event("c", 110, "a", 100), event("c", 111, "b", 110), event("u", 110, "a2", 120)]
    snapshot = [event("r", k, f"s{k}", 50, "first" if k == 1 else "true") for k in range(1, 11)]
    cases = [
        # a restart re-sends what followed the last recorded offset, in a later file
        FeedCase("later_file", [{"a.json": lines(*stream)},
                                {"b.json": lines(*stream[1:], event("c", 112, "c", 130))}],
                 columns=COLUMNS),
        # a topic dump read from the beginning: the lsn goes back inside one file; Postgres
        # lsn without `sequence` too
        FeedCase("dump_twice", [{"dump.json": lines(*stream, *stream)}], columns=COLUMNS),
        FeedCase("dump_lsn_only", [{"dump.json": lines(*[
            event(*args, sequence=False) for args in
            [("c", 110, "a", 100), ("c", 111, "b", 110), ("u", 110, "a2", 120)] * 2])}],
            columns=COLUMNS),
        # a snapshot interrupted after 5 rows starts again at the same lsn: 10 keys, not 15
        FeedCase("snapshot_restart", [{"a.json": lines(*snapshot[:5], *snapshot)}],
                 columns=COLUMNS),
        # an incremental snapshot re-reads keys the table has, between streamed changes
        FeedCase("incremental", [{"a.json": lines(*stream)},
                                 {"b.json": lines(event("r", 110, "a2", 125, "incremental"),
                                                  event("r", 111, "b", 125, "incremental"),
                                                  event("u", 111, "b2", 140))}],
                 columns=COLUMNS),
        # an unchanged int[] column sent as the placeholder's byte values (DBZ-5936)
        FeedCase("int_array_toast", [{"a.json": lines(event("c", 7, "x", 100, ints=[1, 2, 3]))},
                                     {"b.json": lines(event("u", 7, "y", 110,
                                                            ints=PLACEHOLDER_INTS))}],
                 columns=COLUMNS),
        # ... for a row no place has: the table stops at the update instead of landing NULL
        FeedCase("toast_unknown", [{"a.json": lines(event("u", 8, "y", 110,
                                                          ints=PLACEHOLDER_INTS))}],
                 columns=COLUMNS),
        # a multi-partition topic written by a Kafka Connect sink (<topic>+<partition>+<offset>):
        # order and re-sends hold per partition, so partition 1 lagging behind partition 0 loses
        # nothing, and partition 0's re-sent event is still dropped
        FeedCase("sink_partitions", [
            {"items+0+0000000000.json": lines(event("c", 1, "a", 100), event("c", 2, "b", 300)),
             "items+1+0000000000.json": lines(event("c", 3, "c", 110))},
            {"items+0+0000000002.json": lines(event("c", 2, "b", 300), event("u", 1, "a2", 310)),
             "items+1+0000000001.json": lines(event("u", 3, "c2", 160))}], columns=COLUMNS),
        # a position going back to an event nothing sent there: a reordered or mixed file
        FeedCase("back_and_differs", [{"a.json": lines(*stream, event("u", 111, "zz", 110))}],
                 columns=COLUMNS),
        # a keyless table whose events carry no position lands them as sent
        FeedCase("keyless_unpositioned", [{"a.json": lines(json.dumps(
            {"op": "c", "after": {KEY: 1, "name": "a", "ints": None}, "source": {}}))}],
            columns=COLUMNS, keys=()),
    ]
    run_feeds(spark, cases, str(tmp_path))
    got = {case.name: case for case in cases}

    def table(name: str) -> list[tuple]:
        outcome = got[name].outcome
        assert outcome.error is None, outcome.error.render()
        return sorted((r[KEY], r["name"], r["ints"]) for r in got[name].rows)

    final = [(110, "a2", "[110]"), (111, "b", "[111]")]
    assert table("later_file") == final + [(112, "c", "[112]")]
    assert table("dump_twice") == final
    assert table("dump_lsn_only") == final
    assert table("snapshot_restart") == [(k, f"s{k}", f"[{k}]") for k in range(1, 11)]
    assert table("incremental") == [(110, "a2", "[110]"), (111, "b2", "[111]")]
    assert table("int_array_toast") == [(7, "y", "[1,2,3]")]
    assert table("sink_partitions") == [(1, "a2", "[1]"), (2, "b", "[2]"), (3, "c2", "[3]")]
    unknown = got["toast_unknown"].outcome.error
    assert unknown is not None and unknown.file.endswith("a.json") and unknown.line == 1
    assert "lacks ints" in unknown.message and "never becomes NULL" in unknown.message
    differs = got["back_and_differs"].outcome.error
    assert differs is not None and differs.line == 4 and "goes back within the file" in \
        differs.message
    assert table("keyless_unpositioned") == [(1, "a", None)]
