"""Shared fixtures. Spark tests share ONE SparkSession per pytest process (each xdist worker)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# Small, fast settings for tests (2 cores): few shuffle partitions, modest driver heap.
TEST_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "2g",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.databricks.delta.stats.collect": "true",
}


def _with_cached_s3_jars(conf: dict[str, str]) -> dict[str, str]:
    """The conf plus the optional jar sets `make` cached (on the class path only: nothing is
    copied): hadoop-aws, so the `s3` tests can read s3a://, and the PostgreSQL driver for the
    `postgres` reconcile test."""
    from mirrorspec.spark.platform import jars

    cached = [name for name in ("s3", "postgres") if jars.cached_extra_jars(name)]
    return {**conf, "mirrorspec.extra.jars": ",".join(cached)} if cached else conf


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of this pytest process (local[2])."""
    from mirrorspec.spark.platform.session import build_session

    session = build_session("local[2]", _with_cached_s3_jars(TEST_SPARK_CONF),
                            app_name="mirrorspec-tests")
    yield session
    session.stop()


# Markers of tests that start a JVM, a server or a browser: seconds to minutes each.
SLOW_MARKERS = ("spark", "kafka", "s3", "postgres", "browser", "cluster", "slow")


def pytest_configure(config):
    """xdist 3.8+ hands modules out by their number of tests unless told not to (older ones
    keep the collection order): keep the order pytest_collection_modifyitems gives them."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """Everything under tests/spark carries the `spark` marker; then the modules with a slow
    test run first, in collection order: the quick modules come last and fill the end of both
    xdist workers' queues, where one minute-long module could otherwise leave the other worker
    idle."""
    for item in items:
        if "/tests/spark/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.spark)
    slow_modules = {item.nodeid.split("::", 1)[0] for item in items
                    if any(item.get_closest_marker(name) for name in SLOW_MARKERS)}
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in slow_modules)


# --- a Kafka broker and an S3-API server (moto's server mode) reached through s3a:// -----------
# Here rather than in tests/spark/conftest.py: tests/functional's s3 tests use the server too.

@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """One local Kafka broker (KRaft, 127.0.0.1) for every `kafka` test of the session: each
    starts in tens of seconds, and the tests keep to topics of their own. A test that stops it
    starts it again before it ends."""
    if os.environ.get("MIRRORSPEC_SKIP_KAFKA"):
        pytest.skip("the Kafka broker's jars are not available (scripts/ensure_kafka.sh)")
    from local_kafka import LocalBroker  # scripts/ (pytest's pythonpath)

    server = LocalBroker(tmp_path_factory.mktemp("kafka")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """One S3-API server for the module."""
    from mirrorspec.spark.platform import jars

    if not jars.cached_extra_jars("s3"):
        pytest.fail("the s3 jars are not cached: run `python -m mirrorspec.spark.platform.jars s3` "
                    "(`make test` does) before the s3 tests")
    from tests.support.s3_server import S3Server

    server = S3Server(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()


@pytest.fixture
def s3_spark(spark, s3):
    """The shared session, pointed at the test server (buckets are named per server, so S3A's
    per-bucket filesystem cache never mixes servers)."""
    conf = spark._jsc.hadoopConfiguration()
    for key, value in s3.hadoop_conf().items():
        conf.set(key, value)
    return spark
