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
    "/onelake/ws1/db1/Files/LandingZone/a%01b.parquet", "/onelake/ws1/db1/Files/LandingZone/a%00b",
    "/onelake/ws1/db1/Files/LandingZone/t%2F%2E%2E%2F%2E%2E%2Fx", "/onelake/ws1/db1/Files/a%7Fb",
    "/onelake/ws1/db1/Files/LandingZone/a%0Ab", "/onelake/ws1/db1/Files/LandingZone/a%EF%BF%BFb",
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


def test_an_encoded_slash_is_a_separator_as_azure_storage_reads_it():
    # the Go SDK escapes every '/' of a blob name (url.PathEscape); so does the Java SDK
    p = place("/onelake/ws1/db1.MountedRelationalDatabase%2FFiles%2FLandingZone%2Fs.schema%2Ft%2Fa.csv")
    assert (p.area, p.rel) == ("landing", ("s.schema", "t", "a.csv"))
    assert place("/onelake/ws1/db1/Files/LandingZone/t%2fa%20b.csv").rel == ("t", "a b.csv")
    # decoded once: %252F is a name holding '%2F', not a separator
    assert place("/onelake/ws1/db1/Files/LandingZone/t/a%252Fb").rel == ("t", "a%2Fb")


def test_a_path_without_the_account_segment_starts_with_the_served_workspace():
    # the JS SDK's rename: DataLakePathClient.move sets the URL path to /{fs}/{path}
    assert place_of(strip_account(decode_segments("/ws1/db1/Files/LandingZone/t/x"), "127.0.0.1",
                                  NAMES), NAMES).rel == ("t", "x")
    with pytest.raises(ServeError) as info:
        strip_account(decode_segments("/other/ws1/db1/Files"), "127.0.0.1", NAMES)
    assert info.value.code_for(False).code == "InvalidUri"


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
    # the JS and Go SDKs on a path-style URL put the account in the header
    ("/onelake/ws1/db1.MountedRelationalDatabase/Files/LandingZone/t/_x.parquet", "account-path"),
    ("/onelake/ws1/db1.MountedRelationalDatabase%2FFiles%2FLandingZone%2Ft%2F_x.parquet",
     "account-path"),
])
def test_the_rename_source_forms(header, form):
    segments, found = parse_rename_source(header, "127.0.0.1", NAMES)
    assert found == form
    p = place_of(segments, NAMES)
    assert (p.area, p.rel) == ("landing", ("t", "_x.parquet"))


@pytest.mark.parametrize("header", ["/ws1/db1/Files/LandingZone/../../etc/passwd",
                                    "/onelake/ws1/db1/Files/LandingZone/t%2F..%2F..%2F..%2Fx",
                                    "/ws1/db1/Files/LandingZone/a%01b"])
def test_rename_source_traversal_is_refused(header):
    with pytest.raises(ServeError) as info:
        parse_rename_source(header, "127.0.0.1", NAMES)
    assert info.value.key == "invalid_name"


def test_a_rename_source_on_another_host_is_refused():
    with pytest.raises(ServeError) as info:
        parse_rename_source("https://evil.example/onelake/ws1/db1/Files/LandingZone/t/x",
                            "127.0.0.1", NAMES)
    assert info.value.code_for(False).code == "InvalidSourceUri"
    # localhost and 127.0.0.1 are one host
    segments, _f = parse_rename_source("http://localhost:1/onelake/ws1/db1/Files/LandingZone/t/x",
                                       "127.0.0.1", NAMES)
    assert segments[-1] == "x"


def test_split_name_drops_the_item_type_and_gives_stable_guids():
    assert split_name("db.MountedRelationalDatabase", "item")[0] == "db"
    assert split_name("db", "item")[1] == split_name("DB.MountedRelationalDatabase", "item")[1]
    guid = "6e1c3f9e-0d7a-4c55-9a43-2b1e5c7d8a11"
    assert split_name(f"ws={guid}", "workspace") == ("ws", guid)
    with pytest.raises(ValueError):
        split_name("ws=not-a-guid", "workspace")
