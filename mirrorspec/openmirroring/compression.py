"""Compressed delimited landing files: the codec a file's name names, and its bytes decompressed.

Microsoft's landing-zone specification lets delimited files be compressed with Snappy, GZIP or
ZSTD; producers name them with the codec's suffix after the data extension (`.csv.gz`, `.tsv.zst`,
`.csv.snappy`). Snappy has three containers in the wild, and all three are read:

- **Hadoop's block stream**: what Spark, Hive and other Hadoop writers produce
  (`df.write.option("compression", "snappy").csv(...)`): per block a 4-byte big-endian length
  of its text, then chunks of a 4-byte big-endian compressed length and a raw Snappy block;
- **the framing format**: Snappy's own file format (python-snappy's and cramjam's streams, Go's
  and Rust's writers), starting with the stream identifier `\\xff\\x06\\x00\\x00sNaPpY`; every
  chunk's CRC-32C is checked;
- **one raw Snappy block**: what a bare `snappy.compress(data)` writes (at most RAW_LIMIT).

Pure Python (cramjam decodes the Snappy blocks); the engine, `lint` and the data tests share it.
"""

from __future__ import annotations

import contextlib
import gzip
import zlib
from typing import IO, Iterator

GZIP, ZSTD, SNAPPY = "gzip", "zstd", "snappy"
_SUFFIXES = {".gz": GZIP, ".gzip": GZIP, ".zst": ZSTD, ".zstd": ZSTD, ".snappy": SNAPPY}

_FRAMED_MAGIC = b"\xff\x06\x00\x00sNaPpY"
# A raw block is decoded whole; Hadoop blocks and framed chunks are decoded one at a time.
RAW_LIMIT = 1 << 30
# Hadoop writes blocks of io.compression.codec.snappy.buffersize (256 KiB by default).
_HADOOP_BLOCK_LIMIT = 1 << 30
_READ = 1 << 20


class CorruptCompressedFile(ValueError):
    """The bytes are not a readable file of the codec its name names."""


def codec_of(name: str) -> str | None:
    """`gzip`, `zstd` or `snappy` for a file name ending in that codec's suffix, else None."""
    lower = name.lower()
    return next((codec for suffix, codec in _SUFFIXES.items() if lower.endswith(suffix)), None)


@contextlib.contextmanager
def open_decompressed(handle: IO[bytes], name: str) -> Iterator[IO[bytes]]:
    """`handle`'s bytes decompressed as its name says (as they are for no codec suffix).

    `read(n)` of the stream raises CorruptCompressedFile for bytes the codec can't read."""
    codec = codec_of(name)
    if codec == GZIP:
        stream: IO[bytes] = gzip.GzipFile(fileobj=handle)
    elif codec == ZSTD:
        import zstandard

        stream = zstandard.ZstdDecompressor().stream_reader(handle)
    elif codec == SNAPPY:
        stream = SnappyReader(handle)
    else:
        yield handle
        return
    with stream:
        yield _Checked(stream)


