"""What a change to the project does to the mirrored tables: compare two plans (pure Python).

`diff_plans(base, head)` compares a previous plan (another git revision, or a saved `target/`) with
a new one, table by table, and classifies every change by what open mirroring does with it (seed
000, "Table operations" and "Table columns and column operations"):

- safe: tables added, columns added (Fabric adds them to the Delta table; old rows get NULL);
- caution: changes Fabric accepts but that alter what happens to future rows (upsert default,
  nullability, a table removed from the project …);
- breaking: changes Fabric can't apply to an existing table — keyColumns changed, a column type
  changed, a column removed or renamed, the delimited dialect or the file detection strategy
  changed. The table folder must be recreated and its data repopulated.

A breaking change *blocks* (`mirrorspec diff` exits 1) unless the head table says `recreate: true`
or the caller allows breaking changes. `report_json` and `report_markdown` render the result;
the JSON schema is documented in docs/review.md and versioned by DIFF_VERSION.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from mirrorspec.artifacts.plan import ColumnSpec, Plan, TablePlan
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.landing.deploy import recreate_procedure
from mirrorspec.sources.extract import EXTRACT_TYPES
from mirrorspec.openmirroring.mirroring import (
    DELIMITED_PROPERTIES,
    FILE_DETECTION_LAST_UPDATE_TIME,
    FILE_DETECTION_SEQUENTIAL,
    FILE_FORMAT_CSV,
    TableMetadata,
    canonical_data_type,
    dumps_json,
    keys_differ,
    parse_metadata,
    table_folder,
)

DIFF_VERSION = 1

SAFE, CAUTION, BREAKING = "safe", "caution", "breaking"
SEVERITIES = (BREAKING, CAUTION, SAFE)

ADDED, REMOVED, MODIFIED, UNCHANGED = "added", "removed", "modified", "unchanged"

# Where the rule comes from: sections of the open-mirroring landing zone specification (seed 000).
_SEED = "Fabric open mirroring landing zone requirements"
# How a table folder is recreated; `{table}` becomes the table's unique_id.
_HOW = " To recreate it: " + recreate_procedure("{table}") + "."


@dataclass(frozen=True)
class Rule:
    """How to explain one kind of change: its title, what Fabric does, what to do."""

    title: str
    severity: str
    fabric: str
    action: str
    rule: str


RULES: dict[str, Rule] = {
    "table_added": Rule(
        "table added", SAFE,
        "Open mirroring picks up a new table folder in the landing zone on its next scan and "
        "creates the Delta table from the folder's files.",
        "Nothing to do: the next run publishes the table's initial data.",
        f"{_SEED} › Table operations › Add table"),
    "table_removed": Rule(
        "table removed", CAUTION,
        "mirrorspec stops publishing and mirroring the table; its landing folder and Delta table "
        "stay as they are. Deleting the folder makes open mirroring drop the mirrored table.",
        "Delete the table's landing folder if the mirrored table should go too; otherwise the "
        "table simply stops receiving changes.",
        f"{_SEED} › Table operations › Drop table"),
    "table_renamed": Rule(
        "table renamed?", CAUTION,
        "Open mirroring can't rename a table: the new folder is a new table, filled only by "
        "what lands in it; the old table stays as it is until its folder is deleted.",
        "Make sure the new table gets a full initial load, then delete the old table's "
        "landing folder (open mirroring drops the old table). If it is not a rename, it is a "
        "removed and an added table.",
        f"{_SEED} › Table operations › Rename table"),
    "key_columns_changed": Rule(
        "key columns changed", BREAKING,
        "keyColumns can't be changed once a table's _metadata.json declares them: the "
        "existing table folder keeps its old key (`mirrorspec run` stops the table with "
        "KeyColumnsChanged rather than mix rows matched on two keys).",
        "Keep the old keys, or recreate the table folder under the new keyColumns." + _HOW,
        f"{_SEED} › Metadata file in the landing zone (\"once added keyColumns can't be changed\")"),
    "key_columns_added": Rule(
        "key columns declared", BREAKING,
        "The table's _metadata.json (without keyColumns) is already in the landing zone, and "
        "once it is there keyColumns can't be changed: rows landed so far were plain inserts "
        "(duplicates allowed), so `mirrorspec run` refuses new keys for a folder that holds "
        "data.",
        "Recreate the table folder with the keys from the start, or keep the table "
        "insert-only." + _HOW,
        f"{_SEED} › Metadata file in the landing zone (\"once added keyColumns can't be "
        "changed\")"),
    "key_columns_reordered": Rule(
        "key columns reordered", SAFE,
        "The same columns form the key (names compare case-insensitively); rows match on the "
        "same values, and the landing zone's _metadata.json keeps the keys as first written.",
        "Nothing to do.",
        f"{_SEED} › Metadata file in the landing zone"),
    "column_added": Rule(
        "column added", SAFE,
        "Open mirroring adds the column to the Delta table; rows written before have NULL in it.",
        "Nothing to do; backfill the column from the source if old rows need values.",
        f"{_SEED} › Table columns and column operations › Add column"),
    "extract_column_added": Rule(
        "column added to an extract", CAUTION,
        "Open mirroring adds the column to the Delta table. The table is fed by full-snapshot "
        "extracts, and every snapshot must carry every column of the table: a snapshot "
        "without it fails the table. The rows get their values when the first snapshot "
        "carrying the column lands (each changed row is updated).",
        "Make sure the next extract has the column before this change runs. The snapshots "
        "published before it need nothing: `mirrorspec run --full-refresh` rebuilds an "
        "extract table from its newest snapshot only.",
        f"{_SEED} › Table columns and column operations › Add column"),
    "column_removed": Rule(
        "column removed", BREAKING,
        "A column dropped from new files is not removed: open mirroring keeps the old rows' "
        "values and stores NULL in it for new rows (it unions all columns ever seen).",
        "Keep the column (new rows get NULL there), or recreate the table folder without it."
        + _HOW,
        f"{_SEED} › Table columns and column operations › Delete column"),
    "column_renamed": Rule(
        "column renamed?", BREAKING,
        "Open mirroring can't rename a column: the new name becomes a new column (NULL in old "
        "rows) and the old one gets NULL in new rows.",
        "Keep the old name, or recreate the table folder with all the data under the new "
        "name." + _HOW + " If it is not a rename, it is a removed and an added column.",
        f"{_SEED} › Table columns and column operations › Rename column"),
    "column_type_changed": Rule(
        "column type changed", BREAKING,
        "Providing a new column type without recreating the table is an error: replication of "
        "the table stops at the first file with the new type.",
        "Keep the old type, or recreate the table folder with all the data in the new type."
        + _HOW,
        f"{_SEED} › Table columns and column operations › Change column type"),
    "column_type_declared": Rule(
        "column type declared", SAFE,
        "The type was not declared before; the column keeps the type its files already have.",
        "Make sure the declared type matches what was landed so far.",
        f"{_SEED} › Table columns and column operations › Column types"),
    "column_nullability_changed": Rule(
        "column nullability changed", CAUTION,
        "IsNullable is part of the SchemaDefinition, whose evolution open mirroring doesn't "
        "support: existing rows are not checked again.",
        "If the column must become NOT NULL, make sure no landed row holds NULL there, or "
        "recreate the table folder.",
        f"{_SEED} › Delimited text requirements › SchemaDefinition"),
    "columns_undeclared": Rule(
        "columns no longer declared", CAUTION,
        "The plan no longer lists the table's columns; they come from the landed files only.",
        "Nothing to do unless the columns were dropped on purpose (then see column removed).",
        f"{_SEED} › Table columns and column operations"),
    "columns_declared": Rule(
        "columns now declared", SAFE,
        "The plan now lists the table's columns; the Delta table keeps the columns it has.",
        "Make sure the declared columns and types match what was landed so far.",
        f"{_SEED} › Table columns and column operations"),
    "dialect_changed": Rule(
        "file format changed", BREAKING,
        "Every file of a table folder is read with the one FileFormat, FileExtension and "
        "FileFormatTypeProperties of its _metadata.json: files landed in the old format would "
        "be misread or ignored, and the new ones can't follow the old sequence.",
        "Keep the old format, or recreate the table folder with all the data in the new "
        "format." + _HOW,
        f"{_SEED} › Delimited text requirements"),
    "file_detection_changed": Rule(
        "file detection strategy changed", BREAKING,
        "fileDetectionStrategy decides which files are new and in what order they apply "
        "(20-digit sequence numbers vs last-modified time); progress recorded under one "
        "strategy means nothing under the other, so files would be skipped or applied twice.",
        "Keep the old strategy, or recreate the table folder and land its data again under "
        "the new one." + _HOW,
        f"{_SEED} › Metadata file in the landing zone (fileDetectionStrategy)"),
    "upsert_default_changed": Rule(
        "default row marker changed", CAUTION,
        "isUpsertDefaultRowMarker decides what a row without __rowMarker__ does: insert "
        "(0, duplicates allowed) or upsert (4, replaces the row with the same key). Rows "
        "already applied keep their effect; new files follow the new default.",
        "Make sure the publisher's files agree with the new default.",
        f"{_SEED} › Format requirements (__rowMarker__)"),
    "metadata_changed": Rule(
        "_metadata.json changed", SAFE,
        "A _metadata.json property without effect on existing rows changed.",
        "Nothing to do.",
        f"{_SEED} › Metadata file in the landing zone"),
    "source_changed": Rule(
        "source changed", CAUTION,
        "The table is now published from another feed; open mirroring only sees the files it "
        "lands, so the table continues from what is there.",
        "If the new feed starts over with a full load, recreate the table folder "
        "(`mirrorspec run --full-refresh --select {table}`), or its initial rows are inserted "
        "a second time.",
        "mirrorspec: source"),
    "change_data_feed_on": Rule(
        "change data feed on", SAFE,
        "Fabric's delta change data feed (enableDeltaChangeDataFeed) records every commit's "
        "row-level changes from now on. An existing table gets the property in a commit of its "
        "own right before its next pass's commit, so its feed starts there: earlier versions "
        "have none, and no history is rewritten.",
        "Point incremental readers at the version `mirrorspec history TABLE` shows as the "
        "first with a feed (or read the table once in full, then its feed).",
        "Delta change data feed in mirroring for Fabric"),
    "change_data_feed_off": Rule(
        "change data feed off", CAUTION,
        "The table's commits stop recording row-level changes from its next pass on (the "
        "property is set false in a commit of its own right before it). The feed of earlier "
        "versions stays readable until VACUUM removes its files; a streaming reader of the "
        "feed stops at the first version without one.",
        "Stop or re-point the pipelines that read this table's change data feed first.",
        "Delta change data feed in mirroring for Fabric"),
    "recreate_changed": Rule(
        "recreate flag changed", SAFE,
        "`recreate: true` acknowledges that the table folder will be recreated and repopulated.",
        "Nothing to do.",
        "mirrorspec: recreate"),
    "description_changed": Rule(
        "description changed", SAFE, "Documentation only.", "Nothing to do.",
        "mirrorspec: description"),
    "tags_changed": Rule(
        "tags changed", SAFE, "Selection and documentation only.", "Nothing to do.",
        "mirrorspec: tags"),
    "tests_changed": Rule(
        "data tests changed", SAFE, "Checks run by `mirrorspec test` only.", "Nothing to do.",
        "mirrorspec: tests"),
}

# _metadata.json properties compared by a dedicated check (matched case-insensitively).
_DEDICATED_METADATA = {"keycolumns", "filedetectionstrategy", "isupsertdefaultrowmarker",
                       "schemadefinition", "fileformat", "fileextension",
                       "fileformattypeproperties"}


@dataclass(frozen=True)
class Change:
    """One change to one table; `subject` is the column or property it is about (or None)."""

    kind: str
    subject: str | None = None
    before: Any = None
    after: Any = None

    @property
    def rule(self) -> Rule:
        return RULES[self.kind]

    @property
    def severity(self) -> str:
        return self.rule.severity

    @property
    def breaking(self) -> bool:
        return self.severity == BREAKING

    def action(self, table: str) -> str:
        """What to do, for table `table`."""
        return self.rule.action.replace("{table}", table)

    @property
    def message(self) -> str:
        """One line for people: `column type changed: amount Int32 → Double`."""
        title = self.rule.title
        if self.kind in ("column_renamed", "table_renamed"):
            return f"{title}: {self.before} → {self.after}"
        if self.kind in ("column_added", "extract_column_added", "column_removed"):
            data_type = self.before if self.kind == "column_removed" else self.after
            return f"{title}: {self.subject}" + (f" ({data_type})" if data_type else "")
        if self.kind == "tests_changed" and self.subject is not None:
            if self.before is None:
                return f"{title}: {self.subject} added" + (
                    f" ({self.after})" if self.after != "present" else "")
            if self.after is None:
                return f"{title}: {self.subject} removed"
            return f"{title}: {self.subject} {self.before} → {self.after}"
        if self.kind == "description_changed":
            return title + (f": {self.subject}" if self.subject is not None else "")
        text = title + (f": {self.subject}" if self.subject is not None else "")
        if self.before is not None or self.after is not None:
            text += (" " if self.subject is not None else ": ") + \
                f"{_show(self.before)} → {_show(self.after)}"
        return text

    def to_dict(self, table: str = "TABLE") -> dict[str, Any]:
        rule = self.rule
        return {"kind": self.kind, "severity": rule.severity, "breaking": self.breaking,
                "subject": self.subject, "before": self.before, "after": self.after,
                "message": self.message, "fabric": rule.fabric, "action": self.action(table),
                "rule": rule.rule}


@dataclass(frozen=True)
class TableDiff:
    """The changes of one table, identified by its unique_id."""

    unique_id: str
    status: str  # added | removed | modified | unchanged
    landing_folder: str
    recreate: bool = False  # the head table says `recreate: true`
    changes: tuple[Change, ...] = ()

    @property
    def breaking(self) -> bool:
        return any(c.breaking for c in self.changes)

    @property
    def blocking(self) -> bool:
        """Breaking and not acknowledged by `recreate: true`."""
        return self.breaking and not self.recreate

    def to_dict(self, allow_breaking: bool = False) -> dict[str, Any]:
        return {"unique_id": self.unique_id, "status": self.status,
                "landing_folder": self.landing_folder, "recreate": self.recreate,
                "breaking": self.breaking, "blocking": self.blocking and not allow_breaking,
                "changes": [c.to_dict(self.unique_id) for c in self.changes]}


@dataclass(frozen=True)
class PlanDiff:
    """Every table's changes between a base plan and a head plan."""

    base: str  # what the base is, for people: a git ref or a state path
    head: str
    tables: tuple[TableDiff, ...] = ()
    allow_breaking: bool = False

    def by_status(self, status: str) -> list[TableDiff]:
        return [t for t in self.tables if t.status == status]

    @property
    def changed(self) -> list[TableDiff]:
        return [t for t in self.tables if t.status != UNCHANGED]

    @property
    def breaking_changes(self) -> list[tuple[TableDiff, Change]]:
        return [(t, c) for t in self.tables for c in t.changes if c.breaking]

    @property
    def blocking_tables(self) -> list[TableDiff]:
        """Tables whose breaking changes fail the diff (none with --allow-breaking)."""
        if self.allow_breaking:
            return []
        return [t for t in self.tables if t.blocking]

    @property
    def blocking(self) -> bool:
        return bool(self.blocking_tables)

    def modified_ids(self) -> set[str]:
        """unique_ids of tables added or modified (what `state:modified` means)."""
        return {t.unique_id for t in self.tables if t.status in (ADDED, MODIFIED)}

    def summary(self) -> dict[str, int]:
        return {
            "tables_added": len(self.by_status(ADDED)),
            "tables_removed": len(self.by_status(REMOVED)),
            "tables_modified": len(self.by_status(MODIFIED)),
            "tables_unchanged": len(self.by_status(UNCHANGED)),
            "changes": sum(len(t.changes) for t in self.tables),
            "breaking_changes": len(self.breaking_changes),
            "blocking_changes": sum(1 for t in self.blocking_tables
                                    for c in t.changes if c.breaking),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "diff_version": DIFF_VERSION,
            "base": self.base,
            "head": self.head,
            "allow_breaking": self.allow_breaking,
            "breaking": bool(self.breaking_changes),
            "blocking": self.blocking,
            "summary": self.summary(),
            "added": [t.unique_id for t in self.by_status(ADDED)],
            "removed": [t.unique_id for t in self.by_status(REMOVED)],
            "modified": [t.unique_id for t in self.by_status(MODIFIED)],
            "unchanged": [t.unique_id for t in self.by_status(UNCHANGED)],
            "breaking_changes": [{"table": t.unique_id, "blocking": t in self.blocking_tables,
                                  **c.to_dict(t.unique_id)} for t, c in self.breaking_changes],
            "tables": [t.to_dict(self.allow_breaking) for t in self.changed],
        }


