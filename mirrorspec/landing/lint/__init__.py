"""`mirrorspec lint`: check a landing zone written by any producer against Microsoft's
landing-zone specification ("Open mirroring landing zone requirements and format").

Pure Python with pyarrow (no JVM). Parquet files are read by their footers and their marker and
key columns only. The rules that decide whether the engine stops at a file are the engine's own
(`mirrorspec.openmirroring.mirroring`, `mirrorspec.landing.checks`, `mirrorspec.landing.layout`), so a table's
`stops_at` names the file (and row) where `mirrorspec mirror` would stop it.

- `findings`: the rules (`RULES`), `Finding`, `TableReport`, `LintResult`;
- `zone`: `lint_landing_zone`, the landing zone's layout, then each selected table;
- `table`: one table folder: `_metadata.json`, stray files, file order, the warehouse's progress;
- `columns`: a file's columns against the table's, a marker cell as the engine reads it;
- `parquet`: one Parquet file; `delimited`: one delimited file, row by row;
- `output`: text, JSON and SARIF.
"""

from mirrorspec.landing.lint.findings import RULES, Finding, LintResult, TableReport
from mirrorspec.landing.lint.output import to_json, to_sarif, to_text
from mirrorspec.landing.lint.zone import lint_landing_zone
from mirrorspec.openmirroring.parquet_types import spark_type_name

__all__ = ["RULES", "Finding", "LintResult", "TableReport", "lint_landing_zone",
           "spark_type_name", "to_json", "to_sarif", "to_text"]
