"""Fabric's REST API for mirrored databases, under `/v1` on the storage port: workspaces and
items (by name or GUID), mirroredDatabases create/get/list/update/delete, getDefinition /
updateDefinition, startMirroring / stopMirroring, getMirroringStatus and
getTablesMirroringStatus (paged), and long-running operations (`/v1/operations/{id}`).

Shapes follow the public REST reference; docs/onelake.md marks each guessed field and code.
Errors are Fabric's `{"requestId", "errorCode", "message"}`.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any

from mirrorspec.serve import monitoring
from mirrorspec.serve.entra import Reply
from mirrorspec.serve.items import ITEM_KIND, FabricError, Item, Registry, Workspace

MAX_BODY = 16 << 20  # definitions are small; a bigger body is refused
TABLES_PAGE = 100
KEPT_OPERATIONS = 1000
RETRY_AFTER = "1"


def error(status: int, code: str, message: str) -> Reply:
    return Reply(status, {"requestId": str(uuid.uuid4()), "errorCode": code, "message": message})


def _utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Operations:
    """Long-running operations (kept in memory, the newest KEPT_OPERATIONS)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: OrderedDict[str, tuple[dict[str, Any], Any]] = OrderedDict()

    def finished(self, result: Any, base_url: str) -> Reply:
        """202 for an operation that has already succeeded (serve's are synchronous)."""
        op_id = str(uuid.uuid4())
        now = _utc_now()
        state = {"status": "Succeeded", "createdTimeUtc": now, "lastUpdatedTimeUtc": now,
                 "percentComplete": 100, "error": None}
        with self._lock:
            self._done[op_id] = (state, result)
            while len(self._done) > KEPT_OPERATIONS:
                self._done.popitem(last=False)
        location = f"{base_url}/v1/operations/{op_id}"
        return Reply(202, None, (("Location", location), ("x-ms-operation-id", op_id),
                                 ("Retry-After", RETRY_AFTER)))

    def answer(self, rest: list[str], base_url: str) -> Reply:
        op_id = rest[0].lower() if rest else ""
        with self._lock:
            found = self._done.get(op_id)
        if found is None:
            return error(404, "OperationNotFound", f"operation {op_id!r} is unknown (serve keeps "
                         f"the last {KEPT_OPERATIONS}, until it stops)")
        state, result = found
        if rest[1:] == ["result"]:
            if result is None:
                return error(400, "OperationHasNoResult", f"operation {op_id} has no result")
            return Reply(200, result)
        if rest[1:]:
            return error(404, "EntityNotFound", f"/v1/operations/{'/'.join(rest)} is not an API")
        headers = ((("Location", f"{base_url}/v1/operations/{op_id}/result"),)
                   if result is not None else ())
        return Reply(200, state, (("x-ms-operation-id", op_id), *headers))