# --- comparing ------------------------------------------------------------------------------

def diff_plans(base: Plan | None, head: Plan, base_label: str = "base",
               head_label: str = "head", allow_breaking: bool = False) -> PlanDiff:
    """Compare two plans table by table. `base` None means no previous plan: all tables added."""
    old = {t.unique_id: t for t in (base.tables if base else [])}
    new = {t.unique_id: t for t in head.tables}
    tables = []
    for uid in sorted(set(old) | set(new)):
        before, after = old.get(uid), new.get(uid)
        if before is None:
            assert after is not None  # the uid came from one of the two plans
            tables.append(TableDiff(uid, ADDED, _folder(after), after.recreate,
                                    (Change("table_added"),)))
        elif after is None:
            tables.append(TableDiff(uid, REMOVED, _folder(before), False,
                                    (Change("table_removed"),)))
        else:
            changes = tuple(diff_tables(before, after))
            status = MODIFIED if changes else UNCHANGED
            tables.append(TableDiff(uid, status, _folder(after), after.recreate, changes))
    return PlanDiff(base_label, head_label, tuple(_pair_renamed_tables(tables, old, new)),
                    allow_breaking)


def _pair_renamed_tables(tables: list[TableDiff], old: dict[str, TablePlan],
                         new: dict[str, TablePlan]) -> list[TableDiff]:
    """Mark an added table that looks like a removed one (same name in another schema, or the
    same declared columns and keys) as a possible rename."""
    removed = [t.unique_id for t in tables if t.status == REMOVED]
    out = []
    for table in tables:
        if table.status == ADDED and removed:
            after = new[table.unique_id]
            match = next((uid for uid in removed if _same_table(old[uid], after)), None)
            if match is not None:
                removed.remove(match)
                table = TableDiff(table.unique_id, table.status, table.landing_folder,
                                  table.recreate, table.changes + (
                                      Change("table_renamed", None, match, table.unique_id),))
        out.append(table)
    return out


