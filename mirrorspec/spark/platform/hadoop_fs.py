"""Hadoop's FileSystem through the Spark session: every URI the engine and the publisher reach.

Local paths never come here (`mirrorspec.base.files.LocalFS` serves them without a JVM); s3a://,
abfss://, gs://, hdfs://… go through the session's Hadoop configuration, so whatever credentials
the Spark session has, the engine and the publisher have too. `filesystem_for(path, spark)` gives
the filesystem of one path, `files_for(spark)` a `files.Files` that picks it per path (the
publisher's state, landing zone and feed may live on different ones), `list_feed_files` lists a
feed on either.
"""

from __future__ import annotations

import builtins
import time
import uuid
from typing import Callable, Iterable

from mirrorspec.base.files import (OBJECT_STORE_SCHEMES, Entry, Files, FileSystem, RemoteResolver,
                              is_remote, join)
from mirrorspec.base.files import filesystem_for as _local_or

class HadoopFS(FileSystem):
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


def remote_resolver(spark) -> RemoteResolver | None:
    """What `files` calls for a URI: Hadoop through `spark` (None without a session)."""
    if spark is None:
        return None

    def resolve(path: str) -> FileSystem:
        from mirrorspec.spark.platform.session import require_classic
        require_classic(spark, f"reaching {path} through Hadoop's FileSystem")
        return HadoopFS(spark)

    return resolve


def filesystem_for(path: str, spark=None) -> FileSystem:
    """The filesystem that serves `path` (a URI needs a session)."""
    return _local_or(path, remote_resolver(spark))


def files_for(spark=None) -> Files:
    """File operations on any path, URIs through `spark`'s Hadoop configuration."""
    return Files(remote_resolver(spark))


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
