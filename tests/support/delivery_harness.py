"""A reusable property harness: a reader's at-least-once perturbations never change the table.

Producers re-send (a suffix after a restart, a restarted snapshot, a topic dump read twice),
split their stream into files and batches as they like, and send partial rows. For a clean
change stream and its final table, the harness delivers the same stream perturbed and checks
that the reader and the publisher land the same table (DESIGN.md, "Delivery: producers are
at-least-once"; mirrorspec/sources/delivery.py).

What a reader brings (`ReaderAdapter`):
- `render(stream, events, file)`: one feed file's text holding `events` (`Delivered` items:
  an index into the stream and whether its unchanged columns go as the producer's
  placeholder), in the producer's own format, positions included;
- `parse(text, file, marks)`: the reader's pure parser, as canonical `Change` rows;
- `source_type`, `options` and `columns` for the Spark run.

The harness brings:
- `clean_streams(...)`: a hypothesis strategy of clean streams (`Stream`: snapshot reads,
  then creates, updates, deletes, optionally truncates, grouped in transactions) and
  `Stream.expected()`, the final table;
- `deliveries(stream, ...)`: the same stream as batches of files, with restarts re-sending a
  suffix (or the snapshot), partial images, any split;
- `run_pure(adapter, stream, plan)`: the parser plus a pure-Python model of the publisher
  (the delivery checks across files, marks, markers, completion, truncates) and the reference
  model of the engine — many examples per second;
- `run_spark(spark, adapter, cases, root)`: the real publish → mirror pipeline, several cases
  as separate tables in one run, batch by batch; sets each case's rows or error
  (`run_feeds` does the same for hand-written files: fixtures of one producer behaviour).

Keyed tables must always land the expected table. A keyless table may instead stop with a
located error saying a re-send can't be told from a second identical row — never land a wrong
table (`Outcome.acceptable`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from hypothesis import strategies as st

from tests.support.reference_model import DELETE, INSERT, UPDATE, UPSERT, ModelTable

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_TRUNCATE, OP_UPDATE, OP_UPSERT
from mirrorspec.sources.delivery import SNAPSHOT, KEYLESS_HINT, Marks, backwards_error
from mirrorspec.sources.reload_runs import LoadFollower

KEY = "id"
# the columns of every generated table: a key, a plain column and three "TOAST-able" ones in
# the forms a placeholder takes (text, an integer array kept as JSON text, bytes)
COLUMNS: tuple[tuple[str, str], ...] = (
    (KEY, "Int32"), ("name", "String"), ("notes", "String"), ("tags", "String"),
    ("blob", "ByteArray"))
LARGE = ("notes", "tags", "blob")  # what an update may leave unchanged and the producer not send


# --- the clean stream ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Event:
    """One change of the clean stream. `row` is the row after it (before it, for a delete);
    `before` the row before an update. Events of one `group` share a transaction (and, with
    producers whose positions are per transaction, their position); `snapshot` reads form
    group 0, and a reload's reads (the full load sent again after changes) a group of
    their own."""

    op: str                     # r, c, u, d, t
    row: dict[str, Any] | None
    before: dict[str, Any] | None
    group: int
    index_in_group: int = 0

    @property
    def snapshot(self) -> bool:
        return self.op == "r"


@dataclass
class Stream:
    events: list[Event]
    keyed: bool
    snapshot_size: int
    full_before: bool            # REPLICA IDENTITY FULL: updates and deletes carry the whole row
    names: tuple[str, ...] = tuple(n for n, _ in COLUMNS)

    def expected(self) -> Counter:
        """The source table after the whole stream, as a multiset of value tuples."""
        table: dict[Any, dict] = {}
        rows: list[dict] = []
        before = None
        for event in self.events:
            if event.op == "r" and before not in (None, "r"):  # a reload replaces the table
                table.clear()
                rows.clear()
            before = event.op
            if event.op == "t":
                table.clear()
                rows.clear()
            elif event.op == "d":
                table.pop(event.row[KEY], None)
            elif self.keyed:
                table[event.row[KEY]] = event.row
            else:
                rows.append(event.row)
        final = list(table.values()) if self.keyed else rows
        return Counter(tuple(normal(r[n]) for n in self.names) for r in final)


def normal(value: Any) -> Any:
    """Values as both pipelines give them back (bytes, JSON text for arrays)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, list):
        return json.dumps(value, separators=(",", ":"))
    return value


