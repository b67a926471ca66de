"""What a mirroring pass is given and what it reports per table: `MirrorOptions` (how a pass
runs), `MirrorTarget` (a landing-zone table and its Delta table) and `TableOutcome` (what the
pass did to one table). Shared by the pass (`engine`) and the table run (`table_run`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mirrorspec.openmirroring import mirroring


@dataclass(frozen=True)
class MirrorOptions:
    """How a pass runs."""

    threads: int = 2                 # tables processed concurrently
    strict: bool = False             # fail a __rowMarker__ not last / not an integer column
    retention_days: float = mirroring.PROCESSED_RETENTION_DAYS  # _ProcessedFiles purge
    select: tuple[str, ...] = ()     # unique ids / globs like "sales.*" / names; empty = all
    move_processed: bool = True
    settle_seconds: float = 0.0      # a file younger than this waits (producers writing in place)
    # Delta's change data feed of every table (`mirror --change-data-feed`); None: as it is
    change_data_feed: bool | None = None
    feeds: tuple[tuple[str, bool], ...] = ()  # a project's per-table switches (unique id, on)


@dataclass(frozen=True)
class MirrorTarget:
    """A landing-zone table and the Delta table it is mirrored into."""

    unique_id: str          # "<warehouse schema>.<table>"
    schema: str | None      # landing schema folder name without ".schema", None at root
    name: str
    landing_path: str       # the table's landing folder (path or URI)
    delta_path: str         # WAREHOUSE/<schema or dbo>/<table>
    deletion_vectors: bool | None = None  # the plan's switch; None: the session's default
    settle_seconds: float | None = None   # the plan's; None: MirrorOptions.settle_seconds
    change_data_feed: bool | None = None  # the plan's; None: MirrorOptions' switches


@dataclass
class TableOutcome:
    """What a pass did to one table."""

    unique_id: str
    schema: str | None
    name: str
    status: str = "Replicating"   # Replicating, NotStarted, Failed, Dropped, Waiting
    files_applied: list[str] = field(default_factory=list)
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    processed_rows: int = 0       # cumulative across runs
    processed_bytes: int = 0      # cumulative
    error: dict | None = None     # {"errorCode", "message", "file", "row"}
    awaiting: str | None = None   # gap: the 20-digit name awaited
    delta_version: int | None = None
    seconds: float = 0.0
    landing_path: str = ""        # the table's landing folder
    delta_path: str = ""          # the Delta table's folder
    warnings: list[str] = field(default_factory=list)  # what was ignored, once each
