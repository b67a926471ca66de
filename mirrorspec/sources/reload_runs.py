"""Where a producer's full load starts again: the runs of full-load reads in a feed (pure).

Qlik Replicate (REFRESH rows) and Arcion (snapshot rows) send a table's full load as reads
without a position; they send it again when the table is reloaded or the task restarts from its
full load, and nothing in the reads says where a load starts. What the feed does say is its
kinds of rows in file order: a run of reads that follows changes (or starts a feed that was
published before) is a new load, which replaces the table; reads that follow reads are the same
load — or the same load sent again right after itself, which only a keyed table can tell apart
(the Spark side, `spark/publish/reloads.py`, stops a keyless table at a repeated row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


RELOAD_REPEATED = ("this row of a full load equals one the load already sent: the load started "
                   "again (the table reloaded, or the task restarted from its full load) or "
                   "the source table holds the row twice, and a table without key columns "
                   "can't tell them apart")


@dataclass(frozen=True)
class Run:
    """A run of full-load reads: its first row's file and line, and whether it replaces the
    table (False for the feed's first load, which nothing precedes, and for a run that
    continues one from the batch before)."""

    file: str
    line: int
    replaces: bool
    continues: bool = False


def reload_runs(transitions: Iterable[tuple[str, int, bool]], last_reload: bool | None,
                published: bool) -> tuple[list[Run], bool | None]:
    """The runs of full-load reads in a batch and the kind of its last row (True: a read).

    `transitions`: (file, line, is_read) of each file's first row and of every row whose kind
    differs from the row before it in its file, in the batch's file and line order.
    `last_reload`: the kind of the last row of the batches before (None: no row yet);
    `published`: whether anything of the table was published before."""
    runs: list[Run] = []
    previous = last_reload
    first = True
    for file, line, is_read in transitions:
        if is_read and previous is not True:
            runs.append(Run(file, line, replaces=previous is not None or published))
        elif is_read and first:  # the batch starts inside the load of the batch before
            runs.append(Run(file, line, replaces=False, continues=True))
        previous, first = is_read, False
    return runs, previous


__all__ = ["RELOAD_REPEATED", "Run", "reload_runs"]
