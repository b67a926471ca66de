"""What goes on the wire: entry headers, DFS JSON and Blob XML listings, error bodies,
continuation tokens. Pure functions over `store.Entry`."""

from __future__ import annotations

import base64
import json
import re
import xml.etree.ElementTree as ET
from email.utils import formatdate
from urllib.parse import quote

from mirrorspec.serve.codes import Code
from mirrorspec.serve.properties import Props
from mirrorspec.serve.store import Entry

DEFAULT_VERSION = "2021-06-08"  # the x-ms-version of OneLake's documented sample response
OWNER = "$superuser"
# characters XML 1.0 cannot carry (a name put on disk by someone else may hold one)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
PERMISSIONS = "---------"  # OneLake's values (docs: onelake-api-parity)


def http_date(seconds: float) -> str:
    return formatdate(seconds, usegmt=True)


def entry_headers(entry: Entry, content_type: str = "application/octet-stream") -> dict[str, str]:
    """HEAD / GET headers: the DFS and the Blob properties of one path together."""
    headers = {
        "ETag": f'"{entry.etag}"',
        "Last-Modified": http_date(entry.mtime),
        "x-ms-creation-time": http_date(entry.created),
        "x-ms-resource-type": "directory" if entry.is_dir else "file",
        "x-ms-blob-type": "BlockBlob",
        "x-ms-owner": OWNER,
        "x-ms-group": OWNER,
        "x-ms-permissions": PERMISSIONS,
        "x-ms-server-encrypted": "true",
        "Accept-Ranges": "bytes",
        "Content-Type": content_type,
    }
    if entry.is_dir:
        headers["x-ms-meta-hdi_isfolder"] = "true"
    return headers


def error_body(code: Code, message: str, blob: bool) -> tuple[bytes, str]:
    """The body and content type of an error: XML for the Blob dialect, JSON for DFS."""
    if blob:
        root = ET.Element("Error")
        ET.SubElement(root, "Code").text = code.code
        ET.SubElement(root, "Message").text = message
        return (b'<?xml version="1.0" encoding="utf-8"?>' + ET.tostring(root),
                "application/xml")
    doc = {"error": {"code": code.code, "message": message}}
    return json.dumps(doc).encode(), "application/json;charset=utf-8"


def encode_token(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode("utf-8", "surrogateescape")).decode()


def decode_token(token: str) -> bytes:
    """The name bytes a continuation token / marker resumes after (ValueError if malformed)."""
    return base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4))


def page(entries: list[Entry], after: bytes | None, size: int) -> tuple[list[Entry], str | None]:
    """The entries after `after` (name bytes), at most `size`, and the next token."""
    if after is not None:
        entries = [e for e in entries if e.name.encode("utf-8", "surrogateescape") > after]
    if len(entries) <= size:
        return entries, None
    return entries[:size], encode_token(entries[size - 1].name)


def dfs_listing(entries: list[Entry]) -> bytes:
    """D9's JSON: string values, as ADLS sends them."""
    paths = []
    for e in entries:
        item = {"name": e.name, "contentLength": str(e.size), "lastModified": http_date(e.mtime),
                "etag": e.etag, "owner": OWNER, "group": OWNER, "permissions": PERMISSIONS}
        if e.is_dir:
            item["isDirectory"] = "true"
        paths.append(item)
    return json.dumps({"paths": paths}).encode()


def blob_listing(container: str, endpoint: str, entries: list[Entry], prefixes: list[str],
                 query: dict[str, str], next_marker: str | None,
                 props: dict[str, Props | None] | None = None,
                 with_metadata: bool = False) -> bytes:
    """B3's XML EnumerationResults (directories flat as blobs with hdi_isfolder); each blob's
    content properties, and its metadata with `include=metadata`."""
    props = props or {}
    root = ET.Element("EnumerationResults", ServiceEndpoint=endpoint, ContainerName=container)
    for key, tag in (("prefix", "Prefix"), ("marker", "Marker"), ("maxresults", "MaxResults"),
                     ("delimiter", "Delimiter")):
        if key in query:
            ET.SubElement(root, tag).text = query[key]
    blobs = ET.SubElement(root, "Blobs")
    items: list[tuple[str, Entry | None]] = [(e.name, e) for e in entries]
    items += [(p, None) for p in prefixes]
    items.sort(key=lambda pair: pair[0].encode("utf-8", "surrogateescape"))
    for name, entry in items:
        if entry is None:
            _name(ET.SubElement(blobs, "BlobPrefix"), name)
            continue
        blob = ET.SubElement(blobs, "Blob")
        _name(blob, name)
        kept = props.get(entry.name) or Props()
        element = ET.SubElement(blob, "Properties")
        for tag, value in (("Creation-Time", http_date(entry.created)),
                           ("Last-Modified", http_date(entry.mtime)), ("Etag", entry.etag),
                           ("Content-Length", str(entry.size)),
                           ("Content-Type", kept.content_type or "application/octet-stream"),
                           ("Content-Encoding", kept.content_encoding),
                           ("Content-Language", kept.content_language),
                           ("Content-MD5", kept.content_md5),
                           ("Cache-Control", kept.cache_control),
                           ("Content-Disposition", kept.content_disposition),
                           ("BlobType", "BlockBlob"),
                           ("ResourceType", "directory" if entry.is_dir else "file")):
            ET.SubElement(element, tag).text = value
        metadata = ET.SubElement(blob, "Metadata")
        if entry.is_dir:
            ET.SubElement(metadata, "hdi_isfolder").text = "true"
        if with_metadata:
            for key, value in kept.metadata.items():
                ET.SubElement(metadata, key).text = value
    ET.SubElement(root, "NextMarker").text = next_marker or ""
    return b'<?xml version="1.0" encoding="utf-8"?>' + ET.tostring(root)


def _name(parent: ET.Element, name: str) -> None:
    """A <Name>; one XML cannot carry is percent-encoded with Encoded="true", as the service
    does, so the listing always parses."""
    element = ET.SubElement(parent, "Name")
    if _NOT_XML.search(name):
        element.set("Encoded", "true")
        element.text = quote(name.encode("utf-8", "surrogateescape"), safe="/")
    else:
        element.text = name


def container_listing(names: list[str], etag: str, modified: str) -> bytes:
    """List Containers' XML with the workspaces served."""
    root = ET.Element("EnumerationResults", ServiceEndpoint="/onelake/")
    containers = ET.SubElement(root, "Containers")
    for name in names:
        container = ET.SubElement(containers, "Container")
        ET.SubElement(container, "Name").text = name
        props = ET.SubElement(container, "Properties")
        ET.SubElement(props, "Last-Modified").text = modified
        ET.SubElement(props, "Etag").text = etag
    ET.SubElement(root, "NextMarker").text = ""
    return b'<?xml version="1.0" encoding="utf-8"?>' + ET.tostring(root)


def parse_block_list(body: bytes) -> list[str]:
    """The block ids of a Put Block List body, in order (ValueError when malformed)."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise ValueError(f"the block list is not XML: {exc}") from None
    if root.tag != "BlockList":
        raise ValueError("the block list's root element is not <BlockList>")
    return [(child.text or "").strip() for child in root
            if child.tag in ("Latest", "Uncommitted", "Committed")]
