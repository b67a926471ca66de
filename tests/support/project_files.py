"""Writing a throw-away mirrorspec project for tests."""

from __future__ import annotations

from pathlib import Path

import yaml


def write(root: Path, files: dict) -> Path:
    """Write `files` (relative name → text, or data dumped as YAML) below `root`."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str)
                        else yaml.safe_dump(content, sort_keys=False))
    return root


def write_changes(folder: Path, sequence: int, rows: list[tuple]) -> Path:
    """One landing Parquet file of (id Int32, v String, __rowMarker__ Int32) rows, named for
    `sequence`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mirrorspec.openmirroring import mirroring

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / mirroring.sequence_file_name(sequence)
    pq.write_table(pa.table({
        "id": pa.array([r[0] for r in rows], pa.int32()),
        "v": pa.array([r[1] for r in rows], pa.string()),
        mirroring.ROW_MARKER_COLUMN: pa.array([r[2] for r in rows], pa.int32()),
    }), path)
    return path


def feed_plan(tmp_path: Path, source_type: str, feed: Path, columns, keys, options=None):
    """The TablePlan of a feed table `dbo.t` reading `feed`, landing and mirroring under
    `tmp_path`."""
    from mirrorspec.artifacts.plan import ColumnSpec, SourceSpec, TablePlan

    return TablePlan(
        unique_id="dbo.t", name="t", schema=None, warehouse_schema="dbo",
        landing_path=str(tmp_path / "landing" / "t"), delta_path=str(tmp_path / "wh" / "dbo" / "t"),
        metadata={"keyColumns": list(keys)}, key_columns=list(keys),
        columns=[ColumnSpec(name, data_type) for name, data_type in columns],
        source=SourceSpec(type=source_type, path=str(feed), options=dict(options or {})))
