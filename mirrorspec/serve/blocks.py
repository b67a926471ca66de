"""Put Block and Put Block List: blocks staged invisibly, then committed as one blob, bounded
as Azure bounds them (50,000 committed blocks, 100,000 uncommitted ones) and by what one commit
may write: a block list may name one block many times, so a request of a few kilobytes could
otherwise write 50,000 × the block's size. A commit over `--max-blob-size`, or over the free
space of the disk it writes to, is refused before a byte is copied (413 RequestBodyTooLarge)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any, Iterator

from mirrorspec.serve.codes import ServeError
from mirrorspec.serve.names import Place
from mirrorspec.serve.properties import Props

COPY_CHUNK = 1 << 20
# Azure's Put Block List limits: 50,000 committed blocks, 100,000 uncommitted ones
MAX_COMMITTED_BLOCKS = 50_000
MAX_UNCOMMITTED_BLOCKS = 100_000
# the largest block blob (50,000 blocks of 4,000 MiB): --max-blob-size's default
MAX_BLOB_SIZE = MAX_COMMITTED_BLOCKS * 4000 * (1 << 20)


class Blocks:
    """The staged blocks of one store, by path (thread-safe)."""

    def __init__(self, store: Any):  # store.Store (which imports this module)
        self.store = store
        self._lock = threading.Lock()
        self._staged: dict[tuple[str, ...], dict[str, Path]] = {}

    def put(self, place: Place, block_id: str, body: Iterator[bytes]) -> None:
        """Put Block: staged, invisible until Put Block List (100,000 at most per blob)."""
        self.store.writable(place, "put block")
        with self._lock:
            staged = self._staged.get(place.rel, {})
            if block_id not in staged and len(staged) >= MAX_UNCOMMITTED_BLOCKS:
                raise ServeError("block_count", f"{place.ws_path}: the uncommitted block count "
                                 f"cannot exceed {MAX_UNCOMMITTED_BLOCKS}")
        staging = self.store.new_staging()
        with open(staging, "wb") as handle:
            for chunk in body:
                handle.write(chunk)
        with self._lock:
            blocks = self._staged.setdefault(place.rel, {})
            old = blocks.pop(block_id, None)
            if old is not None:
                old.unlink(missing_ok=True)
            blocks[block_id] = staging

    def commit(self, place: Place, block_ids: list[str], if_match: str | None,
               if_none_match: str | None, props: Props | None = None) -> str:
        """Put Block List: the listed blocks, in order, become the blob (50,000 at most: a
        block may be named more than once, so the count and the size it adds up to are
        capped, not the staged bytes)."""
        path = self.store.writable(place, "put block list")
        if len(block_ids) > MAX_COMMITTED_BLOCKS:
            raise ServeError("block_list_too_long", f"{place.ws_path}: the block list names "
                             f"{len(block_ids)} blocks, over the limit of {MAX_COMMITTED_BLOCKS}")
        with self._lock:
            blocks = dict(self._staged.get(place.rel, {}))
        missing = [b for b in block_ids if b not in blocks]
        if missing:
            raise ServeError("invalid_block_list", f"{place.ws_path}: block(s) {missing[:3]} were "
                             "never staged")
        self._check_size(place, sum(blocks[b].stat().st_size for b in block_ids))
        staging = self.store.new_staging()
        try:
            with open(staging, "wb") as dst:
                for block_id in block_ids:
                    with open(blocks[block_id], "rb") as src:
                        shutil.copyfileobj(src, dst, COPY_CHUNK)
            etag = self.store.publish(place, path, staging, if_match, if_none_match, props)
        finally:
            staging.unlink(missing_ok=True)
        with self._lock:
            for block in self._staged.pop(place.rel, {}).values():
                block.unlink(missing_ok=True)
        return etag

    def _check_size(self, place: Place, size: int) -> None:
        limit = self.store.max_blob_size
        if size > limit:
            raise ServeError("blob_too_large", f"{place.ws_path}: the block list adds up to "
                             f"{size} bytes, over the largest blob serve takes (--max-blob-size "
                             f"{limit})")
        free = shutil.disk_usage(self.store.staging).free
        if size > free:
            raise ServeError("blob_too_large", f"{place.ws_path}: the block list adds up to "
                             f"{size} bytes and the disk has {free} bytes free")

    def clear(self) -> None:
        """Forget every staged block (their files go with the staging folder)."""
        with self._lock:
            self._staged.clear()
