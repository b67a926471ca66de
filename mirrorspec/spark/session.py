"""The SparkSession: local[*] by default, master/remote and conf from the plan or flags."""

from __future__ import annotations

import os
from typing import Mapping

from pyspark.sql import SparkSession

from mirrorspec.spark import jars

# Defaults for a laptop; any of them can be overridden by the profile's `spark.conf`.
DEFAULT_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.memory": "4g",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
}


def build_session(master: str | None = "local[*]", conf: Mapping[str, str] | None = None,
                  remote: str | None = None, app_name: str = "mirrorspec") -> SparkSession:
    """Get or create the process's SparkSession with Delta Lake configured.

    Delta's jars come from the cache `make` filled (offline); without it, from Maven through
    `spark.jars.packages` (needs the network once).
    """
    merged = dict(DEFAULT_CONF)
    merged.update({k: str(v) for k, v in (conf or {}).items()})
    if remote:
        builder = SparkSession.builder.remote(remote).appName(app_name)
        for key, value in (conf or {}).items():
            builder = builder.config(key, str(value))
        return builder.getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    builder = SparkSession.builder.master(master or "local[*]").appName(app_name)
    cached = jars.cached_jars()
    if cached:
        existing = merged.get("spark.jars")
        paths = ",".join(str(p) for p in cached)
        merged["spark.jars"] = f"{existing},{paths}" if existing else paths
    else:
        packages = ",".join(jars.delta_artifacts()[:1])
        existing = merged.get("spark.jars.packages")
        merged["spark.jars.packages"] = f"{existing},{packages}" if existing else packages
    for key, value in merged.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("MIRRORSPEC_SPARK_LOG_LEVEL", "ERROR"))
    return session


def _python() -> str:
    import sys
    return sys.executable
