"""The Spark Declarative Pipelines recipe of docs/readers.md ("Downstream, incrementally") over
a mirrored table's change data feed: the zone of `test_change_data_feed.py`, three passes, and
after the first and the last the pipeline project run by the real `spark-pipelines` command
against a Spark Connect server started in this JVM (no second Spark). Its streaming table must
hold every change row once — the second run read only what the first had not — and its silver
table must equal the mirrored one. An extra (`make test-extras`): the Connect server and the
two `spark-pipelines` runs take a minute or two."""

from __future__ import annotations

import pytest

from tests.spark.test_change_data_feed import build_zone

pytestmark = pytest.mark.extra


@pytest.fixture(scope="module")
def connect_server(spark):
    from tests.support.downstream_recipes import start_connect_server

    url, stop = start_connect_server(spark)
    yield url
    stop()


@pytest.fixture(scope="module")
def zone(spark, tmp_path_factory, connect_server):
    zone = build_zone(spark, tmp_path_factory.mktemp("cdf"), connect_server)
    yield zone
    zone.downstream.close()


def test_spark_pipelines_streaming_table_reads_the_feed(zone):
    first, last = zone.downstream.seen[0], zone.downstream.seen[-1]
    for found in (first, last):
        assert found["pipeline"] == [(i, v) for i, v, _note in found["mirrored"]]
        # the streaming table holds every change row once: the second run read only the rest
        assert found["pipeline_changes"] == found["feed"]
    assert len(last["feed"]) > len(first["feed"])

