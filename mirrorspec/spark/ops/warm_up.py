"""A fresh warm Spark server's first pass: a tiny table mirrored through it (initial load, then a
MERGE with an update, a delete and an insert on a table with deletion vectors), in a temporary
folder deleted afterwards, so the first real command doesn't pay the server's class loading."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path


def warm_up(url: str) -> None:
    """Mirror a throw-away table twice through the Spark Connect server at `url`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone
    from mirrorspec.spark.platform.session import build_session, stop_sessions, sessions_started

    mark = sessions_started()
    work = Path(tempfile.mkdtemp(prefix="mirrorspec-warm-up-"))
    try:
        spark = build_session(remote=url, app_name="mirrorspec-warm-up")
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
    finally:
        stop_sessions(since=mark)
        shutil.rmtree(work, ignore_errors=True)
