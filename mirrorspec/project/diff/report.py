"""A diff rendered: the JSON document, Markdown for a pull-request comment, text lines for the
terminal, the headline."""

from __future__ import annotations

from typing import Iterable

from mirrorspec.openmirroring.mirroring import dumps_json
from mirrorspec.project.diff.result import PlanDiff
from mirrorspec.project.diff.rules import ADDED, BREAKING, CAUTION, MODIFIED, REMOVED, SAFE


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