def _same_table(before: TablePlan, after: TablePlan) -> bool:
    if before.name == after.name:
        return True
    columns = [(c.name, _type(c)) for c in before.columns]
    return bool(columns) and columns == [(c.name, _type(c)) for c in after.columns] \
        and _keys(before) == _keys(after)


def diff_tables(before: TablePlan, after: TablePlan) -> list[Change]:
    """Every change between two versions of one table, breaking ones first."""
    old_md, new_md = _metadata(before), _metadata(after)
    changes: list[Change] = []
    changes += _key_changes(before, after)
    columns = _column_changes(_columns(before, old_md), _columns(after, new_md))
    if after.source.type in EXTRACT_TYPES:
        columns = [Change("extract_column_added", c.subject, c.before, c.after)
                   if c.kind == "column_added" else c for c in columns]
    changes += columns
    changes += _dialect_changes(before, after)
    changes += _detection_changes(old_md, new_md)
    changes += _other_metadata_changes(before.metadata, after.metadata, old_md, new_md)
    changes += _table_property_changes(before, after)
    order = {severity: i for i, severity in enumerate(SEVERITIES)}
    return sorted(changes, key=lambda c: order[c.severity])  # stable: keeps the check order


def _key_changes(before: TablePlan, after: TablePlan) -> list[Change]:
    old, new = _keys(before), _keys(after)
    if old == new:
        return []
    if not old:
        return [Change("key_columns_added", None, None, new)]
    if not keys_differ(old, new):
        return [Change("key_columns_reordered", None, old, new)]
    return [Change("key_columns_changed", None, old, new)]


