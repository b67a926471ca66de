"""A file's columns against the table's, as the engine extends them, and a marker cell read as
the engine reads it."""

from __future__ import annotations

from dataclasses import dataclass

from mirrorspec.landing import checks
from mirrorspec.landing.lint.findings import Finding
from mirrorspec.openmirroring import mirroring


@dataclass
class Column:
    name: str
    type: str                  # Spark SQL type name, "void" for an all-NULL column


def schema_stop(columns, marker_last, metadata, union, stop, strict,
                marker_non_integer: str | None = None) -> Finding | None:
    """The stop finding when `columns` can't extend the table's columns `union` as the
    engine would (keys, types, marker, duplicates); else None, `union` extended."""
    trial = list(union)
    reason = checks.extend_columns(
        columns, trial, metadata.key_columns, strict, marker_last,
        type_of=lambda c: c.type, is_null=lambda t: t == "void", show=str,
        retyped=lambda c, t: Column(c.name, t), marker_non_integer=marker_non_integer)
    if reason is None:
        union[:] = trial
        return None
    rule = ("metadata/key-missing" if "missing from the file" in reason else
            "content/type-change" if "changed type" in reason else
            "content/null-type" if mirroring.NULL_TYPE_TEXT in reason else
            "content/engine-column" if mirroring.ENGINE_COLUMN_TEXT in reason else
            "content/marker-type" if mirroring.MARKER_NOT_INTEGER in reason else
            "content/marker-position" if mirroring.MARKER_NOT_LAST in reason else
            "content/duplicate-column")
    return stop(rule, reason)


def marker_number(raw, default: int) -> int | None:
    """A non-integer marker cell as the engine reads it (trimmed text → number), None if invalid."""
    if raw is None:
        return default
    text = str(raw).strip()
    if text == "":
        return default
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number in mirroring.VALID_MARKERS else None
