"""What a diff says: one `Change`, a table's changes (`TableDiff`), every table's (`PlanDiff`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mirrorspec.project.diff.normalise import show
from mirrorspec.project.diff.rules import (
    ADDED, BREAKING, DIFF_VERSION, MODIFIED, REMOVED, RULES, UNCHANGED, Rule)


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
                f"{show(self.before)} → {show(self.after)}"
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