_WORDS = st.sampled_from(["pen", "ink", "cap", "nib"])


@st.composite
def clean_streams(draw, keyed: bool = True, snapshot: bool = True, max_events: int = 12,
                  truncates: bool = False, max_group: int = 2, reloads: int = 0,
                  reload_drops: bool = True) -> Stream:
    """A clean change stream: snapshot reads of some keys, then transactions of creates,
    updates (which mostly leave the large columns unchanged) and deletes. A keyless table
    gets creates only, every row distinct. `reloads`: up to that many reloads after changes
    (the table's full load sent again, as reads of its rows; with `reload_drops` a reload may
    drop rows the source lost without a change the producer captured, never all of them)."""
    serial = iter(range(10_000))

    def new_row(key: int) -> dict[str, Any]:
        n = next(serial)
        return {KEY: key, "name": f"{draw(_WORDS)}{n}", "notes": draw(_WORDS) * 3,
                "tags": draw(st.lists(st.integers(0, 9), min_size=1, max_size=3)),
                "blob": bytes([n % 256, draw(st.integers(0, 255))])}

    events: list[Event] = []
    live: dict[int, dict] = {}
    next_key = 1
    if snapshot:
        for _ in range(draw(st.integers(1, 4))):
            live[next_key] = new_row(next_key)
            events.append(Event("r", live[next_key], None, 0))
            next_key += 1
    snapshot_size = len(events)
    group = 1
    reloads_left = reloads
    while len(events) < snapshot_size + draw(st.integers(1, max_events)):
        if reloads_left and live and events[-1:] and events[-1].op != "r" \
                and draw(st.integers(0, 2)) == 0:
            reloads_left -= 1
            kept = sorted(live)
            if reload_drops and len(kept) > 1:
                dropped = draw(st.sets(st.sampled_from(kept), max_size=len(kept) - 1))
                kept = [k for k in kept if k not in dropped]
                live = {k: live[k] for k in kept}
            for index, key in enumerate(kept):
                events.append(Event("r", live[key], None, group, index))
            group += 1
            continue
        size = draw(st.integers(1, max_group))
        for index in range(size):
            choices = ["c"]
            if keyed and live:
                choices += ["u", "u", "d"]
            if truncates and draw(st.integers(0, 9)) == 0:
                choices = ["t"]
            op = draw(st.sampled_from(choices))
            if op == "c":
                key = next_key if (not keyed or not live or draw(st.booleans())) else \
                    draw(st.sampled_from(sorted(set(range(1, next_key)) - set(live)) or [next_key]))
                if key == next_key:
                    next_key += 1
                live[key] = new_row(key)
                events.append(Event("c", live[key], None, group, index))
            elif op == "u":
                key = draw(st.sampled_from(sorted(live)))
                old = live[key]
                new = dict(old, name=f"{draw(_WORDS)}{next(serial)}")
                if draw(st.integers(0, 3)) == 0:
                    new["notes"] = draw(_WORDS) * 2
                live[key] = new
                events.append(Event("u", new, old, group, index))
            elif op == "d":
                key = draw(st.sampled_from(sorted(live)))
                events.append(Event("d", live.pop(key), None, group, index))
            else:
                live.clear()
                events.append(Event("t", None, None, group, index))
        group += 1
    return Stream(events, keyed, snapshot_size, draw(st.booleans()))


# --- perturbed deliveries -----------------------------------------------------------------------

@dataclass(frozen=True)
class Delivered:
    """One event as delivered: its index in the stream, and whether the producer sends the
    columns the change left unchanged as its placeholder (a partial image)."""

    index: int
    partial: bool = False


Plan = list[list[list[Delivered]]]  # batches → files → events in delivery order


