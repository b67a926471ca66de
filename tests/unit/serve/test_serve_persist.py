"""What serve keeps beside the bytes (mirrorspec/serve/persist.py): properties, metadata and
leases survive a restart (a new Store on the same folders), a lease's expiry is computed across
the restart from wall-clock time, rows of files gone are dropped; a published file's
Last-Modified is its commit's time; a Put Block List is bounded by --max-blob-size and the
disk's free space (mirrorspec/serve/blocks.py)."""

from __future__ import annotations

import time
from collections import namedtuple
from pathlib import Path

import pytest

from mirrorspec.serve import blocks
from mirrorspec.serve.codes import ServeError
from mirrorspec.serve.leases import Leases
from mirrorspec.serve.names import Names, Place
from mirrorspec.serve.persist import StateFile, state_path
from mirrorspec.serve.properties import Props
from mirrorspec.serve.store import Store

NAMES = Names("ws", "w-id", "db", "d-id")
LEASE = "11111111-1111-1111-1111-111111111111"


def lz(*rel: str) -> Place:
    return Place("landing", "ws", "db.MountedRelationalDatabase", rel)


def open_store(tmp_path: Path, **kwargs) -> Store:
    """A store as serve opens it: its state file beside the landing zone."""
    landing = tmp_path / "lz"
    landing.mkdir(exist_ok=True)
    (tmp_path / "wh").mkdir(exist_ok=True)
    return Store(NAMES, landing, tmp_path / "wh", tmp_path / f"staging{time.monotonic_ns()}",
                 lambda: {}, state=state_path(landing), **kwargs)


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_properties_metadata_and_leases_survive_a_restart(tmp_path):
    store = open_store(tmp_path)
    typed, plain, leased = lz("t", "typed.csv"), lz("t", "plain.csv"), lz("t", "leased.csv")
    store.put_blob(typed, iter([b"a,b\n"]), None, None,
                   Props(content_type="text/csv", metadata={"Stage": "raw"}))
    store.put_blob(plain, iter([b"x"]), None, None)
    store.set_properties(plain, metadata={"owner": "etl"})
    store.put_blob(leased, iter([b"y"]), None, None)
    store.leases.act(leased.rel, "acquire", None, LEASE, "-1", None)
    before = {p: store.props_of(store.stat(p)) for p in (typed, plain)}
    store.close()

    again = open_store(tmp_path)
    try:
        for place, props in before.items():
            assert again.props_of(again.stat(place)) == props
        assert again.props_of(again.stat(typed)).metadata == {"Stage": "raw"}
        assert again.props_of(again.stat(plain)).metadata == {"owner": "etl"}
        assert again.leases.headers(leased.rel)["x-ms-lease-state"] == "leased"
        with pytest.raises(ServeError) as info:  # the lease still guards the file's writes
            again.leases.check_write(leased.rel, None)
        assert info.value.key == "lease_id_missing"
        again.leases.check_write(leased.rel, LEASE)
    finally:
        again.close()


def test_a_write_or_a_delete_drops_what_was_kept(tmp_path):
    store = open_store(tmp_path)
    place = lz("t", "f.csv")
    store.put_blob(place, iter([b"1"]), None, None, Props(metadata={"v": "1"}))
    store.put_blob(place, iter([b"22"]), None, None)  # a new version: its own (none)
    gone = lz("t", "gone.csv")
    store.put_blob(gone, iter([b"1"]), None, None, Props(metadata={"v": "2"}))
    store.leases.act(gone.rel, "acquire", None, LEASE, "-1", None)
    store.delete(gone, recursive=False)
    store.close()
    again = open_store(tmp_path)
    try:
        assert again.props_of(again.stat(place)).metadata == {}  # the second version's
        assert again.leases.headers(gone.rel)["x-ms-lease-state"] == "available"
    finally:
        again.close()
    state = StateFile(state_path(tmp_path / "lz"))
    try:
        assert len(state.all_props()) == 1 and state.all_leases() == {}
    finally:
        state.close()


def test_rows_of_files_removed_while_serve_was_down_are_dropped(tmp_path):
    store = open_store(tmp_path)
    place = lz("t", "f.csv")
    store.put_blob(place, iter([b"1"]), None, None, Props(metadata={"v": "1"}))
    store.leases.act(place.rel, "acquire", None, LEASE, "-1", None)
    store.close()
    (tmp_path / "lz" / "t" / "f.csv").unlink()  # the engine, or a person, removed it
    again = open_store(tmp_path)
    again.close()
    state = StateFile(state_path(tmp_path / "lz"))
    try:
        assert state.all_props() == {} and state.all_leases() == {}
    finally:
        state.close()