def _column_changes(old: list[ColumnSpec], new: list[ColumnSpec]) -> list[Change]:
    if not old and not new:
        return []
    if old and not new:
        return [Change("columns_undeclared", None, [c.name for c in old], None)]
    if new and not old:
        return [Change("columns_declared", None, None, [c.name for c in new])]
    old_by_name = {c.name: c for c in old}
    new_by_name = {c.name: c for c in new}
    removed = [(i, c) for i, c in enumerate(old) if c.name not in new_by_name]
    added = [(i, c) for i, c in enumerate(new) if c.name not in old_by_name]
    changes: list[Change] = []
    # A removed and an added column of the same type at the same position look like a rename.
    added_at = {i: c for i, c in added}
    renamed_new: set[str] = set()
    for index, column in removed:
        partner = added_at.get(index)
        if partner is not None and partner.name not in renamed_new \
                and _type(partner) == _type(column):
            renamed_new.add(partner.name)
            changes.append(Change("column_renamed", partner.name, column.name, partner.name))
        else:
            changes.append(Change("column_removed", column.name, _type(column), None))
    for column in old:
        other = new_by_name.get(column.name)
        if other is None:
            continue
        old_type, new_type = _type(column), _type(other)
        if old_type != new_type:
            if old_type is None:
                changes.append(Change("column_type_declared", column.name, None, new_type))
            elif new_type is not None:
                changes.append(Change("column_type_changed", column.name, old_type, new_type))
        if (column.description or None) != (other.description or None):
            changes.append(Change("description_changed", column.name, column.description,
                                  other.description))
        if bool(column.nullable) != bool(other.nullable):
            changes.append(Change("column_nullability_changed", column.name,
                                  _nullability(column), _nullability(other)))
    for _, column in added:
        if column.name not in renamed_new:
            changes.append(Change("column_added", column.name, None, _type(column)))
    return changes


