"""Where a record of a delimited (CSV) file is, and how a cell that isn't of its column's type
is said: one home for the mirroring engine, `mirrorspec lint` and the extract reader.

A place in a delimited file is its line as a text editor numbers it: 1-based, the header line
counted, a quoted field that spans line breaks counted by its lines, `\\r\\n` one line end.
"""

from __future__ import annotations

import csv
import io
from typing import Iterator

MALFORMED = None  # the cells `record_lines` gives a record Python's csv module can't parse


def record_lines(text: str, dialect: dict) -> Iterator[tuple[int, list[str] | None]]:
    """(line the record starts on, its cells) of every record of `text` (decoded, a leading
    byte-order mark dropped) read with the `csv.reader` arguments `dialect`, header included.
    An empty line is a record of no cells. A record the csv module can't parse (an unclosed
    quote, a NUL) ends the records with `MALFORMED` cells at its line."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), **dialect)
    start = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error:
            yield start, MALFORMED
            return
        yield start, cells
        start = reader.line_num + 1


def data_record_lines(text: str, dialect: dict, header: bool = True
                      ) -> Iterator[tuple[int, list[str] | None]]:
    """`record_lines` without the header (the first record, when `header`) and without empty
    lines, which Spark's CSV reader skips: the n-th item is the file's n-th data row."""
    records = record_lines(text, dialect)
    if header:
        next(records, None)
    for line, cells in records:
        if cells != []:
            yield line, cells


def line_of_data_row(text: str, dialect: dict, row: int, header: bool = True) -> int | None:
    """The line data row `row` (1-based, the header apart) starts on; None past the end."""
    for number, (line, _cells) in enumerate(data_record_lines(text, dialect, header), start=1):
        if number == row:
            return line
    return None


def cell_type_parts(column: str, field: int, type_text: str) -> tuple[str, str]:
    """The problem of a cell that isn't of its column's type, as the text before and after the
    cell's raw value (so a Spark expression can put the value between them): `field` is the
    column's 1-based position in the record, `type_text` the type it must read as."""
    return (f"column {column} (field {field}): '", f"' is not a valid {type_text}")


def cell_type_problem(column: str, field: int, type_text: str, value: str) -> str:
    """`cell_type_parts` around `value`: `column quantity (field 3): 'five' is not a valid
    Int32`."""
    before, after = cell_type_parts(column, field, type_text)
    return before + value + after
