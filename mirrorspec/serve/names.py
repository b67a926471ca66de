"""URL → place: the account, workspace, item and area a request path names, refusing unsafe
segments (`..`, `.`, `\\`, NUL, control characters) before anything touches the disk.

A path is percent-decoded once and then split on `/`, as Azure Storage reads it: `%2F` is a
separator (the Go SDK escapes every `/` of a blob name with `url.PathEscape`, the Java SDK on both
dialects), so `a%2F..%2Fb` is the segments `a`, `..`, `b` and refused for its `..`."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote, urlsplit

from mirrorspec.serve.codes import ServeError

ACCOUNT = "onelake"
# Hadoop ABFS (3.4.2) derives the path-style account from hosts matching
# `[^.]+\.dfs\.(preprod\.)?core\.windows\.net` only (UriUtils.ABFS_URI_REGEX); for
# onelake.dfs.fabric.microsoft.com it sends `/null/`, which is therefore accepted as `onelake`.
ABFS_NULL_ACCOUNT = "null"
ITEM_TYPE = "MountedRelationalDatabase"
# FIELD §11 (docs/onelake.md): `fab` resolves `.MirroredDatabase`, real OneLake paths did not
MISLEADING_ITEM_TYPES = ("mirroreddatabase",)
RESERVED_WORKSPACE_NAMES = (ACCOUNT, ABFS_NULL_ACCOUNT, "v1")
_NAMESPACE = uuid.UUID("6f1c3f9e-0d7a-4c55-9a43-2b1e5c7d8a10")
# C0 controls and DEL: a name holding one makes every later List Blobs XML unparseable
# (XML 1.0 has no escape for most of them); U+FFFE/U+FFFF are not XML characters either
_UNSAFE_CHARACTER = re.compile("[\x00-\x1f\x7f\ufffe\uffff\\\\]")

# area → the path segments under the item that lead to it
AREA_PREFIX = {
    "files": ("Files",),
    "landing": ("Files", "LandingZone"),
    "monitoring": ("Files", "Monitoring"),
    "tables": ("Tables",),
}


def stable_id(kind: str, name: str) -> str:
    """The GUID alias of a workspace or item name (stable across runs)."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{name.lower()}"))


def looks_like_guid(text: str) -> bool:
    """True for a GUID in any of its spellings (`8-4-4-4-12` hex, braces, no dashes)."""
    try:
        uuid.UUID(text.strip())
    except ValueError:
        return False
    return True


def name_problem(name: str, kind: str) -> str | None:
    """Why `name` can't be a workspace's or an item's display name here, or None.

    Paths and the `/v1` API take a GUID or a name in the same place, and a GUID is looked up
    first: a name shaped like one could never be reached by name (or, were names matched
    first, would take the lookups of the item whose id it spells). A workspace may not be
    named like the path-style account (`onelake`, ABFS's `null`) or the API's root (`v1`):
    a path starting with the workspace instead of the account would read as them."""
    if looks_like_guid(name):
        return f"the {kind} name {name!r} is shaped like a GUID (ids and names share the paths)"
    if kind == "workspace" and name.lower() in RESERVED_WORKSPACE_NAMES:
        return (f"the workspace name {name!r} is reserved here ({', '.join(RESERVED_WORKSPACE_NAMES)}"
                ": a path starting with the workspace would read as the account or the API)")
    head, dot, suffix = name.rpartition(".")
    if kind == "item" and dot and suffix.lower() in (ITEM_TYPE.lower(), *MISLEADING_ITEM_TYPES):
        return (f"the item name {name!r} ends with the type a path adds to a name "
                f"({head}.{ITEM_TYPE} addresses the item {head!r})")
    return None


def split_name(value: str, kind: str) -> tuple[str, str]:
    """`NAME[=GUID]` → (name, guid); the item's type suffix is dropped from its name."""
    name, _, guid = value.partition("=")
    name = name.strip()
    if kind == "item" and "." in name:
        head, _, suffix = name.rpartition(".")
        if suffix.lower() in (ITEM_TYPE.lower(), *MISLEADING_ITEM_TYPES):
            name = head
    if not name or "/" in name:
        raise ValueError(f"--{kind} {value!r}: give NAME or NAME=GUID")
    problem = name_problem(name, kind)
    if problem is not None:
        hint = "give NAME=GUID" if looks_like_guid(name) else "choose another name"
        raise ValueError(f"--{kind} {value!r}: {problem}; {hint}")
    if guid:
        guid = str(uuid.UUID(guid.strip()))
    return name, guid or stable_id(kind, name)


@dataclass(frozen=True)
class Names:
    """The one workspace and item this endpoint serves, by name or GUID."""

    workspace: str
    workspace_id: str
    item: str
    item_id: str

    @property
    def item_path(self) -> str:
        return f"{self.item}.{ITEM_TYPE}"

    def is_workspace(self, segment: str) -> bool:
        s = segment.lower()
        return s in (self.workspace.lower(), self.workspace_id)

    def is_item(self, segment: str) -> bool:
        s = segment.lower()
        return s in (self.item.lower(), self.item_id) or s.startswith(self.item.lower() + ".")


class Workspaces(Protocol):
    """What tells a workspace segment (`Names`, or every workspace `serve --root` hosts)."""

    def is_workspace(self, segment: str) -> bool: ...


