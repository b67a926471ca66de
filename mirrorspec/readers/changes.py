"""A mirrored table's change data feed through delta-rs (`DeltaTable.load_cdf`), without a JVM.

`mirrorspec changes` and `Project.changes` read here: the row-level changes of a range of
versions, each row with Delta's `_change_type` (`insert`, `update_preimage`,
`update_postimage`, `delete`), `_commit_version` and `_commit_timestamp`, sorted by version,
then by the key columns, a key's pre-image before its post-image and a delete before an insert
(a key deleted and inserted again in one pass). Which versions carry a feed comes from the
table's log (`progress.snapshot.feed_versions`), so a range that reaches outside the feed is
refused with the versions that have one, before delta-rs is asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from mirrorspec.readers.delta import _first_line, _iso, feed_versions, open_table
from mirrorspec.readers.errors import DeltaRsUnsupported, InspectError

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
FEED_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
# Within one version and key: what the row was before comes first, what it became last.
CHANGE_ORDER = ("delete", "update_preimage", "update_postimage", "insert")
_VACUUMED = ("VACUUM removes the change files of versions older than the table's retention "
             "(delta.deletedFileRetentionDuration); read a later range")
_HINT = ("`mirrorspec history TABLE` shows which versions carry a feed; set "
         "`change_data_feed: true` (or `mirror --change-data-feed`) to record one")


@dataclass(frozen=True)
class ChangeRows:
    """The change rows read (a pyarrow.Table), the version range and how many rows it holds."""

    data: Any
    from_version: int
    to_version: int
    total: int


def read_changes(path: str, name: str | None = None, from_version: int | None = None,
                 from_timestamp: datetime | None = None, to_version: int | None = None,
                 to_timestamp: datetime | None = None, limit: int | None = None,
                 order_by: Sequence[str] = (),
                 storage_options: dict | None = None) -> ChangeRows:
    """The change rows of versions `from`…`to` (both included) of the Delta table at `path`.

    Defaults: `to` is the latest version; `from` the first version of the stretch of versions
    carrying a feed that ends at `to`. `from` one past the latest version (an incremental
    reader asking for what followed the last version it read) reads no rows. A timestamp picks the first version committed at or
    after it (`from`) or the last at or before it (`to`), as Delta's `startingTimestamp` /
    `endingTimestamp` do. At most `limit` rows (None: all), the first ones in the order above.
    """
    name = name or path
    if from_version is not None and from_timestamp is not None:
        raise InspectError("give --from-version or --from-timestamp, not both")
    if to_version is not None and to_timestamp is not None:
        raise InspectError("give --to-version or --to-timestamp, not both")
    table = open_table(path, name, storage_options=storage_options)
    latest = table.version()
    if from_timestamp is not None or to_timestamp is not None:
        commits = _commit_times(table)
        if from_timestamp is not None:
            from_version = _first_at_or_after(commits, from_timestamp, name)
        if to_timestamp is not None:
            to_version = _last_at_or_before(commits, to_timestamp, name)
    last = latest if to_version is None else to_version
    if from_version == latest + 1 and to_version is None:
        # an incremental reader asking for what came after the last version it read: nothing
        return ChangeRows(_empty(table), from_version, latest, 0)
    for asked in (from_version, to_version):
        if asked is not None and asked > latest:
            raise InspectError(f"{name} has no version {asked} (the latest is {latest})",
                               hint="see `mirrorspec history TABLE` for the versions")
    feed = feed_versions(path)
    first = _default_start(feed, last) if from_version is None else from_version
    if first > last:
        raise InspectError(f"{name}: version {first} comes after version {last}; nothing to "
                           "read", hint="give --from-version at or before --to-version")
    _refuse_versions_without_feed(feed, first, last, name)
    data = _load(table, first, last, name)
    return ChangeRows(_ordered(data, order_by, limit), first, last, data.num_rows)


def feed_stretches(feed: dict[int, bool | None]) -> list[tuple[int, int]]:
    """(first, last) of each stretch of consecutive versions carrying a feed, oldest first."""
    stretches: list[tuple[int, int]] = []
    for version in sorted(feed):
        if feed[version] is not True:
            continue
        if stretches and stretches[-1][1] == version - 1:
            stretches[-1] = (stretches[-1][0], version)
        else:
            stretches.append((version, version))
    return stretches


def _default_start(feed: dict[int, bool | None], last: int) -> int:
    if not feed:
        return 0
    start = last
    while start - 1 in feed and feed[start - 1] is True:
        start -= 1
    return start


def _refuse_versions_without_feed(feed: dict[int, bool | None], first: int, last: int,
                                  name: str) -> None:
    without = [v for v in range(first, last + 1) if feed.get(v) is False]
    if not without:
        return
    stretches = feed_stretches(feed)
    where = ("; the versions with one: " + ", ".join(
        f"{a}-{b}" if a != b else str(a) for a, b in stretches)) if stretches else \
        "; no version has one"
    if not any(feed.get(v) for v in range(first, last + 1)):
        what = (f"versions {first}-{last} carry no change data feed" if first != last
                else f"version {first} carries no change data feed")
    else:
        what = f"version {without[0]} carries no change data feed"
    raise InspectError(f"{name}: {what}{where}", hint=_HINT)


def _load(table, first: int, last: int, name: str):
    import pyarrow as pa
    from deltalake.exceptions import DeltaError

    try:
        reader = table.load_cdf(starting_version=first, ending_version=last)
        data = pa.table(reader)  # the files are read here: their errors come as Arrow's
    except (DeltaError, pa.ArrowException) as exc:
        text, full = _first_line(exc), str(exc).lower()
        if "change data" in text.lower() or "cdf" in text.lower():
            raise InspectError(f"{name}: versions {first}-{last}: {text}", hint=_HINT) from None
        if "not found" in full or "no such file" in full:
            raise InspectError(f"{name}: the change data of versions {first}-{last} can't be "
                               f"read: {text}", hint=_VACUUMED) from None
        raise DeltaRsUnsupported(f"delta-rs could not read the change data feed: {text}") \
            from None
    except OSError as exc:  # a change file gone (VACUUM) or unreadable
        raise InspectError(f"{name}: the change data of versions {first}-{last} can't be read: "
                           f"{_first_line(exc)}", hint=_VACUUMED) from None
    return _plain_strings(data)


def _empty(table):
    """No change rows, in the columns a read of the table's feed has."""
    import pyarrow as pa

    schema = pa.schema(table.schema().to_arrow())
    feed = [pa.field(CHANGE_TYPE, pa.string()), pa.field(COMMIT_VERSION, pa.int64()),
            pa.field(COMMIT_TIMESTAMP, pa.timestamp("ms"))]
    return _plain_strings(pa.schema(list(schema) + feed).empty_table())


