"""A small project with monitoring status and run results, for the docs-site tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

TABLES = [
    {"name": "orders", "schema": "sales", "description": "Customer orders, one row per line",
     "key_columns": ["order_id"], "format": "csv", "tags": ["finance", "daily"],
     "columns": [{"name": "order_id", "type": "Int64", "nullable": False},
                 {"name": "customer_name", "type": "String", "description": "Who ordered"},
                 {"name": "amount", "type": "Double"}, {"name": "customer_id", "type": "Int32"},
                 {"name": "state", "type": "String"}],
     "tests": ["unique", {"not_null": {"columns": ["customer_name"], "severity": "warn"}},
               {"relationships": {"column": "customer_id", "to": "crm.customers"}},
               {"accepted_values": {"column": "state", "values": ["open", "paid"],
                                    "severity": "warn"}}]},
    {"name": "customers", "schema": "crm", "key_columns": ["customer_id", "region"],
     "format": "delimited_text", "delimited": {"extension": "tsv", "column_separator": "\t"},
     "columns": [{"name": "customer_id", "type": "Int32", "nullable": False},
                 {"name": "region", "type": "String", "nullable": False},
                 {"name": "email", "type": "String"}]},
    {"name": "events", "description": "<script>alert('x')</script> & friends"},
]

STATUS = {"tables": [
    {"sourceSchemaName": "sales", "sourceTableName": "orders", "status": "Replicating",
     "metrics": {"processedRows": 4321, "processedBytes": 98765,
                 "lastSyncDateTime": "2026-11-22T00:10:00Z", "lastSyncLatencyInSeconds": 1.5},
     "error": None},
    {"sourceSchemaName": "crm", "sourceTableName": "customers", "status": "Failed",
     "metrics": {"processedRows": 7, "processedBytes": 100,
                 "lastSyncDateTime": "2026-11-22T00:10:00Z", "lastSyncLatencyInSeconds": 0.2},
     "error": {"errorCode": "BadFile",
               "message": "00000000000000000002.tsv row 3: column region changed type"}},
]}

RUN_RESULTS = {"command": "run", "started_at": "2026-11-22T00:09:58Z", "results": [
    {"unique_id": "sales.orders", "status": "success", "rows_inserted": 4000, "rows_updated": 300,
     "rows_deleted": 21, "files_applied": ["00000000000000000001.csv"], "execution_time": 2.25,
     "error": None},
]}


# The last `mirrorspec test`: the relationships test FAILs, accepted_values WARNs.
TEST_RESULTS = {"started_at": "2026-11-22T00:11:00Z", "results": [
    {"name": "unique_sales.orders_order_id", "table": "sales.orders", "type": "unique",
     "severity": "error", "status": "pass", "failures": 0, "message": ""},
    {"name": "not_null_sales.orders_customer_name", "table": "sales.orders", "type": "not_null",
     "severity": "warn", "status": "pass", "failures": 0, "message": ""},
    {"name": "relationships_sales.orders_customer_id_to_crm.customers", "table": "sales.orders",
     "type": "relationships", "severity": "error", "status": "fail", "failures": 2,
     "message": "2 row(s) whose customer_id has no match in crm.customers.customer_id"},
    {"name": "accepted_values_sales.orders_state", "table": "sales.orders",
     "type": "accepted_values", "severity": "warn", "status": "warn", "failures": 1,
     "message": "1 row(s) with a value not listed (refunded: 1)"},
]}

# A Delta table Spark wrote (a WRITE of two landing files, then a MERGE with a deletion vector):
# its columns differ from the declared ones, as after a column union.
SPARK_TABLE = Path(__file__).parent / "fixtures" / "spark_merge_dv"


def write_project(folder: Path, tables=TABLES, status=True, run_results=True,
                  test_results=True, delta=True) -> Path:
    """Project files (+ warehouse/tables.json, target/run_results.json, test_results.json and
    the Delta table of crm.customers when asked)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mirrorspec_project.yml").write_text(yaml.safe_dump({"name": "shop"}))
    (folder / "tables").mkdir(exist_ok=True)
    (folder / "tables" / "shop.yml").write_text(yaml.safe_dump({"tables": tables},
                                                               sort_keys=False))
    if status:
        (folder / "warehouse").mkdir(exist_ok=True)
        (folder / "warehouse" / "tables.json").write_text(json.dumps(STATUS))
    if run_results:
        (folder / "target").mkdir(exist_ok=True)
        (folder / "target" / "run_results.json").write_text(json.dumps(RUN_RESULTS))
    if test_results:
        (folder / "target").mkdir(exist_ok=True)
        (folder / "target" / "test_results.json").write_text(json.dumps(TEST_RESULTS))
    if delta:
        shutil.copytree(SPARK_TABLE, folder / "warehouse" / "crm" / "customers")
    return folder