@st.composite
def deliveries(draw, stream: Stream, resend: bool = True, partial: bool = True,
               resend_snapshot: bool = True) -> Plan:
    """The stream delivered with up to two restarts (each re-sends the suffix from an earlier
    event on; from the first read when the snapshot restarts), partial images of updates,
    and any split into files and batches."""
    count = len(stream.events)
    order = list(range(count))
    for _ in range(draw(st.integers(0, 2)) if resend else 0):
        cut = draw(st.integers(1, len(order)))
        lowest = 0 if resend_snapshot else min(stream.snapshot_size, max(order[:cut]) + 1)
        start = draw(st.integers(lowest, max(order[:cut]) + 1))
        order = order[:cut] + list(range(start, count))
    partial_events = {i for i, e in enumerate(stream.events)
                      if partial and e.op == "u" and draw(st.integers(0, 2)) > 0}
    delivered = [Delivered(i, i in partial_events) for i in order]
    files = _cut(delivered, draw(st.sets(st.integers(1, max(1, len(delivered) - 1)),
                                         max_size=4)))
    return _cut(files, draw(st.sets(st.integers(1, max(1, len(files) - 1)), max_size=3)))


def _cut(items: list, cuts) -> list[list]:
    """`items` cut into contiguous non-empty pieces at the indexes in `cuts`."""
    pieces, start = [], 0
    for cut in sorted(cuts) + [len(items)]:
        if cut > start:
            pieces.append(items[start:cut])
            start = cut
    return pieces


def clean_plan(stream: Stream) -> Plan:
    """The stream delivered once, in one file."""
    return [[[Delivered(i) for i in range(len(stream.events))]]]


