"""What serve knows about the landing zone's files besides their bytes — properties and
metadata (by ETag, properties.py) and leases (by path, leases.py) — kept in a SQLite file
beside the landing zone, so a restarted serve answers as the service does after any pause.

The file is `.<landing zone name>.serve-state/state.sqlite` in the landing zone's parent folder
(the staging folder's neighbour: never listed, never read by the engine). Each change is written
through at once (WAL, `synchronous=OFF`: a crash of the process loses nothing; one of the
machine may lose the last changes, or the file, like the bytes, which are not fsynced either;
a file that is no longer a database is set aside and serve starts from none). At start, rows
for files no longer on disk (moved or purged by something other than serve) are dropped.

A lease's times are kept as wall-clock seconds (the process's monotonic clock starts again with
it): leases.py turns them back into its own clock, so a fixed lease expires when it would have.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Iterator

from mirrorspec.serve.properties import Props

_SCHEMA = """
CREATE TABLE IF NOT EXISTS props (etag TEXT PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leases (path TEXT PRIMARY KEY, doc TEXT NOT NULL);
"""
_TABLES = {"props": "props", "leases": "leases"}  # the only names a statement is built from
_KEYS = {"props": "etag", "leases": "path"}
SEPARATOR = "/"  # a lease's path segments joined (no segment holds one: names.py)


def state_path(landing: Path) -> Path:
    """Where the state of the landing zone `landing` is kept (in a folder of its own: SQLite
    keeps its write-ahead log beside the file)."""
    return landing.parent / f".{landing.name}.serve-state" / "state.sqlite"


class StateFile:
    """The SQLite file (thread-safe: one connection, one lock). One that is not a database
    serve wrote (a machine crash can leave it so, as nothing is fsynced) is set aside as
    `state.sqlite.unreadable` and a new one started: `discarded` says so, for the log."""

    def __init__(self, path: Path):
        self.path = path
        self.discarded = False
        path.parent.mkdir(exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = _open(path)
        except sqlite3.DatabaseError:
            os.replace(path, path.with_name(path.name + ".unreadable"))
            for suffix in ("-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            self.discarded = True
            self._db = _open(path)

    def _rows(self, table: str) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._db.execute(f"SELECT * FROM {_TABLES[table]}"))

    def _put(self, table: str, key: str, doc: dict | None) -> None:
        with self._lock:
            if doc is None:
                self._db.execute(f"DELETE FROM {_TABLES[table]} WHERE {_KEYS[table]} = ?", (key,))
            else:
                self._db.execute(f"INSERT OR REPLACE INTO {_TABLES[table]} VALUES (?, ?)",
                                 (key, json.dumps(doc, separators=(",", ":"))))

    # --- properties, by ETag ---------------------------------------------------------------
    def all_props(self) -> dict[str, Props]:
        found = {}
        for etag, doc in self._rows("props"):
            try:
                found[etag] = Props(**json.loads(doc))
            except (ValueError, TypeError):
                continue  # a row another version wrote: forgotten, as before persistence
        return found

    def put_props(self, etag: str, props: Props | None) -> None:
        self._put("props", etag, asdict(props) if props is not None else None)

    # --- leases, by path -------------------------------------------------------------------
    def all_leases(self) -> dict[tuple[str, ...], dict]:
        found = {}
        for path, doc in self._rows("leases"):
            try:
                found[tuple(path.split(SEPARATOR))] = json.loads(doc)
            except ValueError:
                continue
        return found

    def put_lease(self, key: tuple[str, ...], doc: dict | None) -> None:
        self._put("leases", SEPARATOR.join(key), doc)

    def prune(self, landing: Path, etag_of: Callable[[os.stat_result], str]) -> None:
        """Drop the rows of files no longer in `landing` (its tree walked once)."""
        props, leases = self._rows("props"), self._rows("leases")
        if not props and not leases:
            return
        etags, paths = set(), set()
        for path in _files(landing):
            try:
                etags.add(etag_of(path.stat()))
            except OSError:
                continue
            paths.add(path.relative_to(landing).as_posix())
        for etag, _doc in props:
            if etag not in etags:
                self.put_props(etag, None)
        for key, _doc in leases:
            if key not in paths:
                self._put("leases", key, None)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def log_discarded(state: StateFile | None, log: Callable[..., None]) -> None:
    """A warning when the state file had to be set aside (StateFile.discarded)."""
    if state is not None and state.discarded:
        log("warning", f"{state.path} could not be read as serve's state: kept as "
            f"{state.path.name}.unreadable; properties, metadata and leases start empty")


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")  # as the bytes: never fsynced (onelake.md)
        db.executescript(_SCHEMA)
        db.execute("SELECT count(*) FROM props").fetchone()
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def _files(root: Path) -> Iterator[Path]:
    for folder, _dirs, files in os.walk(root):
        for name in files:
            yield Path(folder) / name


class PersistentProps(dict):
    """The store's properties by ETag: a dict whose changes are written through to the state
    file (the store reads and writes it under its own lock)."""

    def __init__(self, state: StateFile):
        super().__init__(state.all_props())
        self._state = state

    def __setitem__(self, etag: str, props: Props) -> None:
        super().__setitem__(etag, props)
        self._state.put_props(etag, props)

    def pop(self, etag: str, default=None):
        found = super().pop(etag, default)
        if found is not default:
            self._state.put_props(etag, None)
        return found
