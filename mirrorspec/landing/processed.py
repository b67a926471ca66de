"""A table folder's data files and its `_ProcessedFiles/`: what was applied and what is pending."""

from __future__ import annotations

from mirrorspec import mirroring
from mirrorspec.errors import LandingZoneError
from mirrorspec.files import Files, outside_root


class LandingFiles(Files):
    """The filesystem layer (`files.Files`) plus what the runner does to landing folders."""

    def data_files(self, folder: str) -> list[str]:
        return sorted(e.name for e in self.fs(folder).list(folder)
                      if not e.is_dir and not mirroring.is_reserved_name(e.name))

    def has_data(self, folder: str) -> bool:
        """Data files in the folder or in its `_ProcessedFiles/`."""
        processed = self.join(folder, mirroring.PROCESSED_FOLDER)
        return bool(self.data_files(folder) or self.data_files(processed))

    def restore_processed(self, folder: str) -> int:
        """Move `_ProcessedFiles/*` back into the table folder (a name already there wins),
        keeping modification times: LastUpdateTimeFileDetection orders by them."""
        processed = self.join(folder, mirroring.PROCESSED_FOLDER)
        filesystem = self.fs(folder)
        real = outside_root(processed, folder)
        if real is not None:
            raise LandingZoneError(
                f"a symlink leads to {real}, outside the table folder; nothing is moved back "
                "through it", file=processed, code="LinkOutsideRoot",
                hint="replace the link with the folder itself")
        present = {e.name for e in filesystem.list(folder)}
        moved = 0
        for entry in sorted(filesystem.list(processed), key=lambda e: e.name):
            if entry.is_dir or entry.name in present:
                continue
            filesystem.rename(entry.path, self.join(folder, entry.name), mtime=entry.mtime)
            moved += 1
        return moved
