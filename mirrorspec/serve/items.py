"""The workspaces and mirrored databases one `serve` process hosts, and each one's engine.

With `--root DIR` every mirrored database has its own folders, `DIR/<workspace id>/<item id>/`
holding `Files/LandingZone` and `Tables` (the warehouse), and the list is kept in
`DIR/fabric-items.json` across restarts, with whether mirroring was started: a serve started
again restarts those engines (`resume`). Without `--root` the one item of `--landing-zone` /
`--warehouse` is the only one (items can't be created or deleted then).

With `--report FILE` each item has its conformance report: FILE for the item serve was started
with, `<FILE's stem>.<item id><FILE's suffix>` beside it for every other one.

Each item is served through its own `Store` and `Conformance`; `route` gives the handler a view
of the server bound to the item a storage path names.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.serve import monitoring, supervise
from mirrorspec.serve.conformance import Conformance
from mirrorspec.serve.names import ITEM_TYPE, Names, name_problem, split_name
from mirrorspec.serve.server import _remove_dead_staging as remove_dead_staging
from mirrorspec.serve.persist import log_discarded, state_path
from mirrorspec.serve.store import MAX_BLOB_SIZE, Store

REGISTRY_FILE = "fabric-items.json"
ITEM_KIND = "MirroredDatabase"
MAX_NAME = 256
# Fabric's switch for Delta's change data feed on the mirrored database's tables, in
# mirroring.json's properties.target.typeProperties (docs/onelake.md)
FEED_PROPERTY = "enableDeltaChangeDataFeed"
# engines (a Spark JVM each) startMirroring may run at once: a few fit a laptop; raise it with
# --max-engines for a machine that holds more
DEFAULT_MAX_ENGINES = 4
DEFAULT_DEFINITION = {"properties": {
    "source": {"type": "GenericMirror", "typeProperties": {}},
    "target": {"type": ITEM_TYPE, "typeProperties": {"format": "Delta"}}}}


class FabricError(Exception):
    """A refusal of the Fabric REST API: HTTP status, Fabric's errorCode, a message."""

    def __init__(self, status: int, code: str, message: str):
        self.status, self.code, self.message = status, code, message
        super().__init__(message)


@dataclass
class Workspace:
    id: str
    name: str
    description: str = ""

    def doc(self) -> dict[str, Any]:
        return {"id": self.id, "displayName": self.name, "description": self.description,
                "type": "Workspace"}


@dataclass
class Item:
    """One mirrored database: its record, folders, and (while served) store and engine."""

    id: str
    workspace: Workspace
    name: str
    description: str
    parts: list[dict[str, str]]  # the definition, as Fabric's parts (base64 payloads)
    landing: Path
    warehouse: Path
    store: Store | None = None
    conformance: Conformance | None = None
    engine: subprocess.Popen | None = None
    state: str = "Initialized"  # Fabric's MirroringStatus: Initialized, Running, Stopped
    wanted: str = ""  # "Running" after startMirroring, "Stopped" after stopMirroring (kept)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def names(self) -> Names:
        return Names(self.workspace.name, self.workspace.id, self.name, self.id)

    def doc(self) -> dict[str, Any]:
        return {"id": self.id, "type": ITEM_KIND, "displayName": self.name,
                "description": self.description, "workspaceId": self.workspace.id}

    def record(self) -> dict[str, Any]:
        doc = {"id": self.id, "workspaceId": self.workspace.id, "displayName": self.name,
               "description": self.description, "parts": self.parts}
        if self.wanted:
            doc["mirroring"] = self.wanted
        return doc


def check_name(value: Any, what: str, kind: str) -> str:
    """A display name Fabric would take (a non-empty string without path separators) and
    serve can tell from an id (names.name_problem)."""
    if not isinstance(value, str) or not value.strip():
        raise FabricError(400, "InvalidInput", f"{what} must be a non-empty string")
    name = value.strip()
    if len(name) > MAX_NAME or any(c in name for c in "/\\\x00") or name in (".", ".."):
        raise FabricError(400, "InvalidInput", f"{what} {name!r} is longer than {MAX_NAME} "
                          "characters or holds '/', '\\' or NUL")
    problem = name_problem(name, kind)
    if problem is not None:
        raise FabricError(400, "InvalidInput", f"{what}: {problem}")
    return name