class _Checked:
    """A decompressing stream whose read errors are CorruptCompressedFile."""

    def __init__(self, stream: IO[bytes]):
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        try:
            return self._stream.read(size)
        except CorruptCompressedFile:
            raise
        except (EOFError, OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            raise CorruptCompressedFile(str(exc) or type(exc).__name__) from None
        except Exception as exc:
            if type(exc).__name__ not in ("ZstdError", "DecompressionError"):
                raise
            raise CorruptCompressedFile(str(exc)) from None


def decompress(data: bytes, name: str) -> bytes:
    """All of `data` decompressed as `name` says (CorruptCompressedFile if it can't be)."""
    import io

    with open_decompressed(io.BytesIO(data), name) as stream:
        return stream.read()


def snappy_container(head: bytes) -> str:
    """`framed`, `hadoop` or `raw`: the Snappy container of a file starting with `head`, which
    holds the file's first `hadoop_head_size(head)` bytes (or all of a shorter file).

    Hadoop's is told from a raw block by decoding its first chunk: its lengths must agree."""
    if head.startswith(_FRAMED_MAGIC):
        return "framed"
    if len(head) < 9:
        return "raw"
    block, chunk = int.from_bytes(head[:4], "big"), int.from_bytes(head[4:8], "big")
    if not (0 < block <= _HADOOP_BLOCK_LIMIT and 0 < chunk <= _max_compressed(block)
            and 8 + chunk <= len(head)):
        return "raw"
    import cramjam

    try:
        text = cramjam.snappy.decompress_raw(head[8:8 + chunk])
    except cramjam.DecompressionError:
        return "raw"
    return "hadoop" if 0 < len(text) <= block else "raw"


def hadoop_head_size(head: bytes) -> int:
    """How many bytes of a file starting with `head` (8 or more) `snappy_container` needs."""
    block, chunk = int.from_bytes(head[:4], "big"), int.from_bytes(head[4:8], "big")
    return 8 + chunk if block <= _HADOOP_BLOCK_LIMIT and chunk <= _max_compressed(block) else 8


def _max_compressed(length: int) -> int:
    """The most bytes Snappy compresses `length` bytes into (its MaxCompressedLength)."""
    return 32 + length + length // 6


class SnappyReader:
    """A Snappy-compressed file's text, read through any of the three containers."""

    def __init__(self, handle: IO[bytes]):
        self._handle = handle
        self._pending = bytearray()  # compressed bytes read; those from `_pos` not decoded yet
        self._pos = 0
        self._text = bytearray()  # decoded, not yet returned
        self._container: str | None = None
        self._eof = False
        self._block_left = 0  # Hadoop: text still to come in the current block

    def __enter__(self) -> "SnappyReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._handle.close()

    def read(self, size: int = -1) -> bytes:
        while (size < 0 or len(self._text) < size) and self._decode_more():
            pass
        if size < 0:
            size = len(self._text)
        out = bytes(self._text[:size])
        del self._text[:size]
        return out

    # the compressed side ------------------------------------------------------------------
    def _fill(self, want: int) -> bool:
        """Read until `want` compressed bytes are pending; False at the end of the file."""
        while len(self._pending) - self._pos < want and not self._eof:
            more = self._handle.read(max(_READ, want - len(self._pending) + self._pos))
            if not more:
                self._eof = True
            if self._pos:  # drop what was taken before growing
                del self._pending[:self._pos]
                self._pos = 0
            self._pending += more
        return len(self._pending) - self._pos >= want

    def _available(self) -> int:
        return len(self._pending) - self._pos

    def _take(self, count: int, what: str) -> bytes:
        if not self._fill(count):
            raise CorruptCompressedFile(f"snappy: the file ends inside {what}")
        out = bytes(self._pending[self._pos:self._pos + count])
        self._pos += count
        return out

    def _decode_more(self) -> bool:
        """Decode the next block or chunk into the text; False at the end of the file."""
        if self._container is None:
            self._fill(16)
            if not self._available():
                self._container = "empty"
                return False
            if self._available() >= 8:
                self._fill(hadoop_head_size(bytes(self._pending[:8])))
            self._container = snappy_container(bytes(self._pending))
        if self._container == "framed":
            return self._framed_chunk()
        if self._container == "hadoop":
            return self._hadoop_chunk()
        if self._container == "raw":
            self._container = "done"
            return self._raw_block()
        return False

    def _raw_block(self) -> bool:
        import cramjam

        self._fill(RAW_LIMIT + 1)
        if self._available() > RAW_LIMIT:
            raise CorruptCompressedFile(
                f"snappy: a single raw block larger than {RAW_LIMIT >> 20} MiB (write the "
                "framing format or Hadoop's block stream for big files)")
        self._text += _decode_raw(cramjam, self._take(self._available(), "a raw block"))
        return True

    def _hadoop_chunk(self) -> bool:
        import cramjam

        if self._block_left == 0:
            if not self._fill(1):
                return False
            self._block_left = int.from_bytes(self._take(4, "a block length"), "big")
            if self._block_left > _HADOOP_BLOCK_LIMIT:
                raise CorruptCompressedFile("snappy: a block length beyond 1 GiB (not Hadoop's "
                                            "block stream)")
            if self._block_left == 0:
                return True
        length = int.from_bytes(self._take(4, "a chunk length"), "big")
        text = _decode_raw(cramjam, self._take(length, "a compressed chunk"))
        if len(text) > self._block_left:
            raise CorruptCompressedFile("snappy: a chunk holds more than its block's length")
        self._block_left -= len(text)
        self._text += text
        return True

    def _framed_chunk(self) -> bool:
        import cramjam

        if not self._fill(1):
            return False
        header = self._take(4, "a chunk header")
        kind, length = header[0], int.from_bytes(header[1:], "little")
        body = self._take(length, "a chunk")
        if kind in (0x00, 0x01):  # compressed / uncompressed data; cramjam checks the CRC
            try:
                self._text += bytes(cramjam.snappy.decompress(_FRAMED_MAGIC + header + body))
            except cramjam.DecompressionError as exc:
                raise CorruptCompressedFile(str(exc)) from None
        elif kind == 0xFF:
            if body != _FRAMED_MAGIC[4:]:
                raise CorruptCompressedFile("snappy: a bad stream identifier")
        elif kind <= 0x7F:
            raise CorruptCompressedFile(f"snappy: an unknown chunk type {kind:#04x}")
        # 0x80–0xFE: skippable chunks (padding and the like)
        return True


def _decode_raw(cramjam, block: bytes) -> bytes:
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise CorruptCompressedFile(str(exc)) from None  # "snappy: corrupt input (…)"


__all__ = ["CorruptCompressedFile", "SnappyReader", "codec_of", "decompress", "open_decompressed",
           "hadoop_head_size", "snappy_container"]
