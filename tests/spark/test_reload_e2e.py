"""Qlik Replicate's, Arcion's and AWS DMS's full load sent again replaces the table, through
the real publish → mirror pipeline (tiny data, every case a table of one run).

Qlik's data messages (seed 001): `operation: REFRESH` is "insertion of a record to the target
during Full Load", with no `changeSequence` (it is "applicable to CDC operations only"); a table
reload (Replicate's "Reload target" / reload table, "Starts the Full Load … from the
beginning") sends the table's REFRESH rows again after its changes, and a task restarted during
its full load sends them again right after themselves. Nothing in a message marks where a load
starts, so a run of REFRESH rows that follows changes starts a new load. Qlik's Kafka target
writes "each source record ... (with an optional message key) to a partition in the specified
topic" (Qlik Replicate Help, "Using Kafka as a target"), so a table's messages may span
partitions, and each topic-partition gets its own run of a load.

Arcion (seed 002): snapshot rows carry x fields and no cursor; a Replicant restarted during its
snapshot writes the snapshot's files again, and a new snapshot after realtime changes replaces
the table. AWS DMS writes a reloaded table's full load as new full-load (`LOAD…`) files, after
applying TargetTablePrepMode ("Reloading tables during a task", AWS DMS User Guide), so under
the names of the load before when DROP_AND_CREATE emptied the table's folder.
Canal as Alibaba Cloud DTS writes it: a full load is a run of `type: INIT` messages
(FLINK-32862); a task restarted from its full load writes them again.
"""

from __future__ import annotations

import json

import pytest
from tests.support.delivery_harness import FeedCase, run_feeds
from tests.support.replicator_streams import arcion_row

from mirrorspec.sources.delivery import KEYLESS_HINT

TWO = (("id", "Int32"), ("name", "String"))


def refresh(key: int, name: str) -> str:
    return json.dumps({"magic": "atMSG", "type": "DT", "headers": None, "message": {
        "data": {"id": key, "name": name}, "beforeData": None,
        "headers": {"operation": "REFRESH", "changeSequence": ""}}})


def change(op: str, key: int, name: str | None, sequence: int) -> str:
    return json.dumps({"magic": "atMSG", "type": "DT", "headers": None, "message": {
        "data": {"id": key, "name": name}, "beforeData": None,
        "headers": {"operation": op, "changeSequence": f"2024050210010000{sequence:019d}"}}})


ARCION = {"header": False, "column_order": ["name", "id"]}


def dts_init(*rows: tuple[int, str]) -> str:
    """A Canal FlatMessage as Alibaba Cloud DTS writes a full load's rows (`type: INIT`)."""
    return json.dumps({"data": [{"id": str(i), "name": n} for i, n in rows],
                       "database": "shop", "es": 1589373515000, "id": 3, "isDdl": False,
                       "mysqlType": {"id": "int", "name": "varchar(20)"}, "old": None,
                       "pkNames": None, "sql": "", "sqlType": {"id": 4, "name": 12},
                       "table": "items", "ts": 1589373515477, "type": "INIT"})


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


def lost_change_batches(stop_at_run: bool) -> list[dict[str, str]]:
    """A table over two Kafka partitions whose partition 1 publishes insert 9, made after a
    reload began, a batch before partition 0's run of the reload and its change 5 after it."""
    after_run = change("UPDATE", 1, "a3", 5)
    first = {"orders+0+0000000000.json": lines(refresh(1, "a"), change("UPDATE", 1, "a2", 1)),
             "orders+1+0000000000.json": lines(refresh(2, "b"), change("UPDATE", 2, "b2", 2),
                                               change("INSERT", 4, "d", 9))}
    if stop_at_run:
        return [first, {"orders+0+0000000002.json": lines(refresh(1, "a2"), after_run)}]
    return [first, {"orders+0+0000000002.json": lines(refresh(1, "a2"))},
            {"orders+0+0000000003.json": lines(after_run)}]