# A project of 100 tables in four schemas: 60 written by external publishers, 25 CSV extracts
# and 15 Parquet extracts; every table has a relationships test to the table before it in its
# schema, and a `unique` test on its key. Statuses and test results vary with the number.
def many_tables(count: int = 100) -> tuple[list[dict], dict, dict]:
    """(tables, monitoring status, test_results) for the docs site at scale."""
    schemas = ("sales", "crm", "stock", "hr")
    tables, status, results = [], [], []
    for n in range(count):
        schema, name = schemas[n % len(schemas)], f"t{n:03d}"
        table: dict = {"name": name, "schema": schema, "key_columns": ["id"],
                       "description": f"Table number {n}",
                       "columns": [{"name": "id", "type": "Int64", "nullable": False},
                                   {"name": f"attr_{n}", "type": "String",
                                    "description": f"attribute number {n}"},
                                   {"name": "parent_id", "type": "Int64"}],
                       "tests": ["unique"]}
        if n == 57:
            table["columns"][1]["description"] = "IBAN of the supplier's bank account"
        if 60 <= n < 85:
            table["source"] = {"type": "csv", "path": f"extracts/{schema}_{name}"}
            table["format"] = "csv"
        elif n >= 85:
            table["source"] = {"type": "parquet", "path": f"extracts/{schema}_{name}"}
        if n >= len(schemas):
            parent = f"{schema}.t{n - len(schemas):03d}"
            table["tests"].append({"relationships": {"column": "parent_id", "to": parent}})
            failed = n % 9 == 0
            results.append({"name": f"relationships_{schema}.{name}_parent_id_to_{parent}",
                            "table": f"{schema}.{name}", "type": "relationships",
                            "severity": "error", "status": "fail" if failed else "pass",
                            "failures": 3 if failed else 0,
                            "message": f"3 row(s) whose parent_id has no match in {parent}.id"
                            if failed else ""})
        results.append({"name": f"unique_{schema}.{name}_id", "table": f"{schema}.{name}",
                        "type": "unique", "severity": "error", "status": "pass", "failures": 0,
                        "message": ""})
        status.append({"sourceSchemaName": schema, "sourceTableName": name,
                       "status": "Failed" if n % 13 == 5 else "Replicating",
                       "metrics": {"processedRows": 1000 + n, "processedBytes": 50000 + n,
                                   "lastSyncDateTime": "2026-11-22T00:10:00Z",
                                   "lastSyncLatencyInSeconds": 1.0}, "error": None})
        tables.append(table)
    return tables, {"tables": status}, {"started_at": "2026-11-22T00:11:00Z", "results": results}


def write_many(folder: Path, count: int = 100) -> Path:
    """A project of `count` tables (many_tables) with its status and test results."""
    tables, status, results = many_tables(count)
    write_project(folder, tables=tables, status=False, run_results=False, test_results=False,
                  delta=False)
    (folder / "warehouse").mkdir(exist_ok=True)
    (folder / "warehouse" / "tables.json").write_text(json.dumps(status))
    (folder / "target").mkdir(exist_ok=True)
    (folder / "target" / "test_results.json").write_text(json.dumps(results))
    return folder
