"""The one filesystem layer: local paths through os, URIs through Hadoop's FileSystem.

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
from typing import Callable, Iterable
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


class _FileSystem:
    """What both filesystems derive from the primitives below."""

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


class LocalFS(_FileSystem):
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

    def open_stream(self, path: str):
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

    def append_lines(self, path: str, lines) -> None:
        """Append lines (small appends are atomic on local filesystems)."""
        with open(local_path(path), "a", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in lines))


class HadoopFS(_FileSystem):
    """Any Hadoop-supported URI, through the Spark session's JVM."""

    def __init__(self, spark):
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()

    def _fs(self, path: str):
        hpath = self._jvm.org.apache.hadoop.fs.Path(path)
        return hpath, hpath.getFileSystem(self._conf)

    def list(self, path: str) -> list[Entry]:
        hpath, fs = self._fs(path)
        if not fs.exists(hpath):
            return []
        entries = []
        tags = True
        for status in fs.listStatus(hpath):
            name = status.getPath().getName()
            etag = None
            if tags and not status.isDirectory():
                try:  # S3A, ABFS and GCS statuses implement EtagSource (Hadoop 3.3.1+)
                    etag = status.getEtag()
                except Exception:  # noqa: BLE001 - py4j: no such method; size and time remain
                    tags = False
            entries.append(Entry(name, join(path, name), int(status.getLen()),
                                 status.getModificationTime() / 1000.0, bool(status.isDirectory()),
                                 str(etag) if etag else None))
        return entries

    def exists(self, path: str) -> bool:
        hpath, fs = self._fs(path)
        return bool(fs.exists(hpath))

    def is_dir(self, path: str) -> bool:
        hpath, fs = self._fs(path)
        return bool(fs.exists(hpath)) and bool(fs.getFileStatus(hpath).isDirectory())

    def read_bytes(self, path: str, limit: int | None = None) -> bytes:
        hpath, fs = self._fs(path)
        stream = fs.open(hpath)
        try:
            io = self._jvm.org.apache.commons.io.IOUtils
            if limit is None:
                return bytes(io.toByteArray(stream))
            size = int(fs.getFileStatus(hpath).getLen())
            return bytes(io.toByteArray(stream, min(limit, size)))
        finally:
            stream.close()

    def open_stream(self, path: str):
        """The file opened for reading bytes in chunks (a context manager)."""
        hpath, fs = self._fs(path)
        return _HadoopStream(fs.open(hpath))

    def feed_files(self, path: str, keep: Callable[[str], bool]) -> builtins.list[str]:
        """Files under `path` (a folder, recursively; a file; or a Hadoop glob) whose path
        relative to the folder passes `keep`, as fully qualified URIs."""
        hpath, fs = self._fs(path)
        if any(ch in path for ch in "*?[{"):
            found = fs.globStatus(hpath) or []
            return [str(s.getPath().toString()) for s in found
                    if s.isFile() and keep(s.getPath().getName())]
        if not fs.exists(hpath):
            return []
        if fs.getFileStatus(hpath).isFile():
            return [str(fs.makeQualified(hpath).toString())]
        base = str(fs.makeQualified(hpath).toString()).rstrip("/") + "/"
        files, listing = [], fs.listFiles(hpath, True)
        while listing.hasNext():
            full = str(listing.next().getPath().toString())
            if keep(full[len(base):] if full.startswith(base) else full.rsplit("/", 1)[-1]):
                files.append(full)
        return files

    def write_text(self, path: str, text: str) -> None:
        """Replace the file's content so readers see the old or the new text, never a mix.

        Object stores publish an object whole when its upload completes, so a direct write is
        atomic there, while their rename is a copy: replacing through a temporary name would
        leave a moment with no file. Elsewhere a temporary file is renamed into place.
        """
        hpath, fs = self._fs(path)
        parent = hpath.getParent()
        fs.mkdirs(parent)
        if path.split(":", 1)[0].lower() in OBJECT_STORE_SCHEMES:
            stream = fs.create(hpath, True)
            try:
                stream.write(bytearray(text.encode("utf-8")))
            finally:
                stream.close()
            return
        temp = self._jvm.org.apache.hadoop.fs.Path(parent, f"_{uuid.uuid4().hex}.tmp")
        stream = fs.create(temp, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        if fs.exists(hpath):
            fs.delete(hpath, False)
        if not fs.rename(temp, hpath):
            raise OSError(f"could not rename {temp} to {path}")

    def write_chunks(self, path: str, chunks: Iterable[bytes]) -> None:
        hpath, fs = self._fs(path)
        stream = fs.create(hpath, False)
        try:
            for chunk in chunks:
                stream.write(bytearray(chunk))
        finally:
            stream.close()

    def create_exclusive(self, path: str, text: str) -> bool:
        hpath, fs = self._fs(path)
        if fs.exists(hpath):
            return False
        try:
            stream = fs.create(hpath, False)
        except Exception:  # noqa: BLE001 - FileAlreadyExistsException: another writer won
            return False
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        return True

    def rename(self, source: str, target: str, mtime: float | None = None) -> None:
        """Move a file (replacing the target), setting its modification time as LocalFS does
        where the store can (object stores can't: a moved object's time is the move's)."""
        src, fs = self._fs(source)
        dst, _ = self._fs(target)
        fs.mkdirs(dst.getParent())
        if fs.exists(dst):
            fs.delete(dst, False)
        if not fs.rename(src, dst):
            raise OSError(f"could not move {source} to {target}")
        stamp = time.time() if mtime is None else mtime
        try:
            fs.setTimes(dst, int(stamp * 1000), -1)
        except Exception:  # noqa: BLE001, S110 - some stores can't set times; retention uses mtime
            pass

    def delete(self, path: str) -> None:
        hpath, fs = self._fs(path)
        if fs.exists(hpath):
            fs.delete(hpath, True)

    def mkdirs(self, path: str) -> None:
        hpath, fs = self._fs(path)
        fs.mkdirs(hpath)

    def remove_empty_dir(self, path: str) -> bool:
        hpath, fs = self._fs(path)
        try:
            if not fs.getFileStatus(hpath).isDirectory() or fs.listStatus(hpath):
                return False
            return bool(fs.delete(hpath, False))  # not recursive: refuses a folder filled since
        except Exception:  # noqa: BLE001 - gone, or filled meanwhile (py4j errors)
            return False

    def is_plain_file(self, path: str) -> bool:
        hpath, fs = self._fs(path)
        return bool(fs.exists(hpath)) and bool(fs.getFileStatus(hpath).isFile())

    def append_lines(self, path: str, lines) -> None:
        """Object stores can't append: read, add, write (a lost race only keeps a file longer)."""
        previous = self.read_text(path) if self.exists(path) else ""
        self.write_text(path, previous + "".join(f"{line}\n" for line in lines))


class _HadoopStream:
    """A Hadoop input stream read in chunks through py4j (`read(n)`, a context manager)."""

    def __init__(self, stream):
        self._stream = stream

    def read(self, size: int) -> bytes:
        return bytes(self._stream.readNBytes(size))

    def close(self) -> None:
        self._stream.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def filesystem_for(path: str, spark=None):
    """The filesystem that serves `path` (Hadoop needs a session)."""
    if not is_remote(path):
        return LocalFS()
    if spark is None:
        raise ValueError(f"{path} is a URI; a Spark session is needed to reach it")
    from mirrorspec.spark.session import require_classic
    require_classic(spark, f"reaching {path} through Hadoop's FileSystem")
    return HadoopFS(spark)


class Files:
    """File operations on any path, each served by the filesystem of that path."""

    def __init__(self, spark=None):
        self.spark = spark

    def fs(self, path: str) -> LocalFS | HadoopFS:
        """The filesystem that serves `path`."""
        return filesystem_for(path, self.spark)

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


def list_feed_files(path: str, spark=None) -> list[str]:
    """The feed files under `path` (folder, file or glob; local or any Hadoop URI), sorted.

    Local feeds are listed by `sources.base.list_feed_files` (what compile uses too); URIs through
    Hadoop with the same rule for skipped names (`_` and `.` prefixes, also of folders).
    """
    from mirrorspec.sources.base import is_feed_path
    from mirrorspec.sources.base import list_feed_files as list_local

    if not is_remote(path):
        return list_local(path)
    return sorted(filesystem_for(path, spark).feed_files(path, is_feed_path))
