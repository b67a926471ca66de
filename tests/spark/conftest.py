"""Fixtures of the Spark tests that reach an S3-API server (moto's server mode) through s3a://."""

from __future__ import annotations

import pytest

from s3_server import S3Server


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """One S3-API server for the module."""
    from mirrorspec.spark.platform import jars

    if not jars.cached_extra_jars("s3"):
        pytest.fail("the s3 jars are not cached: run `python -m mirrorspec.spark.platform.jars s3` "
                    "(`make test` does) before the s3 tests")
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
