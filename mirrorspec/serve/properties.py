"""Blob properties and user metadata kept beside the bytes: what Put Blob, Put Block List,
Path Create/Flush, Copy Blob, Set Blob Properties and Set Blob Metadata set, and what HEAD, GET
and List Blobs (`include=metadata`) return. Pure functions over request/response headers."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Protocol

from mirrorspec.serve.codes import ServeError

META_PREFIX = "x-ms-meta-"
# metadata names are C# identifiers (Blob docs "Setting and retrieving properties and metadata")
_META_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Props field → (Blob request header, DFS request header, response header)
CONTENT_HEADERS = {
    "content_type": ("x-ms-blob-content-type", "x-ms-content-type", "Content-Type"),
    "content_encoding": ("x-ms-blob-content-encoding", "x-ms-content-encoding", "Content-Encoding"),
    "content_language": ("x-ms-blob-content-language", "x-ms-content-language", "Content-Language"),
    "content_disposition": ("x-ms-blob-content-disposition", "x-ms-content-disposition",
                            "Content-Disposition"),
    "cache_control": ("x-ms-blob-cache-control", "x-ms-cache-control", "Cache-Control"),
    "content_md5": ("x-ms-blob-content-md5", "x-ms-content-md5", "Content-MD5"),
}
# Put Blob also takes the plain entity headers as the blob's own (Content-MD5 is checked too)
PUT_BLOB_PLAIN = ("content_type", "content_encoding", "content_language", "cache_control")


class Headers(Protocol):
    """Request headers: http.server's message or a dict."""

    def items(self) -> Iterable[tuple[str, str]]: ...


@dataclass(frozen=True)
class Props:
    """The settable properties of one blob ("" = not set) and its metadata (case kept)."""

    content_type: str = ""
    content_encoding: str = ""
    content_language: str = ""
    content_disposition: str = ""
    cache_control: str = ""
    content_md5: str = ""  # base64, as on the wire
    metadata: dict[str, str] = field(default_factory=dict)
    copy: dict[str, str] = field(default_factory=dict)  # x-ms-copy-* of the last Copy Blob

    def with_metadata(self, metadata: dict[str, str]) -> "Props":
        return replace(self, metadata=dict(metadata))

    def merged(self, other: "Props | None") -> "Props":
        """`other`'s set fields over these (a flush's headers over its create's)."""
        if other is None:
            return self
        values = {name: getattr(other, name) or getattr(self, name) for name in CONTENT_HEADERS}
        return replace(self, **values, metadata=other.metadata or self.metadata)


def metadata_of(headers: Headers) -> dict[str, str]:
    """The `x-ms-meta-*` headers of a request (400 InvalidMetadata for a bad name)."""
    found = {}
    for key, value in headers.items():
        if not key.lower().startswith(META_PREFIX):
            continue
        name = key[len(META_PREFIX):]
        if not _META_NAME.match(name):
            raise ServeError("invalid_metadata", f"the metadata name {name!r} is not a C# "
                             "identifier (letters, digits, '_', not starting with a digit)")
        found[name] = value.strip()
    return found


def dfs_properties(header: str | None) -> dict[str, str]:
    """`x-ms-properties: n1=base64(v1),n2=…` (Path Create) → metadata."""
    found: dict[str, str] = {}
    for pair in (header or "").split(","):
        if not pair.strip():
            continue
        name, sep, value = pair.strip().partition("=")
        try:
            if not sep or not _META_NAME.match(name):
                raise ValueError
            found[name] = base64.b64decode(value, validate=True).decode("utf-8")
        except (ValueError, binascii.Error):
            raise ServeError("invalid_header", f"x-ms-properties {pair!r} is not "
                             "name=base64(value)") from None
    return found


def from_request(headers: Headers, dialect: str) -> Props:
    """The Props a write request sets. `dialect`: `blob` (x-ms-blob-*), `put-blob` (x-ms-blob-*
    or the plain entity headers), `dfs` (x-ms-content-*, x-ms-properties)."""
    given = {k.lower(): v for k, v in headers.items()}
    values = {}
    for name, (blob_header, dfs_header, plain) in CONTENT_HEADERS.items():
        value = given.get(dfs_header if dialect == "dfs" else blob_header)
        if value is None and dialect == "put-blob" and name in PUT_BLOB_PLAIN:
            value = given.get(plain.lower())
        values[name] = (value or "").strip()
    metadata = metadata_of(headers)
    if dialect == "dfs":
        metadata = {**dfs_properties(given.get("x-ms-properties")), **metadata}
    return Props(**values, metadata=metadata)


def response_headers(props: Props | None, default_type: str) -> dict[str, str]:
    """HEAD / GET headers for `props` (Content-Type defaults to `default_type`)."""
    props = props or Props()
    out = {"Content-Type": props.content_type or default_type}
    for name, (_b, _d, plain) in CONTENT_HEADERS.items():
        value = getattr(props, name)
        if value and name != "content_type":
            out[plain] = value
    for name, value in props.metadata.items():
        out[META_PREFIX + name] = value
    if props.metadata:
        out["x-ms-properties"] = ",".join(
            f"{n}={base64.b64encode(v.encode()).decode()}" for n, v in props.metadata.items())
    out.update(props.copy)
    return out


def md5_header(value: str | None) -> bytes | None:
    """A Content-MD5 header's digest (400 InvalidHeaderValue when it is not base64 of 16 bytes)."""
    if not value:
        return None
    try:
        digest = base64.b64decode(value.strip(), validate=True)
    except binascii.Error:
        digest = b""
    if len(digest) != 16:
        raise ServeError("invalid_header", f"Content-MD5 {value!r} is not the base64 of 16 bytes")
    return digest