def _plain_strings(data):
    """delta-rs' string/binary views as plain Arrow strings and binaries (what pyarrow's sort,
    pandas and every reader of a table's rows take)."""
    import pyarrow as pa

    fields = []
    for field in data.schema:
        if field.type == pa.string_view():
            field = field.with_type(pa.string())
        elif field.type == pa.binary_view():
            field = field.with_type(pa.binary())
        fields.append(field)
    return data.cast(pa.schema(fields)) if fields != list(data.schema) else data


def _ordered(data, order_by: Sequence[str], limit: int | None):
    import pyarrow as pa
    import pyarrow.compute as pc

    present = {c.lower(): c for c in data.column_names if c not in FEED_COLUMNS}
    keys = [present[c.lower()] for c in order_by if c.lower() in present]
    rank = pc.index_in(data.column(CHANGE_TYPE), value_set=pa.array(CHANGE_ORDER))
    ranked = data.append_column("__change_rank", rank)
    sort = [(COMMIT_VERSION, "ascending")] + [(k, "ascending") for k in keys] + \
        [("__change_rank", "ascending")]
    indices = pc.sort_indices(ranked, sort_keys=sort)
    data = data.take(indices)
    columns = [c for c in data.column_names if c not in FEED_COLUMNS] + list(FEED_COLUMNS)
    data = data.select(columns)
    return data if limit is None else data.slice(0, max(0, int(limit)))


def _commit_times(table) -> list[tuple[int, int]]:
    return sorted((int(c.get("version", -1)), int(c.get("timestamp") or 0))
                  for c in table.history())


def _first_at_or_after(commits: list[tuple[int, int]], at: datetime, name: str) -> int:
    millis = at.timestamp() * 1000
    later = [version for version, when in commits if when >= millis]
    if not later:
        newest = commits[-1] if commits else None
        since = f" (the latest is version {newest[0]} at {_iso(newest[1])})" if newest else ""
        raise InspectError(f"{name}: no version was committed at or after "
                           f"{at.isoformat()}{since}", hint="see `mirrorspec history TABLE`")
    return min(later)


def _last_at_or_before(commits: list[tuple[int, int]], at: datetime, name: str) -> int:
    millis = at.timestamp() * 1000
    earlier = [version for version, when in commits if when <= millis]
    if not earlier:
        raise InspectError(f"{name}: no version was committed at or before {at.isoformat()}",
                           hint="see `mirrorspec history TABLE`")
    return max(earlier)
