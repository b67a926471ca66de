"""Qlik Replicate Kafka messages as Qlik's "Metadata and data messages" describes them, for the
Kafka tests, the demo and the bench: a metadata message (lineage, tableStructure.tableColumns),
then data messages with REFRESH (full load), INSERT, UPDATE (beforeData, changeMask, columnMask),
DELETE and transactions (transactionId, transactionEventCounter, transactionLastEvent)."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CUSTOMER_FEED = REPO / "tests" / "fixtures" / "qlik" / "customers"

ORDER_COLUMNS = {
    "ORDER_ID": {"ordinal": 1, "type": "INT8", "primaryKeyPosition": 1, "nullable": False},
    "CUSTOMER_ID": {"ordinal": 2, "type": "INT4", "primaryKeyPosition": 0},
    "STATUS": {"ordinal": 3, "type": "STRING", "length": 20, "primaryKeyPosition": 0},
    "AMOUNT": {"ordinal": 4, "type": "NUMERIC", "precision": 12, "scale": 2,
               "primaryKeyPosition": 0},
}


def customer_messages() -> tuple[list[str], list[str]]:
    """(metadata messages, data messages) of the CUSTOMERS fixture feed, in file order."""
    metadata, data = [], []
    # the full load (LOAD*) first, then the CDC files, as Replicate produces them
    for path in sorted(CUSTOMER_FEED.iterdir(), key=lambda p: (not p.name.startswith("LOAD"), p.name)):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                (metadata if json.loads(line)["type"] == "MD" else data).append(line)
    return metadata, data


def _envelope(kind: str, message: dict) -> str:
    return json.dumps({"magic": "atMSG", "type": kind, "headers": None, "messageSchemaId": None,
                       "messageSchema": None, "message": message}, separators=(",", ":"))


def orders_metadata(version: int = 1) -> str:
    return _envelope("MD", {
        "schemaId": "ORD1", "lineage": {"server": "replicate01", "task": "crm_to_kafka",
                                        "schema": "dbo", "table": "ORDERS",
                                        "tableVersion": version,
                                        "timestamp": "2024-05-02T10:00:00.000"},
        "tableStructure": {"tableColumns": ORDER_COLUMNS}, "dataSchema": "{}"})


def _data(operation: str, data: dict, before: dict | None, seq: int, txn: str | None,
          counter: int, last: bool | None) -> str:
    headers = {"operation": operation, "changeSequence": "" if operation == "REFRESH"
               else f"{seq:035d}", "timestamp": "2024-05-02T10:01:00.000",
               "streamPosition": f"{seq:016d}", "transactionId": txn or "",
               "changeMask": "", "columnMask": "0F"}
    if operation != "REFRESH":
        headers.update(transactionEventCounter=counter, transactionLastEvent=last)
    return _envelope("DT", {"data": data, "beforeData": before, "headers": headers})


def order_messages(count: int, partitions: int = 3, refresh: int = 0, per_txn: int = 3,
                   first_seq: int = 1, first_id: int = 1) -> list[tuple[int, str]]:
    """(partition, message) of `refresh` full-load rows, then `count` CDC changes in
    transactions of `per_txn` events spread round-robin over the partitions: inserts, and
    every third event an update or a delete of an earlier order."""
    out: list[tuple[int, str]] = []
    for i in range(refresh):
        order = {"ORDER_ID": first_id + i, "CUSTOMER_ID": i % 7, "STATUS": "NEW",
                 "AMOUNT": f"{i % 1000}.50"}
        out.append((i % partitions, _data("REFRESH", order, None, 0, None, 0, None)))
    next_id = first_id + refresh
    seq = first_seq
    for i in range(count):
        txn = f"T{(seq - 1) // per_txn + first_seq:012d}"
        counter = i % per_txn + 1
        last = counter == per_txn or i == count - 1
        kind = i % 6
        if kind == 2 and next_id > first_id + 1:
            target = next_id - 2
            before = {"ORDER_ID": target, "CUSTOMER_ID": target % 7, "STATUS": "NEW",
                      "AMOUNT": "1.00"}
            after = dict(before, STATUS="SHIPPED")
            message = _data("UPDATE", after, before, seq, txn, counter, last)
        elif kind == 5 and next_id > first_id + 3:
            target = next_id - 4
            message = _data("DELETE", {"ORDER_ID": target, "CUSTOMER_ID": None, "STATUS": None,
                                       "AMOUNT": None}, None, seq, txn, counter, last)
        else:
            message = _data("INSERT", {"ORDER_ID": next_id, "CUSTOMER_ID": next_id % 7,
                                       "STATUS": "NEW", "AMOUNT": "1.00"}, None, seq, txn,
                            counter, last)
            next_id += 1
        out.append((i % partitions, message))
        seq += 1
    return out
