"""Qlik Replicate JSON lines parsed on the JVM: the fast path of the Qlik reader.

`mirrorspec.sources.qlik` stays the one home of the format's rules; this module restates, as
Spark column expressions, only the part of them the common message takes (one message per line,
typed `data`/`beforeData`, masks, order, transaction fields), and proves per row that the
result is what the Python parser gives. A row it can't prove (`_sure` false: corrupt or
ambiguous JSON, a value the Python converter would treat differently or reject, an unknown
operation, a key change, ...) sends its whole file back to the Python parser, which produces
today's rows or today's exact `file:line` error. The fast path never reports an error itself.

`fast_files` is the one decision of which files may take this path; `parse_lines` builds the
DataFrame (the reader's change schema plus `_sure`). Off by default (`ENABLED`): on 2 cores it
is slower than the Python parser (docs/performance.md, "Issue 15: publish").
"""

from __future__ import annotations

import os
import re
from typing import Any, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from mirrorspec.sources.base import (ERROR_COLUMN, OP_DELETE, OP_INSERT, OP_UPDATE, PAIR_COLUMN,
                                     is_remote_path)
from mirrorspec.sources.delivery import DELIVERY_COLUMN, SNAPSHOT, STREAM, channel_of
from mirrorspec.spark.publish.feeds.base import _local_name

SURE_COLUMN = "_sure"
MD_COLUMN = "_metadata_message"  # true on a (sure) metadata line: no change, to drop
# Off by default: measured on 2 cores (docs/performance.md, "Issue 15: publish"), from_json costs
# about what the Python parser costs per message, and the checks that keep rows and errors
# identical cost as much again, so this path is slower than the Python one today. The
# equivalence tests and bench/publish_bench.py switch it on.
ENABLED = False
# files bigger than this are read by the Python parser in chunks (a file is one JVM string here)
MAX_FILE_BYTES = 512 * 1024 * 1024
# value_converter's dispatch (by the lower-cased DataType) → the JSON type from_json reads
_JSON_TYPES = {"int16": T.LongType(), "int32": T.LongType(), "int64": T.LongType(),
               "double": T.DoubleType(), "single": T.DoubleType(), "boolean": T.BooleanType(),
               "string": T.StringType(), "datetime": T.StringType(), "idate": T.StringType()}
_INT_RANGES = {"int16": 15, "int32": 31}
# key columns are compared raw by the Python parser; doubles compare int == float exactly there
_KEY_TYPES = ("int16", "int32", "int64", "boolean", "string", "datetime", "idate")
_JSON_OPTIONS = {"allowSingleQuotes": "false", "allowNonNumericNumbers": "false",
                 "mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"}
_DATETIME = (r"^(?!0000)[0-9]{4}-[0-9]{2}-[0-9]{2}[T ](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
             r"(?:\.[0-9]{1,6})?$")