@dataclass(frozen=True)
class Place:
    """Where a request path points: `area` is one of account, workspace, item, files, landing,
    monitoring, tables or outside (any other folder of the item); `rel` the segments below the
    area's root; `workspace`/`item` as the client spelled them."""

    area: str
    workspace: str = ""
    item: str = ""
    rel: tuple[str, ...] = ()

    @property
    def ws_path(self) -> str:
        """The workspace-relative name (ADLS listing names, rename sources)."""
        if self.area in ("account", "workspace"):
            return ""
        prefix = AREA_PREFIX.get(self.area, ())
        return "/".join((self.item, *prefix, *self.rel))

    def child(self, name: str) -> "Place":
        return Place(self.area, self.workspace, self.item, (*self.rel, name))


def decode_segments(raw_path: str) -> list[str]:
    """The non-empty segments of a percent-encoded path, decoded once then split on `/`
    (an encoded `%2F` separates like `/`); unsafe segments refused."""
    try:
        decoded = unquote(raw_path, errors="strict")
    except UnicodeDecodeError:
        raise ServeError("invalid_name", f"the path {raw_path!r} is not UTF-8") from None
    return plain_segments(decoded)


def plain_segments(text: str) -> list[str]:
    """The segments of an already-decoded path (a `directory=` query value, a blob name),
    checked alike: `..`, `.`, `\\`, NUL and control characters are refused."""
    segments = [s for s in text.split("/") if s]
    for segment in segments:
        if segment in (".", "..") or _UNSAFE_CHARACTER.search(segment):
            raise ServeError("invalid_name", f"the path segment {segment!r} is not allowed "
                             "(no '.', '..', '\\\\' or control characters)")
    return segments


def strip_account(segments: list[str], host: str, names: Workspaces | None = None) -> list[str]:
    """Segments after the account: path-style (`/onelake/...`) unless the Host is `onelake.*`.
    A path that starts with the served workspace has no account segment: the JS SDK sends a
    rename there (`DataLakePathClient.move` sets the whole URL path to `/{fs}/{path}`)."""
    if host.lower().startswith(ACCOUNT + "."):
        return segments
    if not segments:
        return segments
    if segments[0].lower() in (ACCOUNT, ABFS_NULL_ACCOUNT):
        return segments[1:]
    if names is not None and names.is_workspace(segments[0]):
        return segments
    raise ServeError("unknown_account", f"account {segments[0]!r} is not {ACCOUNT!r} "
                     f"(path-style URLs start with /{ACCOUNT}/)")


def place_of(segments: list[str], names: Names) -> Place:
    """The Place of workspace-level segments ([workspace, item, area, ...])."""
    if not segments:
        return Place("account")
    ws = segments[0]
    if not names.is_workspace(ws):
        raise ServeError("filesystem_not_found", f"workspace {ws!r} is not served here "
                         f"(serving {names.workspace!r} = {names.workspace_id})",
                         blob="container_not_found")
    if len(segments) == 1:
        return Place("workspace", ws)
    item = segments[1]
    if not names.is_item(item):
        raise ServeError("item_not_found", f"item {item!r} is not served here (serving "
                         f"{names.item_path!r} = {names.item_id})", blob="blob_not_found")
    rest = segments[2:]
    if not rest:
        return Place("item", ws, item)
    if rest[0] == "Tables":
        return Place("tables", ws, item, tuple(rest[1:]))
    if rest[0] == "Files":
        if len(rest) == 1:
            return Place("files", ws, item)
        if rest[1] == "LandingZone":
            return Place("landing", ws, item, tuple(rest[2:]))
        if rest[1] == "Monitoring":
            return Place("monitoring", ws, item, tuple(rest[2:]))
    return Place("outside", ws, item, tuple(rest))


def parse_rename_source(value: str, host: str,
                        names: Names | None = None) -> tuple[list[str], str]:
    """The workspace-level segments an `x-ms-rename-source` names, and its form: `path`
    (`/{ws}/{path}`, no account), `account-path` (`/onelake/{ws}/{path}`: the JS and Go SDKs on
    a path-style URL), `url` (a full URL, path-style account included) and any of them with
    `+query` when a `?...` suffix (SAS, MDB's stray `?resource=file`) was stripped."""
    value = value.strip()
    if "://" in value:
        segments = source_url_segments(value, host, names, "x-ms-rename-source")
        return segments, "url+query" if urlsplit(value).query else "url"
    path, sep, _query = value.partition("?")
    segments, form = decode_segments(path), "path"
    if (segments and segments[0].lower() in (ACCOUNT, ABFS_NULL_ACCOUNT)
            and not (names is not None and names.is_workspace(segments[0]))):
        segments, form = segments[1:], "account-path"
    return segments, form + "+query" if sep else form


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def source_url_segments(url: str, host: str, names: Names | None = None,
                        header: str = "x-ms-copy-source") -> list[str]:
    """The workspace-level segments of a source URL (a rename's or Copy Blob's); a URL on
    another host is refused: this endpoint copies and moves only within itself. A URL that
    does not parse (`http://[::1`) is 400 InvalidHeaderValue, Azure's answer for a malformed
    copy source (Azure/azure-sdk-for-go#915)."""
    try:
        parts = urlsplit(url)
        source_host = (parts.hostname or "").lower()
    except ValueError as exc:  # an unclosed IPv6 literal, a bad port
        raise ServeError("invalid_header", f"{header} {url[:80]!r}: {exc}") from None
    here = host.lower().strip("[]")
    same = (source_host == here or (source_host in _LOOPBACK and here in _LOOPBACK)
            or (source_host.startswith(ACCOUNT + ".") and here.startswith(ACCOUNT + ".")))
    if source_host and here and not same:
        raise ServeError("invalid_source_uri", f"the source {url!r} is on another host than "
                         f"this endpoint ({host})")
    return strip_account(decode_segments(parts.path), source_host or host, names)