def restart_plan(stream: Stream, sent: float = 0.6, back_to: float = 0.3, batches: int = 2,
                 files: int = 2, partial: bool = True) -> Plan:
    """A fixed perturbation for the Spark runs: after `sent` of the stream the producer
    restarts and re-sends from `back_to` (0: the snapshot restarts), every other update is a
    partial image, and the delivery is cut into `batches` of `files` files."""
    count = len(stream.events)
    cut = max(1, round(count * sent))
    start = min(cut, round(count * back_to))
    order = list(range(cut)) + list(range(start, count))
    updates = [i for i, e in enumerate(stream.events) if e.op == "u"]
    partial_events = set(updates[::2]) if partial else set()
    delivered = [Delivered(i, i in partial_events) for i in order]
    pieces = batches * files
    size = -(-len(delivered) // pieces)
    chunks = [delivered[i:i + size] for i in range(0, len(delivered), size)]
    return [chunks[b * files:(b + 1) * files] for b in range(batches) if chunks[b * files:]]


def file_name(batch: int, index: int) -> str:
    """Feed file names sort in delivery order, batch after batch."""
    return f"b{batch:03d}-f{index:03d}.json"


NamedPlan = list[list[tuple[str, list[Delivered]]]]  # batches → (file name, events)


@st.composite
def partitioned(draw, stream: Stream, partitions: int = 2, topic: str = "items",
                batches: int = 3) -> NamedPlan:
    """The stream as a Kafka target partitions it by message key (the key modulo
    `partitions`), each partition's messages cut into Kafka Connect sink files
    (`<topic>+<partition>+<start offset>.json`), and each partition's files spread over up to
    `batches` publishes in its own order (partitions arrive independently)."""
    plan: list[list[tuple[str, list[Delivered]]]] = [[] for _ in range(batches)]
    for partition in range(partitions):
        events = [Delivered(i) for i, e in enumerate(stream.events)
                  if e.row is not None and e.row[KEY] % partitions == partition]
        cuts = draw(st.sets(st.integers(1, max(1, len(events) - 1)), max_size=3))
        batch = 0
        offset = 0
        for piece in _cut(events, cuts):
            batch = draw(st.integers(batch, batches - 1))
            plan[batch].append((f"{topic}+{partition}+{offset:010d}.json", piece))
            offset += len(piece)
    return [files for files in plan if files]


# --- the reader under test ------------------------------------------------------------------------

@dataclass
class Change:
    """A canonical change row as the pure parser gives it (mirrorspec/sources/base.py)."""

    values: dict[str, Any]
    op: int
    order: Any
    present: list[str] | None
    file: str
    line: int
    delivery: tuple | None


class ReaderAdapter(Protocol):
    source_type: str
    options: dict[str, Any]

    def render(self, stream: Stream, events: Sequence[Delivered], file: str) -> str: ...

    def parse(self, text: str, file: str, keyed: bool, marks: Marks) -> list[Change]: ...


# --- the pure pipeline ------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What a delivery landed: the table's rows, or the located error that stopped it."""

    rows: Counter | None = None
    error: SourceError | None = None

    def acceptable(self, stream: Stream) -> bool:
        """The expected table, or — for a keyless table only — a located stop saying a re-send
        can't be told from a second identical row."""
        if self.error is None:
            return self.rows == stream.expected()
        return (not stream.keyed and (self.error.hint or "").startswith(KEYLESS_HINT)
                and bool(self.error.file) and bool(self.error.line))

    def explain(self, stream: Stream) -> str:
        if self.error is not None:
            return f"stopped: {self.error.render()}"
        return f"expected {sorted(stream.expected().items())}\n got {sorted(self.rows.items())}"


def run_pure(adapter: ReaderAdapter, stream: Stream, plan: Plan | NamedPlan,
             reloads: bool = False, ordered: bool = False) -> Outcome:
    """Parse every file of every batch with the reader's pure parser, publish each batch with
    the model of the publisher below, and apply it to the reference model of the engine.
    A plan's files are named by `file_name` unless they come as (name, events). `reloads`:
    the reader follows its full loads (Qlik, Arcion: `follow_reloads`), a reload replaces
    the table; `ordered`: by the changes' positions too, where they order them (Qlik)."""
    keys = (KEY,) if stream.keyed else ()
    table = ModelTable(keys)
    table.columns = list(stream.names)
    marks = Marks()
    loads = LoadFollower() if reloads else None
    published = False
    try:
        for number, files in enumerate(plan):
            changes: list[Change] = []
            for index, item in enumerate(files):
                name, events = item if isinstance(item, tuple) else (file_name(number, index),
                                                                      item)
                changes.extend(adapter.parse(adapter.render(stream, events, name), name,
                                             stream.keyed, marks))
            if loads is not None:
                from tests.support.reload_model import follow_loads_model

                changes = follow_loads_model(changes, loads, published, stream.keyed,
                                             table, stream.names, marks if ordered else None)
            landed, marks = publish_model(changes, keys, stream.names, table, not published,
                                          marks)
            if landed:
                published = True
                table.apply_changes(landed)
    except SourceError as exc:
        return Outcome(error=exc)
    return Outcome(rows=Counter(tuple(normal(r[n]) for n in stream.names) for r in table.rows))


def _is_read(change: Change) -> bool:
    """A full-load read: phase SNAPSHOT without a position (`spark/publish/reloads.is_read`)."""
    d = change.delivery
    return (d is not None and d[1] == SNAPSHOT and d[2] is None
            and change.op != OP_TRUNCATE)


REPLACE_HINT = "the landing zone can only add rows to a table without key columns"


def _sort_key(change: Change) -> tuple:
    return (change.order, change.file, change.line, 0 if change.op == OP_DELETE else 1)


def publish_model(changes: list[Change], keys: Sequence[str], names: Sequence[str],
                  table: ModelTable, first_load: bool, marks: Marks
                  ) -> tuple[list[tuple[int, dict]], Marks]:
    """What the publisher lands for one batch, in pure Python (spark/publish/publisher.py,
    replays.py, completion.py): (marker, row) pairs and the marks after the batch."""
    changes = _resolve_backwards(changes, marks)
    if not keys:
        _keyless_against_marks(changes, marks)
        changes = _keyless_across_files(changes)
    changes = sorted(changes, key=_sort_key)
    observed: dict[tuple, tuple] = {}
    for change in changes:
        d = change.delivery
        if d is None or d[2] is None:
            continue
        slot, position = (d[0], d[1], d[4]), tuple(d[2])
        best = observed.get(slot)
        if best is None or position > best[0]:
            observed[slot] = (position, [_print(change)])
        elif position == best[0]:
            best[1].append(_print(change))
    advanced = marks.advanced((p, ph, per_key, list(pos), [] if keys else prints)
                              for (p, ph, per_key), (pos, prints) in observed.items())
    data = [n for n in names if n not in keys]
    state: dict[tuple, dict[str, Any]] = {}
    for row in table.rows:
        state.setdefault(tuple(row[k] for k in keys), {n: row[n] for n in data})
    landed: list[tuple[int, dict]] = []
    batch_keys: list[tuple] = []
    inserts = Counter(tuple(c.values[k] for k in keys) for c in changes if c.op == OP_INSERT)
    inserts_stay = (first_load and all(n == 1 for n in inserts.values())
                    and all(c.op == OP_INSERT for c in changes))
    for change in changes:
        if change.op == OP_TRUNCATE:
            assert keys, "keyless truncates are not generated"
            for key in dict.fromkeys(list(state) + batch_keys):
                landed.append((DELETE, dict(zip(keys, key))))
                state[key] = {n: None for n in data}
            batch_keys = []
            continue
        key = tuple(change.values[k] for k in keys)
        values = dict(change.values)
        if change.op == OP_DELETE:
            state[key] = {n: None for n in data}
            landed.append((DELETE, values))
            continue
        known = state.get(key)
        for name in data:
            if change.present is None or name in change.present:
                continue
            if known is None or name not in known:
                raise SourceError(f"column {name} was not sent and no place has its value",
                                  file=change.file, line=change.line)
            values[name] = known[name]
        state[key] = {n: values[n] for n in data}
        batch_keys.append(key)
        marker = {OP_INSERT: INSERT, OP_UPDATE: UPDATE, OP_UPSERT: UPSERT}[change.op]
        if keys and marker == INSERT and not inserts_stay:
            marker = UPSERT
        landed.append((marker, values))
    return landed, advanced


def _print(change: Change) -> int:
    """The model's row fingerprint (the publisher's is Spark's xxhash64 of the same)."""
    present = None if change.present is None else tuple(change.present)
    return hash((change.op, tuple(sorted(change.values.items())), present))


def _identity(change: Change) -> tuple:
    d = change.delivery
    return (d[0], d[1], tuple(d[2]) if d[2] is not None else None, _print(change))


def _resolve_backwards(changes: list[Change], marks: Marks) -> list[Change]:
    back = [c for c in changes if c.delivery is not None and c.delivery[5]]
    if not back:
        return changes
    copies = {_identity(c) for c in changes if c.delivery is not None and not c.delivery[5]}
    for change in sorted(back, key=lambda c: (c.file, c.line)):
        ident = _identity(change)
        if ident not in copies and not marks.covers(ident[0], ident[2]):
            error = backwards_error(ident[2])
            raise SourceError(error.message, file=change.file, line=change.line, hint=error.hint)
    return [c for c in changes if c not in back]


def _keyless_against_marks(changes: list[Change], marks: Marks) -> None:
    applied = {(p, ph, tuple(pos), fp) for p, ph, pos, fp in marks.at()}
    for change in sorted(changes, key=lambda c: (c.file, c.line)):
        if change.delivery is not None and not change.delivery[3] and \
                _identity(change) in applied:
            raise SourceError("an earlier batch applied an equal event at a shared position",
                              file=change.file, line=change.line, hint=KEYLESS_HINT)


def _keyless_across_files(changes: list[Change]) -> list[Change]:
    groups: dict[tuple, list[Change]] = {}
    for change in changes:
        d = change.delivery
        if d is not None and d[2] is not None:
            groups.setdefault(_identity(change), []).append(change)
    dropped: set[int] = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=_sort_key)
        if not group[1].delivery[3]:  # not exact: shared by several events
            raise SourceError("identical events in two files at one shared position",
                              file=group[1].file, line=group[1].line, hint=KEYLESS_HINT)
        dropped.update(id(c) for c in group[1:])
    return [c for c in changes if id(c) not in dropped]