def parse_definition(definition: Any) -> list[dict[str, str]]:
    """Fabric's `definition` (parts with base64 payloads) → its parts, checked: a
    `mirroring.json` whose source is `GenericMirror` and target `MountedRelationalDatabase`."""
    if definition is None:
        return [definition_part("mirroring.json", DEFAULT_DEFINITION)]
    parts = definition.get("parts") if isinstance(definition, dict) else None
    if not isinstance(parts, list) or not parts:
        raise FabricError(400, "InvalidDefinition", "definition.parts must be a non-empty list")
    kept, mirroring = [], None
    for index, part in enumerate(parts):
        where = f"definition.parts[{index}]"
        if not isinstance(part, dict) or not isinstance(part.get("path"), str) or \
                not isinstance(part.get("payload"), str):
            raise FabricError(400, "InvalidDefinition", f"{where} needs a path and a payload")
        if part.get("payloadType", "InlineBase64") != "InlineBase64":
            raise FabricError(400, "InvalidDefinition", f"{where}.payloadType "
                              f"{part.get('payloadType')!r} is not InlineBase64")
        try:
            doc = json.loads(base64.b64decode(part["payload"], validate=True))
        except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
            raise FabricError(400, "InvalidDefinition", f"{where} ({part['path']}): the payload "
                              "is not base64-encoded JSON (or nests too deep)") from None
        if part["path"] == "mirroring.json":
            mirroring = doc
        kept.append({"path": part["path"], "payload": part["payload"],
                     "payloadType": "InlineBase64"})
    if mirroring is None:
        raise FabricError(400, "InvalidDefinition", "the definition has no mirroring.json part")
    props = mirroring.get("properties") if isinstance(mirroring, dict) else None
    if not isinstance(props, dict):
        raise FabricError(400, "InvalidDefinition", "mirroring.json: properties must be an "
                          "object with source and target")
    source, target = props.get("source") or {}, props.get("target") or {}
    if not isinstance(source, dict) or source.get("type") != "GenericMirror":
        raise FabricError(400, "InvalidDefinition", "mirroring.json: properties.source.type must "
                          "be GenericMirror (serve emulates open mirroring only), not "
                          f"{source.get('type') if isinstance(source, dict) else source!r}")
    if not isinstance(target, dict) or target.get("type") != ITEM_TYPE:
        raise FabricError(400, "InvalidDefinition", "mirroring.json: properties.target.type must "
                          f"be {ITEM_TYPE}")
    feed = (target.get("typeProperties") or {}).get(FEED_PROPERTY) \
        if isinstance(target.get("typeProperties"), dict) else None
    if feed is not None and not isinstance(feed, bool):
        raise FabricError(400, "InvalidDefinition", "mirroring.json: properties.target."
                          f"typeProperties.{FEED_PROPERTY} must be true or false, not {feed!r}")
    return kept


def change_data_feed(parts: list[dict[str, str]]) -> bool | None:
    """The definition's `enableDeltaChangeDataFeed` (checked by `parse_definition`); None when
    it doesn't say, which leaves each table's feed as it is."""
    for part in parts:
        if part.get("path") == "mirroring.json":
            doc = json.loads(base64.b64decode(part["payload"]))
            target = ((doc.get("properties") or {}).get("target") or {})
            value = (target.get("typeProperties") or {}).get(FEED_PROPERTY)
            return value if isinstance(value, bool) else None
    return None


def definition_part(path: str, doc: dict[str, Any]) -> dict[str, str]:
    payload = base64.b64encode(json.dumps(doc, indent=2).encode()).decode()
    return {"path": path, "payload": payload, "payloadType": "InlineBase64"}


@dataclass(frozen=True)
class EngineSettings:
    every: float
    log_format: str
    conf: tuple[str, ...] = ()
    limit: int = DEFAULT_MAX_ENGINES  # engines running at once (--max-engines)