_DATE = r"^(?!0000)[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_HEX = "0123456789abcdef"
# a \\u escape of half a surrogate pair (Python's json keeps it, then Arrow refuses the text)
_LONE_SURROGATE = (r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
                   r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_GLOB = re.compile(r"[*?\[\]{}\\]")  # Spark would read these paths as glob patterns


def fast_files(tasks: Sequence[dict]) -> list[str]:
    """The files of a planned Qlik batch (`QlikReplicateFormat.plan_tasks`) that the JVM path
    may parse: local, uncompressed, one message per line, not cut by a held-back transaction,
    in a batch whose columns, keys, metadata and options the fast path implements."""
    if not tasks:
        return []
    ctx = tasks[0]["ctx"]
    types = [t.lower() for _, t in ctx["columns"]]
    names = [n for n, _ in ctx["columns"]]
    if ctx.get("table") or any(t not in _JSON_TYPES for t in types):
        return []
    if len({n.lower() for n in names}) != len(names):  # JSON field matching is by exact name
        return []
    kinds = dict(zip(names, types))
    if any(kinds.get(k) not in _KEY_TYPES for k in ctx["keys"]):
        return []
    if len({_ordinal_key(s[2]) for s in ctx["structures"]}) > 1:  # one column layout only
        return []
    # delivery: the JVM path checks no re-sends (a keyed table's copies of a change, ordered
    # next to it by changeSequence, change nothing); a keyless table's rows, and a batch after
    # one whose marks it could cover, take the Python parser (`sources/delivery.py`)
    if not ctx["keys"] or ctx.get("marks"):
        return []
    skipped = set(ctx.get("skip_files") or ()) if ctx.get("skip_before") else set()
    chosen = []
    for task in tasks:
        file = task["file"]
        if (task["mode"] != "lines" or task["compressed"] or file in skipped
                or is_remote_path(file) or "://" in file or _GLOB.search(file)):
            continue
        try:
            if os.path.getsize(file) > MAX_FILE_BYTES:
                continue
        except OSError:
            continue
        chosen.append(file)
    return sorted(set(chosen))


def _ordinal_key(mapping: dict) -> tuple:
    return tuple(sorted((int(k), v) for k, v in mapping.items()))


def _ordinals(ctx: dict) -> dict[int, str]:
    structures = ctx["structures"]
    mapping = structures[0][2] if structures else ctx["default_ordinals"]
    return {int(k): v for k, v in mapping.items()}


def _quoted(name: str) -> str:
    """`name` as a Java regex literal (letters and digits as they are, the rest escaped)."""
    return "".join(c if c.isalnum() else "\\" + c for c in name)


def parse_lines(spark: Any, files: Sequence[str], ctx: dict, schema: T.StructType):
    """One row per non-blank line of `files` (all chosen by `fast_files`): the reader's
    `schema`, `_sure` (false on a row the Python parser might treat differently) and
    `_metadata_message` (a metadata line: drop it once the rows are persisted; filtering
    before that trips a Spark code generation bug with these conditional expressions)."""
    names = [n for n, _ in ctx["columns"]]
    kinds = {n: t.lower() for n, t in ctx["columns"]}
    keys = list(ctx["keys"])
    record = T.StructType([T.StructField(n, _JSON_TYPES[kinds[n]]) for n in names])
    headers = T.StructType([T.StructField(n, T.StringType()) for n in (
        "operation", "changeSequence", "transactionId", "columnMask", "transactionLastEvent")])
    message = [T.StructField("data", record), T.StructField("beforeData", record),
               T.StructField("headers", headers)]
    json_schema = T.StructType(
        [T.StructField(n, T.StringType()) for n in ("magic", "type", "tableStructure", "lineage")]
        + [T.StructField("message", T.StructType(message))] + message
        + [T.StructField("_corrupt", T.StringType())])

    wanted = {}
    for file in files:
        wanted[file] = file
        wanted[os.path.normpath(os.path.abspath(file))] = file
    frame = spark.read.text(list(files), wholetext=True)
    uris = {uri: _local_name(uri, wanted) for uri in frame.inputFiles()}
    if sorted(set(uris.values())) != sorted(set(files)):
        return None  # Spark sees other files than asked for: let the Python parser read them
    # inputFiles spells local files file:///p, _metadata.file_path file:/p
    spellings = {**uris, **{re.sub("^file:///", "file:/", u): n for u, n in uris.items()}}
    file_of = F.create_map(*[F.lit(x) for pair in spellings.items() for x in pair])
    lines = frame.select(file_of[F.col("_metadata.file_path")].alias("file"),
                         F.posexplode(F.split("value", "\n")).alias("pos", "line"))
    line = F.col("line")
    blank = line.rlike("^[ \t\r\u000b\u000c]*$")
    j = F.from_json(line, json_schema, _JSON_OPTIONS)
    lines = lines.where(~blank).select("file", (F.col("pos") + 1).alias("line_no"), "line",
                                       j.alias("j"))
    j = F.col("j")
    plain = F.instr(line, "\\") == 0  # no escapes: every `"x"` token is a whole string

    def top_has(key: str, value: Column) -> Column:
        """`key in doc` at the top level (a null value counts as present)."""
        exact = F.coalesce(F.array_contains(F.json_object_keys(line), key), F.lit(False))
        return (F.when(value.isNotNull(), True)
                .when(plain & (F.instr(line, f'"{key}"') == 0), False).otherwise(exact))

    # the line without its escape pairs: every `"` left delimits a string
    unescaped = F.regexp_replace(line, r"\\.", "")

    def all_strings(key: str) -> Column:
        """Every value of a key spelt `key` in the line is a JSON string or null (and one is
        a string: the caller has a non-null text)."""
        firsts = F.regexp_extract_all(unescaped, F.lit(f'"{_quoted(key)}"\\s*:\\s*(.)'),
                                      F.lit(1))
        return (F.size(firsts) > 0) & F.forall(firsts, lambda c: c.isin('"', "n"))

    def certainly_string(text: Column) -> Column:
        """Spark's text of a JSON value that can only have been a JSON string."""
        return ~text.rlike("^[-0-9{\\[]") & ~text.isin("true", "false")

    # Spark inlines these expressions wherever they are used (no common-subexpression
    # elimination inside CASE branches), so what values depend on must stay cheap: `envelope`
    # reads parsed fields only; the exact classification (keys with null values) is checked
    # once, in `sure`.
    envelope = j["magic"].isNotNull() | (j["type"].isNotNull() & j["message"].isNotNull())
    exact_envelope = (top_has("magic", j["magic"])
                      | (top_has("type", j["type"]) & top_has("message", j["message"])))
    env_type = j["type"]
    env_kind = F.when(env_type.rlike("^[A-Za-z]+$"), F.upper(env_type))
    bare_md = top_has("tableStructure", j["tableStructure"]) | top_has("lineage", j["lineage"])
    is_md = F.when(envelope, env_kind == "MD").otherwise(bare_md)
    classified = (exact_envelope == envelope) & F.when(
        envelope, env_kind.isin("MD", "DT") & j["message"].isNotNull()).otherwise(
        bare_md | j["headers"].isNotNull())
    data, before, head = [F.when(envelope, j["message"][f]).otherwise(j[f])
                          for f in ("data", "beforeData", "headers")]
    # stage: the message's parts as columns (computed once per row, not once per use)
    lines = lines.select("file", "line_no", "line", "j", envelope.alias("_qe"),
                         data.alias("_qd"), before.alias("_qb"), head.alias("_qh"))
    envelope, data, before, head = (F.col(c) for c in ("_qe", "_qd", "_qb", "_qh"))

    # headers: str(x or "") of operation/changeSequence, `x or None` of transactionId
    op_text = head["operation"]
    operation = F.upper(op_text)  # sure only for ASCII letters, where it is Python's upper()
    op_sure = op_text.rlike("^[A-Za-z]+$") & operation.isin("INSERT", "REFRESH", "UPDATE",
                                                             "DELETE")
    seq = head["changeSequence"]
    seq_sure = (seq.isNull() | seq.rlike("^[1-9][0-9]*$") | (seq == "")
                | certainly_string(seq) | all_strings("changeSequence"))
    sequence = F.coalesce(seq, F.lit(""))
    txn_text = head["transactionId"]
    txn_sure = (txn_text.isNull() | (txn_text == "") | certainly_string(txn_text)
                | all_strings("transactionId"))
    txn = F.when(txn_text != "", txn_text)
    last_text = F.lower(head["transactionLastEvent"])
    last = (F.when(last_text.isin("true", "1", "t"), True)
            .when(last_text.isin("false", "0", "f"), False))
    last_sure = last_text.isNull() | last_text.rlike("^[a-z0-9.]*$")

    # present columns: the mask's bits (bit k-1 = ordinal k), else data's keys
    mask = head["columnMask"]
    has_mask = mask.isNotNull() & (mask != "")
    mask_sure = ~has_mask | (mask.rlike("^[0-9A-Fa-f]+$") & (mask != "0"))
    by_name: dict[str, list[int]] = {}
    for ordinal, name in _ordinals(ctx).items():
        by_name.setdefault(name, []).append(ordinal)

    def bit(ordinal: int) -> Column:
        digit, shift = (ordinal - 1) // 4, (ordinal - 1) % 4
        char = F.lower(F.substring(mask, -(digit + 1), 1))
        value = F.instr(F.lit(_HEX), char) - 1
        return (F.length(mask) > digit) & (F.shiftright(value, shift).bitwiseAND(1) == 1)

    data_keys = F.json_object_keys(F.when(envelope, F.get_json_object(line, "$.message.data"))
                                   .otherwise(F.get_json_object(line, "$.data")))
    present = {}
    for name in names:
        in_mask = F.lit(False)
        for ordinal in by_name.get(name, []):
            in_mask = in_mask | bit(ordinal)
        in_data = F.when(data[name].isNotNull(), True).otherwise(
            F.coalesce(F.array_contains(data_keys, name), F.lit(False)))
        present[name] = F.when(has_mask, in_mask).otherwise(in_data)

    # values: what value_converter gives, and whether it surely gives that
    def converted(value: Column, kind: str) -> tuple[Column, Column]:
        if kind in _INT_RANGES:
            bound = 1 << _INT_RANGES[kind]
            ok = value.isNull() | value.between(-bound, bound - 1)
            return F.when(ok, value.cast("short" if kind == "int16" else "int")), ok
        if kind == "single":
            return value.cast("float"), F.lit(True)
        if kind == "datetime":
            stamp = F.concat(value, F.lit("Z")).try_cast("timestamp")
            return stamp, value.isNull() | (value.rlike(_DATETIME) & stamp.isNotNull())
        if kind == "idate":
            day = value.try_cast("date")
            return day, value.isNull() | (value.rlike(_DATE) & day.isNotNull())
        return value, F.lit(True)

    def string_sure(name: str, text: Column, strict: bool) -> Column:
        loose = text.rlike("^(0|-?[1-9][0-9]*)$") | text.isin("true", "false")
        return (text.isNull() | certainly_string(text) | (F.lit(False) if strict else loose)
                | all_strings(name))

    values_sure = F.lit(True)
    new, old = {}, {}
    for name in names:
        kind = kinds[name]
        new[name], ok_new = converted(data[name], kind)
        old[name], ok_old = converted(before[name], kind)
        values_sure = values_sure & ok_new & ok_old
        if kind == "string":
            values_sure = (values_sure & string_sure(name, data[name], False)
                           & string_sure(name, before[name], False))

    # UPDATE: beforeData's keys, when they equal data's (else a key change: the Python path)
    before_set = before.isNotNull()
    keys_equal = F.lit(True)
    for key in keys:
        same = before[key].isNotNull() & data[key].isNotNull() & (before[key] == data[key])
        if kinds[key] == "string":
            same = (same & string_sure(key, data[key], True)
                    & string_sure(key, before[key], True))
        keys_equal = keys_equal & same
    update_sure = ~before_set | F.lit(not keys) | keys_equal
    adds_keys = before_set & F.lit(bool(keys)) & (operation == "UPDATE")
    upsert_present = {n: present[n] | (adds_keys & F.lit(n in keys)) for n in names}
    # DELETE: the values of beforeData when it holds anything, else of data
    before_any = F.lit(False)
    data_any = F.lit(False)
    for name in names:
        before_any = before_any | before[name].isNotNull()
        data_any = data_any | data[name].isNotNull()
    delete_sure = ~before_set | before_any | ~data_any
    delete_from_before = before_set & before_any

    well_formed = (j["_corrupt"].isNull() & ~line.contains("\ufffd")
                   & ~line.rlike(_LONE_SURROGATE)
                   & (F.json_array_length(F.concat(F.lit("["), line, F.lit("]"))) == 1)
                   & F.when(F.instr(line, "]") == 0, True).otherwise(  # `{..}]..` ends the array
                       F.json_object_keys(F.concat(F.lit('{"x":'), line, F.lit("}"))).isNotNull()))
    sure = (well_formed & classified
            & (is_md | (op_sure & seq_sure & txn_sure & last_sure & mask_sure & values_sure
                        & F.when(operation == "UPDATE", update_sure).otherwise(True)
                        & F.when(operation == "DELETE", delete_sure).otherwise(True))))
    sure = F.coalesce(sure & F.col("file").isNotNull(), F.lit(False))
    # stage: per-column values and presence, the row's verdict
    mid = {SURE_COLUMN: sure, MD_COLUMN: F.coalesce(is_md & sure, F.lit(False)),
           "_qop": operation, "_qseq": sequence, "_qtxn": txn, "_qlast": last,
           "_qdb": delete_from_before}
    for index, name in enumerate(names):
        mid.update({f"_qn{index}": new[name], f"_qo{index}": old[name],
                    f"_qp{index}": present[name], f"_qu{index}": upsert_present[name]})
    lines = lines.select("file", "line_no", *[e.alias(k) for k, e in mid.items()])
    operation, sequence, txn, last, delete_from_before = (
        F.col(c) for c in ("_qop", "_qseq", "_qtxn", "_qlast", "_qdb"))
    for index, name in enumerate(names):
        new[name], old[name] = F.col(f"_qn{index}"), F.col(f"_qo{index}")
        present[name], upsert_present[name] = F.col(f"_qp{index}"), F.col(f"_qu{index}")

    is_delete = operation == "DELETE"
    columns = []
    for name in names:
        upsert = F.when(present[name], new[name]).when(upsert_present[name], old[name])
        deleted = F.when(delete_from_before, old[name]).otherwise(new[name])
        field = schema[name].dataType
        columns.append(F.when(is_delete, deleted).otherwise(upsert).cast(field).alias(name))
    all_present = F.lit(True)
    for name in names:
        all_present = all_present & upsert_present[name]
    listed = F.filter(F.array(*[F.when(upsert_present[n], F.lit(n)) for n in sorted(names)]),
                      lambda x: x.isNotNull())
    present_column = F.when(is_delete | all_present, F.lit(None).cast("array<string>")) \
        .otherwise(listed)
    # every column nullable, as in the Python parser's frame (a landing file's Parquet schema
    # says optional/required from it)
    op = (F.when(operation == "INSERT", F.lit(OP_INSERT))
          .when(operation == "REFRESH", F.lit(int(ctx["refresh_op"])))
          .when(operation == "UPDATE", F.lit(OP_UPDATE)).when(is_delete, F.lit(OP_DELETE)))
    known = F.col("file").isNotNull()

    delivery = _delivery(sequence, files)
    order = F.struct(sequence.alias("seq"), F.col("file").alias("file"),
                     F.col("line_no").alias("line"), F.lit(0).alias("sub"))
    rows = lines.select(
        *columns, op.cast("int").alias("_op"),
        F.when(known, order.cast(schema["_order"].dataType)).alias("_order"),
        present_column.alias("_present"), F.col("file").alias("_source_file"),
        F.when(known, F.col("line_no").cast("long")).alias("_source_line"),
        F.lit(None).cast("string").alias(PAIR_COLUMN), txn.alias("_txn"), last.alias("_txn_last"),
        delivery.cast(schema[DELIVERY_COLUMN].dataType).alias(DELIVERY_COLUMN),
        F.lit(None).cast("string").alias(ERROR_COLUMN), SURE_COLUMN, MD_COLUMN)
    return rows


def _delivery(sequence: Column, files: Sequence[str]) -> Column:
    """`replicator_positions.qlik_delivery` of a message at `sequence` (a re-send is never
    dropped here: see `fast_files`)."""
    digits = sequence.rlike("^[0-9]{1,54}$")
    padded = F.rpad(sequence, 54, "0")
    parts = [F.substring(padded, 1 + 18 * i, 18).cast("bigint") for i in range(3)]
    position = F.when(digits, F.array(*parts, F.length(sequence).cast("bigint")))
    channels = {f: channel_of(f) for f in files}
    partition = F.lit("")
    if any(channels.values()):
        partition = F.create_map(*[F.lit(x) for pair in channels.items() for x in pair])[
            F.col("file")]
    return F.struct(partition.alias("partition"),
                    F.when(sequence == "", F.lit(SNAPSHOT)).otherwise(F.lit(STREAM)).alias("phase"),
                    position.alias("position"), position.isNotNull().alias("exact"),
                    F.lit(False).alias("per_key"), F.lit(False).alias("backwards"))


__all__ = ["fast_files", "parse_lines", "SURE_COLUMN"]
