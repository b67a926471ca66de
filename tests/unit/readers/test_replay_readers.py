"""The JVM-free readers reconcile and replay resolve a table with (progress.mirror.resolve_table /
table_keys, spark.ops.replay.read_history / pending_files / stage), each taking the filesystem
that serves the path: local files, or a URI store. `MappedFS` plays the store here (a `mem://`
URI served from a local folder), so the URI branch is exercised without a JVM."""

from __future__ import annotations

import json
import os

import pytest

from mirrorspec.openmirroring import mirroring
from mirrorspec.context.sessions import local_then_session
from mirrorspec.context.tables import locate_table
from mirrorspec.base.errors import MirrorspecError, StorageError
from mirrorspec.base.files import Files, LocalFS, SessionNeeded
from mirrorspec.progress.mirror import STATE_KEY, names_folder, resolve_table, table_keys
from mirrorspec.spark.ops.replay import pending_files, read_history, stage

ONE, TWO, THREE = (mirroring.sequence_file_name(n) for n in (1, 2, 3))


class MappedFS(LocalFS):
    """`mem://lake/...` served from a local folder, the way HadoopFS serves s3a:// URIs: the
    callers see only URIs (entries' paths included)."""

    def __init__(self, root):
        self.root = str(root)
        self.reads: list[str] = []

    def _local(self, path: str) -> str:
        assert path.startswith("mem://lake"), path
        return self.root + path[len("mem://lake"):]

    def list(self, path):
        return [e.__class__(e.name, f"{path.rstrip('/')}/{e.name}", e.size, e.mtime, e.is_dir)
                for e in super().list(self._local(path))]

    def exists(self, path):
        return super().exists(self._local(path))

    def is_dir(self, path):
        return super().is_dir(self._local(path))

    def read_bytes(self, path, limit=None):
        return super().read_bytes(self._local(path), limit)

    def open_stream(self, path):
        self.reads.append(path)
        return super().open_stream(self._local(path))


def commit(delta: str, version: int, record: dict) -> None:
    """A Delta commit the engine would write: commitInfo.userMetadata carries its record."""
    log = os.path.join(delta, "_delta_log")
    os.makedirs(log, exist_ok=True)
    info = {"commitInfo": {"operation": "MERGE",
                           "userMetadata": json.dumps({STATE_KEY: record})}}
    with open(os.path.join(log, f"{version:020d}.json"), "w") as handle:
        handle.write(json.dumps(info) + "\n")


@pytest.fixture
def lake(tmp_path):
    """A table mirrored in two commits (files 1 then 2; file 1 moved to _ProcessedFiles/), a
    third file waiting, laid out under tmp_path/landing and tmp_path/wh."""
    folder = tmp_path / "landing" / "sales.schema" / "orders"
    (folder / mirroring.PROCESSED_FOLDER).mkdir(parents=True)
    (folder / mirroring.METADATA_FILE).write_text('{"keyColumns": ["id"]}')
    (folder / mirroring.PROCESSED_FOLDER / ONE).write_bytes(b"one")
    (folder / TWO).write_bytes(b"two")
    (folder / THREE).write_bytes(b"three")
    delta = str(tmp_path / "wh" / "sales" / "orders")
    for version, (name, sequence) in enumerate(((ONE, 1), (TWO, 2))):
        commit(delta, version, {"table": "sales.orders", "mode": "sequence", "files": [name],
                                "sequence": sequence, "keys": ["id"],
                                "landing_path": "mem://lake/landing/sales.schema/orders"})
    return tmp_path


def test_local_paths_resolve_and_a_uri_asks_for_a_session(lake):
    warehouse = str(lake / "wh")
    delta = os.path.join(warehouse, "sales", "orders")
    assert resolve_table("sales.orders", warehouse) == ("sales.orders", delta)
    assert resolve_table(delta, None) == ("sales.orders", delta)
    assert names_folder(delta) and names_folder("s3a://b/wh/sales/orders")
    assert not names_folder("sales.orders")
    with pytest.raises(MirrorspecError, match="no mirrored table sales.nope in"):
        resolve_table("sales.nope", warehouse)
    with pytest.raises(SessionNeeded):
        resolve_table("sales.orders", "s3a://b/wh")
    with pytest.raises(SessionNeeded):
        table_keys("s3a://b/wh/sales/orders", None)
    assert table_keys(delta, None) == ["id"]
    assert table_keys(delta, "a, b") == ["a", "b"]


