"""Delta's commit conflicts are told apart by class alone (`delta.is_conflict`), classic and
over Spark Connect: pyspark's Connect client turns a server error into Delta's class once
`delta.connect` has registered the mapping, which every Connect session mirrorspec opens does
(`session.register_delta_errors`). No JVM: the Connect conversion is the client's own code, fed
the error metadata a server sends (delta-io/delta, python/delta/connect/exceptions.py, 4.x)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("grpc", reason="needs pyspark's Spark Connect extras")

from google.rpc.error_details_pb2 import ErrorInfo
from pyspark.errors.exceptions.connect import convert_exception

from mirrorspec.spark.platform.delta import is_conflict
from mirrorspec.spark.platform.session import register_delta_errors

# The class hierarchy a Delta 4 Connect server sends with a concurrent-append conflict
APPEND = ["io.delta.exceptions.ConcurrentAppendException",
          "org.apache.spark.sql.delta.ConcurrentAppendException",
          "io.delta.exceptions.DeltaConcurrentModificationException",
          "java.util.ConcurrentModificationException", "java.lang.RuntimeException"]


def server_error(classes: list[str], message: str) -> Exception:
    info = ErrorInfo(reason=classes[0], metadata={"classes": json.dumps(classes)})
    return convert_exception(info, message, None)


def test_a_conflict_over_connect_arrives_as_delta_s_class():
    register_delta_errors(remote=True)
    error = server_error(APPEND, "Files were added to the root of the table by a concurrent update.")
    assert type(error).__name__ == "ConcurrentAppendException"
    assert is_conflict(error)


def test_other_server_errors_are_not_conflicts_whatever_their_text_says():
    register_delta_errors(remote=True)
    error = server_error(["org.apache.spark.sql.AnalysisException", "java.lang.Exception"],
                         "ConcurrentAppendException mentioned in a column name")
    assert not is_conflict(error)
    assert not is_conflict(RuntimeError("ConcurrentAppendException"))  # text alone never counts


def test_a_conflict_raised_from_another_exception_is_still_a_conflict():
    from delta.exceptions.base import ConcurrentTransactionException

    try:
        try:
            raise ConcurrentTransactionException("same txnAppId committed by another writer")
        except ConcurrentTransactionException as inner:
            raise RuntimeError("MERGE failed") from inner
    except RuntimeError as outer:
        assert is_conflict(outer)
