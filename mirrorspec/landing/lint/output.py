"""`lint`'s output: text for people, the JSON document, SARIF 2.1.0."""

from __future__ import annotations

import textwrap
from dataclasses import asdict

from mirrorspec.landing.lint.findings import RULES, Finding, LintResult


def to_json(result: LintResult) -> dict:
    """The `--format json` document."""
    return {
        "landing_zone": result.landing_zone,
        "summary": {"tables": len(result.tables), "errors": result.count("error"),
                    "warnings": result.count("warning")},
        "findings": [asdict(f) for f in result.findings],
        "tables": [{"table": t.table, "unique_id": t.unique_id, "files": t.files,
                    "stops_at": asdict(t.stops_at) if t.stops_at else None,
                    "findings": [asdict(f) for f in t.findings]} for t in result.tables],
    }


def to_sarif(result: LintResult, version: str) -> dict:
    """The `--format sarif` document (SARIF 2.1.0), paths relative to the landing zone."""
    used = sorted({f.rule for f in result.all_findings()})
    results = []
    for finding in result.all_findings():
        uri = finding.file or finding.table or "."
        location: dict = {"artifactLocation": {"uri": uri, "uriBaseId": "LANDINGZONE"}}
        if finding.line is not None and finding.file:
            location["region"] = {"startLine": finding.line}
        text = finding.message
        if finding.row is not None and finding.file:
            text = f"row {finding.row}: {text}"
        results.append({"ruleId": finding.rule, "ruleIndex": used.index(finding.rule),
                        "level": finding.level, "message": {"text": text},
                        "locations": [{"physicalLocation": location}]})
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mirrorspec lint", "version": version,
                "rules": [{"id": rule, "shortDescription": {"text": RULES[rule]}}
                          for rule in used]}},
            "originalUriBaseIds": {"LANDINGZONE": {
                "uri": "file://" + result.landing_zone.rstrip("/") + "/"}},
            "results": results,
        }],
    }


def to_text(result: LintResult) -> str:
    """Findings grouped by table, one problem per line pair (readable at 80 columns)."""
    lines = []

    def show(finding: Finding, base: str | None) -> None:
        where = finding.file or finding.table or "."
        if base and where.startswith(base + "/"):
            where = where[len(base) + 1:]
        if finding.line is not None:
            where += f": line {finding.line}"
        elif finding.row is not None:
            where += f": row {finding.row}"
        if finding.column:
            where += f", column {finding.column}"
        lines.append(f"  {finding.level:<7} {where}  [{finding.rule}]")
        lines.extend(textwrap.wrap(finding.message, 78, initial_indent=" " * 10,
                                   subsequent_indent=" " * 10, break_on_hyphens=False))

    if result.findings:
        lines.append("(landing zone)")
        for finding in result.findings:
            show(finding, None)
    for table in result.tables:
        state = "clean" if not table.findings else (
            f"stops at {table.stops_at.file.rsplit('/', 1)[-1]}" if table.stops_at and
            table.stops_at.file else "problems")
        lines.append(f"{table.unique_id} ({table.files} file(s)): {state}")
        for finding in table.findings:
            show(finding, table.table)
    lines.append(f"{len(result.tables)} table(s), {result.count('error')} error(s), "
                 f"{result.count('warning')} warning(s)")
    return "\n".join(lines) + "\n"