class FabricApi:
    """The `/v1` routes over a Registry."""

    def __init__(self, registry: Registry, page_size: int = TABLES_PAGE):
        self.registry = registry
        self.operations = Operations()
        self.page_size = max(1, min(page_size, TABLES_PAGE))

    def answer(self, method: str, segments: list[str], query: dict[str, str], body: bytes,
               base_url: str, account_url: str) -> Reply:
        """`segments` follow `/v1`."""
        try:
            return self._route(method, segments, query, body, base_url, account_url)
        except FabricError as exc:
            return error(exc.status, exc.code, exc.message)

    def _route(self, method: str, seg: list[str], query: dict[str, str], body: bytes,
               base_url: str, account_url: str) -> Reply:
        head = [s.lower() for s in seg[:1]]
        if head == ["operations"] and method == "GET":
            return self.operations.answer(seg[1:], base_url)
        if head != ["workspaces"]:
            raise FabricError(404, "EntityNotFound", f"/v1/{'/'.join(seg)} is not an API serve "
                              "emulates (docs/onelake.md lists them)")
        registry = self.registry
        if len(seg) == 1:
            if method == "GET":
                return Reply(200, {"value": [w.doc() for w in registry.workspaces.values()]})
            if method == "POST":
                doc = _json(body)
                ws = registry.create_workspace(doc.get("displayName"), doc.get("description"))
                return Reply(201, ws.doc())
            raise _no_method(method, seg)
        ws = registry.workspace(seg[1])
        if len(seg) == 2:
            if method == "GET":
                return Reply(200, ws.doc())
            raise _no_method(method, seg)
        collection = seg[2].lower()
        if collection not in ("items", "mirroreddatabases"):
            raise FabricError(404, "EntityNotFound", f"/v1/workspaces/{{id}}/{seg[2]} is not an "
                              "API serve emulates (items and mirroredDatabases are)")
        typed = collection == "mirroreddatabases"
        if len(seg) == 3:
            return self._collection(method, ws, typed, query, body, account_url, seg)
        item = registry.item(ws, seg[3])
        if len(seg) == 4:
            return self._item(method, item, typed, body, account_url, seg)
        if len(seg) == 5 and method == "POST":
            return self._action(seg[4], item, typed, query, body, base_url)
        raise _no_method(method, seg)

    def _collection(self, method: str, ws: Workspace, typed: bool, query: dict[str, str],
                    body: bytes, account_url: str, seg: list[str]) -> Reply:
        if method == "GET":
            wanted = query.get("type")
            if wanted is not None and wanted.lower() != ITEM_KIND.lower():
                return Reply(200, {"value": []})  # serve hosts mirrored databases only
            items = self.registry.items_of(ws)
            return Reply(200, {"value": [self._doc(i, typed, account_url) for i in items]})
        if method == "POST":
            doc = _json(body)
            if not typed and doc.get("type") != ITEM_KIND:
                raise FabricError(400, "InvalidItemType", f"item type {doc.get('type')!r} is "
                                  f"not one serve hosts (only {ITEM_KIND})")
            item = self.registry.create_item(ws, doc.get("displayName"), doc.get("description"),
                                             doc.get("definition"))
            self.registry.log("info", f"created mirrored database {ws.name}/{item.name} "
                              f"({item.id})", item=item.id)
            return Reply(201, self._doc(item, typed, account_url))
        raise _no_method(method, seg)

    def _item(self, method: str, item: Item, typed: bool, body: bytes, account_url: str,
              seg: list[str]) -> Reply:
        if method == "GET":
            return Reply(200, self._doc(item, typed, account_url))
        if method == "PATCH":
            doc = _json(body)
            return Reply(200, self._doc(self.registry.update_item(item, doc), typed, account_url))
        if method == "DELETE":
            self.registry.delete_item(item)
            self.registry.log("info", f"deleted mirrored database {item.workspace.name}/"
                              f"{item.name} ({item.id})", item=item.id)
            return Reply(200, None)
        raise _no_method(method, seg)

    def _action(self, action: str, item: Item, typed: bool, query: dict[str, str], body: bytes,
                base_url: str) -> Reply:
        registry, name = self.registry, action.lower()
        if name == "getdefinition":
            result = {"definition": {"parts": [dict(p) for p in item.parts]}}
            return self.operations.finished(result, base_url)
        if name == "updatedefinition":
            registry.set_definition(item, _json(body).get("definition"))
            return Reply(200, None)
        if typed and name == "startmirroring":
            registry.start(item)
            return Reply(200, None)
        if typed and name == "stopmirroring":
            registry.stop(item)
            return Reply(200, None)
        if typed and name == "getmirroringstatus":
            return Reply(200, {"status": registry.status(item)})
        if typed and name == "gettablesmirroringstatus":
            return self._tables(item, query.get("continuationtoken"), base_url)
        raise FabricError(404, "EntityNotFound", f"{action} is not an action serve emulates")

    def _tables(self, item: Item, token: str | None, base_url: str) -> Reply:
        """From the same status the Monitoring files show (monitoring.py)."""
        rendered = json.loads(monitoring.render(str(item.warehouse))[monitoring.TABLES])
        tables = sorted(rendered["tables"], key=lambda t: t["normalizedTableName"])
        start = _offset(token)
        page = tables[start:start + self.page_size]
        data = [{"sourceSchemaName": t["sourceSchemaName"],
                 "sourceTableName": t["sourceTableName"],
                 "sourceObjectType": t["sourceObjectType"], "status": t["status"],
                 "metrics": {"processedBytes": t["metrics"]["processedByte"],
                             "processedRows": t["metrics"]["processedRowCount"],
                             "lastSyncDateTime": t["metrics"]["lastSyncTimeUtc"]}}
                for t in page]
        more = start + self.page_size < len(tables)
        next_token = base64.urlsafe_b64encode(str(start + self.page_size).encode()).decode() \
            if more else None
        uri = (f"{base_url}/v1/workspaces/{item.workspace.id}/mirroredDatabases/{item.id}/"
               f"getTablesMirroringStatus?continuationToken={next_token}") if more else None
        return Reply(200, {"continuationToken": next_token, "continuationUri": uri,
                           "data": data})

    @staticmethod
    def _doc(item: Item, typed: bool, account_url: str) -> dict[str, Any]:
        doc = item.doc()
        if typed:
            doc["properties"] = {
                "oneLakeTablesPath": f"{account_url}/{item.workspace.id}/{item.id}/Tables",
                "sqlEndpointProperties": {"connectionString": None, "id": None,
                                          "provisioningStatus": "Success"},
                "defaultSchema": "dbo"}
        return doc


def _json(body: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(body or b"{}")
    except ValueError as exc:
        raise FabricError(400, "InvalidInput", f"the request body is not JSON: {exc}") from None
    except RecursionError:
        raise FabricError(400, "InvalidInput", "the request body nests too deep") from None
    if not isinstance(doc, dict):
        raise FabricError(400, "InvalidInput", "the request body must be a JSON object")
    return doc


def _offset(token: str | None) -> int:
    if not token:
        return 0
    try:
        value = int(base64.urlsafe_b64decode(token.encode()).decode())
    except ValueError:
        raise FabricError(400, "InvalidContinuationToken", f"the continuation token {token!r} "
                          "is not one serve issued") from None
    if value < 0:
        raise FabricError(400, "InvalidContinuationToken", f"the continuation token {token!r} "
                          "is not one serve issued")
    return value


def _no_method(method: str, seg: list[str]) -> FabricError:
    return FabricError(405, "MethodNotAllowed", f"{method} /v1/{'/'.join(seg)} is not an API "
                       "serve emulates")



