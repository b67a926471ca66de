"""The files behind the endpoint: the landing zone (read-write), the warehouse (read-only),
the rendered monitoring files, and the staging folder where uncommitted bytes wait.

Rules publishers depend on (docs/onelake.md "Semantics"):
- appended bytes go to a staging file outside the landing zone; a flush publishes them with one
  `os.replace`, so a data file's final name never holds half a file;
- the ETag is derived from (inode, mtime, size): append never changes it, flush/rename/put do,
  and a file the engine moves keeps it;
- with `unflushed="visible"` (OneLake's behaviour) a created file is a 0-byte file until its
  flush; with `"hidden"` it appears only at the flush.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import os
import shutil
import stat as statmod
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from mirrorspec.serve.codes import ServeError
from mirrorspec.serve.blocks import COPY_CHUNK, MAX_BLOB_SIZE, Blocks
from mirrorspec.serve.leases import Leases
from mirrorspec.serve.names import Names, Place
from mirrorspec.serve.persist import PersistentProps, StateFile
from mirrorspec.serve.properties import Props
from mirrorspec.serve.uploads import Upload, copy_into, copy_n



@dataclass(frozen=True)
class Entry:
    """What HEAD, a listing or a read says about one path."""

    name: str  # workspace-relative
    is_dir: bool
    size: int
    mtime: float
    created: float
    etag: str  # unquoted, 0x…


def etag_of(st: os.stat_result) -> str:
    digest = hashlib.blake2b(f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}".encode(),
                             digest_size=7).hexdigest().upper()
    return "0x8D" + digest[:13]


def _fresh_etag() -> str:
    return "0x8D" + uuid.uuid4().hex[:13].upper()


def same_etag(header: str, etag: str) -> bool:
    """An If-Match value against an ETag (quotes and W/ ignored; `*` matches anything)."""
    values = [v.strip().removeprefix("W/").strip('"') for v in header.split(",")]
    return "*" in values or etag in values


class Store:
    """Namespace operations over the served folders (thread-safe)."""

    def __init__(self, names: Names, landing: Path, warehouse: Path, staging: Path,
                 monitoring: Callable[[], dict[str, bytes]], unflushed: str = "visible",
                 state: Path | None = None, max_blob_size: int = MAX_BLOB_SIZE):
        """`state`: the file properties, metadata and leases are kept in across restarts
        (persist.py; None: in memory only)."""
        self.names = names
        self.landing = landing.resolve()
        self.warehouse = warehouse.resolve()
        self.staging = staging
        self.monitoring = monitoring
        self.hidden = unflushed == "hidden"
        self.started = time.time()
        self.max_blob_size = max_blob_size
        self._lock = threading.RLock()
        self._uploads: dict[tuple[str, ...], Upload] = {}
        self.state = StateFile(state) if state is not None else None
        if self.state is not None:
            self.state.prune(self.landing, etag_of)
        # properties and metadata by ETag: a rename keeps a file's ETag (and so them), a write
        # makes a new one (and so drops them), as the service does
        self._props: dict[str, Props] = PersistentProps(self.state) if self.state else {}
        self.leases = Leases(state=self.state)
        self.blocks = Blocks(self)
        staging.mkdir(parents=True, exist_ok=True)

    # --- paths ---------------------------------------------------------------------------
    def disk_path(self, place: Place) -> Path | None:
        """The file or folder behind `place` (None for virtual places); never outside its root,
        never through a link."""
        if place.area == "landing":
            root = self.landing
        elif place.area == "tables":
            root = self.warehouse
        else:
            return None
        path = root.joinpath(*place.rel)
        probe = root
        for part in place.rel:  # a link anywhere on the way is refused (it could leave the root)
            probe = probe / part
            if probe.is_symlink():
                raise ServeError("invalid_name", f"{place.ws_path} passes through a link")
        return path

    def _virtual_dirs(self, place: Place) -> list[str] | None:
        if place.area == "account":
            return [self.names.workspace]
        if place.area == "workspace":
            return [self.names.item_path]
        if place.area == "item":
            return ["Files", "Tables"]
        if place.area == "files":
            return ["LandingZone", "Monitoring"]
        return None

    def _virtual_entry(self, place: Place) -> Entry:
        etag = "0x8D" + hashlib.blake2b(place.ws_path.encode(), digest_size=7).hexdigest()[:13].upper()
        return Entry(place.ws_path, True, 0, self.started, self.started, etag)

    # --- reading ---------------------------------------------------------------------------
    def stat(self, place: Place) -> Entry | None:
        """The Entry of `place`, or None when nothing (visible) is there."""
        if self._virtual_dirs(place) is not None:
            return self._virtual_entry(place)
        if place.area == "monitoring":
            if not place.rel:
                return self._virtual_entry(place)
            data = self.monitoring().get(place.rel[0]) if len(place.rel) == 1 else None
            if data is None:
                return None
            digest = hashlib.blake2b(data, digest_size=7).hexdigest()[:13].upper()
            return Entry(place.ws_path, False, len(data), time.time(), self.started, "0x8D" + digest)
        path = self.disk_path(place)
        if path is None:
            return None
        if place.area == "tables" and len(place.rel) == 1 and not path.is_dir():
            return None  # the warehouse root holds only schema folders for Tables/
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        is_dir = statmod.S_ISDIR(st.st_mode)
        return Entry(place.ws_path, is_dir, 0 if is_dir else st.st_size, st.st_mtime,
                     st.st_ctime, etag_of(st))

    def children(self, place: Place) -> list[tuple[Place, Entry]]:
        """The entries directly under a folder, in byte order of their names."""
        virtual = self._virtual_dirs(place)
        if virtual is not None:
            if place.area == "account":
                return []
            base = Place("workspace", place.workspace) if place.area == "workspace" else place
            out = []
            for name in virtual:
                child = _virtual_child(base, name, self.names)
                out.append((child, self._virtual_entry(child)))
            return out
        if place.area == "monitoring":
            if place.rel:
                return []
            out = []
            for name in sorted(self.monitoring()):
                child = place.child(name)
                entry = self.stat(child)
                if entry is not None:
                    out.append((child, entry))
            return out
        path = self.disk_path(place)
        if path is None:
            return []
        try:
            names = sorted(os.listdir(path), key=lambda n: n.encode("utf-8", "surrogateescape"))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for name in names:
            child = place.child(name)
            full = path / name
            if full.is_symlink():
                continue
            entry = self.stat(child)
            if entry is not None:
                out.append((child, entry))
        return out

    def props_of(self, entry: Entry) -> Props | None:
        """The properties and metadata set on this version of a path (None: none set)."""
        with self._lock:
            return self._props.get(entry.etag)

    def _names_under(self, place: Place) -> list[tuple[Place, bool]]:
        """(child, is_dir) of a folder, without a stat per child (scandir's file type)."""
        path = self.disk_path(place)
        if path is None:
            return [(child, entry.is_dir) for child, entry in self.children(place)]
        try:
            with os.scandir(path) as found:
                out = []
                for item in found:
                    if item.is_symlink():
                        continue
                    is_dir = item.is_dir(follow_symlinks=False)
                    if place.area == "tables" and not place.rel and not is_dir:
                        continue  # the warehouse root holds only schema folders for Tables/
                    out.append((place.child(item.name), is_dir))
                return out
        except (FileNotFoundError, NotADirectoryError):
            return []

    def list_page(self, place: Place, recursive: bool, after: bytes | None, size: int,
                  prefix: str = "", start: str = "",
                  dirs_as_prefixes: bool = False) -> tuple[list[tuple[str, Entry | None]], bool]:
        """One page of a listing in byte order of names, from a cursor: names after `after`
        (name bytes), starting with `prefix`, from `start` on; at most `size`, and whether more
        follow. Only the page's entries are stat'ed (a 5,000-entry folder costs one directory
        read per page, not 5,000 stats). With `dirs_as_prefixes` (List Blobs' delimiter)
        folders come as (`name/`, None) and are not entered."""
        counter = 0
        heap: list[tuple[bytes, int, Place, bool, str]] = []

        def push(under: Place) -> None:
            nonlocal counter
            for child, is_dir in self._names_under(under):
                name = child.ws_path + ("/" if is_dir and dirs_as_prefixes else "")
                if prefix and not name.startswith(prefix) and not (
                        is_dir and prefix.startswith(child.ws_path + "/")):
                    continue
                counter += 1
                heapq.heappush(heap, (name.encode("utf-8", "surrogateescape"), counter, child,
                                      is_dir, name))

        push(place)
        page: list[tuple[str, Entry | None]] = []
        while heap:
            key, _n, child, is_dir, name = heapq.heappop(heap)
            if recursive and is_dir:
                push(child)  # every name below sorts after `name/`… and after `name`
            wanted = ((after is None or key > after) and (not start or name >= start)
                      and name.startswith(prefix))
            if not wanted:
                continue
            if len(page) == size:
                return page, True
            if is_dir and dirs_as_prefixes:
                page.append((name, None))
                continue
            entry = self.stat(child)
            if entry is not None:
                page.append((name, entry))
        return page, False

    def open_read(self, place: Place) -> tuple[Entry, BinaryIO | bytes]:
        """The Entry and content (an open file, or bytes for rendered files) of a file."""
        entry = self.stat(place)
        if entry is None:
            raise ServeError("path_not_found", f"{place.ws_path} does not exist", blob="blob_not_found")
        if entry.is_dir:
            raise ServeError("path_conflict", f"{place.ws_path} is a directory, not a file")
        if place.area == "monitoring":
            return entry, self.monitoring()[place.rel[0]]
        path = self.disk_path(place)
        assert path is not None
        try:
            return entry, open(path, "rb")
        except FileNotFoundError:
            raise ServeError("path_not_found", f"{place.ws_path} does not exist",
                             blob="blob_not_found") from None

    # --- writing ---------------------------------------------------------------------------
    def writable(self, place: Place, what: str) -> Path:
        if place.area == "landing" and place.rel:
            path = self.disk_path(place)
            assert path is not None
            return path
        if place.area in ("tables", "monitoring"):
            raise ServeError("read_only_area", f"{what} {place.ws_path}: Tables/ and "
                             "Files/Monitoring/ are read-only (Fabric writes them)")
        raise ServeError("managed_folder", f"{what} {place.ws_path or '/'}: only paths under "
                         "Files/LandingZone/ can be written")

    def _current_etag(self, place: Place, upload: Upload | None) -> str | None:
        if upload is not None and upload.pending:
            return upload.etag
        entry = self.stat(place)
        return entry.etag if entry is not None else None

    def _conditions(self, place: Place, if_match: str | None, if_none_match: str | None,
                    etag: str | None, exists_key: str = "condition_not_met") -> None:
        if if_none_match and if_none_match.strip() == "*" and etag is not None:
            raise ServeError(exists_key, f"{place.ws_path} already exists (If-None-Match: *)")
        if if_match and (etag is None or not same_etag(if_match, etag)):
            raise ServeError("condition_not_met", f"{place.ws_path}: If-Match {if_match} does not "
                             f"match the current ETag {etag or '(none: the path does not exist)'}")

    def _parent_ready(self, place: Place, path: Path, create: bool) -> None:
        parent = path.parent
        probe = self.landing
        for part in place.rel[:-1]:
            probe = probe / part
            if probe.exists() and not probe.is_dir():
                raise ServeError("path_conflict", f"{place.ws_path}: {part} is a file, not a directory")
        if create:
            parent.mkdir(parents=True, exist_ok=True)

    def create_dir(self, place: Place, if_none_match: str | None) -> str:
        """PUT ?resource=directory: parents implicit; an existing folder is fine."""
        with self._lock:
            entry = self.stat(place)
            if entry is not None and not entry.is_dir:
                raise ServeError("path_exists", f"{place.ws_path} is a file",
                                 headers={"x-ms-existing-resource-type": "file"})
            if entry is not None:
                if if_none_match and if_none_match.strip() == "*":
                    raise ServeError("path_exists", f"{place.ws_path} already exists",
                                     headers={"x-ms-existing-resource-type": "directory"})
                return entry.etag
            path = self.writable(place, "create directory")
            self._parent_ready(place, path, create=False)
            path.mkdir(parents=True, exist_ok=True)
            found = self.stat(place)
            assert found is not None
            return found.etag

    def create_file(self, place: Place, if_match: str | None, if_none_match: str | None,
                    props: Props | None = None) -> str:
        """PUT ?resource=file: a new, empty, uncommitted file (truncating an existing one);
        `props` (content headers, metadata) apply from its flush on."""
        with self._lock:
            path = self.writable(place, "create file")
            old = self._uploads.get(place.rel)
            entry = self.stat(place)
            if entry is not None and entry.is_dir:
                raise ServeError("path_exists", f"{place.ws_path} is a directory",
                                 headers={"x-ms-existing-resource-type": "directory"})
            self._conditions(place, if_match, if_none_match, self._current_etag(place, old),
                             exists_key="path_exists")
            self._parent_ready(place, path, create=True)
            staging = self.new_staging()
            staging.touch()
            if self.hidden:
                upload = Upload(staging, 0, _fresh_etag(), pending=entry is None)
                if entry is not None:
                    upload.etag = entry.etag
            else:
                with open(path, "wb"):
                    pass
                upload = Upload(staging, 0, etag_of(path.stat()), pending=False)
                if entry is not None:
                    self._props.pop(entry.etag, None)  # the truncated version's
            upload.props = props
            self._replace_upload(place.rel, upload)
            return upload.etag

    def new_staging(self) -> Path:
        return self.staging / f"{uuid.uuid4().hex}.part"

    def _replace_upload(self, key: tuple[str, ...], upload: Upload | None) -> None:
        old = self._uploads.pop(key, None)
        if old is not None:
            old.dead = True
            old.staging.unlink(missing_ok=True)
        if upload is not None:
            self._uploads[key] = upload

    def upload_of(self, place: Place) -> Upload | None:
        with self._lock:
            return self._uploads.get(place.rel)

    def _upload_for_append(self, place: Place) -> Upload:
        with self._lock:
            path = self.writable(place, "append to")
            upload = self._uploads.get(place.rel)
            if upload is not None:
                return upload
            entry = self.stat(place)
            if entry is None:
                raise ServeError("path_not_found", f"append to {place.ws_path}: the file does not "
                                 "exist (create it first with ?resource=file)")
            if entry.is_dir:
                raise ServeError("path_conflict", f"append to {place.ws_path}: a directory")
            staging = self.new_staging()
            shutil.copyfile(path, staging)  # appending to a committed file: start from its bytes
            upload = Upload(staging, entry.size, entry.etag, pending=False)
            upload.props = self._props.get(entry.etag)  # its properties carry over
            self._uploads[place.rel] = upload
            return upload

    def append(self, place: Place, position: int, body: Iterator[bytes]) -> Upload:
        """PATCH ?action=append: stream `body` to a file of its own, then (all of it arrived)
        copy it into the staging file at `position` and record the range. Appends may come in
        any order, and a retried append may overlap one still running: a broken one never
        touches the staging file (a flush then finds the gap)."""
        upload = self._upload_for_append(place)
        part = self.new_staging()
        try:
            written = 0
            with open(part, "wb") as handle:
                for chunk in body:
                    handle.write(chunk)
                    written += len(chunk)
            for _attempt in range(2):
                with upload.lock:
                    if not upload.dead:
                        copy_into(part, upload.staging, position, written)
                        upload.ranges.append((position, position + written))
                        return upload
                upload = self._upload_for_append(place)  # flushed meanwhile: the next upload
            raise ServeError("path_not_found", f"append to {place.ws_path}: the file was deleted "
                             "or renamed while the append ran")
        finally:
            part.unlink(missing_ok=True)

    def flush(self, place: Place, position: int, if_match: str | None, if_none_match: str | None,
              retain: bool = False, props: Props | None = None) -> str:
        """PATCH ?action=flush: publish the first `position` bytes under the final name; the
        flush's content headers (`x-ms-content-md5`, …) over the create's."""
        path = self.writable(place, "flush")
        upload = self.upload_of(place)
        if upload is None:
            entry = self.stat(place)
            if entry is None or entry.is_dir:
                raise ServeError("path_not_found", f"flush {place.ws_path}: the file does not exist")
            self._conditions(place, if_match, if_none_match, entry.etag)
            if position != entry.size:
                raise ServeError("invalid_flush_position", f"flush {place.ws_path} at {position}, "
                                 f"but it holds {entry.size} bytes and nothing uncommitted")
            if props is not None and props != Props():
                with self._lock:
                    self._props[entry.etag] = (self._props.get(entry.etag) or Props()).merged(props)
            return entry.etag
        with upload.lock:
            with self._lock:
                etag = self._publish_upload(place, path, upload, position, if_match,
                                            if_none_match, retain)
                kept = (upload.props or Props()).merged(props)
                if kept != Props():
                    self._props[etag] = kept
                return etag

    def _publish_upload(self, place: Place, path: Path, upload: Upload, position: int,
                        if_match: str | None, if_none_match: str | None, retain: bool) -> str:
        if upload.dead:
            raise ServeError("path_not_found", f"flush {place.ws_path}: the file was deleted "
                             "or renamed while uploading")
        if not upload.pending and not path.exists():
            self._replace_upload(place.rel, None)
            raise ServeError("path_not_found", f"flush {place.ws_path}: the file was removed")
        etag = self._current_etag(place, upload)
        if if_none_match and if_none_match.strip() == "*" and not upload.pending:
            raise ServeError("condition_not_met", f"{place.ws_path} already exists "
                             "(If-None-Match: *)")
        self._conditions(place, if_match, None, etag)
        if upload.length < 0:
            raise ServeError("invalid_flush_position", f"flush {place.ws_path}: an append was "
                             f"made below the {upload.base} bytes already committed")
        if position > upload.length or position < upload.base:
            raise ServeError("invalid_flush_position", f"flush {place.ws_path} at {position}, "
                             f"but the data appended is contiguous from {upload.base} to "
                             f"{upload.length} only")
        if retain and position < upload.length:
            staging = self.new_staging()
            with open(upload.staging, "rb") as src, open(staging, "wb") as dst:
                copy_n(src, dst, position)
            published = staging
        else:
            with open(upload.staging, "r+b") as handle:
                handle.truncate(position)
            published = upload.staging
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(published, path)
        _committed_now(path)
        new_etag = etag_of(path.stat())
        if retain and position < upload.length:
            upload.pending, upload.etag, upload.base = False, new_etag, position
            upload.ranges = [(max(a, position), b) for a, b in upload.ranges if b > position]
        else:
            self._uploads.pop(place.rel, None)
            upload.dead = True
        return new_etag

    def put_blob(self, place: Place, body: Iterator[bytes], if_match: str | None,
                 if_none_match: str | None, props: Props | None = None,
                 md5: bytes | None = None) -> str:
        """Blob Put Blob: the whole body, published at once. Its MD5 is checked against
        `md5` (Content-MD5) and kept as the blob's Content-MD5 unless `props` names one, as
        the service does for a Put Blob."""
        path = self.writable(place, "put blob")
        staging = self.new_staging()
        digest = hashlib.md5(usedforsecurity=False)
        try:
            with open(staging, "wb") as handle:
                for chunk in body:
                    digest.update(chunk)
                    handle.write(chunk)
            if md5 is not None and md5 != digest.digest():
                raise ServeError("md5_mismatch", f"put blob {place.ws_path}: the body's MD5 is not "
                                 "the Content-MD5 given")
            props = props or Props()
            if not props.content_md5:
                props = replace(props, content_md5=base64.b64encode(digest.digest()).decode())
            return self.publish(place, path, staging, if_match, if_none_match, props)
        finally:
            staging.unlink(missing_ok=True)

    def publish(self, place: Place, path: Path, staging: Path, if_match: str | None,
                 if_none_match: str | None, props: Props | None = None) -> str:
        with self._lock:
            entry = self.stat(place)
            if entry is not None and entry.is_dir:
                raise ServeError("path_conflict", f"{place.ws_path} is a directory")
            self._conditions(place, if_match, if_none_match, entry.etag if entry else None)
            self._parent_ready(place, path, create=True)
            os.replace(staging, path)
            _committed_now(path)
            self._replace_upload(place.rel, None)
            if entry is not None:
                self._props.pop(entry.etag, None)
            etag = etag_of(path.stat())
            if props is not None and props != Props():
                self._props[etag] = props
            return etag

    def set_properties(self, place: Place, props: Props | None = None,
                       metadata: dict[str, str] | None = None) -> str:
        """Set Blob Properties (`props` replaces the content headers) or Set Blob Metadata
        (`metadata` replaces it); a new ETag and Last-Modified, the bytes untouched."""
        with self._lock:
            path = self.writable(place, "set properties of")
            entry = self.stat(place)
            if entry is None:
                raise ServeError("path_not_found", f"{place.ws_path} does not exist",
                                 blob="blob_not_found")
            old = self._props.pop(entry.etag, None) or Props()
            new = old.with_metadata(metadata) if metadata is not None else old
            if props is not None:
                new = replace(props, metadata=new.metadata, copy=new.copy)
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, max(time.time_ns(), st.st_mtime_ns + 1000)))
            etag = etag_of(path.stat())
            if new != Props():
                self._props[etag] = new
            return etag

    def copy(self, source: Place, dest: Place, if_match: str | None, if_none_match: str | None,
             metadata: dict[str, str] | None, copy_headers: dict[str, str]) -> str:
        """Copy Blob within the endpoint, synchronously: the source's bytes and properties (its
        metadata unless `metadata` is given) under the destination's name."""
        path = self.writable(dest, "copy to")
        try:
            entry, content = self.open_read(source)
        except ServeError as exc:
            raise ServeError("copy_source_missing", f"copy source {source.ws_path}: "
                             f"{exc.message}") from None
        staging = self.new_staging()
        try:
            with open(staging, "wb") as handle:
                if isinstance(content, bytes):
                    handle.write(content)
                else:
                    with content:
                        shutil.copyfileobj(content, handle, COPY_CHUNK)
            props = self.props_of(entry) or Props()
            if metadata:
                props = props.with_metadata(metadata)
            props = replace(props, copy=copy_headers)
            return self.publish(dest, path, staging, if_match, if_none_match, props)
        finally:
            staging.unlink(missing_ok=True)

    def rename(self, source: Place, dest: Place, if_none_match: str | None,
               if_match: str | None) -> str:
        """PUT with x-ms-rename-source: move a file or a folder (with its subtree) at once."""
        with self._lock:
            if (source.area != "landing" or not source.rel) and self.stat(source) is None:
                raise ServeError("source_not_found", f"rename source {source.ws_path} does not exist")
            src = self.writable(source, "rename from")
            dst = self.writable(dest, "rename to")
            upload = self._uploads.get(source.rel)
            src_entry = self.stat(source)
            if src_entry is None and not (upload is not None and upload.pending):
                raise ServeError("source_not_found", f"rename source {source.ws_path} does not exist")
            parent = self.stat(Place(dest.area, dest.workspace, dest.item, dest.rel[:-1]))
            if parent is None or not parent.is_dir:
                raise ServeError("rename_parent_missing", f"rename to {dest.ws_path}: its parent "
                                 "folder does not exist")
            dst_entry = self.stat(dest)
            self._conditions(dest, if_match, if_none_match,
                             dst_entry.etag if dst_entry else None, exists_key="path_exists")
            if source.rel == dest.rel:
                return src_entry.etag if src_entry else upload.etag
            if dest.rel[: len(source.rel)] == source.rel:
                raise ServeError("invalid_input", f"rename {source.ws_path} into itself")
            if dst_entry is not None and (dst_entry.is_dir or (src_entry and src_entry.is_dir)):
                raise ServeError("path_exists" if dst_entry.is_dir else "path_conflict",
                                 f"rename to {dest.ws_path}: it exists and is a "
                                 f"{'directory' if dst_entry.is_dir else 'file'}")
            if src_entry is not None:
                os.replace(src, dst)
            self.leases.drop(source.rel)
            self._replace_upload(dest.rel, None)  # what was uncommitted there is gone
            for key in [k for k in self._uploads if k[: len(source.rel)] == source.rel]:
                moved = self._uploads.pop(key)
                self._replace_upload(dest.rel + key[len(source.rel):], moved)
            # a rename keeps the ETag (ABFS's rename recovery compares source and destination);
            # the source's, as the engine may already have moved the destination on
            return src_entry.etag if src_entry else upload.etag

    def delete(self, place: Place, recursive: bool) -> None:
        """DELETE: a file, an empty folder, or (recursive) a folder and its subtree."""
        with self._lock:
            if (place.area != "landing" or not place.rel) and self.stat(place) is None:
                raise ServeError("path_not_found", f"{place.ws_path} does not exist",
                                     blob="blob_not_found")
            path = self.writable(place, "delete")
            under = [k for k in self._uploads if k[: len(place.rel)] == place.rel]
            entry = self.stat(place)
            if entry is None:
                if place.rel in self._uploads:  # hidden and never flushed
                    self._replace_upload(place.rel, None)
                    return
                raise ServeError("path_not_found", f"{place.ws_path} does not exist",
                                 blob="blob_not_found")
            if entry.is_dir:
                if not recursive and any(path.iterdir()):
                    raise ServeError("directory_not_empty", f"{place.ws_path} is not empty "
                                     "(delete with recursive=true)", blob="directory_is_not_empty")
                shutil.rmtree(path)
            else:
                path.unlink()
            self._props.pop(entry.etag, None)
            self.leases.drop(place.rel)
            for key in under:
                self._replace_upload(key, None)

    def close(self) -> None:
        """Drop uncommitted uploads and staged blocks (as the service does, eventually)."""
        with self._lock:
            for key in list(self._uploads):
                self._replace_upload(key, None)
            self.blocks.clear()
            if self.state is not None:
                self.state.close()
        shutil.rmtree(self.staging, ignore_errors=True)


def _committed_now(path: Path) -> None:
    """A published file's Last-Modified is its commit's time, as the service's (not the time
    its last bytes reached the staging file: a flush may come long after the last append).
    The precise clock, not the file system's coarser one, so it never reads earlier."""
    now = time.time_ns()
    os.utime(path, ns=(now, now))


def _virtual_child(base: Place, name: str, names: Names) -> Place:
    if base.area == "workspace":
        return Place("item", base.workspace, name)
    if base.area == "item":
        return Place("files" if name == "Files" else "tables", base.workspace, base.item)
    return Place("landing" if name == "LandingZone" else "monitoring", base.workspace, base.item)
