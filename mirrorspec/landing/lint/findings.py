"""`lint`'s vocabulary: the rules it checks, a finding, a table's report, the whole result."""

from __future__ import annotations

from dataclasses import dataclass, field


# rule id → what it checks (the specification section it comes from)
RULES: dict[str, str] = {
    "layout/file-outside-table": "a file outside any table folder (Landing zone)",
    "layout/nested-without-schema": "a schema/table folder without the .schema suffix (Schema)",
    "layout/nested-folder": "a folder inside a table folder; tables don't nest (Landing zone)",
    "layout/unsafe-name": "a table or schema name the landing zone can't carry",
    "layout/empty-folder": "a folder without _metadata.json or data files",
    "layout/same-table": "two folders that are one table (a root folder is schema dbo)",
    "layout/partner-events": "_partnerEvents.json: invalid, or not at the landing-zone root",
    "metadata/missing": "every table folder must contain a _metadata.json file",
    "metadata/invalid": "_metadata.json is not valid JSON or has an invalid value",
    "metadata/unknown-key": "a _metadata.json key the landing-zone specification doesn't define",
    "metadata/ignored-property": "a FileFormatTypeProperties entry the specification doesn't define",
    "metadata/key-changed": "keyColumns can't be changed once added",
    "warehouse/state-lost": "the Delta log's txn has neither its commit nor its state copy",
    "metadata/key-missing": "a key column missing from a data file",
    "metadata/extension": "FileFormat/FileExtension contradict the files' names",
    "metadata/dialect": "a delimited-text property contradicts the file's bytes",
    "files/not-data": "a file that isn't data (.parquet, .csv or the FileExtension); ignored",
    "files/underscore": "a file whose name starts with '_' is never read",
    "files/not-sequence-name": "file names are 20 digits in sequence mode (File name)",
    "files/duplicate-sequence": "two files carry the same sequence number",
    "files/gap": "a gap in the file sequence blocks every later file (File order)",
    "files/before-processed": "a file at or before the last applied sequence (or sequence 0): "
                              "never applied",
    "files/changed-after-applied": "a file whose size or time changed after it was applied "
                                   "(written in place): what it gained is never applied",
    "files/same-time": "LastUpdateTimeFileDetection: files with the same modification time",
    "files/older-than-processed": "LastUpdateTimeFileDetection: a file older than one processed",
    "content/zero-byte": "a zero-byte file",
    "content/unreadable": "a Parquet or delimited file that can't be read",
    "content/codec": "a Parquet codec the specification doesn't list (Snappy, GZIP, ZSTD)",
    "content/time-range": "a date or timestamp outside 0001-01-01 … 9999-12-31 (Delta's range)",
    "content/header": "a delimited file's header row (FirstRowAsHeader)",
    "content/encoding": "bytes that are invalid in the declared Encoding",
    "content/duplicate-column": "a column that appears twice in a file",
    "content/type-change": "a column's type changes between files (Change column type)",
    "content/null-type": "a Parquet column of the Null logical type (Fabric reads it as an "
                         "integer: SchemaMergeFailure)",
    "content/marker-position": "__rowMarker__ must be the final column (--strict stops it)",
    "content/marker-type": "__rowMarker__ should be an integer column (--strict stops it)",
    "content/engine-column": "a column named like one of the mirroring engine's working "
                             "columns (__marker, __p, …) or Spark's _metadata",
    "content/delete-not-nullable": "a delete row leaves a column declared IsNullable: false "
                                   "empty (applied; the service has been reported to fail it)",
    "content/row": "a bad row: __rowMarker__ value, NULL key in a 1/2/4 row, an update in a "
                   "keyless table, a malformed record or a value not of its type",
}


@dataclass
class Finding:
    """One problem: where it is, which rule, and whether the engine stops the table there."""

    rule: str
    level: str                 # "error" or "warning"
    message: str
    table: str | None = None   # the table's folder, relative to the landing zone
    file: str | None = None    # relative to the landing zone
    row: int | None = None     # a Parquet file's 1-based row
    line: int | None = None    # a delimited or JSON file's 1-based line, as an editor numbers it
    column: str | None = None
    stops: bool = False        # `mirrorspec mirror` stops the table at this file


@dataclass
class TableReport:
    """The findings of one table folder and where the engine would stop it."""

    table: str                 # the table's folder, relative to the landing zone
    unique_id: str             # "<schema>.<table>" as the warehouse names it
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    stops_at: Finding | None = None


@dataclass
class LintResult:
    """Everything `lint` found in one landing zone."""

    landing_zone: str
    tables: list[TableReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)   # outside any table

    def all_findings(self) -> list[Finding]:
        return self.findings + [f for t in self.tables for f in t.findings]

    def count(self, level: str) -> int:
        return sum(1 for f in self.all_findings() if f.level == level)

    def failed(self, strict: bool = False) -> bool:
        """True when `mirrorspec lint` exits 1: an error, or with `strict` a warning."""
        return bool(self.count("error") or (strict and self.count("warning")))
