"""`Files/Monitoring/replicator.json` and `tables.json` in Fabric's shape, rendered from the
monitoring JSON mirrorspec writes beside the warehouse (`mirrorspec/artifacts/status.py`).

The Fabric shape's only public description is the sample in microsoft/fabric-toolbox
`tools/OpenMirroringPythonSDK/README.md` (@050ceef5); docs/onelake.md maps each field.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from mirrorspec.artifacts.status import read_status

REPLICATOR = "replicator.json"
TABLES = "tables.json"
_TABLE_NAMESPACE = uuid.UUID("0b9a2d4e-7f1c-4e8a-b3d5-9c6f1a2e4b70")
NO_COMMIT_TIME = "0001-01-01T00:00:00"


def fabric_time(value: str | None) -> str:
    """`2025-05-20T00:02:24Z` → `2025-05-20T00:02:24.0000000Z` (Fabric's 7 fractional digits)."""
    if not value:
        return NO_COMMIT_TIME
    text = value.replace("+00:00", "").rstrip("Z")
    head, _, fraction = text.partition(".")
    return f"{head}.{(fraction + '0000000')[:7]}Z"


def table_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """One mirrorspec tables.json entry in Fabric's shape."""
    schema = str(entry.get("sourceSchemaName") or "dbo")
    name = str(entry.get("sourceTableName") or "")
    metrics = entry.get("metrics") or {}
    error = entry.get("error") or {}
    return {
        "id": str(uuid.uuid5(_TABLE_NAMESPACE, f"{schema}.{name}")),
        "status": entry.get("status") or "",
        "errorCode": error.get("errorCode") or "",
        "errorMessage": error.get("message") or "",
        "normalizedTableName": f"{schema}.{name}",
        "sourceTableName": name,
        "sourceSchemaName": schema,
        "sourceObjectType": "Table",
        "metrics": {
            "processedRowCount": int(metrics.get("processedRows") or 0),
            "processedByte": int(metrics.get("processedBytes") or 0),
            "lastSourceCommitTimeUtc": NO_COMMIT_TIME,
            "lastSyncTimeUtc": fabric_time(metrics.get("lastSyncDateTime")),
        },
    }


def render(warehouse: str) -> dict[str, bytes]:
    """Both files, as bytes, from WAREHOUSE's monitoring JSON (empty before the first pass)."""
    status = read_status(warehouse)
    replicator = status.get("replicator") or {}
    errors = [t for t in status.get("tables") or [] if t.get("status") == "Failed"]
    failed = errors and replicator.get("status") == "Failed"
    first = (errors[0].get("error") or {}) if failed else {}
    doc_replicator = {
        "status": replicator.get("status") or "Stopped",
        "errorCode": first.get("errorCode") or "",
        "errorMessage": first.get("message") or "",
    }
    doc_tables = {"tables": [table_entry(t) for t in status.get("tables") or []]}
    return {
        REPLICATOR: (json.dumps(doc_replicator, indent=2) + "\n").encode(),
        TABLES: (json.dumps(doc_tables, indent=2) + "\n").encode(),
    }