def _dialect_changes(before: TablePlan, after: TablePlan) -> list[Change]:
    old, new = _dialect(before), _dialect(after)
    if old["file_format"] != new["file_format"]:  # the properties follow; one change says it
        return [Change("dialect_changed", "file_format", old["file_format"], new["file_format"])]
    return [Change("dialect_changed", name, old.get(name), new.get(name))
            for name in _union_keys(old, new) if old.get(name) != new.get(name)]


def _detection_changes(old_md: TableMetadata, new_md: TableMetadata) -> list[Change]:
    old, new = _detection(old_md), _detection(new_md)
    if old == new:
        return []
    return [Change("file_detection_changed", "fileDetectionStrategy", old, new)]


def _other_metadata_changes(old: dict[str, Any], new: dict[str, Any], old_md: TableMetadata,
                            new_md: TableMetadata) -> list[Change]:
    changes = []
    old_upsert, new_upsert = old_md.upsert_default, new_md.upsert_default
    if old_upsert != new_upsert:
        changes.append(Change("upsert_default_changed", "isUpsertDefaultRowMarker",
                              old_upsert, new_upsert))
    old_rest = {k: v for k, v in (old or {}).items() if k.lower() not in _DEDICATED_METADATA}
    new_rest = {k: v for k, v in (new or {}).items() if k.lower() not in _DEDICATED_METADATA}
    for name in _union_keys(old_rest, new_rest):
        if old_rest.get(name) != new_rest.get(name):
            changes.append(Change("metadata_changed", name, old_rest.get(name),
                                  new_rest.get(name)))
    return changes


