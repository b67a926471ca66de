"""`mirrorspec export`: a mirrored table (or one version of it) as one Parquet or CSV file.

For readers that refuse the table's features (deletion vectors, column mapping). Rows go through
delta-rs' DataFusion scan (`QueryBuilder`), which applies deletion vectors, streamed batch by
batch into a temporary file renamed into place: a failed export leaves no half-written file.
No JVM.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Iterable

from mirrorspec.readers.delta import open_table
from mirrorspec.readers.errors import DeltaRsUnsupported, InspectError

FORMATS = {".parquet": "parquet", ".csv": "csv"}


@dataclass(frozen=True)
class Exported:
    """What `export` wrote: the file, its format ("parquet", "csv"), its rows, the table's
    Delta version read, and the table's name."""

    path: str
    format: str
    rows: int
    version: int
    table: str = ""


def export_format(dest: str) -> str:
    """`parquet` or `csv` from the file name; InspectError for anything else."""
    suffix = os.path.splitext(dest)[1].lower()
    if suffix not in FORMATS:
        raise InspectError(f"--to {dest}: can't tell the format from {suffix or 'no suffix'!r}",
                           hint="name the file FILE.parquet or FILE.csv")
    return FORMATS[suffix]


def check_destination(dest: str, protected: Iterable[tuple[str, str]] = (),
                      force: bool = False) -> None:
    """Refuse a `--to` file inside one of the `protected` (what, folder) pairs — the
    warehouse and landing zone the command reads and the project's — after resolving relative
    paths and symlinks (a link into a table is the table's file), and an existing file unless
    `force`; also a folder that doesn't exist. Local folders only: a URI can't hold `dest`."""
    export_format(dest)
    real = os.path.realpath(dest)
    for what, folder in protected:
        local = folder[len("file:"):] if folder.startswith("file:") else folder
        if not local or "://" in local:
            continue
        root = os.path.realpath(local)
        if os.path.commonpath([root, real]) == root:
            raise InspectError(f"--to {dest}: inside the {what} {local}; export never writes "
                               "there (a table's own files would be replaced)",
                               hint="write the file outside the warehouse and the landing zone")
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):
        raise InspectError(f"--to {dest}: the folder {folder} does not exist",
                           hint="create it first, or write the file somewhere else")
    if os.path.lexists(dest) and not force:
        raise InspectError(f"--to {dest}: the file exists; not replaced",
                           hint="give --force to replace it, or another file name")
    if os.path.isdir(real):
        raise InspectError(f"--to {dest}: a folder, not a file",
                           hint="name the file FILE.parquet or FILE.csv")


def export_table(path: str, name: str, dest: str, version: int | None = None,
                 storage_options: dict | None = None, force: bool = False,
                 protected: Iterable[tuple[str, str]] = ()) -> Exported:
    """Write the rows of the Delta table at `path` (as of `version`) to `dest`: refused by
    `check_destination` first (the table's folder is always protected)."""
    import pyarrow as pa
    from deltalake import QueryBuilder
    from deltalake.exceptions import DeltaError

    fmt = export_format(dest)
    check_destination(dest, [*protected, ("table", path)], force)
    folder = os.path.dirname(os.path.abspath(dest))
    table = open_table(path, name, version, storage_options=storage_options)
    fd, temp = tempfile.mkstemp(prefix=".export-", suffix=os.path.splitext(dest)[1], dir=folder)
    os.close(fd)
    rows = 0
    try:
        try:
            stream = QueryBuilder().register("t", table).execute("SELECT * FROM t")
            reader = pa.RecordBatchReader.from_stream(stream)
            schema = _output_schema(reader.schema, csv=fmt == "csv")
            with _writer(fmt, temp, schema) as writer:
                for batch in reader:
                    batch = _output_batch(batch, schema, csv=fmt == "csv")
                    writer.write_batch(batch)
                    rows += batch.num_rows
        except (DeltaError, OSError) as exc:
            raise DeltaRsUnsupported(f"delta-rs could not read {name}: "
                                     f"{str(exc).strip().splitlines()[0]}") from None
        except pa.ArrowException as exc:  # a type this format can't hold
            raise InspectError(f"{name}: could not write {dest} as {fmt}: "
                               f"{str(exc).strip().splitlines()[0]}",
                               hint="try the other format (FILE.parquet holds every type)"
                               ) from None
        os.replace(temp, dest)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return Exported(dest, fmt, rows, table.version(), name)


def _writer(fmt: str, path: str, schema):
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetWriter(path, schema)
    import pyarrow.csv as pcsv

    return pcsv.CSVWriter(path, schema)


def _plain_type(arrow_type, csv: bool):
    """DataFusion hands out Arrow view types; files get the plain ones every reader knows
    (`string`, `binary`), and CSV gets binary as hex text (its writer has no binary type)."""
    import pyarrow as pa

    if _is_string_view(arrow_type):
        return pa.string()
    if _is_binary(arrow_type):
        return pa.string() if csv else pa.binary()
    return arrow_type


def _output_schema(schema, csv: bool):
    import pyarrow as pa

    return pa.schema([pa.field(f.name, _plain_type(f.type, csv), f.nullable) for f in schema])


def _output_batch(batch, schema, csv: bool):
    import pyarrow as pa

    columns = []
    for column, field in zip(batch.columns, schema):
        if csv and _is_binary(column.type):
            column = pa.array([None if v is None else v.hex() for v in column.to_pylist()],
                              pa.string())
        elif column.type != field.type:
            column = column.cast(field.type)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _is_string_view(arrow_type) -> bool:
    import pyarrow as pa

    return getattr(pa.types, "is_string_view", lambda _t: False)(arrow_type)


def _is_binary(arrow_type) -> bool:
    import pyarrow as pa

    return (pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)
            or pa.types.is_fixed_size_binary(arrow_type)
            or getattr(pa.types, "is_binary_view", lambda _t: False)(arrow_type))
