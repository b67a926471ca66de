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

- `rules`: every kind of change explained (`RULES`), severities and table statuses;
- `result`: `Change`, `TableDiff`, `PlanDiff`;
- `compare`: `diff_plans` and `diff_tables`: tables added, removed, renamed; then the checks of
  each kind: `schema_changes` (key columns and columns), `format_changes` (the dialect, file
  detection, other `_metadata.json` properties), `table_changes` (source, switches, tags, tests);
- `normalise`: a plan's table as the comparisons read it;
- `report`: JSON, Markdown and text.
"""

from mirrorspec.project.diff.compare import diff_plans, diff_tables
from mirrorspec.project.diff.report import (
    MARKDOWN_LIMIT, MARKDOWN_MARKER, MARKDOWN_TABLE_ROWS, headline, iter_lines, report_json,
    report_markdown)
from mirrorspec.project.diff.result import Change, PlanDiff, TableDiff
from mirrorspec.project.diff.rules import (
    ADDED, BREAKING, CAUTION, DIFF_VERSION, MODIFIED, REMOVED, RULES, SAFE, SEVERITIES,
    UNCHANGED, Rule)

__all__ = ["DIFF_VERSION", "Change", "TableDiff", "PlanDiff", "RULES", "Rule", "diff_plans",
           "diff_tables", "report_json", "report_markdown", "iter_lines", "headline",
           "MARKDOWN_MARKER", "MARKDOWN_LIMIT", "MARKDOWN_TABLE_ROWS", "SAFE", "CAUTION",
           "BREAKING", "SEVERITIES", "ADDED", "REMOVED", "MODIFIED", "UNCHANGED"]
