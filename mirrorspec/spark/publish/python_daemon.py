"""PySpark's Python worker daemon, started warm: the feed parsers imported once, before any fork.

Spark starts one daemon per executor (`python -m <spark.python.daemon.module> pyspark.worker`)
and forks a Python worker from it for each task slot; workers are reused from task to task. A
fresh worker imports what its first task's function needs — pyarrow, the parse tasks' modules,
PySpark's Arrow serializers — before it parses anything, so every worker of every command paid
that again. Here the daemon imports them first and runs PySpark's own daemon loop, so each fork
starts with them loaded (copy-on-write pages, no second import).

`session.build_session` names this module for local masters only, where the executors run the
driver's own Python (which has mirrorspec). Importing the parsers is best effort: a daemon that
can't import one still serves every task, whose worker then imports what it needs itself.
"""

from __future__ import annotations

import importlib

# What a publish's Python tasks import (feeds/base.py `map_tasks`, `read_text_changes`).
PRELOAD = (
    "pyarrow",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.pandas.types",
    "mirrorspec.spark.publish.feeds.base",
    "mirrorspec.sources.qlik",
    "mirrorspec.sources.qlik_columns",
    "mirrorspec.sources.arcion",
    "mirrorspec.sources.arcion_columns",
)


def preload(names: tuple[str, ...] = PRELOAD) -> list[str]:
    """Import `names`; returns those that could not be imported."""
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - best effort: a worker imports what it needs itself
            missing.append(name)
    return missing


if __name__ == "__main__":
    preload()
    from pyspark.daemon import manager

    manager()
