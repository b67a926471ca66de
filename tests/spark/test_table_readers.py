"""Mirrored tables read by the tools people use (docs/readers.md, each snippet run here), the
`deletion_vectors` switch in the engine, and `maintain` purging deletion vectors."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from reference_model import LandingFile, sequence_name, write_metadata, write_parquet

engine = pytest.importorskip("mirrorspec.spark.mirror.engine")
delta = pytest.importorskip("mirrorspec.spark.platform.delta")
deltalake = pytest.importorskip("deltalake")

DOC = Path(__file__).resolve().parents[2] / "docs" / "readers.md"
COLS, TYPES = ("id", "v", "__rowMarker__"), ("int64", "string", "int32")
LOAD = LandingFile(sequence_name(1), ("id", "v"), tuple((i, f"v{i}") for i in range(50)),
                   ("int64", "string"))
CHANGES = LandingFile(sequence_name(2), COLS, ((3, "three", 1), (4, None, 2), (60, "new", 0)),
                      TYPES)
EXPECTED = sorted([(i, f"v{i}") for i in range(50) if i not in (3, 4)] + [(3, "three"),
                                                                           (60, "new")])


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """{"on": path, "off": path}: the same changes mirrored with deletion vectors on (the
    default) and with `deletion_vectors: false`."""
    root = tmp_path_factory.mktemp("readers")
    landing, warehouse = str(root / "landing"), str(root / "warehouse")
    targets = []
    for name, switch in (("on", None), ("off", False)):
        folder = os.path.join(landing, "shop.schema", name)
        write_metadata(folder, ["id"])
        targets.append(engine.MirrorTarget(f"shop.{name}", "shop", name, folder,
                                           os.path.join(warehouse, "shop", name), switch))
    for landing_file in (LOAD, CHANGES):
        for target in targets:
            write_parquet(landing_file, target.landing_path)
        result = engine.mirror_tables(spark, targets, warehouse, engine.MirrorOptions(threads=1))
        assert not result.failed, result.tables
    return {t.name: t.delta_path for t in targets}


def rows_of(value) -> list[tuple]:
    """(id, v) tuples of whatever a snippet produced (pandas, polars, pyarrow, Spark)."""
    if hasattr(value, "collect") and hasattr(value, "schema") and hasattr(value, "rdd"):
        records = [row.asDict() for row in value.collect()]
    elif hasattr(value, "to_dicts"):
        records = value.to_dicts()
    elif hasattr(value, "to_dict"):
        records = value.to_dict("records")
    else:
        records = value.to_pylist()
    return sorted((int(r["id"]), r["v"]) for r in records)


def snippets() -> list[tuple[str, str]]:
    """(when, code) of every python block of readers.md, `when` from its `<!-- reader: … -->`."""
    text = DOC.read_text()
    found = re.findall(r"<!-- reader: ([a-z-]+) -->\n```python\n(.*?)```", text, re.DOTALL)
    assert len(found) >= 6, "readers.md lost its tested snippets"
    return found


def test_the_switch_decides_the_table_feature(tables):
    on, off = deltalake.DeltaTable(tables["on"]), deltalake.DeltaTable(tables["off"])
    assert "deletionVectors" in (on.protocol().reader_features or [])
    assert _deletion_vector_in_log(tables["on"])
    assert "deletionVectors" not in (off.protocol().reader_features or [])
    assert off.metadata().configuration.get("delta.enableDeletionVectors") == "false"
    # what readers.md promises: to_pandas() refuses the one and reads the other
    with pytest.raises(Exception, match="deletionVectors"):
        on.to_pandas()
    assert rows_of(off.to_pandas()) == EXPECTED


@pytest.mark.parametrize("index", range(6))
def test_readers_doc_snippets(spark, tables, index):
    found = snippets()
    if index >= len(found):
        pytest.skip("fewer snippets")
    when, code = found[index]
    for name in (("on", "off") if when == "any" else ("off",)):
        scope = {"path": tables[name], "spark": spark}
        exec(compile(code, f"readers.md snippet {index + 1}", "exec"), scope)
        assert rows_of(scope["df"]) == EXPECTED, (name, code)


def test_switching_an_existing_table_off_sets_the_property(spark, tables, tmp_path):
    path = str(tmp_path / "on")
    shutil.copytree(tables["on"], path)
    assert delta.set_deletion_vectors(spark, path, False) is True
    assert delta.set_deletion_vectors(spark, path, False) is False  # already so: no commit
    table = deltalake.DeltaTable(path)
    assert table.metadata().configuration.get("delta.enableDeletionVectors") == "false"
    assert table.version() == deltalake.DeltaTable(tables["on"]).version() + 1


def test_maintain_purges_deletion_vectors_so_every_reader_accepts_the_table(spark, tables,
                                                                          tmp_path):
    from mirrorspec.spark.ops.maintain import MaintainSteps, maintain_table

    path = str(tmp_path / "on")
    shutil.copytree(tables["on"], path)
    files_before = _data_files(path)
    outcome = maintain_table(spark, "shop.on", path, False,
                             MaintainSteps(retain_hours=0, allow_short_retention=True))
    text = "; ".join(outcome.done)
    assert "delta.enableDeletionVectors = false" in text and "purged deletion vectors" in text
    assert "dropped the deletionVectors table feature" in text and "vacuumed" in text
    table = deltalake.DeltaTable(path)
    assert "deletionVectors" not in (table.protocol().reader_features or [])
    assert rows_of(table.to_pyarrow_table()) == EXPECTED
    assert len(_data_files(path)) < len(files_before)  # VACUUM removed the rewritten files
    assert not list(Path(path).glob("deletion_vector_*.bin"))
    # the history keeps answering
    from mirrorspec.readers.delta import history

    operations = [e.operation for e in history(path)]
    assert "REORG" in " ".join(operations) or "OPTIMIZE" in operations


def _data_files(path: str) -> list[Path]:
    return list(Path(path).glob("*.parquet"))


def _deletion_vector_in_log(path: str) -> bool:
    for log in Path(path, "_delta_log").glob("*.json"):
        for line in log.read_text().splitlines():
            if line.strip() and json.loads(line).get("add", {}).get("deletionVector"):
                return True
    return False


def test_show_falls_back_to_spark_for_a_where_datafusion_cannot_evaluate(spark, tables):
    """`v rlike '…'` is Spark SQL only: `show` says it reads with Spark and still answers."""
    from click.testing import CliRunner

    from mirrorspec.cli import cli

    warehouse = str(Path(tables["on"]).parents[1])
    result = CliRunner().invoke(cli, ["--log-format", "json", "show", "shop.on", "--warehouse",
                                      warehouse, "--where", "v rlike '^v4[0-9]$' or v = 'three'"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert any("reading with Spark instead of delta-rs" in e["message"] for e in events)
    shown = next(e["rows"] for e in events if e["event"] == "rows")
    assert sorted(int(row["id"]) for row in shown) == [3] + list(range(40, 50))
