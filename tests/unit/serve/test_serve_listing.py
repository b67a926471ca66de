"""`mirrorspec serve`'s listings page from a sorted cursor: a page stats only its own entries
(a 5,000-entry folder used to be walked and stat'ed whole for every page), in byte order of the
full names, with List Blobs' prefixes and delimiter."""

from __future__ import annotations

import pytest

from mirrorspec.serve.names import Names, Place
from mirrorspec.serve.store import Store

NAMES = Names("ws", "w-id", "db", "d-id")
ITEM = "db.MountedRelationalDatabase"
LZ = f"{ITEM}/Files/LandingZone"


def lz(*rel: str) -> Place:
    return Place("landing", "ws", ITEM, rel)


@pytest.fixture
def store(tmp_path):
    (tmp_path / "lz").mkdir()
    (tmp_path / "wh").mkdir()
    s = Store(NAMES, tmp_path / "lz", tmp_path / "wh", tmp_path / "staging", lambda: {})
    yield s
    s.close()


def counting(store, monkeypatch) -> list[Place]:
    calls: list[Place] = []
    real = store.stat

    def stat(place):
        calls.append(place)
        return real(place)

    monkeypatch.setattr(store, "stat", stat)
    return calls


def test_a_page_stats_only_its_own_entries(store, tmp_path, monkeypatch):
    folder = tmp_path / "lz" / "t"
    folder.mkdir()
    for i in range(300):
        (folder / f"{i:020d}.parquet").write_bytes(b"x")
    calls = counting(store, monkeypatch)
    names, after = [], None
    while True:
        calls.clear()
        page, more = store.list_page(lz("t"), recursive=False, after=after, size=50)
        assert len(calls) == len(page) <= 50  # not 300 stats for every page
        names += [name for name, _e in page]
        if not more:
            break
        after = page[-1][0].encode()
    assert names == [f"{LZ}/t/{i:020d}.parquet" for i in range(300)]


def test_recursive_pages_are_in_byte_order_of_full_names(store, tmp_path):
    root = tmp_path / "lz"
    for rel in ("a/x", "a-b", "a/y/z", "B", "_c"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"1")
    expected = sorted(["a", "a/x", "a/y", "a/y/z", "a-b", "B", "_c"], key=str.encode)
    names, after = [], None
    while True:
        page, more = store.list_page(lz(), recursive=True, after=after, size=2)
        names += [name.removeprefix(LZ + "/") for name, _e in page]
        if not more:
            break
        after = page[-1][0].encode()
    assert names == expected  # a-b sorts before a/x ('-' < '/'): a tree walk would not


def test_blob_prefixes_and_delimiters(store, tmp_path):
    root = tmp_path / "lz"
    for rel in ("t/a.csv", "t/ab/1.csv", "t/b.csv", "u/c.csv"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"1")
    page, more = store.list_page(lz("t"), recursive=False, after=None, size=10,
                                 prefix=f"{LZ}/t/a", dirs_as_prefixes=True)
    assert [(n.removeprefix(LZ + "/"), e is None) for n, e in page] == [
        ("t/a.csv", False), ("t/ab/", True)]
    page, _m = store.list_page(lz(), recursive=True, after=None, size=10, prefix=f"{LZ}/t/ab")
    assert [n.removeprefix(LZ + "/") for n, _e in page] == ["t/ab", "t/ab/1.csv"]
    page, _m = store.list_page(lz(), recursive=True, after=None, size=10,
                               start=f"{LZ}/t/b.csv")
    assert [n.removeprefix(LZ + "/") for n, _e in page] == ["t/b.csv", "u", "u/c.csv"]


def test_a_name_xml_cannot_carry_is_listed_encoded(store, tmp_path):
    # put on disk by someone else (serve refuses such names): the listing must still parse
    import xml.etree.ElementTree as ET

    from mirrorspec.serve import wire
    (tmp_path / "lz" / "a\x01b.csv").write_bytes(b"1")
    page, _more = store.list_page(lz(), recursive=True, after=None, size=10)
    body = wire.blob_listing("ws", "https://h/onelake/", [e for _n, e in page if e], [], {}, None)
    name = ET.fromstring(body).find("Blobs/Blob/Name")
    assert (name.get("Encoded"), name.text) == ("true", f"{LZ}/a%01b.csv")
