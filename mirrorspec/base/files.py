"""The one filesystem layer below the JVM line: path rules, the FileSystem protocol, local files.

Local paths (and `file:` URIs) never touch the JVM, so listing a landing zone is cheap. Other
URIs (s3a://, abfss://, gs://, hdfs://, …) go through the session's Hadoop configuration, so
whatever credentials the Spark session has, the engine and the publisher have too.
`filesystem_for(path, spark)` gives the filesystem of one path; `Files(spark)` picks it per path
(the publisher's state, landing zone and feed may live on different ones); `list_feed_files`
lists a feed on either.
"""

from __future__ import annotations

import builtins
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterable
from urllib.parse import unquote, urlparse

# stores whose written object appears whole (or not at all) when the upload completes
OBJECT_STORE_SCHEMES = frozenset({"s3a", "s3", "s3n", "gs", "oss", "cos", "cosn"})
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


@dataclass(frozen=True)
class Entry:
    """One directory entry."""

    name: str
    path: str
    size: int
    mtime: float  # seconds since the epoch
    is_dir: bool
    etag: str | None = None  # an object store's version tag (Hadoop's EtagSource), when known


def is_remote(path: str) -> bool:
    """True for URIs that need Hadoop (anything but a plain path or a `file:` URI)."""
    return bool(_URI.match(path)) and not path.lower().startswith("file:") and not (
        len(path) > 1 and path[1] == ":" and path[0].isalpha())  # C:\ on Windows


def local_path(path: str) -> str:
    """`file:///a/b` → `/a/b`; a plain path is returned unchanged."""
    if path.lower().startswith("file:"):
        return unquote(urlparse(path).path)
    return path


def join(base: str, *parts: str) -> str:
    """Join path segments with `/` (works for local paths and URIs alike)."""
    result = base.rstrip("/") if base not in ("/",) else base
    for part in parts:
        result = f"{result}/{part.strip('/')}" if result != "/" else f"/{part.strip('/')}"
    return result


def normalize(path: str) -> str:
    """The one absolute spelling of a path, given where it enters (a URI keeps its scheme).

    Every path is resolved this way before it reaches Spark: Delta reads `delta.`path`` in SQL
    as a path only when it is absolute, so a relative warehouse made MERGE fail."""
    if is_remote(path):
        return path.rstrip("/")
    return os.path.abspath(os.path.expanduser(local_path(path)))


def outside_root(path: str, root: str) -> str | None:
    """Where a local `path` really leads when a symlink (on it or on a folder above it) takes it
    outside `root`, else None. URIs give None: object stores have no links."""
    if is_remote(path) or is_remote(root):
        return None
    real = os.path.realpath(local_path(path))
    base = os.path.realpath(local_path(root))
    if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return real


def folders_overlap(first: str, second: str) -> bool:
    """Whether two folders are the same or one is inside the other: local paths with
    relative parts and symbolic links resolved, URIs compared as written."""
    if is_remote(first) or is_remote(second):
        a, b = first.rstrip("/") + "/", second.rstrip("/") + "/"
        return a.lower().startswith(b.lower()) or b.lower().startswith(a.lower())
    a = os.path.realpath(os.path.expanduser(local_path(first))).rstrip(os.sep) + os.sep
    b = os.path.realpath(os.path.expanduser(local_path(second))).rstrip(os.sep) + os.sep
    return a.startswith(b) or b.startswith(a)


class FileSystem:
    """The filesystem protocol: `LocalFS` here, `HadoopFS` (spark.platform.hadoop_fs) for URIs.
    Subclasses implement the primitives; the readers below derive from them."""

    def open_stream(self, path: str) -> BinaryIO:
        """The file opened for reading bytes in chunks (a context manager)."""
        raise NotImplementedError

    def write_text(self, path: str, text: str) -> None:
        """Write atomically: readers see the old file or the whole new one."""
        raise NotImplementedError

    def write_chunks(self, path: str, chunks: Iterable[bytes]) -> None:
        raise NotImplementedError

    def create_exclusive(self, path: str, text: str) -> bool:
        """Create the file with `text` unless it exists; True when this call created it."""
        raise NotImplementedError

    def rename(self, source: str, target: str, mtime: float | None = None) -> None:
        """Move a file (replacing the target), setting its modification time when given."""
        raise NotImplementedError

    def delete(self, path: str) -> None:
        """Delete a file or a whole folder (nothing when absent)."""
        raise NotImplementedError

    def mkdirs(self, path: str) -> None:
        raise NotImplementedError

    def remove_empty_dir(self, path: str) -> bool:
        raise NotImplementedError

    def is_plain_file(self, path: str) -> bool:
        """A regular file, not a link (local) — what the engine may move or delete."""
        raise NotImplementedError

    def append_lines(self, path: str, lines: Iterable[str]) -> None:
        raise NotImplementedError

    def feed_files(self, path: str, keep: Callable[[str], bool]) -> builtins.list[str]:
        """Files under `path` (a folder, a file or a glob) whose relative path `keep` accepts."""
        raise NotImplementedError

    def list(self, path: str) -> list[Entry]:
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def is_dir(self, path: str) -> bool:
        raise NotImplementedError

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        raise NotImplementedError

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read_bytes(path).decode(encoding)

    def read_optional_text(self, path: str) -> str | None:
        """The file's UTF-8 text, or None when there is no such file."""
        if not self.exists(path) or self.is_dir(path):
            return None
        return self.read_text(path)

    def names(self, path: str) -> builtins.list[str]:
        """The names in a directory (empty when it doesn't exist)."""
        return [entry.name for entry in self.list(path)]