def test_a_fixed_lease_expires_when_it_would_have_across_a_restart(tmp_path):
    """Monotonic clocks start again with the process: the state file keeps wall-clock times,
    and the next process turns them into its own clock."""
    state = StateFile(tmp_path / "state.sqlite")
    key = ("t", "f.csv")
    first = Leases(clock=Clock(500.0), wall=Clock(1_000_000.0), state=state)
    first.act(key, "acquire", None, LEASE, "15", None)
    breaking = ("t", "g.csv")
    first.act(breaking, "acquire", None, LEASE, "-1", None)
    first.act(breaking, "break", None, None, None, "30")
    state.close()

    state = StateFile(tmp_path / "state.sqlite")
    mono, wall = Clock(7.0), Clock(1_000_010.0)  # 10 s later, a new monotonic origin
    second = Leases(clock=mono, wall=wall, state=state)
    assert second.headers(key)["x-ms-lease-state"] == "leased"
    assert second.headers(breaking)["x-ms-lease-state"] == "breaking"
    mono.now, wall.now = 11.9, 1_000_014.9  # 14.9 s after the acquire
    assert second.headers(key)["x-ms-lease-state"] == "leased"
    mono.now, wall.now = 12.1, 1_000_015.1  # 15.1 s: a 15 s lease has expired
    assert second.headers(key)["x-ms-lease-state"] == "expired"
    assert second.headers(breaking)["x-ms-lease-state"] == "breaking"
    mono.now = 27.1  # 30.1 s after the break
    assert second.headers(breaking)["x-ms-lease-state"] == "broken"
    state.close()


def test_last_modified_is_the_flush_not_the_last_append(tmp_path):
    """azcopy sync compares a local file's mtime with the blob's Last-Modified: the service's
    is the commit's time. A flush long after the last append must not read older."""
    store = open_store(tmp_path)
    try:
        place = lz("t", "f.csv")
        store.create_file(place, None, None)
        store.append(place, 0, iter([b"abc"]))
        flushed_after = time.time_ns()
        store.flush(place, 3, None, None)
        assert (tmp_path / "lz" / "t" / "f.csv").stat().st_mtime_ns >= flushed_after
        put_after = time.time_ns()
        store.put_blob(lz("t", "g.csv"), iter([b"x"]), None, None)
        assert (tmp_path / "lz" / "t" / "g.csv").stat().st_mtime_ns >= put_after
    finally:
        store.close()


def test_a_block_list_is_bounded_by_max_blob_size_and_free_space(tmp_path, monkeypatch):
    store = open_store(tmp_path, max_blob_size=1000)
    try:
        place = lz("t", "big.bin")
        store.blocks.put(place, "b1", iter([b"x" * 600]))
        with pytest.raises(ServeError) as info:  # 2 × 600 bytes from one staged block
            store.blocks.commit(place, ["b1", "b1"], None, None)
        assert info.value.key == "blob_too_large" and "--max-blob-size 1000" in info.value.message
        assert not (tmp_path / "lz" / "t" / "big.bin").exists()
        usage = namedtuple("usage", "total used free")
        monkeypatch.setattr(blocks.shutil, "disk_usage", lambda _p: usage(10**6, 10**6, 500))
        with pytest.raises(ServeError) as info:  # within the limit, over the free space
            store.blocks.commit(place, ["b1"], None, None)
        assert info.value.key == "blob_too_large" and "500 bytes free" in info.value.message
        monkeypatch.undo()
        store.blocks.commit(place, ["b1"], None, None)
        assert (tmp_path / "lz" / "t" / "big.bin").read_bytes() == b"x" * 600
    finally:
        store.close()


def test_an_unreadable_state_file_is_set_aside_and_serve_starts_from_none(tmp_path):
    path = state_path(tmp_path / "lz")
    path.parent.mkdir()
    path.write_bytes(b"not a database, a machine crash's leftovers" * 100)
    store = open_store(tmp_path)
    try:
        assert store.state.discarded and path.with_name("state.sqlite.unreadable").exists()
        place = lz("t", "f.csv")
        store.put_blob(place, iter([b"1"]), None, None, Props(metadata={"v": "1"}))
        assert store.props_of(store.stat(place)).metadata == {"v": "1"}
    finally:
        store.close()
