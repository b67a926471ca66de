"""URL → place for `mirrorspec serve`: path safety, the account segment, names and GUIDs,
and the three forms of x-ms-rename-source."""

from __future__ import annotations

import pytest

from mirrorspec.serve.codes import ServeError
from mirrorspec.serve.names import (Names, decode_segments, parse_rename_source, place_of,
                                    split_name, strip_account)

WS, WS_ID = split_name("ws1", "workspace")
ITEM, ITEM_ID = split_name("db1.MountedRelationalDatabase", "item")
NAMES = Names(WS, WS_ID, ITEM, ITEM_ID)


def place(path: str, host: str = "127.0.0.1"):
    return place_of(strip_account(decode_segments(path), host), NAMES)


@pytest.mark.parametrize("path", [
    "/onelake/ws1/db1/Files/LandingZone/../x", "/onelake/ws1/db1/Files/LandingZone/a%2F..%2Fb",
    "/onelake/ws1/db1/Files/LandingZone/a%2fb", "/onelake/ws1/db1/Files/LandingZone/a%00b",
    "/onelake/ws1/db1/Files/LandingZone/%2E%2E/x", "/onelake/ws1/db1/Files/LandingZone/a%5Cb",
    "/onelake/ws1/db1/Files/LandingZone/%ff",
])
def test_unsafe_segments_are_invalid_resource_names(path):
    with pytest.raises(ServeError) as info:
        place(path)
    assert info.value.key == "invalid_name"
    assert info.value.code_for(False).code == "InvalidResourceName"


def test_areas_and_workspace_relative_names():
    p = place("/onelake/ws1/db1.MountedRelationalDatabase/Files/LandingZone/s.schema/t/a%20b.parquet")
    assert (p.area, p.rel) == ("landing", ("s.schema", "t", "a b.parquet"))
    assert p.ws_path == "db1.MountedRelationalDatabase/Files/LandingZone/s.schema/t/a b.parquet"
    assert place("/onelake/ws1/db1.MountedRelationalDatabase/Tables/dbo/t").area == "tables"
    assert place("/onelake/ws1/db1.MountedRelationalDatabase/Files/Monitoring/tables.json").rel == (
        "tables.json",)
    assert place("/onelake/ws1/db1.MountedRelationalDatabase/Files/Other").area == "outside"
    assert place("/onelake/ws1").area == "workspace"


def test_names_guids_and_item_types_case_insensitively():
    for path in (f"/onelake/{WS_ID}/{ITEM_ID}/Files", "/onelake/WS1/DB1.mountedrelationaldatabase/Files",
                 "/onelake/ws1/db1.MirroredDatabase/Files"):
        assert place(path).area == "files"
    with pytest.raises(ServeError) as info:
        place("/onelake/other/db1/Files")
    assert info.value.code_for(False).code == "FilesystemNotFound"
    assert info.value.code_for(True).code == "ContainerNotFound"
    with pytest.raises(ServeError) as info:
        place("/onelake/ws1/db2.MountedRelationalDatabase/Files")
    assert info.value.code_for(True).code == "BlobNotFound"


def test_account_segment_is_path_style_unless_the_host_is_onelake():
    assert place("/ws1/db1/Files", host="onelake.dfs.fabric.microsoft.com").area == "files"
    with pytest.raises(ServeError) as info:
        place("/otheraccount/ws1/db1/Files")
    assert info.value.code_for(False).code == "InvalidUri"


@pytest.mark.parametrize("header, form", [
    ("/ws1/db1.MountedRelationalDatabase/Files/LandingZone/t/_x.parquet", "path"),
    ("/ws1/db1.MountedRelationalDatabase/Files/LandingZone/t/_x.parquet?sv=2020&sig=abc", "path+query"),
    ("https://127.0.0.1:4443/onelake/ws1/db1.MountedRelationalDatabase/Files/LandingZone/t/_x.parquet",
     "url"),
    ("https://127.0.0.1:4443/onelake/ws1/db1.MountedRelationalDatabase/Files/LandingZone/t/_x.parquet"
     "?resource=file", "url+query"),
])
def test_the_three_rename_source_forms(header, form):
    segments, found = parse_rename_source(header, "127.0.0.1")
    assert found == form
    p = place_of(segments, NAMES)
    assert (p.area, p.rel) == ("landing", ("t", "_x.parquet"))


def test_rename_source_traversal_is_refused():
    with pytest.raises(ServeError) as info:
        parse_rename_source("/ws1/db1/Files/LandingZone/../../etc/passwd", "127.0.0.1")
    assert info.value.key == "invalid_name"


def test_split_name_drops_the_item_type_and_gives_stable_guids():
    assert split_name("db.MountedRelationalDatabase", "item")[0] == "db"
    assert split_name("db", "item")[1] == split_name("DB.MountedRelationalDatabase", "item")[1]
    guid = "6e1c3f9e-0d7a-4c55-9a43-2b1e5c7d8a11"
    assert split_name(f"ws={guid}", "workspace") == ("ws", guid)
    with pytest.raises(ValueError):
        split_name("ws=not-a-guid", "workspace")