def test_a_uri_warehouse_resolves_and_reads_through_its_filesystem(lake):
    store = MappedFS(lake)
    files = Files(remote=lambda path: store)
    assert resolve_table("sales.orders", "mem://lake/wh/", files) == (
        "sales.orders", "mem://lake/wh/sales/orders")
    assert resolve_table("mem://lake/wh/sales/orders", None, files)[0] == "sales.orders"
    with pytest.raises(MirrorspecError, match="no mirrored table dbo.orders in mem://lake/wh"):
        resolve_table("orders", "mem://lake/wh", files)
    with pytest.raises(MirrorspecError, match="is not a Delta table folder"):
        resolve_table("mem://lake/landing", None, files)
    assert table_keys("mem://lake/wh/sales/orders", None, store) == ["id"]


def test_history_pending_and_stage_read_a_uri_landing_folder(lake, tmp_path):
    store = MappedFS(lake)
    files = Files(remote=lambda path: store)
    delta = "mem://lake/wh/sales/orders"
    history = read_history(delta, None, files)  # the landing folder the engine recorded
    folder = "mem://lake/landing/sales.schema/orders"
    assert history.landing_path == folder
    assert history.files == [ONE, TWO] and history.missing == [] and history.from_log
    assert history.paths == [f"{folder}/{mirroring.PROCESSED_FOLDER}/{ONE}", f"{folder}/{TWO}"]
    assert pending_files(folder, history.files, store) == [THREE]
    with pytest.raises(SessionNeeded):  # the record names a URI: local files can't say
        read_history(str(lake / "wh" / "sales" / "orders"))

    scratch = tmp_path / "scratch"
    landing = stage(folder, history.paths, str(scratch), "sales", "orders", "time", store)
    copied = os.path.join(landing, "sales.schema", "orders")
    assert sorted(os.listdir(copied)) == [ONE, TWO, mirroring.METADATA_FILE]
    assert open(os.path.join(copied, TWO), "rb").read() == b"two"
    assert os.path.getmtime(os.path.join(copied, ONE)) < os.path.getmtime(
        os.path.join(copied, TWO))  # LastUpdateTime: applied order kept by the copies' times
    assert store.reads == [f"{folder}/{mirroring.METADATA_FILE}", *history.paths]


def test_a_local_table_and_a_moved_landing_folder_need_no_session(lake):
    delta = str(lake / "wh" / "sales" / "orders")
    folder = str(lake / "landing" / "sales.schema" / "orders")
    history = read_history(delta, folder)  # --landing-path wins over the recorded URI
    assert history.files == [ONE, TWO]
    assert pending_files(folder, history.files) == [THREE]
    os.remove(os.path.join(folder, mirroring.PROCESSED_FOLDER, ONE))
    assert read_history(delta, folder).missing == [ONE]


def test_local_problems_come_before_spark_and_uris_after(lake, monkeypatch):
    monkeypatch.setenv("MIRRORSPEC_LOG_DIR", str(lake / "logs"))
    started: list[str] = []

    def start():
        started.append("spark")
        return object()

    with pytest.raises(MirrorspecError, match="no mirrored table"):
        local_then_session(lambda files: locate_table("sales.nope", str(lake / "wh"), None,
                                                      files), start)
    assert started == []  # a local problem: said before Spark starts
    found, spark = local_then_session(
        lambda files: locate_table("sales.orders", str(lake / "wh"), None, files), start)
    assert (found.unique_id, spark, started) == ("sales.orders", None, [])
    seen = []

    def resolve(files):
        seen.append(files.remote is not None)
        if files.remote is None:
            files.fs("s3a://b/wh")  # a URI: needs the session
        return "resolved"

    assert local_then_session(resolve, start)[0] == "resolved"
    assert seen == [False, True] and started == ["spark"]

    def refused(files):
        if files.remote is None:
            files.fs("s3a://b/wh")
        raise RuntimeError("java.nio.file.AccessDeniedException: s3a://b/wh: 403 Forbidden")

    with pytest.raises(StorageError, match="could not reach the store: .*403 Forbidden") as err:
        local_then_session(refused, start)
    assert "profile's Spark settings" in (err.value.hint or "")