def _table_property_changes(before: TablePlan, after: TablePlan) -> list[Change]:
    changes = []
    old_source = (before.source.type, before.source.options, _kafka_identity(before))
    new_source = (after.source.type, after.source.options, _kafka_identity(after))
    if old_source != new_source:
        changes.append(Change("source_changed", None, _source_label(before), _source_label(after)))
    if bool(before.change_data_feed) != bool(after.change_data_feed):
        changes.append(Change("change_data_feed_on" if after.change_data_feed
                              else "change_data_feed_off", None,
                              bool(before.change_data_feed), bool(after.change_data_feed)))
    if bool(before.recreate) != bool(after.recreate):
        changes.append(Change("recreate_changed", None, bool(before.recreate),
                              bool(after.recreate)))
    if (before.description or None) != (after.description or None):
        changes.append(Change("description_changed", None, before.description,
                              after.description))
    if sorted(before.tags or []) != sorted(after.tags or []):
        changes.append(Change("tags_changed", None, list(before.tags), list(after.tags)))
    changes += _test_changes(before.tests or [], after.tests or [])
    return changes


def _test_changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[Change]:
    """One change per data test added, removed or changed; `subject` names the test
    (`accepted_values(status)`), before/after hold what differs (`severity: error`)."""
    old_by, new_by = _tests_by_identity(old), _tests_by_identity(new)
    changes = []
    for key, test in old_by.items():
        other = new_by.get(key)
        if other is None:
            changes.append(Change("tests_changed", _test_label(test), "present", None))
        elif other != test:
            names = [n for n in _union_keys(test, other) if test.get(n) != other.get(n)]
            changes.append(Change("tests_changed", _test_label(test),
                                  _test_params(test, names), _test_params(other, names)))
    for key, test in new_by.items():
        if key not in old_by:
            changes.append(Change("tests_changed", _test_label(test), None,
                                  _test_params(test, [n for n in test if n != "type"])
                                  or "present"))
    return changes


