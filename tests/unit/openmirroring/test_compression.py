"""Compressed delimited files: every Snappy container producers write, gzip and zstd, read
whole and in pieces; corrupt and truncated files are errors, never silently fewer rows."""

from __future__ import annotations

import gzip
import io

import cramjam
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from mirrorspec.openmirroring import compression
from mirrorspec.openmirroring.compression import CorruptCompressedFile


def hadoop_snappy(data: bytes, block: int = 256 * 1024, chunk: int = 64 * 1024) -> bytes:
    """Hadoop's BlockCompressorStream layout: per block its length, then its chunks, each a
    length and a raw Snappy block (what SnappyCodec writes)."""
    out = bytearray()
    for b in range(0, len(data), block):
        part = data[b:b + block]
        out += len(part).to_bytes(4, "big")
        for c in range(0, len(part), chunk):
            raw = bytes(cramjam.snappy.compress_raw(part[c:c + chunk]))
            out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


CONTAINERS = {
    "framed": lambda d: bytes(cramjam.snappy.compress(d)),
    "hadoop": hadoop_snappy,
    "raw": lambda d: bytes(cramjam.snappy.compress_raw(d)),
}
TEXT = b"".join(b'%d,"row, %d",%d\r\n' % (i, i, i % 3) for i in range(60_000))


def read_in_pieces(data: bytes, name: str, size: int) -> bytes:
    parts = []
    with compression.open_decompressed(io.BytesIO(data), name) as stream:
        while part := stream.read(size):
            parts.append(part)
    return b"".join(parts)


@pytest.mark.parametrize("container", CONTAINERS)
def test_each_snappy_container_is_recognised_and_read(container):
    data = CONTAINERS[container](TEXT)
    assert compression.snappy_container(data) == container
    assert compression.decompress(data, "00000000000000000001.csv.snappy") == TEXT
    assert read_in_pieces(data, "x.tsv.SNAPPY", 7_001) == TEXT


@settings(max_examples=60, deadline=None)
@given(text=st.binary(max_size=3000), container=st.sampled_from(sorted(CONTAINERS)),
       piece=st.integers(1, 4000))
def test_any_bytes_round_trip_through_any_container(text, container, piece):
    data = CONTAINERS[container](text)
    assert read_in_pieces(data, "f.csv.snappy", piece) == text


@settings(max_examples=40, deadline=None)
@given(text=st.binary(min_size=1, max_size=400), block=st.integers(1, 64),
       chunk=st.integers(1, 64))
def test_small_hadoop_blocks_are_not_taken_for_a_raw_block(text, block, chunk):
    data = hadoop_snappy(text, block=block, chunk=chunk)
    assert compression.snappy_container(data) == "hadoop"
    assert compression.decompress(data, "f.csv.snappy") == text


@pytest.mark.parametrize("container", CONTAINERS)
def test_a_corrupt_snappy_file_is_an_error(container):
    data = bytearray(CONTAINERS[container](TEXT))
    data[len(data) // 2] ^= 0x55
    with pytest.raises(CorruptCompressedFile):
        compression.decompress(bytes(data), "f.csv.snappy")


@pytest.mark.parametrize("container", ["framed", "hadoop", "raw"])
def test_a_truncated_snappy_file_is_an_error(container):
    data = CONTAINERS[container](TEXT)
    with pytest.raises(CorruptCompressedFile):
        compression.decompress(data[: len(data) // 2 + 3], "f.csv.snappy")


def test_a_framed_chunk_failing_its_checksum_is_an_error():
    data = bytearray(cramjam.snappy.compress(b"id,v\r\n1,a\r\n"))
    data[14] ^= 0x01  # the first data chunk's masked CRC-32C
    with pytest.raises(CorruptCompressedFile, match="checksum"):
        compression.decompress(bytes(data), "f.csv.snappy")


def test_framed_padding_chunks_are_skipped_and_unknown_chunk_types_refused():
    data = bytes(cramjam.snappy.compress(b"id\r\n1\r\n"))
    padding = b"\xfe\x03\x00\x00abc"
    assert compression.decompress(data[:10] + padding + data[10:], "f.snappy") == b"id\r\n1\r\n"
    with pytest.raises(CorruptCompressedFile, match="unknown chunk type"):
        compression.decompress(data[:10] + b"\x02\x01\x00\x00x" + data[10:], "f.snappy")


def test_gzip_and_zstd_and_plain_files():
    assert compression.decompress(gzip.compress(TEXT), "a.csv.gz") == TEXT
    assert read_in_pieces(zstandard.ZstdCompressor().compress(TEXT), "a.csv.zst", 999) == TEXT
    assert compression.decompress(TEXT, "a.csv") == TEXT
    with pytest.raises(CorruptCompressedFile):
        compression.decompress(gzip.compress(TEXT)[:-20], "a.csv.gz")
    with pytest.raises(CorruptCompressedFile):
        compression.decompress(b"not zstd at all", "a.csv.zstd")


def test_codec_names():
    assert [compression.codec_of(n) for n in ("a.csv.GZ", "a.csv.gzip", "a.tsv.zst", "a.zstd",
                                              "a.csv.snappy", "a.csv", "a.snappy.parquet")] == \
        ["gzip", "gzip", "zstd", "zstd", "snappy", None, None]
