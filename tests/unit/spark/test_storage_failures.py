"""Storage failures without a JVM: which failures are storage failures (Python and Java shapes), the
monitoring JSON's stale marker, and a landing file's recorded version and settle time."""

from __future__ import annotations

import errno
import os

import pytest

from mirrorspec.artifacts import status
from mirrorspec.base import files
from mirrorspec.landing import layout as landing
from mirrorspec.spark.platform import failures


class _Class:
    def __init__(self, name, parent=None):
        self.name, self.parent = name, parent

    def getName(self):
        return self.name

    def getSuperclass(self):
        return self.parent


THROWABLE = _Class("java.lang.Throwable")
IO = _Class("java.io.IOException", _Class("java.lang.Exception", THROWABLE))
FILE_NOT_FOUND = _Class("java.io.FileNotFoundException", IO)
SPARK = _Class("org.apache.spark.SparkException", _Class("java.lang.Exception", THROWABLE))


class _Java:
    def __init__(self, kind, text, cause=None):
        self.kind, self.text, self.cause = kind, text, cause

    def getClass(self):
        return self.kind

    def getCause(self):
        return self.cause

    def toString(self):
        return f"{self.kind.name}: {self.text}"


class FakePy4JError(Exception):
    """What a Py4JJavaError offers: a message with the Java trace, and `java_exception`."""

    def __init__(self, java):
        super().__init__("An error occurred while calling o67.save.\n" + java.toString()
                         + "\n\tat org.apache.spark.Foo.bar(Foo.scala:1)")
        self.java_exception = java


def test_python_and_java_io_failures_are_storage_failures():
    assert "No space left on device" in failures.storage_cause(
        OSError(errno.ENOSPC, "No space left on device", "/wh/x"))
    wrapped = FakePy4JError(_Java(SPARK, "Job aborted", _Java(
        FILE_NOT_FOUND, "/lz/t/_publishing_1/part-0 (No space left on device)")))
    cause = failures.storage_cause(wrapped)
    assert cause.startswith("java.io.FileNotFoundException") and "\tat" not in cause
    plain_io = FakePy4JError(_Java(SPARK, "Job aborted", _Java(IO, "Input/output error")))
    assert failures.storage_cause(plain_io) == "java.io.IOException: Input/output error"
    assert failures.storage_cause(FakePy4JError(_Java(SPARK, "AnalysisException"))) is None
    assert failures.storage_cause(RuntimeError("merge broke")) is None


def test_a_storage_error_names_the_log_holding_the_trace(tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORSPEC_LOG_DIR", str(tmp_path))
    monkeypatch.setattr("mirrorspec.base.logfile._path", None)
    error = failures.as_storage_error(
        FakePy4JError(_Java(SPARK, "Job aborted", _Java(IO, "No space left on device"))),
        "dbo.t: publish", "publishing failed", "the next run publishes this batch")
    assert error.code == "StorageError" and "\tat" not in error.message
    assert error.message.startswith("publishing failed: java.io.IOException: No space left")
    log = error.message.rsplit("details in ", 1)[1]
    assert "Foo.scala" in open(log).read()
    assert failures.as_storage_error(RuntimeError("x"), "ctx", "what") is None


def test_a_failed_status_write_is_marked_and_the_next_write_says_it_corrected_it(
        tmp_path, monkeypatch):
    warehouse = str(tmp_path)
    outcome = {"schema": None, "name": "t", "status": "Replicating"}
    assert status.write_status(warehouse, [outcome])["corrected"] is False
    real_write = files.LocalFS.write_text

    def disk_full(self, path, text):
        if path.endswith(status.TABLES_FILE):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real_write(self, path, text)

    monkeypatch.setattr(files.LocalFS, "write_text", disk_full)
    with pytest.raises(OSError):
        status.write_status(warehouse, [{**outcome, "status": "Failed"}])
    assert status.is_stale(warehouse)
    monkeypatch.setattr(files.LocalFS, "write_text", real_write)
    written = status.write_status(warehouse, [{**outcome, "status": "Failed"}])
    assert written["corrected"] is True and not status.is_stale(warehouse)
    assert status.read_status(warehouse)["tables"][0]["status"] == "Failed"


def test_the_local_temporary_file_is_removed_when_a_write_fails(tmp_path, monkeypatch):
    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError):
        files.LocalFS().write_text(str(tmp_path / "x.json"), "{}")
    assert os.listdir(tmp_path) == []


def test_a_file_version_and_the_settle_time():
    def file(size, mtime, etag=None):
        return landing.LandingFile("f", "/f", size, mtime, "csv", 1, etag)

    recorded = landing.file_stats(file(10, 100.0004))
    assert landing.same_version(file(10, 100.0001), recorded)
    assert not landing.same_version(file(11, 100.0004), recorded)
    assert not landing.same_version(file(10, 101.0), recorded)
    tagged = landing.file_stats(file(10, 100.0, "e1"))
    assert not landing.same_version(file(10, 100.0, "e2"), tagged)  # same size and time
    assert landing.same_version(file(10, 100.0), tagged)  # a listing without tags
    files = [file(1, 50.0), file(1, 95.0), file(1, 60.0)]
    assert landing.unsettled(files, 0, 100.0) is None
    assert landing.unsettled(files, 10, 100.0) == 1  # it and the files after it wait
    assert landing.unsettled(files, 60, 100.0) == 0


def test_status_says_when_the_monitoring_json_is_stale(tmp_path):
    from click.testing import CliRunner

    from mirrorspec.cli import cli

    status.write_status(str(tmp_path), [{"schema": None, "name": "t", "status": "Replicating"}])
    (tmp_path / status.STALE_MARKER).write_text("")
    shown = CliRunner().invoke(cli, ["status", "--warehouse", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    assert "may not hold the latest pass" in shown.output