def _tests_by_identity(tests: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for test in tests:
        key: tuple[Any, ...] = (test.get("type"),
                                json.dumps(test.get("columns") or test.get("column")),
                                test.get("to"))
        while key in out:  # the same test twice: keep both
            key += ("again",)
        out[key] = test
    return out


def _test_label(test: dict[str, Any]) -> str:
    columns = test.get("columns") or ([test["column"]] if test.get("column") else [])
    label = f"{test.get('type')}({', '.join(str(c) for c in columns)})"
    if test.get("to"):
        label += f" to {test['to']}" + (f".{test['field']}" if test.get("field") else "")
    return label


def _test_params(test: dict[str, Any], names: list[str]) -> str:
    return "; ".join(f"{name}: {_show(test.get(name))}" for name in names)


# --- normalising ---------------------------------------------------------------------------

def _folder(table: TablePlan) -> str:
    return table_folder(table.name, table.schema)


def _metadata(table: TablePlan) -> TableMetadata:
    """The `_metadata.json` as the engine reads it (mirroring.parse_metadata, defaults filled
    in); the defaults when it doesn't parse (compile never writes such a file)."""
    try:
        return parse_metadata(table.metadata or {}, file=f"{_folder(table)}/_metadata.json")
    except LandingZoneError:
        return TableMetadata()


def _keys(table: TablePlan) -> list[str]:
    if table.key_columns:
        return list(table.key_columns)
    return list(_metadata(table).key_columns)


def _columns(table: TablePlan, metadata: TableMetadata) -> list[ColumnSpec]:
    if table.columns:
        return list(table.columns)
    if metadata.columns:
        return [ColumnSpec(c.name, c.data_type, c.nullable is not False) for c in metadata.columns]
    return []


def _type(column: ColumnSpec) -> str | None:
    if column.type is None:
        return None
    return canonical_data_type(column.type) or str(column.type)


def _nullability(column: ColumnSpec) -> str:
    return "nullable" if column.nullable else "not null"


def _dialect(table: TablePlan) -> dict[str, Any]:
    """What decides how a table's files are read: the published format, and for delimited
    tables FileFormat, FileExtension and every FileFormatTypeProperty (defaults filled in)."""
    dialect: dict[str, Any] = {"file_format": table.file_format}
    declared = {str(k).lower() for k in (table.metadata or {})}
    if table.file_format == "parquet" and "fileformat" not in declared:
        return dialect
    metadata = _metadata(table)
    dialect["FileFormat"] = metadata.file_format
    extension = metadata.file_extension.lower() if metadata.file_extension else None
    if extension is None and metadata.file_format == FILE_FORMAT_CSV:
        extension = "csv"  # CSV files are recognised by their .csv name anyway
    dialect["FileExtension"] = extension
    for name in DELIMITED_PROPERTIES:
        dialect[f"FileFormatTypeProperties.{name}"] = getattr(metadata.delimited,
                                                              _snake_case(name))
    return dialect


def _snake_case(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def _detection(metadata: TableMetadata) -> str:
    return (FILE_DETECTION_LAST_UPDATE_TIME if metadata.last_update_time_detection
            else FILE_DETECTION_SEQUENTIAL)


def _source_label(table: TablePlan) -> str:
    kafka = _kafka_identity(table)
    if kafka is None:
        return table.source.type
    servers, topics, pattern, metadata = kafka
    what = ", ".join(topics) if topics else f"pattern {pattern}"
    return f"{table.source.type} from Kafka {servers}: {what}" + (
        f" (metadata {metadata})" if metadata else "")


def _kafka_identity(table: TablePlan) -> tuple[Any, ...] | None:
    """What makes a Kafka source another feed: servers, topics or pattern, metadata topic."""
    kafka = getattr(table.source, "kafka", None)
    if not kafka:
        return None
    return (str(kafka.get("bootstrap_servers", "")), tuple(kafka.get("topics") or ()),
            kafka.get("topic_pattern"), kafka.get("metadata_topic"))


def _union_keys(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return list(a) + [k for k in b if k not in a]


def _show(value: Any) -> str:
    if value is None:
        return "∅"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, str):
        return repr(value) if value == "" or value != value.strip() or \
            any(ch in value for ch in "\r\n\t") else value
    return str(value).lower() if isinstance(value, bool) else str(value)


# --- rendering ------------------------------------------------------------------------------

def report_json(diff: PlanDiff) -> str:
    """The `--format json` document (schema in docs/review.md)."""
    return dumps_json(diff.to_dict())


MARKDOWN_MARKER = "<!-- mirrorspec-diff -->"
MARKDOWN_LIMIT = 60_000  # GitHub refuses comments over 65,536 characters
MARKDOWN_TABLE_ROWS = 400
_ICONS = {BREAKING: "❌", CAUTION: "⚠️", SAFE: "✅"}


def headline(diff: PlanDiff) -> str:
    """One sentence: how many tables changed and whether anything is breaking."""
    summary = diff.summary()
    parts = [f"{summary['tables_' + s]} {s}" for s in (ADDED, REMOVED, MODIFIED)]
    text = f"{len(diff.changed)} table(s) changed ({', '.join(parts)})"
    breaking = summary["breaking_changes"]
    if breaking:
        blocking = summary["blocking_changes"]
        text += f"; {breaking} breaking change(s)"
        if blocking:
            text += f", {blocking} not acknowledged by `recreate: true`"
        elif diff.allow_breaking:
            text += ", allowed by --allow-breaking"
        else:
            text += ", all acknowledged by `recreate: true`"
    else:
        text += "; no breaking changes"
    return text


def report_markdown(diff: PlanDiff) -> str:
    """A report for a pull-request comment (starts with a hidden marker CI jobs can find)."""
    if diff.blocking:
        verdict = "❌ breaking changes"
    elif diff.breaking_changes:
        verdict = "⚠️ breaking changes (acknowledged)"
    else:
        verdict = "✅ no breaking changes"
    lines = [MARKDOWN_MARKER, f"## mirrorspec diff — {verdict}", "",
             f"`{_md_code(diff.base)}` → `{_md_code(diff.head)}`: {headline(diff)}.", ""]
    if not diff.changed:
        lines.append("No mirrored table changes.")
        return "\n".join(lines) + "\n"
    lines += ["| table | status | changes | breaking |", "|---|---|---|---|"]
    for table in diff.changed[:MARKDOWN_TABLE_ROWS]:
        if table.blocking and not diff.allow_breaking:
            flag = "❌ yes"
        elif table.breaking:
            flag = "⚠️ yes (recreate: true)" if table.recreate else "⚠️ yes (allowed)"
        else:
            flag = "no"
        lines.append(f"| `{_md_code(table.unique_id)}` | {table.status} | "
                     f"{len(table.changes)} | {flag} |")
    if len(diff.changed) > MARKDOWN_TABLE_ROWS:
        lines.append(f"| … {len(diff.changed) - MARKDOWN_TABLE_ROWS} more | | | |")
    details: list[str] = []
    for index, table in enumerate(diff.changed):
        section = ["", f"### `{_md_code(table.unique_id)}` — {table.status}"
                   + (" (`recreate: true`)" if table.recreate else ""), ""]
        for change in table.changes:
            section.append(f"- {_ICONS[change.severity]} **{_md_escape(change.message)}**")
            if change.severity != SAFE or change.kind == "column_added":
                section.append(f"  <br>Fabric: {_md_escape(change.rule.fabric)}")
                section.append(f"  <br>To do: {_md_escape(change.action(table.unique_id))}")
                section.append(f"  <br><sub>Rule: {_md_escape(change.rule.rule)}</sub>")
        if sum(len(x) + 1 for x in lines + details + section) > MARKDOWN_LIMIT:
            rest = len(diff.changed) - index
            details += ["", f"… and {rest} more table(s): the comment would be too long; see "
                            "`mirrorspec diff --format json` for everything."]
            break
        details += section
    lines += details
    lines += ["", "<sub>How to read this report: docs/review.md</sub>"]
    return "\n".join(lines) + "\n"


def _md_code(text: str) -> str:
    return str(text).replace("`", "'")


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def iter_lines(diff: PlanDiff) -> Iterable[tuple[str, str]]:
    """The human report as (style, text) lines: style is a severity, 'heading' or 'plain'."""
    yield "heading", f"mirrorspec diff: {diff.base} → {diff.head}"
    for table in diff.changed:
        label = f"{table.unique_id}  {table.status}"
        if table.breaking:
            label += "  BREAKING" + (" (recreate: true)" if table.recreate else "")
        yield ("breaking" if table.blocking and not diff.allow_breaking else "heading"), label
        for change in table.changes:
            mark = {BREAKING: "✗", CAUTION: "!", SAFE: "+"}[change.severity]
            yield change.severity, f"  {mark} {change.message}"
            if change.severity != SAFE:
                yield "plain", f"      Fabric: {change.rule.fabric}"
                yield "plain", f"      do: {change.action(table.unique_id)}"
                yield "plain", f"      rule: {change.rule.rule}"
    yield ("breaking" if diff.blocking else "safe"), headline(diff).replace("`", "")


__all__ = ["DIFF_VERSION", "Change", "TableDiff", "PlanDiff", "RULES", "Rule", "diff_plans",
           "diff_tables", "report_json", "report_markdown", "iter_lines", "headline",
           "MARKDOWN_MARKER"]
