"""Uncommitted bytes of one file (DFS create/append/flush): the staging copy they are written
to, the ranges the appends covered, and copying bytes between files (in the kernel where it
can). The Store keeps one Upload per path until its flush publishes it."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from mirrorspec.serve.blocks import COPY_CHUNK
from mirrorspec.serve.properties import Props


@dataclass
class Upload:
    """Uncommitted bytes of one file. `staging` starts as a copy of the committed bytes (`base`
    of them); appends land at their `position`, in any order (the SDKs append in parallel), and
    a flush needs them to cover `base..position` without a gap."""

    staging: Path
    base: int
    etag: str  # the file's ETag while uncommitted (create's; unchanged by append)
    pending: bool  # hidden: the final name is not on disk yet
    ranges: list[tuple[int, int]] = field(default_factory=list)
    created_at: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    dead: bool = False
    props: Props | None = None  # what the create set, applied at the flush

    @property
    def length(self) -> int:
        """The end of the contiguous bytes from `base` (what a flush may publish)."""
        end = self.base
        for start, stop in sorted(self.ranges):
            if start < self.base:  # an append over committed bytes: nothing can be flushed
                return -1
            if start > end:
                break
            end = max(end, stop)
        return end


def copy_into(source: Path, target: Path, offset: int, n: int) -> None:
    """The `n` bytes of `source` into `target` at `offset` (in the kernel where it can)."""
    with open(source, "rb") as src, open(target, "r+b") as dst:
        done = 0
        try:
            while done < n:
                copied = os.copy_file_range(src.fileno(), dst.fileno(), n - done, done, offset + done)
                if copied == 0:
                    break
                done += copied
        except (AttributeError, OSError):  # no copy_file_range here: copy through Python
            src.seek(done)
            dst.seek(offset + done)
            copy_n(src, dst, n - done)


def copy_n(src: BinaryIO, dst: BinaryIO, n: int) -> None:
    while n > 0:
        chunk = src.read(min(n, COPY_CHUNK))
        if not chunk:
            break
        dst.write(chunk)
        n -= len(chunk)