# --- the Spark pipeline ----------------------------------------------------------------------------

@dataclass
class Case:
    """One perturbed delivery of a stream: published and mirrored as its own table."""

    name: str
    stream: Stream
    plan: Plan
    outcome: Outcome = field(default_factory=Outcome)


@dataclass
class FeedCase:
    """A table fed file by file: `rounds` holds, per publish, the files (name → text) that
    arrive before it. `outcome` is set by `run_feeds`."""

    name: str
    rounds: list[dict[str, str]]
    source_type: str = "debezium"
    options: dict[str, Any] = field(default_factory=dict)
    columns: Sequence[tuple[str, str]] = COLUMNS
    keys: Sequence[str] = (KEY,)
    outcome: Outcome = field(default_factory=Outcome)
    rows: list[dict[str, Any]] = field(default_factory=list)  # the Delta table's rows


def feed_case(adapter: ReaderAdapter, case: Case) -> FeedCase:
    """A Case rendered by its reader into the files of each batch."""
    rounds = [{file_name(number, index): adapter.render(case.stream, events,
                                                        file_name(number, index))
               for index, events in enumerate(files)} for number, files in enumerate(case.plan)]
    return FeedCase(case.name, rounds, adapter.source_type, dict(adapter.options),
                    keys=(KEY,) if case.stream.keyed else ())


