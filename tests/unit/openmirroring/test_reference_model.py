"""The reference model against the worked examples of Microsoft's open-mirroring
landing-zone specification and DESIGN.md's rules.

If the model is wrong, every Spark comparison built on it is worthless; these cases pin it down.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.reference_model import (
    DELETE, INSERT, MARKER, UPDATE, UPSERT, LandingFile, ModelTable, csv_text, fold_batch,
    parse_marker)

EMP = ("EmployeeID", "EmployeeLocation", MARKER)


def employees(*rows, name="00000000000000000001.parquet"):
    return LandingFile(name, EMP, tuple(rows))


def test_seed_update_example():
    """Seed: E0001 moves from Redmond to Bellevue with a marker-1 row."""
    table = ModelTable(["EmployeeID"])
    assert table.apply([employees(("E0001", "Redmond", 0), ("E0002", "Redmond", 0),
                                  ("E0003", "Redmond", 0), ("E0001", "Bellevue", 1))]) is None
    assert table.columns == ["EmployeeID", "EmployeeLocation"]
    assert table.multiset() == Counter({("E0001", "Bellevue"): 1, ("E0002", "Redmond"): 1,
                                        ("E0003", "Redmond"): 1})


def test_seed_key_change_example():
    """Seed: a key change is a delete (only the key needs a value) plus an insert."""
    table = ModelTable(["EmployeeID"])
    table.apply([employees(("E0001", "Bellevue", 0), ("E0001", None, 2), ("E0002", "Bellevue", 0))])
    assert table.multiset() == Counter({("E0002", "Bellevue"): 1})


def test_seed_key_change_after_update_example_keeps_both_e0002_rows():
    """Both seed examples in sequence: marker 0 never checks for a duplicate key."""
    table = ModelTable(["EmployeeID"])
    table.apply([
        employees(("E0001", "Redmond", 0), ("E0002", "Redmond", 0), ("E0003", "Redmond", 0),
                  ("E0001", "Bellevue", 1)),
        employees(("E0001", "Bellevue", 0), ("E0001", None, 2), ("E0002", "Bellevue", 0),
                  name="00000000000000000002.parquet"),
    ])
    assert table.multiset() == Counter({("E0002", "Redmond"): 1, ("E0002", "Bellevue"): 1,
                                        ("E0003", "Redmond"): 1})


@pytest.mark.parametrize("marker, existing, expected", [
    # the seed's marker table: (row absent, row present)
    (INSERT, [], [("k", "new")]),
    (INSERT, [("k", "old")], [("k", "old"), ("k", "new")]),
    (UPDATE, [], [("k", "new")]),
    (UPDATE, [("k", "old")], [("k", "new")]),
    (DELETE, [], []),
    (DELETE, [("k", "old")], []),
    (UPSERT, [], [("k", "new")]),
    (UPSERT, [("k", "old")], [("k", "new")]),
])
def test_marker_table_of_the_seed(marker, existing, expected):
    table = ModelTable(["id"])
    cols = ("id", "v", MARKER)
    table.apply([LandingFile("1.parquet", cols, tuple((k, v, 0) for k, v in existing)),
                 LandingFile("2.parquet", cols, (("k", "new", marker),))])
    assert table.multiset() == Counter(expected)


def test_update_replaces_every_duplicate_row_and_delete_removes_them_all():
    table = ModelTable(["id"])
    cols = ("id", "v", MARKER)
    table.apply([LandingFile("1", cols, ((1, "a", 0), (1, "b", 0), (2, "c", 0), (1, "z", 1)))])
    assert table.multiset() == Counter({(1, "z"): 2, (2, "c"): 1})
    table.apply([LandingFile("2", cols, ((1, None, 2),))])
    assert table.multiset() == Counter({(2, "c"): 1})


@pytest.mark.parametrize("upsert_default, expected", [
    (False, {(1, "a"): 1, (1, "b"): 1}),
    (True, {(1, "b"): 1}),
])
def test_default_marker_for_files_without_marker_and_null_markers(upsert_default, expected):
    table = ModelTable(["id"], upsert_default=upsert_default)
    table.apply([LandingFile("1", ("id", "v"), ((1, "a"),)),
                 LandingFile("2", ("id", "v", MARKER), ((1, "b", None),))])
    assert table.multiset() == Counter(expected)


def test_keyless_table_is_insert_only_and_rejects_other_markers():
    table = ModelTable([])
    cols = ("v", MARKER)
    error = table.apply([LandingFile("1", cols, (("a", 0), ("a", None))),
                         LandingFile("2", cols, (("b", 0), ("a", 1))),
                         LandingFile("3", cols, (("c", 0),))])
    assert (error.file, error.row, error.reason) == ("2", 2, "KeylessChange")
    assert table.multiset() == Counter({("a",): 2})
    assert table.applied == ["1"]


def test_keyless_table_with_upsert_default_rejects_unmarked_rows():
    table = ModelTable([], upsert_default=True)
    error = table.apply([LandingFile("1", ("v",), (("a",),))])
    assert error.reason == "KeylessChange"


@pytest.mark.parametrize("marker", [UPDATE, DELETE, UPSERT])
def test_null_key_in_keyed_change_is_an_error_but_not_in_an_insert(marker):
    table = ModelTable(["id", "id2"])
    cols = ("id", "id2", "v", MARKER)
    assert table.apply([LandingFile("1", cols, ((None, 1, "x", 0),))]) is None
    error = table.apply([LandingFile("2", cols, ((1, 1, "y", 0), (1, None, "y", marker)))])
    assert (error.file, error.row, error.reason) == ("2", 2, "NullKey")
    assert table.multiset() == Counter({(None, 1, "x"): 1})  # nothing of file 2


@pytest.mark.parametrize("raw, expected", [
    (0, 0), (4, 4), ("1", 1), (" 2 ", 2), ("4.0", 4), (2.0, 2), (None, 0), ("", 0)])
def test_marker_parsing(raw, expected):
    assert parse_marker(raw, 0) == expected


@pytest.mark.parametrize("raw", [3, "3", -1, 5, "x", 1.5, True])
def test_bad_markers(raw):
    with pytest.raises(ValueError):
        parse_marker(raw, 0)


def test_bad_marker_stops_the_table_at_that_file_with_the_row():
    table = ModelTable(["id"])
    cols = ("id", MARKER)
    error = table.apply([LandingFile("1", cols, ((1, 0),)),
                         LandingFile("2", cols, ((2, 0), (3, 0), (4, 3))),
                         LandingFile("3", cols, ((5, 0),))])
    assert (error.file, error.row, error.reason) == ("2", 3, "BadMarker")
    assert table.multiset() == Counter({(1,): 1})
    # re-written under the same name, the table goes on from that file
    assert table.apply([LandingFile("2", cols, ((2, 0),)), LandingFile("3", cols, ((5, 0),))]) is None
    assert table.multiset() == Counter({(1,): 1, (2,): 1, (5,): 1})
    assert table.applied == ["1", "2", "3"]


def test_column_union_first_seen_order_with_nulls_for_absent_columns():
    table = ModelTable(["id"])
    table.apply([LandingFile("1", ("id", "a", MARKER), ((1, "a1", 0),)),
                 LandingFile("2", ("b", MARKER, "id"), (("b2", 0, 2),)),   # adds b; lacks a
                 LandingFile("3", ("id", "a", MARKER), ((1, None, 1),))])  # update drops b to NULL
    assert table.columns == ["id", "a", "b"]
    assert table.multiset() == Counter({(1, None, None): 1, (2, None, "b2"): 1})


def test_type_change_missing_key_and_corrupt_files_fail_the_table():
    table = ModelTable(["id"])
    good = LandingFile("1", ("id", "v"), ((1, 10),), types=("int64", "int64"))
    changed = LandingFile("2", ("id", "v"), ((2, "x"),), types=("int64", "string"))
    assert table.apply([good, changed]).reason == "TypeChange"
    assert table.apply([LandingFile("2", ("v",), ((1,),))]).reason == "MissingKeyColumn"
    assert table.apply([LandingFile("2", ("id",), (), corrupt="zero bytes")]).reason == "Corrupt"
    assert table.multiset() == Counter({(1, 10): 1})


def test_csv_text_quotes_escapes_and_nulls():
    f = LandingFile("1.csv", ("id", "name", "age"), ((1, "a,b", None), (2, "it's", 3)))
    text = csv_text(f, quote="'", escape="\\", null_value="N/A")
    assert text == "id,name,age\r\n1,'a,b',N/A\r\n2,'it\\'s',3\r\n"


# --- the DESIGN.md fold must equal sequential application -------------------------------------

_changes = st.lists(st.tuples(st.sampled_from([INSERT, UPDATE, DELETE, UPSERT]),
                              st.integers(0, 2), st.integers(0, 99)), max_size=12)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(existing=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 99)), max_size=5),
       changes=_changes)
def test_design_fold_equals_sequential_application(existing, changes):
    cols = ("id", "v", MARKER)
    table = ModelTable(["id"])
    table.apply([LandingFile("0", cols, tuple((k, v, INSERT) for k, v in existing))])
    before = [dict(r) for r in table.rows]
    table.apply([LandingFile("1", cols, tuple((k, v, m) for m, k, v in changes))])
    folded = fold_batch(["id"], before, [(m, {"id": k, "v": v}) for m, k, v in changes],
                        ["id", "v"])
    assert Counter(tuple(r.values()) for r in folded) == table.multiset()
