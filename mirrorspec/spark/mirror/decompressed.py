"""Snappy-compressed delimited landing files, decompressed beside the table for Spark to read.

Spark's CSV reader decompresses `.gz` and `.zst` files itself, and `.snappy` files only in
Hadoop's block stream: a framed or raw Snappy file it reads as no rows at all, silently. So each
`.snappy` delimited file of a batch is decompressed by `mirrorspec.openmirroring.compression` (all three
containers; framed chunks' CRCs checked) into `<table>/_mirrorspec/decompressed/<attempt>/`,
and Spark reads that copy. Its name is the landing file's with `.decompressed` added: a 20-digit
name still starts with its sequence number, no codec suffix applies, and no two files of a batch
share a name. The copies are deleted when the attempt ends, committed or not; copies a crash
left behind are deleted by a later attempt once they are an hour old (`staged_source`'s rule).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Iterator

from mirrorspec.openmirroring import compression
from mirrorspec.landing import checks
from mirrorspec.base import files as fsmod
from mirrorspec.spark.mirror import staged_source

FOLDER = "_mirrorspec/decompressed"
SUFFIX = ".decompressed"


def needs_copy(schema) -> bool:
    """True for a delimited file Spark can't be trusted to decompress itself (`.snappy`)."""
    return schema.file.format == "csv" and compression.codec_of(schema.file.name) == \
        compression.SNAPPY


@contextlib.contextmanager
def readable(landing_fs, table_fs, delta_path: str, schemas: list) -> Iterator[None]:
    """Within the block, every `.snappy` delimited file of `schemas` has a decompressed copy that
    its `FileSchema.read_path` names; the copies are gone after it."""
    copies = [s for s in schemas if needs_copy(s)]
    if not copies:
        yield
        return
    folder = fsmod.join(delta_path, FOLDER, uuid.uuid4().hex)
    try:
        for schema in copies:
            path = fsmod.join(folder, schema.file.name + SUFFIX)
            table_fs.write_chunks(path, checks.text_chunks(landing_fs, schema.file))
            schema.read_path = path
        yield
    finally:
        for schema in copies:
            schema.read_path = None
        staged_source.delete_quietly(table_fs, folder)
        staged_source.remove_stale(table_fs, delta_path, folder=FOLDER)
        _remove_if_empty(table_fs, [fsmod.join(delta_path, FOLDER),
                                    fsmod.join(delta_path, "_mirrorspec"), delta_path])


def _remove_if_empty(table_fs, folders: list[str]) -> None:
    """Remove each folder in turn while it is empty, so a batch that committed nothing leaves no
    table folder behind (never a folder another attempt has written to meanwhile)."""
    for folder in folders:
        if not table_fs.remove_empty_dir(folder):
            return

