"""A fresh warm Spark server's first passes, in a temporary folder deleted afterwards, so the
first real commands don't pay the server's class loading and the JIT's first compilations: a
tiny landing-zone table mirrored twice (initial load, then a MERGE with an update, a delete and
an insert), and a tiny CSV extract published and mirrored twice (its first snapshot, then the
next one compared with it: one new row, published as an upsert and merged) — the path of a
`run` over the project `mirrorspec init` makes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any


def warm_up(url: str) -> None:
    """Run the warm-up passes through the Spark Connect server at `url`."""
    from mirrorspec.spark.platform.session import build_session, stop_sessions, sessions_started

    mark = sessions_started()
    work = Path(tempfile.mkdtemp(prefix="mirrorspec-warm-up-"))
    try:
        warm_up_passes(build_session(remote=url, app_name="mirrorspec-warm-up"), work)
    finally:
        stop_sessions(since=mark)
        shutil.rmtree(work, ignore_errors=True)


def warm_up_passes(spark: Any, work: Path) -> None:
    """The warm-up's passes on `spark`, under the empty folder `work`; raises when one fails."""
    _landing_passes(spark, work / "landed")
    _extract_passes(spark, work / "extract")


def _landing_passes(spark: Any, work: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone

    folder = work / "landing" / "warm_up"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}\n', encoding="utf-8")
    batches = [([0, 1, 2, 3], [0, 0, 0, 0]), ([1, 2, 4], [1, 2, 0])]  # load; update/delete/insert
    for sequence, (ids, markers) in enumerate(batches, start=1):
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                                 "name": [f"row {i}" for i in ids],
                                 "__rowMarker__": pa.array(markers, pa.int32())}),
                       folder / f"{sequence:020d}.parquet")
        result = mirror_landing_zone(spark, str(work / "landing"), str(work / "warehouse"),
                                     MirrorOptions(threads=1))
        if result.failed:
            raise RuntimeError(result.tables[0].error)


def _extract_passes(spark: Any, work: Path) -> None:
    from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone
    from mirrorspec.spark.publish.publisher import publish_table

    feed, landing, warehouse = work / "feed", work / "landing", work / "warehouse"
    feed.mkdir(parents=True)
    table = TablePlan(unique_id="warm_up.orders", name="orders", schema=None,
                      warehouse_schema="warm_up", landing_path=str(landing / "orders"),
                      delta_path=str(warehouse / "warm_up" / "orders"),
                      metadata={"keyColumns": ["id"]}, key_columns=["id"],
                      columns=[ColumnSpec("id", "Int64"), ColumnSpec("name", "String")],
                      source=SourceSpec("csv", str(feed), {}))
    plan = Plan(1, "warm_up", "1", "warm_up", "warm_up", str(landing), str(warehouse),
                str(work / "state"), SparkSpec(), None, [table], project_dir=str(work))
    for day, ids in ((1, [1, 2, 3]), (2, [1, 2, 3, 4])):
        (feed / f"orders_2026-01-0{day}.csv").write_text(
            "id,name\n" + "".join(f"{i},row {i}\n" for i in ids), encoding="utf-8")
        published = publish_table(spark, table, plan)
        if published.status == "Failed":
            raise RuntimeError((published.error or {}).get("message", "publish failed"))
        result = mirror_landing_zone(spark, str(landing), str(warehouse),
                                     MirrorOptions(threads=1))
        if result.failed:
            raise RuntimeError(result.tables[0].error)