class Registry:
    """Workspaces and items (thread-safe); `root` None is the single-item shorthand."""

    def __init__(self, root: Path | None, engine: EngineSettings, unflushed: str,
                 log: Callable[..., None], max_blob_size: int = MAX_BLOB_SIZE):
        self.root = root
        self.engine = engine
        self.unflushed = unflushed
        self.max_blob_size = max_blob_size
        self.log = log
        self._lock = threading.RLock()
        self._launcher = supervise.Launcher()
        self._starting = threading.Lock()  # one engine start at a time: the limit holds
        self.workspaces: dict[str, Workspace] = {}
        self.items: dict[str, Item] = {}
        self.adopted: Item | None = None  # served with the endpoint's own store
        self.report: Path | None = None  # the adopted item's report (--report), set by adopt

    # --- loading --------------------------------------------------------------------------
    def load(self) -> None:
        """The items of `root` from its registry file (none before the first create)."""
        if self.root is None:
            return
        path = self.root / REGISTRY_FILE
        if not path.exists():
            return
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            for ws in doc.get("workspaces") or []:
                self.workspaces[ws["id"]] = Workspace(ws["id"], ws["displayName"],
                                                      ws.get("description", ""))
            for rec in doc.get("items") or []:
                item = self._add(self.workspaces[rec["workspaceId"]], rec["id"],
                                 rec["displayName"], rec.get("description", ""), rec["parts"])
                item.wanted = str(rec.get("mirroring") or "")
                if item.wanted == "Stopped":
                    item.state = "Stopped"
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MirrorspecError(f"{path}: not a registry serve wrote ({exc})",
                                  hint="move it away to start from no items") from None

    def adopt(self, workspace: str, item: str, landing: Path, warehouse: Path,
              store: Store, conformance: Conformance) -> Item:
        """The item the command serves from its flags (`--landing-zone`… or `--root`'s default),
        with the endpoint's own store; created in the registry when missing."""
        ws_name, ws_id = split_name(workspace, "workspace")
        item_name, item_id = split_name(item, "item")
        with self._lock:
            ws = self.workspaces.setdefault(ws_id, Workspace(ws_id, ws_name))
            found = self.items.get(item_id)
            if found is None:
                found = self._add(ws, item_id, item_name, "", parse_definition(None),
                                  landing, warehouse)
                self._save()
            found.store, found.conformance = store, conformance
            conformance.item = found.doc()
            conformance.write_report()
            self.adopted, self.report = found, conformance.report
            return found

    def folders_of(self, workspace_id: str, item_id: str) -> tuple[Path, Path]:
        assert self.root is not None
        base = self.root / workspace_id / item_id
        return base / "Files" / "LandingZone", base / "Tables"

    def _add(self, ws: Workspace, item_id: str, name: str, description: str,
             parts: list[dict[str, str]], landing: Path | None = None,
             warehouse: Path | None = None) -> Item:
        if landing is None or warehouse is None:
            landing, warehouse = self.folders_of(ws.id, item_id)
        item = Item(item_id, ws, name, description, parts, landing, warehouse)
        self.items[item_id] = item
        return item

    def _save(self) -> None:
        if self.root is None:
            return
        doc = {"workspaces": [{"id": w.id, "displayName": w.name, "description": w.description}
                              for w in self.workspaces.values()],
               "items": [i.record() for i in self.items.values()]}
        path = self.root / REGISTRY_FILE
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(temp, path)

    # --- look-ups -------------------------------------------------------------------------
    def workspace(self, ref: str) -> Workspace:
        """By GUID, then by display name (any case): an id always wins over a name."""
        key = ref.lower()
        with self._lock:
            found = self.workspaces.get(key)
            if found is not None:
                return found
            for ws in self.workspaces.values():
                if ws.name.lower() == key:
                    return ws
        raise FabricError(404, "WorkspaceNotFound", f"workspace {ref!r} does not exist here")

    def all_workspaces(self) -> list[Workspace]:
        with self._lock:
            return list(self.workspaces.values())

    def items_of(self, ws: Workspace) -> list[Item]:
        with self._lock:
            return sorted((i for i in self.items.values() if i.workspace is ws),
                          key=lambda i: i.name.lower())

    def item(self, ws: Workspace, ref: str) -> Item:
        """By GUID, then by display name, then as `NAME.MountedRelationalDatabase` (any case):
        an id always wins over a name."""
        key = ref.lower()
        items = self.items_of(ws)
        for matches in (lambda i: key == i.id, lambda i: key == i.name.lower(),
                        lambda i: key.startswith(i.name.lower() + ".") and
                        key[len(i.name) + 1:] in (ITEM_TYPE.lower(), ITEM_KIND.lower())):
            for item in items:
                if matches(item):
                    return item
        raise FabricError(404, "ItemNotFound", f"item {ref!r} does not exist in workspace "
                          f"{ws.name!r}")

    # --- changes --------------------------------------------------------------------------
    def _need_root(self, what: str) -> None:
        if self.root is None:
            raise FabricError(400, "OperationNotSupported", f"{what} needs `serve --root DIR` "
                              "(this serve hosts the one item of --landing-zone/--warehouse)")

    def create_workspace(self, name: Any, description: Any) -> Workspace:
        self._need_root("creating a workspace")
        name = check_name(name, "displayName", "workspace")
        with self._lock:
            if any(w.name.lower() == name.lower() for w in self.workspaces.values()):
                raise FabricError(409, "WorkspaceNameAlreadyExists",
                                  f"a workspace named {name!r} exists")
            ws = Workspace(str(uuid.uuid4()), name, str(description or ""))
            self.workspaces[ws.id] = ws
            self._save()
            return ws

    def create_item(self, ws: Workspace, name: Any, description: Any, definition: Any) -> Item:
        name = check_name(name, "displayName", "item")
        parts = parse_definition(definition)
        self._need_root("creating a mirrored database")
        with self._lock:
            if any(i.name.lower() == name.lower() for i in self.items_of(ws)):
                raise FabricError(409, "ItemDisplayNameAlreadyInUse", f"an item named {name!r} "
                                  f"exists in workspace {ws.name!r}")
            item = self._add(ws, str(uuid.uuid4()), name, str(description or ""), parts)
            try:
                for folder in (item.landing, item.warehouse):
                    folder.mkdir(parents=True, exist_ok=True)
                self._open(item)
            except OSError as exc:
                self.items.pop(item.id, None)
                raise FabricError(500, "InternalError", f"can't create the folders of {name!r}: "
                                  f"{exc.strerror or exc}") from None
            self._save()
            return item

    def _open(self, item: Item) -> None:
        remove_dead_staging(item.landing)  # a killed serve's uploads, as for the first item
        staging = item.landing.parent / f".{item.landing.name}.serve-staging-{os.getpid()}"
        warehouse = str(item.warehouse)
        item.store = Store(item.names, item.landing, item.warehouse, staging,
                           lambda: monitoring.render(warehouse), self.unflushed,
                           state_path(item.landing), self.max_blob_size)
        log_discarded(item.store.state, self.log)
        try:
            item.conformance = Conformance(item.landing, self.report_of(item), self.log,
                                           item=item.doc())
        except MirrorspecError as exc:  # the start item's report was writable: rare
            self.log("warning", f"{exc}; the findings of {item.workspace.name}/{item.name} are "
                     "only logged", item=item.id)
            item.conformance = Conformance(item.landing, None, self.log, item=item.doc())

    def report_of(self, item: Item) -> Path | None:
        """The conformance report of an item other than the adopted one (with --report)."""
        if self.report is None:
            return None
        return self.report.with_name(f"{self.report.stem}.{item.id}{self.report.suffix}")

    def open_all(self) -> None:
        """Stores for the loaded items (the adopted one already has the endpoint's)."""
        for item in list(self.items.values()):
            if item.store is None and item.landing.is_dir():
                self._open(item)

    def update_item(self, item: Item, body: dict[str, Any]) -> Item:
        with self._lock:
            if "displayName" in body:
                name = check_name(body["displayName"], "displayName", "item")
                if any(i is not item and i.name.lower() == name.lower()
                       for i in self.items_of(item.workspace)):
                    raise FabricError(409, "ItemDisplayNameAlreadyInUse", f"an item named "
                                      f"{name!r} exists in workspace {item.workspace.name!r}")
                if self.root is None and name != item.name:
                    self._need_root("renaming the item")
                item.name = name
            if "description" in body:
                item.description = str(body["description"] or "")
            self._save()
            return item

    def set_definition(self, item: Item, definition: Any) -> None:
        """updateDefinition. A running engine whose change data feed switch changed is
        restarted with the new one (the engine takes it when it starts)."""
        parts = parse_definition(definition if definition is not None else {})
        with self._lock:
            before = change_data_feed(item.parts)
            item.parts = parts
            self._save()
        with item.lock:
            running = item.engine is not None and item.engine.poll() is None
        if running and change_data_feed(parts) != before:
            self.log("info", f"{item.workspace.name}/{item.name}: {FEED_PROPERTY} changed; "
                     "restarting its engine", item=item.id)
            self._halt(item)
            self._start(item)

    def delete_item(self, item: Item) -> None:
        self._need_root("deleting a mirrored database")
        if item is self.adopted:
            raise FabricError(400, "OperationNotSupported", f"{item.name!r} is the item serve "
                              "was started with (--workspace/--item): it can't be deleted "
                              "while serving")
        self.stop(item)
        with self._lock:
            self.items.pop(item.id, None)
            self._save()
        if item.store is not None:
            item.store.close()
        assert self.root is not None
        shutil.rmtree(self.root / item.workspace.id / item.id, ignore_errors=True)

    # --- engines --------------------------------------------------------------------------
    def start(self, item: Item) -> None:
        """startMirroring: the engine started, and restarted by the next serve (`resume`)."""
        self._start(item)
        with self._lock:
            item.wanted = "Running"
            self._save()

    def resume(self) -> None:
        """Restart the engines of the items whose mirroring was started and not stopped (as
        Fabric keeps replicating); an item that can't start is logged and stays Stopped."""
        for item in list(self.items.values()):
            if item.wanted != "Running":
                continue
            try:
                self._start(item, resumed=True)
            except FabricError as exc:
                item.state = "Stopped"
                self.log("warning", f"mirroring of {item.workspace.name}/{item.name} was not "
                         f"restarted: {exc.message}", item=item.id)

    def _start(self, item: Item, resumed: bool = False) -> None:
        """`mirrorspec mirror --watch` on the item's folders (a no-op when it runs); refused
        when --max-engines engines run already."""
        with self._starting, item.lock:
            if item.engine is not None and item.engine.poll() is None:
                return
            running = self.running_engines()
            if running >= self.engine.limit:
                raise FabricError(409, "MirroringEngineLimitReached", f"{running} mirrored "
                                  f"database(s) are mirroring, the most this serve runs at once "
                                  f"(--max-engines {self.engine.limit}): stop one first")
            if not item.landing.is_dir():
                raise FabricError(400, "LandingZoneNotFound", f"the landing zone of "
                                  f"{item.name!r} ({item.landing}) does not exist: create the "
                                  "mirrored database again, or give serve its folder")
            item.warehouse.mkdir(parents=True, exist_ok=True)
            s = self.engine
            item.engine = self._launcher.start(item.landing, item.warehouse, s.every,
                                               s.log_format, s.conf,
                                               change_data_feed(item.parts))
            item.state = "Running"
        self.log("info", f"mirroring {'restarted' if resumed else 'started'} for "
                 f"{item.workspace.name}/{item.name} (engine pid {item.engine.pid})", item=item.id)

    def running_engines(self) -> int:
        """How many engines are alive (each item's, the adopted --mirror-every one too)."""
        return sum(1 for i in list(self.items.values())
                   if i.engine is not None and i.engine.poll() is None)

    def adopt_engine(self, item: Item, process: subprocess.Popen) -> None:
        with item.lock:
            item.engine, item.state = process, "Running"

    def stop(self, item: Item) -> None:
        """stopMirroring: the engine stopped, and not restarted by the next serve."""
        self._halt(item)
        with self._lock:
            if item.wanted:
                item.wanted = "Stopped"
                self._save()

    def _halt(self, item: Item) -> None:
        with item.lock:
            engine, item.engine = item.engine, None
            if engine is None:
                return
            item.state = "Stopped"
        code = supervise.stop_mirror(engine)
        self.log("info", f"mirroring stopped for {item.workspace.name}/{item.name} (engine "
                 f"exit code {code})", item=item.id)

    def status(self, item: Item) -> str:
        """Fabric's MirroringStatus; an engine that ended by itself reads as Stopped."""
        with item.lock:
            if item.engine is not None and item.engine.poll() is not None:
                self.log("warning", f"the engine of {item.workspace.name}/{item.name} ended "
                         f"with exit code {item.engine.returncode}", item=item.id)
                item.engine, item.state = None, "Stopped"
            return item.state

    def close(self) -> None:
        """Stop every engine and drop every item's uncommitted uploads."""
        for item in list(self.items.values()):
            self._halt(item)  # a started mirroring stays started: the next serve resumes it
            if item.store is not None and item is not self.adopted:  # the endpoint closes its own
                item.store.close()
                if item.conformance is not None:
                    item.conformance.close()
        self._launcher.close()
