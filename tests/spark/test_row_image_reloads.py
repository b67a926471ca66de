"""Row-image feeds end to end where a producer sends partial rows or reloads a table: GoldenGate
compressed updates of rows the mirror has not seen, Maxwell bootstraps run again (keyless and
keyed, split across runs), Alibaba Cloud DTS initial loads (Canal `INIT`) run again. Publisher
→ landing zone → engine → Delta, the rows read back with delta-rs."""

from __future__ import annotations

import json
from pathlib import Path

from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
from tests.support.reference_model import read_delta_rs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
COLUMNS = [("id", "Int32"), ("name", "String"), ("description", "String"), ("weight", "Double")]


def _table(tmp_path: Path, name: str, source_type: str, columns=COLUMNS, keys=("id",),
           options=None) -> TablePlan:
    metadata = {"keyColumns": list(keys)} if keys else {}
    return TablePlan(
        unique_id=f"shop.{name}", name=name, schema="shop", warehouse_schema="shop",
        landing_path=str(tmp_path / "lz" / "shop.schema" / name),
        delta_path=str(tmp_path / "wh" / "shop" / name), metadata=metadata,
        key_columns=list(keys), columns=[ColumnSpec(n, t) for n, t in columns],
        source=SourceSpec(source_type, str(tmp_path / "feeds" / name), options or {}))


