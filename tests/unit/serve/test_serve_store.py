"""The files behind `mirrorspec serve`: staging outside the landing zone, atomic publication at
flush, ETag rules, 0-byte visibility, rename and listing order."""

from __future__ import annotations


import pytest

from mirrorspec.serve.codes import ServeError
from mirrorspec.serve.names import Names, Place
from mirrorspec.serve.store import Store

NAMES = Names("ws", "w-id", "db", "d-id")


def lz(*rel: str) -> Place:
    return Place("landing", "ws", "db.MountedRelationalDatabase", rel)


@pytest.fixture(params=["visible", "hidden"])
def store(tmp_path, request):
    s = Store(NAMES, tmp_path / "lz", tmp_path / "wh", tmp_path / "staging",
              lambda: {"tables.json": b'{"tables": []}'}, unflushed=request.param)
    (tmp_path / "lz").mkdir()
    (tmp_path / "wh").mkdir()
    yield s
    s.close()


def test_uncommitted_bytes_wait_outside_the_landing_zone(store, tmp_path):
    place = lz("t", "00000000000000000001.parquet")
    etag = store.create_file(place, None, None)
    store.append(place, 0, iter([b"abc", b"def"]))
    final = tmp_path / "lz" / "t" / "00000000000000000001.parquet"
    if store.hidden:
        assert not final.exists() and store.stat(place) is None
    else:
        assert final.read_bytes() == b"" and store.stat(place).etag == etag  # append: same ETag
    assert [p.read_bytes() for p in (tmp_path / "staging").iterdir()] == [b"abcdef"]
    new = store.flush(place, 6, f'"{etag}"', None)
    assert final.read_bytes() == b"abcdef" and new != etag
    assert list((tmp_path / "staging").iterdir()) == []


def test_flush_checks_position_and_etag(store):
    place = lz("t", "f.parquet")
    etag = store.create_file(place, None, None)
    store.append(place, 0, iter([b"abc"]))
    store.append(place, 5, iter([b"x"]))  # appends may come in any order (parallel uploads) …
    with pytest.raises(ServeError) as info:  # … but a flush needs them without a gap
        store.flush(place, 6, None, None)
    assert info.value.key == "invalid_flush_position"
    with pytest.raises(ServeError) as info:
        store.flush(place, 3, '"0x8DNOTTHEETAG"', None)
    assert info.value.key == "condition_not_met"
    store.flush(place, 3, etag, None)
    assert store.open_read(place)[1].read() == b"abc"
    with pytest.raises(ServeError) as info:  # upload_data(overwrite=False) on an existing file
        store.append(place, 3, iter([b"d"]))
        store.flush(place, 4, None, "*")
    assert info.value.key == "condition_not_met"


def test_parallel_appends_out_of_order(store):
    place = lz("t", "f.parquet")
    store.create_file(place, None, None)
    store.append(place, 4, iter([b"5678"]))
    store.append(place, 0, iter([b"1234"]))
    store.flush(place, 8, None, None)
    assert store.open_read(place)[1].read() == b"12345678"


def test_append_to_a_missing_file_is_path_not_found(store):
    with pytest.raises(ServeError) as info:
        store.append(lz("t", "new.parquet"), 0, iter([b"x"]))
    assert info.value.code_for(False).code == "PathNotFound"


def test_a_broken_append_leaves_nothing_staged(store):
    place = lz("t", "f.csv")
    store.create_file(place, None, None)

    def broken():
        yield b"partial"
        raise ConnectionResetError()

    with pytest.raises(ConnectionResetError):
        store.append(place, 0, broken())
    store.append(place, 0, iter([b"whole"]))
    store.flush(place, 5, None, None)
    assert store.open_read(place)[1].read() == b"whole"


def test_rename_moves_files_and_folders_and_refuses_what_it_must(store, tmp_path):
    tmp = lz("t", "_0001.tmp")
    store.create_file(tmp, None, None)
    store.append(tmp, 0, iter([b"data"]))
    store.flush(tmp, 4, None, None)
    store.rename(tmp, lz("t", "00000000000000000001.parquet"), "*", None)
    assert (tmp_path / "lz/t/00000000000000000001.parquet").read_bytes() == b"data"
    with pytest.raises(ServeError) as info:
        store.rename(tmp, lz("t", "x.parquet"), None, None)
    assert info.value.code_for(False).code == "SourcePathNotFound"
    with pytest.raises(ServeError) as info:
        store.rename(lz("t", "00000000000000000001.parquet"), lz("missing", "x.parquet"), None, None)
    assert info.value.code_for(False).code == "RenameDestinationParentPathNotFound"
    store.create_dir(lz("u"), None)
    with pytest.raises(ServeError) as info:
        store.rename(lz("u"), lz("t"), "*", None)
    assert info.value.code_for(False).code == "PathAlreadyExists"
    store.rename(lz("t"), lz("u", "t"), None, None)
    assert (tmp_path / "lz/u/t/00000000000000000001.parquet").exists()


