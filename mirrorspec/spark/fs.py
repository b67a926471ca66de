"""A small filesystem abstraction: local paths through os, URIs through Hadoop's FileSystem.

Local paths (and `file:` URIs) never touch the JVM, so listing a landing zone is cheap. Other
URIs (s3a://, abfss://, hdfs://, …) go through the session's Hadoop configuration, so whatever
credentials the Spark session has, the engine has too.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


@dataclass(frozen=True)
class Entry:
    """One directory entry."""

    name: str
    path: str
    size: int
    mtime: float  # seconds since the epoch
    is_dir: bool


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
    """A canonical spelling used to compare paths (absolute for local paths)."""
    if is_remote(path):
        return path.rstrip("/")
    return os.path.abspath(local_path(path))


class LocalFS:
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

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read_bytes(path).decode(encoding)

    def write_text(self, path: str, text: str) -> None:
        """Write atomically: a temporary name in the same folder, then a rename."""
        path = local_path(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        temp = os.path.join(os.path.dirname(path) or ".", f"_{uuid.uuid4().hex}.tmp")
        with open(temp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)

    def create_exclusive(self, path: str, text: str) -> bool:
        """Create `path` holding `text` unless it exists; True when this call created it."""
        try:
            fd = os.open(local_path(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        return True

    def rename(self, source: str, target: str) -> None:
        """Move a file (replacing the target); touches it so retention counts from the move."""
        target = local_path(target)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(local_path(source), target)
        now = time.time()
        os.utime(target, (now, now))

    def delete(self, path: str) -> None:
        path = local_path(path)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)

    def mkdirs(self, path: str) -> None:
        os.makedirs(local_path(path), exist_ok=True)


class HadoopFS:
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
        for status in fs.listStatus(hpath):
            name = status.getPath().getName()
            entries.append(Entry(name, join(path, name), int(status.getLen()),
                                 status.getModificationTime() / 1000.0, bool(status.isDirectory())))
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

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read_bytes(path).decode(encoding)

    def write_text(self, path: str, text: str) -> None:
        hpath, fs = self._fs(path)
        parent = hpath.getParent()
        fs.mkdirs(parent)
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

    def rename(self, source: str, target: str) -> None:
        src, fs = self._fs(source)
        dst, _ = self._fs(target)
        fs.mkdirs(dst.getParent())
        if fs.exists(dst):
            fs.delete(dst, False)
        if not fs.rename(src, dst):
            raise OSError(f"could not move {source} to {target}")
        try:
            fs.setTimes(dst, int(time.time() * 1000), -1)
        except Exception:  # noqa: BLE001 - some stores can't set times; retention then uses mtime
            pass

    def delete(self, path: str) -> None:
        hpath, fs = self._fs(path)
        if fs.exists(hpath):
            fs.delete(hpath, True)

    def mkdirs(self, path: str) -> None:
        hpath, fs = self._fs(path)
        fs.mkdirs(hpath)


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