def _write(table: TablePlan, number: int, messages: list) -> None:
    feed = Path(table.source.path)
    feed.mkdir(parents=True, exist_ok=True)
    (feed / f"{number:04d}.json").write_text(
        "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages))


def _plan(tmp_path: Path, tables: list[TablePlan]) -> Plan:
    return Plan(1, "p", "1", "dev", "dev", str(tmp_path / "lz"), str(tmp_path / "wh"),
                str(tmp_path / "wh" / "_mirrorspec"), SparkSpec(), None, tables)


def _run(spark, plan: Plan, tables: list[TablePlan]) -> dict:
    """Publish every table, mirror those that published; the publish results by name."""
    from mirrorspec.spark.mirror.engine import MirrorOptions, MirrorTarget, mirror_tables
    from mirrorspec.spark.publish.publisher import publish_table

    published = {t.name: publish_table(spark, t, plan) for t in tables}
    ready = [t for t in tables if Path(t.landing_path).is_dir()]
    result = mirror_tables(spark, [MirrorTarget(t.unique_id, t.schema, t.name, t.landing_path,
                                                t.delta_path) for t in ready],
                           plan.warehouse, MirrorOptions(threads=1))
    assert not result.failed, [t.error for t in result.tables]
    return published


def _rows(table: TablePlan, columns=COLUMNS) -> list[tuple]:
    if not Path(table.delta_path).is_dir():
        return []
    _, rows = read_delta_rs(table.delta_path)
    return sorted(tuple(r[n] for n, _ in columns) for r in rows)


def _ogg(op, pos, **images):
    return {"table": "HR.ITEMS", "op_type": op, "op_ts": "2024-01-02 03:04:05.000000",
            "pos": f"{pos:020d}", **images}


def _canal(kind, rows, old=None):
    return {"data": rows, "database": "inventory", "es": 1589373515000, "id": 3,
            "isDdl": False, "old": old, "pkNames": ["id"], "table": "products2",
            "ts": 1589373515477, "type": kind}


def _item(key, name):
    return {"id": str(key), "name": name, "description": None, "weight": "1.5"}


def test_goldengate_partial_images_and_dts_initial_loads(spark, tmp_path):
    gg_full = _table(tmp_path, "gg_full", "goldengate")
    gg_stop = _table(tmp_path, "gg_stop", "goldengate")
    dts = _table(tmp_path, "dts", "canal")
    dts_split = _table(tmp_path, "dts_split", "canal")
    dts_keyless = _table(tmp_path, "dts_keyless", "canal", keys=())
    dts_shrunk = _table(tmp_path, "dts_shrunk", "canal", keys=())
    tables = [gg_full, gg_stop, dts, dts_split, dts_keyless, dts_shrunk]
    plan = _plan(tmp_path, tables)
    # an update of a row this mirror never saw: the after image is compressed, the before
    # image (UPDATERECORDFORMAT FULL) carries the unchanged columns
    _write(gg_full, 1, [_ogg("U", 10, before={"id": 7, "name": "old", "description": "kept",
                                              "weight": 2.5},
                             after={"id": 7, "name": "new"})])
    # the same without a before image: no place has `description` or `weight`
    _write(gg_stop, 1, [_ogg("I", 10, after={"id": 1, "name": "a", "description": "d",
                                             "weight": 1.0}),
                        _ogg("U", 11, before={"id": 2}, after={"id": 2, "name": "b"})])
    _write(dts, 1, [_canal("INIT", [_item(1, "a"), _item(2, "b")]),
                    _canal("INIT", [_item(3, "c")]),
                    _canal("UPDATE", [_item(1, "a2")], old=[{"name": "a"}])])
    _write(dts_split, 1, [_canal("INIT", [_item(1, "a"), _item(2, "b")])])
    for table in (dts_keyless, dts_shrunk):
        _write(table, 1, [_canal("INIT", [_item(1, "a"), _item(2, "b")]),
                          _canal("INIT", [_item(3, "c")]), _canal("INSERT", [_item(4, "d")])])
    first = _run(spark, plan, tables)

    assert first["gg_full"].status == "Published"
    assert _rows(gg_full) == [(7, "new", "kept", 2.5)]
    stopped = first["gg_stop"]
    assert stopped.status == "Failed" and stopped.error["file"].endswith("0001.json")
    assert stopped.error["line"] == 2 and "lacks description, weight" in stopped.error["message"]
    assert not Path(gg_stop.landing_path).exists() or not any(
        p.suffix == ".parquet" for p in Path(gg_stop.landing_path).iterdir())
    assert _rows(dts) == [(1, "a2", None, 1.5), (2, "b", None, 1.5), (3, "c", None, 1.5)]
    loaded = [(1, "a", None, 1.5), (2, "b", None, 1.5), (3, "c", None, 1.5), (4, "d", None, 1.5)]
    assert _rows(dts_keyless) == loaded

    # DTS runs the initial load again: the table is what the new load holds (key 2 was
    # deleted at the source while nothing was captured); a load spanning two runs continues
    _write(dts, 2, [_canal("INIT", [_item(1, "a3")]), _canal("INIT", [_item(3, "c")])])
    _write(dts_split, 2, [_canal("INIT", [_item(3, "c")])])
    _write(dts_keyless, 2, [_canal("INIT", [_item(k, n) for k, n in enumerate("abcde", 1)])])
    _write(dts_shrunk, 2, [_canal("INIT", [_item(1, "a"), _item(3, "c")])])
    tables = [dts, dts_split, dts_keyless, dts_shrunk]
    second = _run(spark, plan, tables)
    assert _rows(dts) == [(1, "a3", None, 1.5), (3, "c", None, 1.5)]
    assert _rows(dts_split) == [(1, "a", None, 1.5), (2, "b", None, 1.5), (3, "c", None, 1.5)]
    assert _rows(dts_keyless) == loaded + [(5, "e", None, 1.5)]  # not 9 rows
    shrunk = second["dts_shrunk"]
    assert shrunk.status == "Failed" and shrunk.error["file"].endswith("0002.json")
    assert shrunk.error["line"] == 1 and "can't delete rows" in shrunk.error["message"]
    assert "key_columns" in shrunk.error["message"]
    assert _rows(dts_shrunk) == loaded


def test_maxwell_bootstraps_run_again_replace_the_table(spark, tmp_path):
    txt = [("txt", "String")]
    keyless = _table(tmp_path, "keyless", "maxwell", columns=txt, keys=())
    keyed = _table(tmp_path, "keyed", "maxwell")
    split = _table(tmp_path, "split", "maxwell")
    tables = [keyless, keyed, split]
    plan = _plan(tmp_path, tables)
    # Maxwell's bootstrapping page: a table without a primary key, two inserts, a bootstrap
    docs = (FIXTURES / "maxwell" / "maxwell-docs-bootstrap.json").read_text().splitlines()
    _write(keyless, 1, docs)

    def mx(kind, data, position=None):
        message = {"database": "test", "table": "product", "type": kind, "ts": 1596684883,
                   "data": data}
        if position:
            message["position"] = f"mysql-bin.000003:{position}"
        return message

    def row(key, name):
        return {"id": key, "name": name, "description": None, "weight": 1.5}

    _write(keyed, 1, [mx("insert", row(1, "a"), 100), mx("insert", row(2, "b"), 200),
                      mx("bootstrap-start", {}), mx("bootstrap-insert", row(1, "a")),
                      mx("bootstrap-insert", row(2, "b")), mx("bootstrap-complete", {}),
                      mx("update", row(2, "b2"), 300)])
    # a bootstrap still running when the run starts: nothing of it may land yet
    _write(split, 1, [mx("insert", row(1, "a"), 100), mx("bootstrap-start", {}),
                      mx("bootstrap-insert", row(1, "a"))])
    first = _run(spark, plan, tables)
    assert _rows(keyless, txt) == [("bootstrap!",), ("hello",)]
    assert _rows(keyed) == [(1, "a", None, 1.5), (2, "b2", None, 1.5)]
    assert first["split"].held_back and _rows(split) == []

    _write(keyless, 2, docs[2:])  # the bootstrap run again
    # run again after key 2 was deleted while Maxwell was down: the bootstrap has no key 2
    _write(keyed, 2, [mx("bootstrap-start", {}), mx("bootstrap-insert", row(1, "a")),
                      mx("bootstrap-complete", {}), mx("insert", row(3, "c"), 400)])
    # the rest of the bootstrap, in the next file: it lands whole, the file before with it
    _write(split, 2, [mx("bootstrap-insert", row(2, "b")), mx("bootstrap-complete", {}),
                      mx("update", row(2, "b2"), 300)])
    second = _run(spark, plan, tables)
    for name, result in second.items():
        assert result.status != "Failed", (name, result.error)
    assert _rows(keyless, txt) == [("bootstrap!",), ("hello",)]  # not 4 rows, then 6
    assert _rows(keyed) == [(1, "a", None, 1.5), (3, "c", None, 1.5)]
    assert _rows(split) == [(1, "a", None, 1.5), (2, "b2", None, 1.5)]
    assert not second["split"].held_back