def test_listing_is_in_byte_order_and_recursive(store):
    for name in ("b.parquet", "_m.json", "A.parquet", "0.parquet", "a/x.csv"):
        place = lz("t", *name.split("/"))
        store.create_file(place, None, None)
        store.flush(place, 0, None, None)
    page, more = store.list_page(lz(), recursive=True, after=None, size=100)
    names = [name.split("LandingZone/")[1] for name, _e in page]
    assert not more
    assert names == ["t", "t/0.parquet", "t/A.parquet", "t/_m.json", "t/a", "t/a/x.csv",
                     "t/b.parquet"]


def test_writes_outside_the_landing_zone_are_refused(store):
    for place, key in ((Place("tables", "ws", "db", ("dbo", "t", "x")), "read_only_area"),
                       (Place("monitoring", "ws", "db", ("tables.json",)), "read_only_area"),
                       (Place("outside", "ws", "db", ("Files", "Other", "x")), "managed_folder"),
                       (lz(), "managed_folder")):
        with pytest.raises(ServeError) as info:
            store.create_file(place, None, None)
        assert info.value.key == key
        assert info.value.code_for(False).status == 403
    with pytest.raises(ServeError):
        store.delete(lz(), recursive=True)


def test_delete_recursive_and_not(store, tmp_path):
    place = lz("t", "f.parquet")
    store.create_file(place, None, None)
    store.flush(place, 0, None, None)
    with pytest.raises(ServeError) as info:
        store.delete(lz("t"), recursive=False)
    assert info.value.code_for(False).code == "DirectoryNotEmpty"
    store.delete(lz("t"), recursive=True)
    assert not (tmp_path / "lz/t").exists()


def test_a_link_out_of_the_landing_zone_is_not_followed(store, tmp_path):
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "key.txt").write_text("s")
    (tmp_path / "lz" / "t").symlink_to(outside)
    with pytest.raises(ServeError) as info:
        store.open_read(lz("t", "key.txt"))
    assert info.value.key == "invalid_name"
    assert store.list_page(lz(), recursive=True, after=None, size=100) == ([], False)


def test_a_retried_append_overlapping_a_broken_one_wins(store):
    """An SDK retries an append whose first attempt is still streaming; the first then breaks.
    Its bytes never reach the staging file, whichever order the two finish in."""
    import threading

    place = lz("t", "f.parquet")
    store.create_file(place, None, None)
    started, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def broken():
        yield b"partial"
        started.set()
        release.wait(10)
        raise ConnectionResetError()

    def first():
        try:
            store.append(place, 0, broken())
        except ConnectionResetError as exc:
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    assert started.wait(10)
    store.append(place, 0, iter([b"whole"]))
    release.set()
    thread.join(10)
    assert len(errors) == 1
    store.flush(place, 5, None, None)
    assert store.open_read(place)[1].read() == b"whole"


def test_properties_follow_the_file_through_append_rename_and_go_with_a_rewrite(store):
    from mirrorspec.serve.properties import Props
    place = lz("t", "p.csv")
    store.create_file(place, None, None, Props(content_type="text/csv", metadata={"k": "v"}))
    store.append(place, 0, iter([b"abc"]))
    etag = store.flush(place, 3, None, None, props=Props(content_md5="bWQ1"))
    kept = store.props_of(store.stat(place))
    assert (kept.content_type, kept.metadata, kept.content_md5) == ("text/csv", {"k": "v"}, "bWQ1")
    store.append(place, 3, iter([b"d"]))  # an append to the committed file keeps them
    store.flush(place, 4, None, None)
    assert store.props_of(store.stat(place)).metadata == {"k": "v"}
    store.rename(place, lz("t", "q.csv"), None, None)
    assert store.props_of(store.stat(lz("t", "q.csv"))).content_type == "text/csv"
    new = store.set_properties(lz("t", "q.csv"), metadata={"n": "1"})
    assert new != etag and store.props_of(store.stat(lz("t", "q.csv"))).metadata == {"n": "1"}
    store.create_file(lz("t", "q.csv"), None, None)  # a rewrite starts bare
    store.flush(lz("t", "q.csv"), 0, None, None)
    assert store.props_of(store.stat(lz("t", "q.csv"))) is None