class LocalFS(FileSystem):
    """Local filesystem."""

    def list(self, path: str) -> list[Entry]:
        """Entries of a directory (empty when it doesn't exist)."""
        path = local_path(path)
        try:
            names = os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return []
        entries = []
        for name in names:
            full = os.path.join(path, name)
            try:
                st = os.stat(full)
            except FileNotFoundError:
                continue  # removed while listing
            is_dir = os.path.isdir(full)
            entries.append(Entry(name, full, 0 if is_dir else st.st_size, st.st_mtime, is_dir))
        return entries

    def exists(self, path: str) -> bool:
        return os.path.exists(local_path(path))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(local_path(path))

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        with open(local_path(path), "rb") as handle:
            return handle.read() if limit is None else handle.read(limit)

    def open_stream(self, path: str) -> BinaryIO:
        """The file opened for reading bytes in chunks (a context manager)."""
        return open(local_path(path), "rb")

    def write_text(self, path: str, text: str) -> None:
        """Write atomically and durably: a temporary name in the same folder, fsync, rename."""
        path = local_path(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        temp = os.path.join(os.path.dirname(path) or ".", f"_{uuid.uuid4().hex}.tmp")
        try:
            with open(temp, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, path)
        except OSError:
            if os.path.exists(temp):
                os.remove(temp)  # a partial temporary file would hold on to the space (disk full)
            raise

    def write_chunks(self, path: str, chunks: Iterable[bytes]) -> None:
        """Create `path` (and its folder), failing if it exists, holding `chunks` in order."""
        path = local_path(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "xb") as handle:
            for chunk in chunks:
                handle.write(chunk)

    def create_exclusive(self, path: str, text: str) -> bool:
        """Create `path` holding `text` unless it exists; True when this call created it."""
        try:
            fd = os.open(local_path(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        return True

    def rename(self, source: str, target: str, mtime: float | None = None) -> None:
        """Move a file (replacing the target); its modification time becomes `mtime`, by default
        now (so retention counts from the move)."""
        target = local_path(target)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(local_path(source), target)
        stamp = time.time() if mtime is None else mtime
        os.utime(target, (stamp, stamp))

    def delete(self, path: str) -> None:
        path = local_path(path)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)

    def mkdirs(self, path: str) -> None:
        os.makedirs(local_path(path), exist_ok=True)

    def remove_empty_dir(self, path: str) -> bool:
        """Remove `path` if it is an empty folder; True when it did."""
        try:
            os.rmdir(local_path(path))
        except OSError:
            return False
        return True

    def is_plain_file(self, path: str) -> bool:
        """A regular file that is not a symlink."""
        return os.path.isfile(local_path(path)) and not os.path.islink(local_path(path))

    def append_lines(self, path: str, lines: Iterable[str]) -> None:
        """Append lines (small appends are atomic on local filesystems)."""
        with open(local_path(path), "a", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in lines))


class SessionNeeded(ValueError):
    """A URI met where only local files are served: reaching it needs the Hadoop filesystem of a
    Spark session. Commands resolve their paths with local files first (a local problem is said
    before Spark starts), and again through the session when they meet one."""


RemoteResolver = Callable[[str], FileSystem]
"""Gives the filesystem of a URI (spark.platform.hadoop_fs hands one in: Hadoop through a session)."""


def filesystem_for(path: str, remote: RemoteResolver | None = None) -> FileSystem:
    """The filesystem that serves `path`: local paths here, URIs through `remote`."""
    if not is_remote(path):
        return LocalFS()
    if remote is None:
        raise SessionNeeded(f"{path} is a URI; a Spark session is needed to reach it")
    return remote(path)


class Files:
    """File operations on any path, each served by the filesystem of that path."""

    def __init__(self, remote: RemoteResolver | None = None):
        self.remote = remote

    def fs(self, path: str) -> FileSystem:
        """The filesystem that serves `path`."""
        return filesystem_for(path, self.remote)

    join = staticmethod(join)

    def exists(self, path: str) -> bool:
        return self.fs(path).exists(path)

    def names(self, path: str) -> list[str]:
        return self.fs(path).names(path)

    def read_text(self, path: str) -> str | None:
        """The file's text, or None when there is no such file."""
        return self.fs(path).read_optional_text(path)

    def read_bytes(self, path: str) -> bytes:
        return self.fs(path).read_bytes(path)

    def write_text(self, path: str, text: str) -> None:
        self.fs(path).write_text(path, text)

    def rename(self, source: str, target: str, mtime: float | None = None) -> None:
        self.fs(source).rename(source, target, mtime)

    def delete(self, path: str) -> None:
        """Delete a file or a whole folder (nothing when absent)."""
        self.fs(path).delete(path)