def cases() -> dict[str, tuple[FeedCase, tuple]]:
    """Each case and what its table must end as: its rows, or ("stops", file, line)."""
    load = [refresh(1, "a"), refresh(2, "b"), refresh(3, "c")]
    repeated = ("stops", "b.json", 1)
    return {c.name: (c, want) for c, want in [
        # key 2 deleted at the source, then the table reloaded: the reload no longer has it
        (FeedCase("keyed_reload", [{"a.json": lines(*load, change("UPDATE", 1, "a2", 1))},
                                   {"b.json": lines(refresh(1, "a2"), refresh(3, "c"))}],
                  "qlik_replicate", columns=TWO), [(1, "a2"), (3, "c")]),
        # a keyless table reloaded after an insert: the reload replaces, not adds
        (FeedCase("keyless_reload", [{"a.json": lines(refresh(1, "a"), refresh(2, "b"),
                                                      change("INSERT", 3, "c", 1))},
                                     {"b.json": lines(refresh(1, "a"), refresh(2, "b"),
                                                      refresh(3, "c"))}],
                  "qlik_replicate", columns=TWO, keys=()), [(1, "a"), (2, "b"), (3, "c")]),
        # ... also when the insert and the reload arrive in one batch (REFRESH rows sort first)
        (FeedCase("keyless_reload_one_batch",
                  [{"a.json": lines(refresh(1, "a"), refresh(2, "b"))},
                   {"b.json": lines(change("INSERT", 3, "c", 1), refresh(1, "a"),
                                    refresh(2, "b"), refresh(3, "c"))}],
                  "qlik_replicate", columns=TWO, keys=()), [(1, "a"), (2, "b"), (3, "c")]),
        # a task restarted during its full load sends the load again right after itself: a
        # keyless table can't tell that from rows its source holds twice, so it stops
        (FeedCase("keyless_restart", [{"a.json": lines(refresh(1, "a"), refresh(2, "b")),
                                       "b.json": lines(refresh(1, "a"), refresh(2, "b"))}],
                  "qlik_replicate", columns=TWO, keys=()), repeated),
        # ... unless the table lands equal rows (keyless_repeats: land): then each is a row
        (FeedCase("keyless_restart_lands",
                  [{"a.json": lines(refresh(1, "a"), refresh(2, "b")),
                    "b.json": lines(refresh(1, "a"), refresh(2, "b"))}],
                  "qlik_replicate", {"keyless_repeats": "land"}, columns=TWO, keys=()),
         [(1, "a"), (1, "a"), (2, "b"), (2, "b")]),
        # ... and a keyed one takes the repeated rows as upserts
        (FeedCase("keyed_restart", [{"a.json": lines(refresh(1, "a"), refresh(2, "b")),
                                     "b.json": lines(refresh(1, "a"), refresh(2, "b"))},
                                    {"c.json": lines(change("INSERT", 3, "c", 1))}],
                  "qlik_replicate", columns=TWO), [(1, "a"), (2, "b"), (3, "c")]),
        # a table spread over two Kafka partitions (sink files `<topic>+<partition>+<offset>`):
        # partition 0's reload (after its change) drops key 3 and truncates once; partition
        # 1's run of the same reload arrives a batch later and adds its rows, no truncate
        (FeedCase("keyed_reload_partitions",
                  [{"orders+0+0000000000.json": lines(refresh(1, "a"), refresh(3, "c"),
                                                      change("UPDATE", 1, "a2", 1),
                                                      refresh(1, "a2")),
                    "orders+1+0000000000.json": lines(refresh(2, "b"))},
                   {"orders+1+0000000001.json": lines(change("UPDATE", 2, "b2", 2),
                                                      refresh(2, "b2"), refresh(4, "d"))}],
                  "qlik_replicate", columns=TWO), [(1, "a2"), (2, "b2"), (4, "d")]),
        # ... placed by changeSequence: partition 0's changes before its reload run (key 3,
        # then lost at the source without a captured change) don't apply again after it;
        # partition 1's run of the first load arriving with the reload, followed by an insert
        # from before the reload began (sequence 2 < 3), is an older load's: its rows (key 4,
        # lost too) are left out, and so is the insert (key 5, lost too: the load holds it)
        (FeedCase("keyed_reload_sequenced",
                  [{"orders+0+0000000000.json": lines(refresh(1, "a"), refresh(3, "c"),
                                                      change("UPDATE", 3, "c2", 1),
                                                      change("UPDATE", 1, "a2", 3),
                                                      refresh(1, "a2")),
                    "orders+1+0000000000.json": lines(refresh(2, "b"), refresh(4, "d"),
                                                      change("INSERT", 5, "e", 2))},
                   {"orders+1+0000000003.json": lines(refresh(2, "b"))}],
                  "qlik_replicate", columns=TWO), [(1, "a2"), (2, "b")]),
        # ... partition 1's insert 9, made after the reload began, arrived a batch before
        # partition 0's run of the reload, whose next change (5) shows the reload began
        # before 9: the reload doesn't hold the insert and its truncate would delete it, so
        # the table stops at the run
        (FeedCase("keyed_reload_lost_change", lost_change_batches(stop_at_run=True),
                  "qlik_replicate", columns=TWO), ("lost", "orders+0+0000000002.json", 1)),
        # ... and when that change comes a batch after the run, the truncate has landed: the
        # table stops at the change that shows the reload lost the insert
        (FeedCase("keyed_reload_lost_change_later", lost_change_batches(stop_at_run=False),
                  "qlik_replicate", columns=TWO), ("lost", "orders+0+0000000003.json", 1)),
        # ... what the full refresh the stop names does: the same files as one batch, where
        # each partition's order places the reload and the insert lands after its truncate
        (FeedCase("keyed_reload_lost_change_refreshed",
                  [{name: text for batch in lost_change_batches(stop_at_run=True)
                    for name, text in batch.items()}],
                  "qlik_replicate", columns=TWO), [(1, "a3"), (2, "b2"), (4, "d")]),
        # Arcion: a new snapshot after realtime changes replaces the table (key 11 is gone)
        (FeedCase("arcion_resnapshot", [{"snap_1.csv": lines("10,India", "11,Chile"),
                                         "rt_1.csv": lines(arcion_row("U", 10, "USA", 1))},
                                        {"snap_2.csv": lines("10,USA")}],
                  "arcion", ARCION, columns=TWO), [(10, "USA")]),
        # ... a snapshot restarted (its files written again) stops a keyless table
        (FeedCase("arcion_keyless_restart", [{"snap_1.csv": lines("10,India", "11,Chile")},
                                             {"snap_2.csv": lines("10,India", "11,Chile")}],
                  "arcion", ARCION, columns=TWO, keys=()), ("stops", "snap_2.csv", 1)),
        # AWS DMS: a table reload writes full-load files after the table's CDC files
        (FeedCase("dms_reload", [{"LOAD00000001.csv": "1,a\n2,b\n",
                                  "20231029-113401000.csv": "U,1,a2\n"},
                                 {"LOAD00000002.csv": "1,a2\n"}],
                  "aws_dms", columns=TWO), [(1, "a2")]),
        # ... and writes it under the names it used before (TargetTablePrepMode
        # DROP_AND_CREATE empties the folder; the counter starts at LOAD00000001 again): the
        # file written again is read again, as a new load (key 2 is gone), also when nothing
        # but the full load came before
        (FeedCase("dms_reload_same_name", [{"LOAD00000001.csv": "1,a\n2,b\n"},
                                           {"LOAD00000001.csv": "1,a2\n3,c\n"}],
                  "aws_dms", columns=TWO), [(1, "a2"), (3, "c")]),
        # Canal/DTS: a keyless table's load run again from a later file, or a later batch
        (FeedCase("dts_restart_files", [{"a.json": lines(dts_init((1, "a"), (2, "b"))),
                                         "b.json": lines(dts_init((1, "a"), (2, "b")))}],
                  "canal", columns=TWO, keys=()), repeated),
        (FeedCase("dts_restart_batches", [{"a.json": lines(dts_init((1, "a"), (2, "b")))},
                                          {"b.json": lines(dts_init((1, "a"), (2, "b")))}],
                  "canal", columns=TWO, keys=()), repeated),
    ]}


