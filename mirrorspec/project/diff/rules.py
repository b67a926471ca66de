"""The kinds of change `diff` knows, each explained (`RULES`: title, severity, what Fabric does,
what to do, where the rule comes from), and the words of a diff: severities and table statuses."""

from __future__ import annotations

from dataclasses import dataclass

from mirrorspec.landing.deploy import recreate_procedure


DIFF_VERSION = 1

SAFE, CAUTION, BREAKING = "safe", "caution", "breaking"
SEVERITIES = (BREAKING, CAUTION, SAFE)

ADDED, REMOVED, MODIFIED, UNCHANGED = "added", "removed", "modified", "unchanged"

# Where the rule comes from: sections of Microsoft's open-mirroring landing zone specification.
_SPEC = "Fabric open mirroring landing zone requirements"
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
        f"{_SPEC} › Table operations › Add table"),
    "table_removed": Rule(
        "table removed", CAUTION,
        "mirrorspec stops publishing and mirroring the table; its landing folder and Delta table "
        "stay as they are. Deleting the folder makes open mirroring drop the mirrored table.",
        "Delete the table's landing folder if the mirrored table should go too; otherwise the "
        "table simply stops receiving changes.",
        f"{_SPEC} › Table operations › Drop table"),
    "table_renamed": Rule(
        "table renamed?", CAUTION,
        "Open mirroring can't rename a table: the new folder is a new table, filled only by "
        "what lands in it; the old table stays as it is until its folder is deleted.",
        "Make sure the new table gets a full initial load, then delete the old table's "
        "landing folder (open mirroring drops the old table). If it is not a rename, it is a "
        "removed and an added table.",
        f"{_SPEC} › Table operations › Rename table"),
    "key_columns_changed": Rule(
        "key columns changed", BREAKING,
        "keyColumns can't be changed once a table's _metadata.json declares them: the "
        "existing table folder keeps its old key (`mirrorspec run` stops the table with "
        "KeyColumnsChanged rather than mix rows matched on two keys).",
        "Keep the old keys, or recreate the table folder under the new keyColumns." + _HOW,
        f"{_SPEC} › Metadata file in the landing zone (\"once added keyColumns can't be changed\")"),
    "key_columns_added": Rule(
        "key columns declared", BREAKING,
        "The table's _metadata.json (without keyColumns) is already in the landing zone, and "
        "once it is there keyColumns can't be changed: rows landed so far were plain inserts "
        "(duplicates allowed), so `mirrorspec run` refuses new keys for a folder that holds "
        "data.",
        "Recreate the table folder with the keys from the start, or keep the table "
        "insert-only." + _HOW,
        f"{_SPEC} › Metadata file in the landing zone (\"once added keyColumns can't be "
        "changed\")"),
    "key_columns_reordered": Rule(
        "key columns reordered", SAFE,
        "The same columns form the key (names compare case-insensitively); rows match on the "
        "same values, and the landing zone's _metadata.json keeps the keys as first written.",
        "Nothing to do.",
        f"{_SPEC} › Metadata file in the landing zone"),
    "column_added": Rule(
        "column added", SAFE,
        "Open mirroring adds the column to the Delta table; rows written before have NULL in it.",
        "Nothing to do; backfill the column from the source if old rows need values.",
        f"{_SPEC} › Table columns and column operations › Add column"),
    "extract_column_added": Rule(
        "column added to an extract", CAUTION,
        "Open mirroring adds the column to the Delta table. The table is fed by full-snapshot "
        "extracts, and every snapshot must carry every column of the table: a snapshot "
        "without it fails the table. The rows get their values when the first snapshot "
        "carrying the column lands (each changed row is updated).",
        "Make sure the next extract has the column before this change runs. The snapshots "
        "published before it need nothing: `mirrorspec run --full-refresh` rebuilds an "
        "extract table from its newest snapshot only.",
        f"{_SPEC} › Table columns and column operations › Add column"),
    "column_removed": Rule(
        "column removed", BREAKING,
        "A column dropped from new files is not removed: open mirroring keeps the old rows' "
        "values and stores NULL in it for new rows (it unions all columns ever seen).",
        "Keep the column (new rows get NULL there), or recreate the table folder without it."
        + _HOW,
        f"{_SPEC} › Table columns and column operations › Delete column"),
    "column_renamed": Rule(
        "column renamed?", BREAKING,
        "Open mirroring can't rename a column: the new name becomes a new column (NULL in old "
        "rows) and the old one gets NULL in new rows.",
        "Keep the old name, or recreate the table folder with all the data under the new "
        "name." + _HOW + " If it is not a rename, it is a removed and an added column.",
        f"{_SPEC} › Table columns and column operations › Rename column"),
    "column_type_changed": Rule(
        "column type changed", BREAKING,
        "Providing a new column type without recreating the table is an error: replication of "
        "the table stops at the first file with the new type.",
        "Keep the old type, or recreate the table folder with all the data in the new type."
        + _HOW,
        f"{_SPEC} › Table columns and column operations › Change column type"),
    "column_type_declared": Rule(
        "column type declared", SAFE,
        "The type was not declared before; the column keeps the type its files already have.",
        "Make sure the declared type matches what was landed so far.",
        f"{_SPEC} › Table columns and column operations › Column types"),
    "column_nullability_changed": Rule(
        "column nullability changed", CAUTION,
        "IsNullable is part of the SchemaDefinition, whose evolution open mirroring doesn't "
        "support: existing rows are not checked again.",
        "If the column must become NOT NULL, make sure no landed row holds NULL there, or "
        "recreate the table folder.",
        f"{_SPEC} › Delimited text requirements › SchemaDefinition"),
    "columns_undeclared": Rule(
        "columns no longer declared", CAUTION,
        "The plan no longer lists the table's columns; they come from the landed files only.",
        "Nothing to do unless the columns were dropped on purpose (then see column removed).",
        f"{_SPEC} › Table columns and column operations"),
    "columns_declared": Rule(
        "columns now declared", SAFE,
        "The plan now lists the table's columns; the Delta table keeps the columns it has.",
        "Make sure the declared columns and types match what was landed so far.",
        f"{_SPEC} › Table columns and column operations"),
    "dialect_changed": Rule(
        "file format changed", BREAKING,
        "Every file of a table folder is read with the one FileFormat, FileExtension and "
        "FileFormatTypeProperties of its _metadata.json: files landed in the old format would "
        "be misread or ignored, and the new ones can't follow the old sequence.",
        "Keep the old format, or recreate the table folder with all the data in the new "
        "format." + _HOW,
        f"{_SPEC} › Delimited text requirements"),
    "file_detection_changed": Rule(
        "file detection strategy changed", BREAKING,
        "fileDetectionStrategy decides which files are new and in what order they apply "
        "(20-digit sequence numbers vs last-modified time); progress recorded under one "
        "strategy means nothing under the other, so files would be skipped or applied twice.",
        "Keep the old strategy, or recreate the table folder and land its data again under "
        "the new one." + _HOW,
        f"{_SPEC} › Metadata file in the landing zone (fileDetectionStrategy)"),
    "upsert_default_changed": Rule(
        "default row marker changed", CAUTION,
        "isUpsertDefaultRowMarker decides what a row without __rowMarker__ does: insert "
        "(0, duplicates allowed) or upsert (4, replaces the row with the same key). Rows "
        "already applied keep their effect; new files follow the new default.",
        "Make sure the publisher's files agree with the new default.",
        f"{_SPEC} › Format requirements (__rowMarker__)"),
    "metadata_changed": Rule(
        "_metadata.json changed", SAFE,
        "A _metadata.json property without effect on existing rows changed.",
        "Nothing to do.",
        f"{_SPEC} › Metadata file in the landing zone"),
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
