"""Changes to how a table's files are read: the delimited dialect, the file detection strategy,
the upsert default and the other `_metadata.json` properties."""

from __future__ import annotations

from typing import Any

from mirrorspec.artifacts.plan import TablePlan
from mirrorspec.openmirroring.mirroring import TableMetadata
from mirrorspec.project.diff.normalise import detection_of, dialect_of, union_keys
from mirrorspec.project.diff.result import Change


# _metadata.json properties compared by a dedicated check (matched case-insensitively).
_DEDICATED_METADATA = {"keycolumns", "filedetectionstrategy", "isupsertdefaultrowmarker",
                       "schemadefinition", "fileformat", "fileextension",
                       "fileformattypeproperties"}


def dialect_changes(before: TablePlan, after: TablePlan) -> list[Change]:
    """The delimited dialect's changes: the file format, or each property that differs."""
    old, new = dialect_of(before), dialect_of(after)
    if old["file_format"] != new["file_format"]:  # the properties follow; one change says it
        return [Change("dialect_changed", "file_format", old["file_format"], new["file_format"])]
    return [Change("dialect_changed", name, old.get(name), new.get(name))
            for name in union_keys(old, new) if old.get(name) != new.get(name)]


def detection_changes(old_md: TableMetadata, new_md: TableMetadata) -> list[Change]:
    """A changed file detection strategy."""
    old, new = detection_of(old_md), detection_of(new_md)
    if old == new:
        return []
    return [Change("file_detection_changed", "fileDetectionStrategy", old, new)]


def other_metadata_changes(old: dict[str, Any], new: dict[str, Any], old_md: TableMetadata,
                           new_md: TableMetadata) -> list[Change]:
    """The upsert default and every other `_metadata.json` property without a
    dedicated check."""
    changes = []
    old_upsert, new_upsert = old_md.upsert_default, new_md.upsert_default
    if old_upsert != new_upsert:
        changes.append(Change("upsert_default_changed", "isUpsertDefaultRowMarker",
                              old_upsert, new_upsert))
    old_rest = {k: v for k, v in (old or {}).items() if k.lower() not in _DEDICATED_METADATA}
    new_rest = {k: v for k, v in (new or {}).items() if k.lower() not in _DEDICATED_METADATA}
    for name in union_keys(old_rest, new_rest):
        if old_rest.get(name) != new_rest.get(name):
            changes.append(Change("metadata_changed", name, old_rest.get(name),
                                  new_rest.get(name)))
    return changes