def check(spark, root: str, names: list[str]) -> None:
    chosen = [cases()[name] for name in names]
    run_feeds(spark, [case for case, _ in chosen], root)
    for case, want in chosen:
        error = case.outcome.error
        if want and want[0] == "lost":
            assert error is not None and "the reload doesn't hold that change" in error.message, \
                f"{case.name}: {error}"
            assert f"--full-refresh --select prop.{case.name}`" in error.message, case.name
            assert error.file.endswith(want[1]) and error.line == want[2], case.name
            continue
        if want and want[0] == "stops":
            assert error is not None and "equals one the load already sent" in error.message, \
                case.name
            assert error.file.endswith(want[1]) and error.line == want[2], case.name
            assert error.hint == KEYLESS_HINT, case.name
            continue
        assert error is None, f"{case.name}: {error.render()}"
        assert sorted((r["id"], r["name"]) for r in case.rows) == want, case.name


def test_a_reload_replaces_the_table_keyed_and_keyless(spark, tmp_path):
    check(spark, str(tmp_path), ["keyed_reload", "keyless_restart", "keyless_restart_lands",
                                 "dms_reload", "dts_restart_batches",
                                 "keyed_reload_partitions", "dms_reload_same_name",
                                 "keyed_reload_sequenced", "keyed_reload_lost_change",
                                 "keyed_reload_lost_change_later",
                                 "keyed_reload_lost_change_refreshed"])


@pytest.mark.extra
def test_more_reloads(spark, tmp_path):
    check(spark, str(tmp_path), ["keyless_reload", "keyless_reload_one_batch", "keyed_restart",
                                 "arcion_resnapshot", "arcion_keyless_restart",
                                 "dts_restart_files"])