def run_spark(spark, adapters: Sequence[ReaderAdapter], cases: Sequence[Case], root: str) -> None:
    """Publish and mirror every case (rendered by the adapter at the same index) as a
    separate table of one plan, batch by batch (`run_feeds`); sets each case's `outcome`."""
    feeds = [feed_case(adapter, case) for adapter, case in zip(adapters, cases)]
    run_feeds(spark, feeds, root)
    for case, feed in zip(cases, feeds):
        case.outcome = feed.outcome


def run_feeds(spark, cases: Sequence[FeedCase], root: str) -> None:
    """Every case a table of one plan: in each round, each case's files of that round are
    written to its feed and its table is published; then all tables are mirrored in one pass.
    A failed publish stops its case (its `outcome.error`); the others go on."""
    from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan
    from mirrorspec.spark.mirror.engine import MirrorOptions, MirrorTarget, mirror_tables
    from mirrorspec.spark.publish.publisher import publish_table

    tables = []
    for case in cases:
        feed = os.path.join(root, "feeds", case.name)
        os.makedirs(feed, exist_ok=True)
        keys = list(case.keys)
        tables.append(TablePlan(
            unique_id=f"prop.{case.name}", name=case.name, schema="prop",
            warehouse_schema="prop",
            landing_path=os.path.join(root, "lz", "prop.schema", case.name),
            delta_path=os.path.join(root, "wh", "prop", case.name),
            metadata={"keyColumns": keys} if keys else {}, key_columns=keys,
            columns=[ColumnSpec(n, t) for n, t in case.columns],
            source=SourceSpec(case.source_type, feed, dict(case.options))))
    plan = Plan(1, "prop", "1", "dev", "dev", os.path.join(root, "lz"),
                os.path.join(root, "wh"), os.path.join(root, "wh", "_mirrorspec"), SparkSpec(),
                None, tables)
    failed: dict[str, SourceError] = {}
    for number in range(max(len(c.rounds) for c in cases)):
        for case, table in zip(cases, tables):
            if case.name in failed or number >= len(case.rounds):
                continue
            for name, text in case.rounds[number].items():
                with open(os.path.join(table.source.path, name), "w", encoding="utf-8") as out:
                    out.write(text)
            result = publish_table(spark, table, plan)
            if result.status == "Failed":
                error = result.error or {}
                message = error.get("message", "")
                failed[case.name] = SourceError(
                    message, file=error.get("file"), line=error.get("line"),
                    hint=KEYLESS_HINT if KEYLESS_HINT in message else None)
        live = [MirrorTarget(t.unique_id, t.schema, t.name, t.landing_path, t.delta_path)
                for c, t in zip(cases, tables) if c.name not in failed]
        if live:
            mirrored = mirror_tables(spark, live, plan.warehouse, MirrorOptions(threads=2))
            assert not mirrored.failed, [o.error for o in mirrored.tables if o.error]
    for case, table in zip(cases, tables):
        if case.name in failed:
            case.outcome = Outcome(error=failed[case.name])
            continue
        exists = os.path.isdir(os.path.join(table.delta_path, "_delta_log"))
        rows = spark.read.format("delta").load(table.delta_path).collect() if exists else []
        case.rows = [r.asDict() for r in rows]
        names = [n for n, _ in case.columns]
        case.outcome = Outcome(rows=Counter(tuple(normal(r[n]) for n in names) for r in rows))
