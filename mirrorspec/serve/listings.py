"""The listing requests of the handler: List Filesystems / List Containers on the account, List
Paths (DFS JSON) and List Blobs (Blob XML) on a workspace or below, one page each from a cursor,
merged over the items a `serve --root` workspace holds. A mixin of `handler.Handler` (its
request state: `query`, `segments`, `server`, `respond`)."""

from __future__ import annotations

import json
from typing import Any

from mirrorspec.serve import wire
from mirrorspec.serve.codes import ServeError
from mirrorspec.serve.names import Place, place_of, plain_segments
from mirrorspec.serve.store import Entry


class Listings:
    query: dict[str, str]
    segments: list[str]
    headers: Any
    server: Any

    def respond(self, status: int, headers: dict[str, str] | None = None, body: Any = None,
                length: int | None = None) -> None:
        raise NotImplementedError  # the handler's

    def _list_workspaces(self) -> None:
        """List Filesystems (`?resource=account`) or List Containers (`?comp=list`): every
        workspace served."""
        services = getattr(self.server, "services", None)
        names = services.workspace_names() if services is not None else \
            [self.server.names.workspace]
        etag, modified = '"0x8D0000000000000"', wire.http_date(self.server.store.started)
        if self.query.get("resource", "").lower() == "account":
            doc = {"filesystems": [{"name": name, "lastModified": modified,
                                    "etag": etag.strip('"')} for name in names]}
            self.respond(200, {"Content-Type": "application/json;charset=utf-8"},
                         json.dumps(doc).encode())
        elif self.query.get("comp", "").lower() == "list":
            self.respond(200, {"Content-Type": "application/xml"},
                         wire.container_listing(names, etag, modified))
        else:
            raise ServeError("unsupported", "the account root answers only ?resource=account "
                             "and ?comp=list")

    def _page_size(self) -> int:
        return max(1, min(self.server.config.page_size, query_int(self.query, "maxresults", 5000)))

    def _list_paths(self, place: Place) -> None:
        """D9: on the workspace with `directory=`, or on a deeper path (the FT-SDK form)."""
        segments = self.segments + plain_segments(self.query.get("directory", ""))
        servers = self._servers_under(segments)
        if not servers:  # a workspace that holds no mirrored database yet
            self.respond(200, {"Content-Type": "application/json;charset=utf-8"},
                         wire.dfs_listing([]))
            return
        base = place_of(segments, servers[0].names)
        entry = servers[0].store.stat(base)
        if entry is None:
            raise ServeError("path_not_found", f"the directory {base.ws_path or '/'} does not exist")
        recursive = self.query.get("recursive", "false").lower() == "true"
        size = self._page_size()
        if entry.is_dir:
            after = cursor(self.query.get("continuation"))
            page, more = _merged([s.store.list_page(place_of(segments, s.names), recursive,
                                                    after, size) for s in servers], size)
            found = [e for _n, e in page if e is not None]
            token = wire.encode_token(page[-1][0]) if more and page else None
        else:  # listing a file lists that file (ADLS; ABFS's listStatus of a file relies on it)
            found, token = wire.page([entry], cursor(self.query.get("continuation")), size)
        headers = {"Content-Type": "application/json;charset=utf-8"}
        if token:
            headers["x-ms-continuation"] = token
        self.respond(200, headers, wire.dfs_listing(found))

    def _list_blobs(self, place: Place) -> None:
        """B3: List Blobs, flat (recursive, directories as hdi_isfolder blobs) or by delimiter,
        one page from the cursor (`marker`)."""
        if place.area != "workspace":
            raise ServeError("unsupported", "List Blobs is a container (workspace) operation",
                             blob="unsupported")
        prefix = self.query.get("prefix", "")
        delimiter = self.query.get("delimiter", "")
        folder = prefix.rpartition("/")[0]
        segments = self.segments + plain_segments(folder)
        listings, stores = [], {}
        size = self._page_size()
        for server in self._servers_under(segments):
            try:
                base = place_of(segments, server.names)
            except ServeError:
                continue
            store = server.store
            if (stat := store.stat(base)) is not None and stat.is_dir:
                found, more = store.list_page(
                    base, recursive=not delimiter, after=cursor(self.query.get("marker")),
                    size=size, prefix=prefix,
                    start=self.query.get("startfrom", ""),  # object_store sends it
                    dirs_as_prefixes=bool(delimiter))
                listings.append((found, more))
                stores.update({name: store for name, _e in found})
        page, more = _merged(listings, size)
        next_marker = wire.encode_token(page[-1][0]) if more and page else None
        include = {i.strip().lower() for i in self.query.get("include", "").split(",")}
        props = {e.name: stores[n].props_of(e) for n, e in page if e is not None}
        host = self.headers.get("Host") or "127.0.0.1"
        scheme = "https" if self.server.config.tls else "http"
        body = wire.blob_listing(place.workspace, f"{scheme}://{host}/onelake/",
                                 [e for _n, e in page if e is not None],
                                 [n for n, e in page if e is None], self.query, next_marker,
                                 props, with_metadata="metadata" in include)
        self.respond(200, {"Content-Type": "application/xml"}, body)

    def _servers_under(self, segments: list[str]) -> list[Any]:
        """The server views a listing of `segments` reads: the item's own, or each item's at a
        workspace that `serve --root` fills with several."""
        services = getattr(self.server, "services", None)
        return services.servers_under(self.server, segments) if services is not None \
            else [self.server]


def _merged(listings: list[tuple[list[tuple[str, Entry | None]], bool]],
            size: int) -> tuple[list[tuple[str, Entry | None]], bool]:
    """One page from the pages of several stores (each in byte order from the same cursor):
    the first `size` names of them all, and whether more follow."""
    if len(listings) == 1:
        return listings[0]
    names = sorted((row for page, _more in listings for row in page),
                   key=lambda row: row[0].encode("utf-8", "surrogateescape"))
    return names[:size], len(names) > size or any(more for _page, more in listings)


def query_int(query: dict[str, str], key: str, default: int | None) -> int:
    value = query.get(key)
    if value is None or value == "":
        if default is None:
            raise ServeError("invalid_query", f"the query parameter {key}= is required")
        return default
    try:
        number = int(value)
    except ValueError:
        raise ServeError("invalid_query", f"{key}={value!r} is not a number") from None
    if number < 0:
        raise ServeError("invalid_query", f"{key}={value!r} is negative")
    return number


def cursor(token: str | None) -> bytes | None:
    if not token:
        return None
    try:
        return wire.decode_token(token)
    except ValueError:
        raise ServeError("invalid_query", f"the continuation token {token!r} is not one this "
                         "endpoint issued") from None
