"""Qlik Replicate, Arcion and AWS DMS under at-least-once delivery, through the real
publish → mirror pipeline, every case a table of ONE run (tiny data):

1. the property of tests/support/delivery_harness.py: for each reader one derandomized stream re-sent
   after a restart, with partial images, cut into two batches of two files; the Delta table
   must equal the stream's final table (and the pure pipeline's answer);
2. one fixture per documented behaviour, each failing on the publisher that checked no
   positions: Qlik's Kafka target re-sends changes after a task resume with their
   `changeSequence` (Qlik Replicate Help, "Headers": AR_H_CHANGE_SEQ); a restarted
   Arcion Replicant writes a realtime file again under the next name, same operations and
   cursors (Arcion's CSV form); a resumed AWS DMS task writes CDC rows again (DMS User Guide,
   "Indicating source DB operations in migrated S3 data", TimestampColumnName); a keyless
   DMS table without commit times lands its rows as sent."""

from __future__ import annotations

import json

from tests.support.delivery_harness import KEY, Case, FeedCase, clean_streams, feed_case, restart_plan, \
    run_feeds, run_pure
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.support.replicator_streams import ArcionAdapter, DmsAdapter, QlikAdapter, arcion_row

TWO = ((KEY, "Int32"), ("name", "String"))


def qlik(op: str, key: int, name: str | None, sequence: int) -> str:
    return json.dumps({"magic": "atMSG", "type": "DT", "headers": None, "message": {
        "data": {KEY: key, "name": name}, "beforeData": None,
        "headers": {"operation": op, "changeSequence": f"2024050210010000{sequence:019d}"}}})


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


ARCION_OPTIONS = {"header": False, "column_order": ["name", KEY]}


@settings(max_examples=1, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_seed_readers_land_the_source_table_under_redelivery(spark, tmp_path_factory, data):
    cases, feeds = [], []
    for name, adapter, keyed, snapshot in (("qlik", QlikAdapter(), True, True),
                                           ("arcion", ArcionAdapter(), False, True),
                                           ("dms", DmsAdapter(), True, False)):
        stream = data.draw(clean_streams(keyed=keyed, snapshot=snapshot, max_events=8),
                           label=name)
        plan = restart_plan(stream, back_to=0.4)
        pure = run_pure(adapter, stream, plan)
        assert pure.error is None and pure.rows == stream.expected(), pure.explain(stream)
        case = Case(name, stream, plan)
        cases.append(case)
        feeds.append(feed_case(adapter, case))
    first = [qlik("INSERT", 1, "a", 1), qlik("UPDATE", 1, "b", 2), qlik("INSERT", 2, "x", 3),
             qlik("DELETE", 2, None, 4)]
    india = [arcion_row("I", 10, "India", 1), arcion_row("U", 10, "USA", 2),
             arcion_row("I", 11, "Chile", 3)]
    fixtures = [
        # a resumed Qlik task re-sends from an earlier changeSequence (and stops again): the
        # INSERT of a key a later UPDATE changed, the INSERT of a deleted key, then new work
        FeedCase("qlik_resume", [{"a.json": lines(*first)},
                                 {"b.json": lines(first[0], first[2], qlik("INSERT", 3, "y", 5))}],
                 "qlik_replicate", columns=TWO),
        # a Replicant restart writes the realtime file again under the next name (a prefix
        # of it: the restart stopped again); keyed and keyless
        FeedCase("arcion_rewrite", [{"realtime_00001.csv": lines(*india)},
                                    {"realtime_00002.csv": lines(india[0])}],
                 "arcion", ARCION_OPTIONS, columns=TWO),
        FeedCase("arcion_keyless", [{"realtime_00001.csv": lines(india[0], india[2])},
                                    {"realtime_00002.csv": lines(india[0], india[2])}],
                 "arcion", ARCION_OPTIONS, columns=TWO, keys=()),
        # a resumed DMS task writes CDC rows again in a new file (commit times kept)
        FeedCase("dms_resume", [
            {"20231029-113401000.csv": "I,2023-10-29 11:34:01.000001,1,a\n"
                                       "U,2023-10-29 11:34:02.000001,1,b\n"},
            {"20231029-113501000.csv": "I,2023-10-29 11:34:01.000001,1,a\n"}],
            "aws_dms", {"timestamp_column": "ts"}, columns=TWO),
        # ... without commit times (DMS's default), a keyless table's rows land as sent
        FeedCase("dms_keyless", [{"20231029-113401000.csv": "I,1,a\nI,2,b\n"}], "aws_dms",
                 columns=TWO, keys=()),
        # ... but a row equal to one its file sent before stops it instead of a duplicate
        FeedCase("dms_keyless_twice", [{"20231029-113401000.csv": "I,1,a\nI,2,b\nI,1,a\n"}],
                 "aws_dms", columns=TWO, keys=()),
    ]
    run_feeds(spark, feeds + fixtures, str(tmp_path_factory.mktemp("seed-delivery")))
    for case, feed in zip(cases, feeds):
        outcome = feed.outcome
        assert outcome.error is None and outcome.rows == case.stream.expected(), \
            f"{case.name}: {outcome.explain(case.stream)}\nplan: {case.plan}"
    got = {f.name: f for f in fixtures}

    def table(name: str) -> list[tuple]:
        outcome = got[name].outcome
        assert outcome.error is None, outcome.error.render()
        return sorted((r[KEY], r["name"]) for r in got[name].rows)

    assert table("qlik_resume") == [(1, "b"), (3, "y")]
    assert table("arcion_rewrite") == [(10, "USA"), (11, "Chile")]
    assert table("arcion_keyless") == [(10, "India"), (11, "Chile")]
    assert table("dms_resume") == [(1, "b")]
    assert table("dms_keyless") == [(1, "a"), (2, "b")]
    twice = got["dms_keyless_twice"].outcome.error
    assert twice is not None and twice.line == 3 and "equals one the file sent before" in twice.message
