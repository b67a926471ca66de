"""Write the sample landing files of this project into seed_files/ (run once; the output is
committed). Each table gets an initial load (…01.parquet) and an incremental file (…02.parquet)
with updates, deletes, upserts and a key change written as delete + insert; `__rowMarker__` is the
last column. README.md lists the rows and the expected mirrored tables.

    .venv/bin/python projects/parquet_orders/make_seed_files.py
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
OUT = HERE / "seed_files"
MARKER = "__rowMarker__"

SCHEMAS = {
    ("sales", "customers"): pa.schema([("customer_id", pa.int64()), ("name", pa.string()),
                                       ("city", pa.string()), ("active", pa.bool_())]),
    ("sales", "orders"): pa.schema([("order_id", pa.int64()), ("line_no", pa.int32()),
                                    ("customer_id", pa.int64()), ("sku", pa.string()),
                                    ("quantity", pa.int32()), ("price", pa.float64()),
                                    ("order_date", pa.date32())]),
    ("inventory", "products"): pa.schema([("sku", pa.string()), ("title", pa.string()),
                                          ("price", pa.float64()),
                                          ("updated_at", pa.timestamp("us"))]),
    ("inventory", "stock"): pa.schema([("warehouse_id", pa.int32()), ("sku", pa.string()),
                                       ("on_hand", pa.int64())]),
}

D = dt.date(2025, 6, 17)
T = dt.datetime(2025, 6, 17, 14, 30)

# (schema, table) → [file 1 rows, file 2 rows]; a row ending in a marker when the file has one.
FILES = {
    ("sales", "customers"): [
        # initial load without __rowMarker__: every row is an insert
        {"marker": False, "rows": [
            (1, "Alice", "Redmond", True),
            (2, "Bob", "Seattle", True),
            (3, "Carol", "Bellevue", False),
        ]},
        {"marker": True, "rows": [
            (1, "Alice", "Bellevue", True, 1),  # update: Alice moved
            (3, None, None, None, 2),  # delete: only the key is needed
            (4, "Dan", "Kirkland", True, 4),  # upsert of a new key: inserted
            (2, "Bob", "Tacoma", False, 4),  # upsert of an existing key: updated
        ]},
    ],
    ("sales", "orders"): [
        # initial load with explicit 0 (insert) markers
        {"marker": True, "rows": [
            (1001, 1, 1, "A-1", 2, 9.99, D, 0),
            (1001, 2, 1, "B-2", 1, 24.5, D, 0),
            (1002, 1, 2, "A-1", 5, 9.99, D, 0),
        ]},
        {"marker": True, "rows": [
            (1001, 1, 1, "A-1", 3, 9.99, D, 1),  # update quantity
            (1001, 2, None, None, None, None, None, 2),  # delete a line
            (1002, 1, None, None, None, None, None, 2),  # key change (line 1 → 2): delete …
            (1002, 2, 2, "A-1", 5, 9.99, D, 0),  # … and insert under the new key
            (1003, 1, 4, "D-4", 1, 99.0, D + dt.timedelta(days=1), 0),  # new order
        ]},
    ],
    ("inventory", "products"): [
        # initial load without markers; isUpsertDefaultRowMarker makes them upserts
        {"marker": False, "rows": [
            ("A-1", "Anvil", 9.99, T),
            ("B-2", "Bucket", 24.5, T),
            ("C-3", "Crate", 12.0, T),
        ]},
        {"marker": True, "rows": [
            ("B-2", "Bucket", 19.5, T + dt.timedelta(hours=1), 4),  # upsert: price cut
            ("C-3", None, None, None, 2),  # delete
            ("D-4", "Drill", 99.0, T + dt.timedelta(hours=1), 0),  # insert
        ]},
    ],
    ("inventory", "stock"): [
        {"marker": True, "rows": [
            (1, "A-1", 10, 0),
            (1, "B-2", 5, 0),
            (2, "A-1", 7, 0),
        ]},
        {"marker": True, "rows": [
            (1, "A-1", 8, 1),  # update
            (2, "A-1", None, 2),  # key change (warehouse 2 → 3): delete …
            (3, "A-1", 7, 0),  # … and insert under the new key
            (2, "B-2", 4, 4),  # upsert of a new key: inserted
        ]},
    ],
}


def write_table(schema: str, table: str) -> list[Path]:
    """Write the two files of one table; return their paths."""
    base = SCHEMAS[(schema, table)]
    folder = OUT / f"{schema}.schema" / table
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, spec in enumerate(FILES[(schema, table)], start=1):
        arrow_schema = base.append(pa.field(MARKER, pa.int32())) if spec["marker"] else base
        columns = list(zip(*spec["rows"]))
        arrays = [pa.array(list(values), type=field.type)
                  for values, field in zip(columns, arrow_schema)]
        path = folder / f"{number:020d}.parquet"
        pq.write_table(pa.Table.from_arrays(arrays, schema=arrow_schema), path)
        paths.append(path)
    return paths


def main() -> None:
    for schema, table in FILES:
        for path in write_table(schema, table):
            print(path.relative_to(HERE))


if __name__ == "__main__":
    main()
