"""The publisher end to end: feed → landing zone (checked against the open-mirroring rules) → Delta.

Qlik Replicate and Arcion fixtures (tests/fixtures/{qlik,arcion}) are published with
`publish_table`, the landing zone is checked (20-digit names, `__rowMarker__` last as int32, full
rows), and mirrored with the engine into Delta tables compared with the expected rows.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
from mirrorspec.progress.publish import state_file
from mirrorspec.landing.lint import lint_landing_zone
from mirrorspec.openmirroring.mirroring import ROW_MARKER_COLUMN, parse_sequence

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def make(tmp_path: Path, source_type: str, feed: Path, name="t", columns=(), keys=(),
         options=None, metadata=None):
    root = tmp_path
    tbl = TablePlan(unique_id=f"dbo.{name}", name=name, schema=None, warehouse_schema="dbo",
                    landing_path=str(root / "lz" / name), delta_path=str(root / "wh" / "dbo" / name),
                    metadata=dict(metadata or ({"keyColumns": list(keys)} if keys else {})),
                    key_columns=list(keys), columns=[ColumnSpec(n, t) for n, t in columns],
                    source=SourceSpec(source_type, str(feed), dict(options or {})))
    plan = Plan(1, "p", "1", "p", "dev", str(root / "lz"), str(root / "wh"),
                str(root / "wh" / "_mirrorspec"), SparkSpec(), None, [tbl])
    return tbl, plan


def publish(spark, tbl, plan):
    from mirrorspec.spark.publish.publisher import publish_table

    return publish_table(spark, tbl, plan)


def mirror(spark, tbl, plan):
    from mirrorspec.spark.mirror.engine import MirrorOptions, MirrorTarget, mirror_tables

    result = mirror_tables(spark, [MirrorTarget(tbl.unique_id, tbl.schema, tbl.name,
                                                tbl.landing_path, tbl.delta_path)],
                           plan.warehouse, MirrorOptions(threads=1))
    assert not result.failed, result.tables[0].error
    return result


def delta_rows(spark, tbl, *columns):
    frame = spark.read.format("delta").load(tbl.delta_path)
    return sorted(tuple(r) for r in frame.select(*columns).collect())


def landing_files(tbl):
    folder = Path(tbl.landing_path)
    return sorted(p.name for p in folder.iterdir() if parse_sequence(p.name) is not None)


def check_landing_file(path: Path, columns: list[str], keys: list[str]):
    """Seed 000: 20-digit name, __rowMarker__ the last column (int), full rows for 1/4."""
    assert parse_sequence(path.name) is not None and len(path.name.split(".")[0]) == 20
    table = pq.read_table(path)
    assert table.column_names == columns + [ROW_MARKER_COLUMN]
    assert str(table.schema.field(ROW_MARKER_COLUMN).type) == "int32"
    rows = table.to_pylist()
    for row in rows:
        assert row[ROW_MARKER_COLUMN] in (0, 1, 2, 4)
        assert all(row[k] is not None for k in keys)
    return rows


def copy_feed(src: Path, dst: Path, names=None) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.iterdir()):
        if names is None or f.name in names:
            shutil.copy(f, dst / f.name)
    return dst


# --- Qlik Replicate -----------------------------------------------------------------------------

def test_qlik_fixture_lands_by_the_seed_rules_and_mirrors(spark, tmp_path):
    feed = copy_feed(FIXTURES / "qlik" / "customers", tmp_path / "feed")
    tbl, plan = make(tmp_path, "qlik_replicate", feed, "customers")
    result = publish(spark, tbl, plan)
    assert result.status == "Published", result.error
    assert [Path(f).name for f in result.files_written] == ["00000000000000000001.parquet"]
    assert result.rows == 8
    meta = json.loads((Path(tbl.landing_path) / "_metadata.json").read_text())
    assert meta["keyColumns"] == ["ID"]
    rows = check_landing_file(Path(result.files_written[0]),
                              ["ID", "NAME", "CITY", "BALANCE", "UPDATED", "PHOTO"], ["ID"])
    # inserts land as upserts: only an insert-only first load keeps 0
    assert [(r["ID"], r[ROW_MARKER_COLUMN]) for r in rows] == [
        (1, 4), (2, 4), (3, 4), (4, 4), (3, 2), (1, 1), (2, 2), (22, 4)]
    # the 0B update is a full row: absent CITY/UPDATED/PHOTO came from the full load
    assert rows[5]["NAME"] == "Ann B" and rows[5]["CITY"] == "Oslo" and rows[5]["PHOTO"] == b"\n\x0b"

    again = publish(spark, tbl, plan)
    assert again.status == "UpToDate" and landing_files(tbl) == ["00000000000000000001.parquet"]

    mirror(spark, tbl, plan)
    assert delta_rows(spark, tbl, "ID", "NAME", "CITY", "BALANCE") == [
        (1, "Ann B", "Oslo", 99.0), (4, "Dan", None, 5.25), (22, "Bob", "Rome", 20.0)]

    # next batch: the table reloaded (REFRESH rows of the whole table: key 1 deleted at the
    # source meanwhile), then a partial update completed from the reload's row
    def refresh(key, name, city, balance):
        return {"magic": "atMSG", "type": "DT", "message": {
            "data": {"ID": key, "NAME": name, "CITY": city, "BALANCE": balance,
                     "UPDATED": None, "PHOTO": None},
            "headers": {"operation": "REFRESH", "changeSequence": ""}}}

    (feed / "CDC00000004.json").write_text("\n".join(json.dumps(m) for m in [
        {"magic": "atMSG", "type": "DT", "message": {
            "data": {"ID": 22, "CITY": "Pisa"}, "beforeData": None,
            "headers": {"operation": "UPDATE", "changeSequence": "20240502100100000000000000000000009",
                        "transactionId": "T9", "transactionLastEvent": True, "columnMask": "05"}}},
        refresh(4, "Dan", "Kyiv", "5.25"), refresh(22, "Bob", "Rome", "21.0"),
    ]) + "\n")
    second = publish(spark, tbl, plan)
    assert second.status == "Published", second.error
    rows = check_landing_file(Path(second.files_written[0]),
                              ["ID", "NAME", "CITY", "BALANCE", "UPDATED", "PHOTO"], ["ID"])
    # REFRESH rows after the table's changes are a new load: it replaces the table (every
    # held key deleted first), its rows land as upserts, then the batch's changes
    markers = [(r["ID"], r[ROW_MARKER_COLUMN]) for r in rows]
    assert sorted(markers[:3]) == [(1, 2), (4, 2), (22, 2)]
    assert markers[3:] == [(4, 4), (22, 4), (22, 1)]
    assert rows[-1]["NAME"] == "Bob" and rows[-1]["CITY"] == "Pisa" and rows[-1]["BALANCE"] == 21.0
    # the publisher's landing zone (after a batch was mirrored) passes lint
    assert lint_landing_zone(str(Path(tbl.landing_path).parent)).all_findings() == []
    mirror(spark, tbl, plan)
    assert delta_rows(spark, tbl, "ID", "NAME", "CITY") == [(4, "Dan", "Kyiv"), (22, "Bob", "Pisa")]


def _dt(op, data, seq, txn, last, mask="07"):
    return {"magic": "atMSG", "type": "DT", "message": {"data": data, "beforeData": None, "headers": {
        "operation": op, "changeSequence": f"{seq:035d}", "transactionId": txn,
        "transactionLastEvent": last, "columnMask": mask}}}


MD = {"magic": "atMSG", "type": "MD", "message": {
    "lineage": {"schema": "dbo", "table": "T", "tableVersion": 1},
    "tableStructure": {"tableColumns": {
        "ID": {"ordinal": 1, "type": "INT8", "primaryKeyPosition": 1},
        "V": {"ordinal": 2, "type": "STRING", "primaryKeyPosition": 0},
        "W": {"ordinal": 3, "type": "STRING", "primaryKeyPosition": 0}}}}}


def _write(path: Path, docs):
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))


def test_unfinished_transaction_waits_for_the_next_run(spark, tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    _write(feed / "001.json", [MD,
                               _dt("INSERT", {"ID": 1, "V": "a", "W": "w"}, 1, "T1", False),
                               _dt("INSERT", {"ID": 2, "V": "b", "W": "w"}, 2, "T1", True),
                               _dt("INSERT", {"ID": 3, "V": "c", "W": "w"}, 3, "T2", False)])
    tbl, plan = make(tmp_path, "qlik_replicate", feed)
    first = publish(spark, tbl, plan)
    assert first.status == "Published" and first.rows == 2
    assert first.held_back == [str(feed / "001.json")]
    assert [r["ID"] for r in pq.read_table(first.files_written[0]).to_pylist()] == [1, 2]

    nothing_new = publish(spark, tbl, plan)
    assert nothing_new.status == "UpToDate" and nothing_new.held_back == [str(feed / "001.json")]

    _write(feed / "002.json", [_dt("UPDATE", {"ID": 3, "V": "c2"}, 4, "T2", True, mask="03"),
                               _dt("INSERT", {"ID": 5, "V": "e", "W": "w"}, 5, "T3", True)])
    second = publish(spark, tbl, plan)
    assert second.status == "Published" and second.held_back == []
    rows = pq.read_table(second.files_written[0]).to_pylist()
    # T1 is not published twice; the partial update takes W from T2's own insert; inserts
    # after the first load land as upserts (a re-sent insert never doubles its key)
    assert [(r["ID"], r["V"], r["W"], r[ROW_MARKER_COLUMN]) for r in rows] == [
        (3, "c", "w", 4), (3, "c2", "w", 1), (5, "e", "w", 4)]
    assert [Path(f).name for f in second.files_written] == ["00000000000000000002.parquet"]


def test_bad_file_fails_the_table_and_publishes_nothing(spark, tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    _write(feed / "001.json", [MD, _dt("INSERT", {"ID": 1, "V": "a", "W": "w"}, 1, "T1", True)])
    (feed / "002.json").write_text(json.dumps(_dt("INSERT", {"ID": 2}, 2, "T2", True)) + "\n"
                                   + '{"magic": "atMSG", "type": "DT", "message": {\n')
    tbl, plan = make(tmp_path, "qlik_replicate", feed)
    result = publish(spark, tbl, plan)
    assert result.status == "Failed" and result.files_written == []
    assert result.error["file"] == str(feed / "002.json") and result.error["line"] == 2
    assert "malformed JSON" in result.error["message"]
    assert not Path(tbl.landing_path).exists() or landing_files(tbl) == []
    # rewriting the bad file lets the next run publish both files
    _write(feed / "002.json", [_dt("INSERT", {"ID": 2, "V": "b", "W": "w"}, 2, "T2", True)])
    fixed = publish(spark, tbl, plan)
    assert fixed.status == "Published" and fixed.rows == 2


def test_crash_before_and_after_rename(spark, tmp_path, monkeypatch):
    import mirrorspec.spark.publish.publisher as publisher

    class Crash(Exception):
        pass

    def crash_at(point):
        def fake(name, table=None):
            if name == point:
                raise Crash(name)
        return fake

    feed = tmp_path / "feed"
    feed.mkdir()
    _write(feed / "001.json", [MD] + [_dt("INSERT", {"ID": i, "V": "v", "W": "w"}, i, f"T{i}", True)
                                      for i in range(1, 6)])
    tbl, plan = make(tmp_path, "qlik_replicate", feed)
    monkeypatch.setattr(publisher, "crash_point", crash_at("before_publish_rename"))
    with pytest.raises(Crash):
        publish(spark, tbl, plan)
    assert landing_files(tbl) == []
    temp = next(Path(tbl.landing_path).glob("_publishing_*/part-*.parquet"))
    first_bytes = temp.read_bytes()
    # a new file arriving meanwhile must not change what sequence 1 holds
    _write(feed / "002.json", [_dt("INSERT", {"ID": 9, "V": "v", "W": "w"}, 9, "T9", True)])
    monkeypatch.setattr(publisher, "crash_point", crash_at("after_publish_rename"))
    with pytest.raises(Crash):
        publish(spark, tbl, plan)
    landed = Path(tbl.landing_path) / "00000000000000000001.parquet"
    assert landed.read_bytes() == first_bytes
    monkeypatch.setattr(publisher, "crash_point", crash_at("none"))
    result = publish(spark, tbl, plan)
    assert result.status == "Published"
    assert landing_files(tbl) == ["00000000000000000001.parquet", "00000000000000000002.parquet"]
    assert landed.read_bytes() == first_bytes
    assert [r["ID"] for r in pq.read_table(Path(tbl.landing_path) / "00000000000000000002.parquet")
            .to_pylist()] == [9]
    state = json.loads(Path(state_file(plan, tbl)).read_text())
    assert state["files"] == {str(feed / "001.json"): 1, str(feed / "002.json"): 2}
    assert state["pending"] is None


def test_existing_metadata_with_other_keys_fails(spark, tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    _write(feed / "001.json", [MD, _dt("INSERT", {"ID": 1, "V": "a", "W": "w"}, 1, "T1", True)])
    tbl, plan = make(tmp_path, "qlik_replicate", feed)
    Path(tbl.landing_path).mkdir(parents=True)
    (Path(tbl.landing_path) / "_metadata.json").write_text('{"keyColumns": ["V"]}')
    (Path(tbl.landing_path) / "00000000000000000003.parquet").write_bytes(b"")
    result = publish(spark, tbl, plan)
    assert result.status == "Failed" and "keyColumns" in result.error["message"]
    (Path(tbl.landing_path) / "_metadata.json").write_text('{"keyColumns": ["ID"]}')
    ok = publish(spark, tbl, plan)
    # numbering continues after the highest sequence already in the folder
    assert [Path(f).name for f in ok.files_written] == ["00000000000000000004.parquet"]


# --- Arcion ----------------------------------------------------------------------------------------

REGION = [("r_regionkey", "Int32"), ("r_name", "String"), ("r_comment", "String")]


@pytest.mark.parametrize("fixture, options", [
    ("region_csv", {"column_order": ["r_comment", "r_name", "r_regionkey"]}),
    ("region_json", {}),
])
def test_arcion_seed_region_insert_update_delete(spark, tmp_path, fixture, options):
    src = FIXTURES / "arcion" / fixture
    names = sorted(p.name for p in src.iterdir())
    delete_file = next(n for n in names if "delete" in n or n == "region_2.csv")
    feed = copy_feed(src, tmp_path / "feed", [n for n in names if n != delete_file])
    tbl, plan = make(tmp_path, "arcion", feed, "region", REGION, ["r_regionkey"], options)
    first = publish(spark, tbl, plan)
    assert first.status == "Published", first.error
    rows = check_landing_file(Path(first.files_written[0]), [c for c, _ in REGION], ["r_regionkey"])
    # the update carried only r_comment (and the key): r_name was completed from the insert
    assert [(r["r_regionkey"], r["r_name"], r["r_comment"], r[ROW_MARKER_COLUMN]) for r in rows] == [
        (10, "India", "India", 4), (10, "India", "USA", 1)]
    mirror(spark, tbl, plan)
    assert delta_rows(spark, tbl, "r_regionkey", "r_name", "r_comment") == [(10, "India", "USA")]

    shutil.copy(src / delete_file, feed / delete_file)
    second = publish(spark, tbl, plan)
    rows = check_landing_file(Path(second.files_written[0]), [c for c, _ in REGION], ["r_regionkey"])
    assert [(r["r_regionkey"], r[ROW_MARKER_COLUMN]) for r in rows] == [(10, 2)]
    mirror(spark, tbl, plan)
    assert delta_rows(spark, tbl, "r_regionkey") == []


def test_arcion_columnwise_chunks_reach_spark_as_the_python_parser_s(spark, tmp_path,
                                                                      monkeypatch):
    # every type the column-wise path converts itself or hands to Python, a key change (two
    # rows, a pair), a partial update and a delete, through map_tasks into Spark rows
    from mirrorspec.sources import arcion
    from mirrorspec.spark.publish.feeds.arcion import ArcionReader

    columns = [("id", "Int64"), ("name", "String"), ("price", "Double"), ("weight", "Single"),
               ("qty", "Int16"), ("at", "DateTime"), ("day", "IDate"), ("flag", "Boolean"),
               ("blob", "ByteArray")]
    feed = tmp_path / "feed"
    feed.mkdir()
    cursor = '"{""timestamp"":1}","{}"'
    (feed / "items.csv").write_text(
        '1,NULL,1,"a,b",NULL,1,2.5,NULL,1,0.1,NULL,1,7,NULL,1,2024-05-02 10:00:00.1234567,NULL,1,'
        f'2024-05-02,NULL,1,yes,NULL,1,0x0aff,NULL,1,I,{cursor}\n'
        f'NULL,1,2,x,NULL,1,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,'
        f'NULL,NULL,0,U,{cursor}\n'
        f'2,1,3,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,'
        f'NULL,NULL,0,U,{cursor}\n'
        f'NULL,2,2,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,NULL,NULL,0,'
        f'NULL,NULL,0,D,{cursor}\n')
    tbl, _ = make(tmp_path, "arcion", feed, "items", columns, ["id"],
                  {"header": False, "column_order": [c for c, _ in columns]})
    frames = {}
    for columnwise in (False, True):
        monkeypatch.setattr(arcion, "COLUMNWISE", columnwise)
        result = ArcionReader().read(spark, tbl, [str(feed / "items.csv")], {})
        frames[columnwise] = sorted(result.changes.collect(), key=lambda r: (r["_order"], r["_op"]))
        for frame in result.info["cached"]:
            frame.unpersist()
    assert frames[True] == frames[False]
    _, _, tasks = arcion.ArcionFormat().plan_tasks(tbl, [str(feed / "items.csv")])
    assert not isinstance(arcion.parse_task(tasks[0])["_op"], list)  # Arrow: the fast path ran
    assert [(r["_op"], r["id"]) for r in frames[True]] == [(0, 1), (1, 1), (2, 1), (0, 2), (2, 2)]
    first = frames[True][0]
    assert (first["name"], first["qty"], first["blob"], first["flag"]) == ("a,b", 7, b"\n\xff", True)
    assert first["at"].microsecond == 123456


def test_qlik_columnwise_chunks_reach_spark_as_the_python_parser_s(spark, tmp_path, monkeypatch):
    # every type the column-wise path converts itself or hands to Python, a partial update, a
    # key change (the row parser's two rows, a pair), a delete and an unfinished transaction,
    # through map_tasks into Spark rows
    from mirrorspec.sources import qlik
    from mirrorspec.spark.publish.feeds.qlik import QlikReplicateReader

    columns = [("id", "Int64"), ("name", "String"), ("price", "Double"), ("weight", "Single"),
               ("qty", "Int16"), ("n32", "Int32"), ("at", "DateTime"), ("day", "IDate"),
               ("flag", "Boolean"), ("blob", "ByteArray"), ("t", "ITime")]
    full = {"id": 1, "name": "a,b", "price": "2.5", "weight": 0.1, "qty": 7, "n32": "12",
            "at": "2024-05-02 10:00:00.123456", "day": "2024-05-02", "flag": True,
            "blob": "0aff", "t": "10:30:00"}

    def message(op, data, before=None, seq="", mask="7FF", txn="T1", last=True):
        return json.dumps({"magic": "atMSG", "type": "DT", "headers": None, "message": {
            "data": data, "beforeData": before, "headers": {
                "operation": op, "changeSequence": seq, "transactionId": txn,
                "transactionLastEvent": last, "columnMask": mask}}})

    feed = tmp_path / "feed"
    feed.mkdir()
    (feed / "items.json").write_text("\n".join([
        message("INSERT", full, seq="1", last=False),
        message("UPDATE", dict(full, name="x", at="2024-05-02T10:00:00.1234567"), full, seq="2",
                mask="43"),
        message("UPDATE", dict(full, id=2, price="1e3"), full, seq="3"),
        message("DELETE", dict.fromkeys(full), dict(full, id=2), seq="4"),
        message("INSERT", dict(dict.fromkeys(full), id=3, weight=-1.5, day="2024-02-29"), seq="5",
                txn="T2", last=False)]) + "\n")
    tbl, _ = make(tmp_path, "qlik_replicate", feed, "items", columns, ["id"])
    frames, held = {}, {}
    for columnwise in (False, True):
        monkeypatch.setattr(qlik, "COLUMNWISE", columnwise)
        result = QlikReplicateReader().read(spark, tbl, [str(feed / "items.json")], {})
        frames[columnwise] = sorted(result.changes.collect(), key=lambda r: (r["_order"], r["_op"]))
        held[columnwise] = (result.held_back, result.info["state"])
        for frame in result.info["cached"]:
            frame.unpersist()
    assert frames[True] == frames[False] and held[True] == held[False]
    batch = qlik.QlikReplicateFormat().plan_tasks(tbl, [str(feed / "items.json")], {})
    assert not isinstance(qlik.parse_task(batch.tasks[0])["_op"], list)  # Arrow: the fast path ran
    assert [(r["_op"], r["id"]) for r in frames[True]] == [(0, 1), (1, 1), (2, 1), (0, 2), (2, 2)]
    assert held[True][0] == (str(feed / "items.json"),)  # T2 is unfinished
    first, update = frames[True][0], frames[True][1]
    assert (first["name"], first["qty"], first["n32"], first["blob"], first["flag"]) == \
        ("a,b", 7, 12, b"\n\xff", True)
    assert first["at"].microsecond == 123456 and update["at"].microsecond == 123456
    assert update["_present"] == ["at", "id", "name"] and frames[True][3]["_pair"] is not None


def arcion_regions_mirrored(spark, tmp_path):
    """An Arcion feed whose snapshot (keys 0 and 1) is published and mirrored."""
    feed = tmp_path / "feed"
    feed.mkdir()
    (feed / "1.csv").write_text("0,AFRICA,c0\n1,AMERICA,c1\n")
    tbl, plan = make(tmp_path, "arcion", feed, "region", REGION, ["r_regionkey"])
    assert publish(spark, tbl, plan).status == "Published"
    mirror(spark, tbl, plan)
    return feed, tbl, plan


def test_arcion_partial_update_completed_from_delta(spark, tmp_path):
    feed, tbl, plan = arcion_regions_mirrored(spark, tmp_path)
    # update of r_comment only; then a delete and re-insert of key 0 (r_comment NULL: Exists 1)
    (feed / "2.csv").write_text(
        '1,1,3,NULL,NULL,0,new,NULL,1,U,"{""timestamp"":2}","{}"\n'
        'NULL,0,2,NULL,NULL,0,NULL,NULL,0,D,"{""timestamp"":3}","{}"\n'
        '0,NULL,1,EUROPE,NULL,1,NULL,NULL,1,I,"{""timestamp"":4}","{}"\n')
    result = publish(spark, tbl, plan)
    assert result.status == "Published", result.error
    rows = pq.read_table(result.files_written[0]).to_pylist()
    assert [(r["r_regionkey"], r["r_name"], r["r_comment"], r[ROW_MARKER_COLUMN]) for r in rows] == [
        (1, "AMERICA", "new", 1), (0, None, None, 2), (0, "EUROPE", None, 4)]
    mirror(spark, tbl, plan)
    assert delta_rows(spark, tbl, "r_regionkey", "r_name", "r_comment") == [
        (0, "EUROPE", None), (1, "AMERICA", "new")]


def test_arcion_partial_key_change_and_a_later_snapshot(spark, tmp_path):
    feed, tbl, plan = arcion_regions_mirrored(spark, tmp_path)
    # key 1 becomes 11 with a new comment; r_name is in neither image: it is AMERICA's
    (feed / "2.csv").write_text('11,1,3,NULL,NULL,0,c11,NULL,1,U,"{""timestamp"":2}","{}"\n')
    result = publish(spark, tbl, plan)
    assert result.status == "Published", result.error
    rows = pq.read_table(result.files_written[0]).to_pylist()
    assert [(r["r_regionkey"], r["r_name"], r["r_comment"], r[ROW_MARKER_COLUMN])
            for r in rows][1:] == [(11, "AMERICA", "c11", 4)]
    mirror(spark, tbl, plan)
    # a new snapshot (key 11 gone at the source) replaces the table: every held key is
    # deleted first, then its rows land as upserts
    (feed / "3.csv").write_text("0,AFRICA2,c0b\n")
    result = publish(spark, tbl, plan)
    landed = pq.read_table(result.files_written[0]).to_pylist()
    assert sorted((r["r_regionkey"], r[ROW_MARKER_COLUMN]) for r in landed[:-1]) == [(0, 2),
                                                                                       (11, 2)]
    assert (landed[-1]["r_regionkey"], landed[-1][ROW_MARKER_COLUMN]) == (0, 4)
    mirror(spark, tbl, plan)
    assert delta_rows(spark, tbl, "r_regionkey", "r_name", "r_comment") == [
        (0, "AFRICA2", "c0b")]


def test_metadata_only_batch_lands_nothing_and_is_remembered(spark, tmp_path):
    feed = tmp_path / "feed"
    feed.mkdir()
    _write(feed / "001.json", [MD])
    tbl, plan = make(tmp_path, "qlik_replicate", feed)
    first = publish(spark, tbl, plan)
    assert first.status == "UpToDate" and first.files_written == []
    assert not (Path(tbl.landing_path) / "00000000000000000001.parquet").exists()
    # later files carry only data messages: the remembered metadata gives columns and ordinals
    _write(feed / "002.json", [_dt("UPDATE", {"ID": 7, "V": "v", "W": "w"}, 1, "T1", True,
                                   mask="07")])
    second = publish(spark, tbl, plan)
    assert second.status == "Published", second.error
    assert [Path(f).name for f in second.files_written] == ["00000000000000000001.parquet"]
    rows = check_landing_file(Path(second.files_written[0]), ["ID", "V", "W"], ["ID"])
    # the mask's ordinals 1-3 are the remembered metadata's ID, V, W
    assert [(r["ID"], r["V"], r["W"], r[ROW_MARKER_COLUMN]) for r in rows] == [(7, "v", "w", 1)]


@pytest.mark.parametrize("profile", [None, "true"])
def test_publish_cache_setting_is_scoped_and_a_profile_value_wins(spark, tmp_path, monkeypatch,
                                                                   profile):
    from mirrorspec.spark.publish import publisher

    key = "spark.sql.inMemoryColumnarStorage.compressed"
    seen = []
    write = publisher._write_landing

    def spy(spark_, *args):
        seen.append(spark_.conf.get(key, None))
        return write(spark_, *args)

    monkeypatch.setattr(publisher, "_write_landing", spy)
    if profile is not None:
        spark.conf.set(key, profile)
    try:
        feed = tmp_path / "feed"  # full rows: no completion, so a publish of few Spark jobs
        feed.mkdir()
        _write(feed / "001.json", [MD, _dt("INSERT", {"ID": 1, "V": "a", "W": "w"}, 1, "T1", True)])
        tbl, plan = make(tmp_path, "qlik_replicate", feed)
        assert publish(spark, tbl, plan).status == "Published"
        assert seen == [profile or publisher.PUBLISH_CONF[key]]
        assert spark.conf.get(key, None) == profile  # the session is as it was
    finally:
        spark.conf.unset(key)
