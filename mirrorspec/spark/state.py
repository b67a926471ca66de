"""Finding a mirrored table and its key columns for `reconcile` and `replay` (no JVM: the
progress is read from the Delta log by `mirrorspec.spark.progress`)."""

from __future__ import annotations

import os

from mirrorspec.errors import MirrorspecError
from mirrorspec.spark import fs as fsmod
from mirrorspec.spark.progress import read_state


def resolve_table(table: str, warehouse: str | None) -> tuple[str, str]:
    """(unique id, Delta path) of TABLE: a Delta folder, or schema.table / table (dbo) in the
    warehouse."""
    if os.path.isdir(os.path.join(table, "_delta_log")):
        path = os.path.abspath(table)
        parts = path.rstrip(os.sep).split(os.sep)
        return f"{parts[-2]}.{parts[-1]}", path
    if not warehouse:
        raise MirrorspecError(f"{table} is not a Delta table folder; pass --warehouse to find "
                              "schema.table in a warehouse")
    schema, _, name = table.rpartition(".")
    schema = schema or "dbo"
    path = os.path.join(warehouse, schema, name)
    if not os.path.isdir(os.path.join(path, "_delta_log")):
        raise MirrorspecError(f"no mirrored table {schema}.{name} in {warehouse}",
                              hint="run `mirrorspec mirror` first, or check the name")
    return f"{schema}.{name}", os.path.abspath(path)


def table_keys(path: str, key: str | None) -> list[str]:
    """--key, else the keyColumns the engine recorded when it last committed the table (an
    empty list for a keyless table: rows are then compared as a multiset)."""
    if key:
        return [k.strip() for k in key.split(",") if k.strip()]
    keys = read_state(fsmod.LocalFS(), path).meta.get("keys")
    if keys is None:
        raise MirrorspecError("the table's key columns are not recorded (it was mirrored by an "
                              "older version)", hint="pass --key col1,col2")
    return list(keys)
