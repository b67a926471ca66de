"""Which readers open a Delta table, and why the others refuse it (docs/readers.md).

What decides it is the table's protocol: the `deletionVectors` and `columnMapping` reader
features. delta-rs' own answer is asked for its Arrow dataset route (`to_pyarrow_dataset()`,
which `to_pandas()` and `to_pyarrow_table()` use): the refusal it gives is quoted as the reason.
The other readers apply both features (docs/readers.md says which versions; its snippets are run
against a table with and without deletion vectors by tests/spark/test_table_readers.py).
"""

from __future__ import annotations

from dataclasses import dataclass

# (reader, the features it applies): a reader refuses a table whose reader features are not all
# in its set. Order: what people reach for first.
_APPLIES_ALL = frozenset({"deletionVectors", "columnMapping", "timestampNtz", "v2Checkpoint"})
READERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("Spark with Delta 2.3+ (Fabric, Databricks, Synapse)", _APPLIES_ALL),
    ("delta-rs QueryBuilder (mirrorspec show / export)", _APPLIES_ALL),
    ("polars read_delta / scan_delta", _APPLIES_ALL),
    ("DuckDB delta_scan (delta extension)", _APPLIES_ALL),
)
ARROW_ROUTE = "delta-rs to_pandas / to_pyarrow_table / to_pyarrow_dataset (and DuckDB over them)"


@dataclass(frozen=True)
class ReaderVerdict:
    reader: str
    opens: bool
    why: str = ""  # for a refusal: the reason (the library's own words where it gives them)


def reader_features(table) -> set[str]:
    """The reader features of a `deltalake.DeltaTable` (none before reader version 3)."""
    protocol = table.protocol()
    features = set(protocol.reader_features or [])
    if protocol.min_reader_version == 2:  # column mapping predates table features
        mode = (table.metadata().configuration or {}).get("delta.columnMapping.mode")
        if mode and mode != "none":
            features.add("columnMapping")
    return features


def verdicts(table) -> list[ReaderVerdict]:
    """For each known reader: does it open `table` (a `deltalake.DeltaTable`), and if not, why."""
    features = reader_features(table)
    found = []
    for reader, applies in READERS:
        missing = sorted(features - applies)
        found.append(ReaderVerdict(reader, not missing,
                                   f"it does not read the table feature(s) {', '.join(missing)}"
                                   if missing else ""))
    found.append(_arrow_route(table))
    return found


def _arrow_route(table) -> ReaderVerdict:
    """delta-rs' Arrow dataset, asked directly (it reads no data, only checks the protocol)."""
    try:
        table.to_pyarrow_dataset()
    except Exception as exc:  # noqa: BLE001 - any refusal is the answer, quoted to the user
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return ReaderVerdict(ARROW_ROUTE, False, text)
    return ReaderVerdict(ARROW_ROUTE, True)


def summary(verdicts_: list[ReaderVerdict]) -> tuple[str, list[str]]:
    """("opens with: …", ["refuses: reader: why", …]) for a command's output."""
    opening = [v.reader for v in verdicts_ if v.opens]
    refusing = [f"{v.reader} refuses it: {v.why}" for v in verdicts_ if not v.opens]
    return "readers that open it: " + ("; ".join(opening) or "none known"), refusing
