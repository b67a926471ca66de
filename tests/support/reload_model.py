"""The publisher's handling of full loads sent again, in pure Python: what
`spark/publish/reloads.follow_reloads` does to a batch, with the reader's own `LoadFollower`
(`sources/reload_runs.py`); `delivery_harness.run_pure` calls it before `publish_model`."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from tests.support.delivery_harness import (KEY, REPLACE_HINT, Change, _is_read, _sort_key,
                                            normal)
from tests.support.reference_model import ModelTable

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import OP_DELETE, OP_TRUNCATE
from mirrorspec.sources.delivery import KEYLESS_HINT, STREAM, Marks, channel_of
from mirrorspec.sources.reload_runs import (RELOAD_REPEATED, LoadFollower, Run, kept_runs,
                                           lost_change_error, stale_spans, truncate_before)

MODEL_TABLE = "model.table"  # the table the model's stops name


def follow_loads_model(changes: list[Change], loads: LoadFollower, published: bool,
                       keyed: bool, table: ModelTable, names: Sequence[str],
                       marks: Marks | None = None) -> list[Change]:
    """What `spark/publish/reloads.follow_reloads` does to a batch, in pure Python with the
    same `LoadFollower`: a truncate before the batch's first kept run when a new load starts,
    a keyless table's rows from before a channel's last run left out and its repeated read
    stopped at, and (on a keyless table) the truncate written as the rows
    the table lacks (`replace_keyless`). With `marks` (positions order the changes): runs
    placed by the positions around them, a stale run's reads, a partition's rows before its
    kept run and changes at or below the load's start left out."""
    if not changes:
        return changes
    if not any(_is_read(c) for c in changes):  # as the reader: no follow, the start stands
        if marks is not None:
            lowest: dict[str, tuple] = {}
            for c in changes:
                d = c.delivery
                if d is not None and d[1] == STREAM and d[2] is not None:
                    lowest[d[0]] = min(lowest.get(d[0], (tuple(d[2]), c.file, c.line)),
                                       (tuple(d[2]), c.file, c.line))
            loads.changes_after({n: item[0] for n, item in lowest.items()},
                                {n: item[1:] for n, item in lowest.items()})
            _stop_at_lost_change(loads)
        loads.end_runs({channel_of(c.file) for c in changes})
        return [c for c in changes if marks is None or loads.start is None
                or not _before_start(c, loads.start)]
    in_order = sorted(changes, key=lambda c: (c.file, c.line))
    stretches: list[list] = []
    before = None
    for change in in_order:
        kind = (change.file, _is_read(change))
        if before is None or kind != before:
            stretches.append([change.file, change.line, kind[1], None, None])
        before = kind
        d = change.delivery
        if marks is not None and d is not None and d[1] == STREAM and d[2] is not None:
            low, high = stretches[-1][3:]
            stretches[-1][3:] = [min(low or tuple(d[2]), tuple(d[2])),
                                 max(high or tuple(d[2]), tuple(d[2]))]
    positions = None if marks is None else marks.positions(STREAM)
    runs = loads.follow([tuple(t) for t in stretches], published, positions)
    _stop_at_lost_change(loads)
    if marks is not None and loads.start is not None:
        changes = [c for c in changes if not _before_start(c, loads.start)]
    if not runs:
        return changes
    if not keyed:
        _stop_at_repeated_reads_model(changes, runs, table, names)
    kept = kept_runs(runs)
    if keyed:  # with positions: Kafka partitions only; a delete of a key no kept run reads stays
        kept = {n: r for n, r in kept.items() if marks is not None and n}
    reread = {c.values.get(KEY) for c in changes if _is_read(c)
              and channel_of(c.file) in kept and _at(c) >= _at(kept[channel_of(c.file)])}
    changes = [c for c in changes if c.op == OP_TRUNCATE or channel_of(c.file) not in kept
               or _at(c) >= _at(kept[channel_of(c.file)])
               or (keyed and c.op == OP_DELETE and c.values.get(KEY) not in reread)]
    needed = {c.values.get(KEY) for c in changes if keyed and not _is_read(c)
              and c.op != OP_DELETE and c.present is not None}
    for stale, end in stale_spans(runs):
        changes = [c for c in changes if not (
            _is_read(c) and channel_of(c.file) == stale.channel and _at(c) >= _at(stale)
            and (end is None or _at(c) < _at(end)) and c.values.get(KEY) not in needed)]
    run = truncate_before(runs)
    if run is None:
        return changes
    first = min((c for c in changes if c.file == run.file and c.line == run.line
                 and _is_read(c)), key=lambda c: c.order)
    order = tuple(first.order[:-1]) + ((first.order[-1] or 0) - 1,)
    truncate = Change({n: None for n in names}, OP_TRUNCATE, order, None, run.file, run.line,
                      first.delivery)
    if not keyed:
        return _replace_keyless_model(changes, truncate, table, names)
    return changes + [truncate]


def _stop_at_lost_change(loads: LoadFollower) -> None:
    """`spark/publish/reloads._stop_at_lost_change`."""
    if loads.lost is not None:
        raise lost_change_error(loads.lost, MODEL_TABLE)


def _replace_keyless_model(changes: list[Change], truncate: Change, table: ModelTable,
                           names: Sequence[str]) -> list[Change]:
    """`spark/publish/replace.replace_keyless`: the rows after the batch's last truncate, less
    those the table holds; a stop when the table holds a row they lack."""
    bound = _sort_key(truncate)
    reload = sorted((c for c in changes if c.op != OP_TRUNCATE and _sort_key(c) > bound),
                    key=_sort_key)
    held = Counter(tuple(normal(r[n]) for n in names) for r in table.rows)
    rows = Counter(tuple(normal(c.values[n]) for n in names) for c in reload)
    if held - rows:
        raise SourceError("the table is replaced here, but it holds a row the reload doesn't",
                          file=truncate.file, line=truncate.line, hint=REPLACE_HINT)
    kept = []
    for change in reload:
        row = tuple(normal(change.values[n]) for n in names)
        if held[row]:
            held[row] -= 1
        else:
            kept.append(change)
    return kept


def _stop_at_repeated_reads_model(changes: list[Change], runs: Sequence[Run],
                                  table: ModelTable, names: Sequence[str]) -> None:
    """A keyless table's read equal to an earlier read of its run (or, for a run that continues
    one of the batch before, to a row the table holds) stops it (`RELOAD_REPEATED`)."""
    reads = sorted((c for c in changes if _is_read(c)), key=lambda c: (c.file, c.line))
    held = {tuple(normal(r[n]) for n in names) for r in table.rows}
    seen: dict[int, set] = {}
    for change in reads:
        index = max(i for i, r in enumerate(runs)
                    if (change.file, change.line) >= (r.file, r.line)
                    and channel_of(change.file) == r.channel)
        row = tuple(normal(change.values[n]) for n in names)
        if row in seen.setdefault(index, set()) or (runs[index].continues and row in held):
            raise SourceError(RELOAD_REPEATED, file=change.file, line=change.line,
                              hint=KEYLESS_HINT)
        seen[index].add(row)


def _at(item: Change | Run) -> tuple[str, int]:
    return (item.file, item.line)


def _before_start(change: Change, start: tuple) -> bool:
    """An insert or update in a Kafka partition at or below the table's load's start: the
    load holds it (a delete there still deletes an older load's row landed since)."""
    d = change.delivery
    return (d is not None and bool(d[0]) and d[1] == STREAM and d[2] is not None
            and tuple(d[2]) <= start and change.op != OP_DELETE)
