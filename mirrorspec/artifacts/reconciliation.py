"""What `reconcile` and `replay` found: a mirrored table compared by key with a trusted
snapshot (or with its own replay), as the summary lines people read and the JSON `--output`
writes (pure Python; the comparison itself is `mirrorspec/spark/ops/reconcile.py`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

BUCKETS = 64
"""Key ranges (buckets of the key hash) compared by count and hash sum before any join."""


@dataclass
class Reconciliation:
    """What a reconcile found; `equal` when nothing differs (one-sided columns apart)."""

    table: str
    source: str
    key: list[str]
    mirror_rows: int = 0
    source_rows: int = 0
    buckets: int = BUCKETS
    differing_buckets: int = 0
    only_in_mirror: list[str] = field(default_factory=list)
    only_in_source: list[str] = field(default_factory=list)
    missing: list[dict] = field(default_factory=list)   # keys in the source only
    extra: list[dict] = field(default_factory=list)     # keys in the mirror only
    changed: list[dict] = field(default_factory=list)   # {"key": {...}, "columns": [...]}
    version: int | None = None

    @property
    def equal(self) -> bool:
        return not (self.missing or self.extra or self.changed) and \
            self.mirror_rows == self.source_rows

    def to_json(self, limit: int | None = None) -> dict[str, Any]:
        cut = (lambda items: items[:limit]) if limit is not None else (lambda items: items)
        return {
            "table": self.table, "source": self.source, "key": self.key,
            "version": self.version, "equal": self.equal,
            "rows": {"mirror": self.mirror_rows, "source": self.source_rows},
            "key_ranges": {"total": self.buckets, "differing": self.differing_buckets},
            "columns": {"only_in_mirror": self.only_in_mirror,
                        "only_in_source": self.only_in_source},
            "counts": {"missing": len(self.missing), "extra": len(self.extra),
                       "changed": len(self.changed)},
            "missing": cut(self.missing), "extra": cut(self.extra), "changed": cut(self.changed),
        }


@dataclass
class Replay:
    """What `replay` found: the live table against its rebuild from the landing files it
    applied (`reconciliation`), which files were replayed and which were pending (not
    applied yet, so not replayed)."""

    reconciliation: Reconciliation
    replayed_files: list[str] = field(default_factory=list)
    pending_files: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return self.reconciliation.equal

    def to_json(self, limit: int | None = None) -> dict[str, Any]:
        """`replay --output`'s document: the reconciliation's, with the files."""
        doc = self.reconciliation.to_json(limit)
        doc["replayed_files"] = self.replayed_files
        doc["pending_files"] = self.pending_files
        return doc


def render(result: Reconciliation, shown: int) -> list[str]:
    """The reconciliation summary and the first `shown` differing keys, as text lines."""
    lines = []
    doc = result.to_json(shown)
    rows = doc["rows"]
    lines.append(f"{result.table} vs {result.source}"
                 + (f" (version {result.version})" if result.version is not None else ""))
    lines.append(f"  rows: mirror {rows['mirror']}, source {rows['source']}; key ranges "
                 f"differing: {doc['key_ranges']['differing']} of {doc['key_ranges']['total']}")
    for side, names in doc["columns"].items():
        if names:
            lines.append(f"  columns {side.replace('_', ' ')}: {', '.join(names)}")
    counts = doc["counts"]
    lines.append(f"  missing {counts['missing']}, extra {counts['extra']}, "
                 f"changed {counts['changed']}")
    for kind in ("missing", "extra", "changed"):
        for item in doc[kind]:
            if kind == "changed":
                lines.append(f"  changed {json.dumps(item['key'])}: {', '.join(item['columns'])}")
            else:
                lines.append(f"  {kind} {json.dumps(item)}")
        hidden = counts[kind] - len(doc[kind])
        if hidden > 0:
            lines.append(f"  ... and {hidden} more {kind} (all in --output)")
    lines.append("  equal" if result.equal else "  DIFFERENT")
    return lines
