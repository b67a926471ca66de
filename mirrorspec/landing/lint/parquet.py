"""One Parquet landing file linted: its footer's columns and codecs, time ranges, then the
marker and key columns' rows."""

from __future__ import annotations

from mirrorspec.base import files as fsmod
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.landing import checks
from mirrorspec.landing.lint.columns import Column, marker_number, schema_stop
from mirrorspec.landing.lint.findings import Finding
from mirrorspec.openmirroring import mirroring
from mirrorspec.openmirroring.parquet_types import spark_type_name


def lint_parquet(file, metadata, union, report, where, stop, strict) -> Finding | None:
    """Lint one Parquet file; returns the finding the engine would stop the table at."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = fsmod.local_path(file.path)
    try:
        footer = checks.parquet_footer(path, file.path)
        schema = footer.schema.to_arrow_schema()
    except LandingZoneError as exc:
        return stop("content/unreadable", exc.message)
    names = schema.names
    markers = [i for i, n in enumerate(names) if checks.is_marker(n)]
    marker = names[markers[0]] if markers else None
    marker_last = not markers or markers[0] == len(names) - 1
    marker_type = schema.field(marker).type if marker else None
    non_integer = (spark_type_name(marker_type) if marker_type is not None
                   and not pa.types.is_integer(marker_type) else None)
    if not strict:
        for problem in mirroring.marker_column_problems(marker_last, non_integer):
            rule = ("content/marker-type" if mirroring.MARKER_NOT_INTEGER in problem
                    else "content/marker-position")
            report.findings.append(Finding(rule, "warning", problem, column=marker, **where))
    columns = [Column(f.name, spark_type_name(f.type)) for f in schema if not checks.is_marker(f.name)]
    found = schema_stop(columns, marker_last, metadata, union, stop, strict, non_integer)
    if found is not None:
        return found
    codecs = checks.unsupported_codecs(footer)
    if codecs:
        return stop("content/codec", f"compressed with {', '.join(codecs)}: unreadable here; "
                    "the landing-zone specification lists Snappy, GZIP and ZSTD (re-write the "
                    "file under the same name)")
    out_of_range = checks.time_range_problem(path)
    if out_of_range is not None:
        return stop("content/time-range", out_of_range[2], row=out_of_range[0],
                    column=out_of_range[1])
    by_lower = {n.lower(): n for n in names}
    keys = [by_lower[k.lower()] for k in metadata.key_columns]
    try:
        data = pq.read_table(path, columns=([marker] if marker else []) + keys)
    except Exception as exc:  # noqa: BLE001 - pages the footer didn't show broken
        return stop("content/unreadable", f"not a readable Parquet file: {exc}")
    values = data.column(marker).combine_chunks() if marker else None
    text_bad = None
    if values is not None and not pa.types.is_integer(values.type):
        values, text_bad = _markers_from_text(values, metadata)
    _, _, bad = checks.first_bad_row(data.num_rows, values,
                                     [data.column(k).combine_chunks() for k in keys], metadata)
    bad = min(b for b in (bad, text_bad) if b is not None) if (bad or text_bad) else None
    if bad is None:
        return None
    column = marker if bad[1].startswith(checks.INVALID_MARKER_TEXT[0]) or "needs keyColumns" in \
        bad[1] else (checks.null_key_columns(bad[1]) or ", ".join(metadata.key_columns) or None)
    return stop("content/row", bad[1], row=bad[0] + 1, column=column)


def _markers_from_text(values, metadata):
    import pyarrow as pa

    default = metadata.default_marker
    parsed, bad = [], None
    for index, raw in enumerate(values.to_pylist()):
        number = marker_number(raw, default)
        if number is None and bad is None:
            bad = (index, checks.INVALID_MARKER_TEXT[0] + str(raw).strip()
                   + checks.INVALID_MARKER_TEXT[1])
        parsed.append(number if number is not None else default)
    return pa.array(parsed, pa.int64()), bad
