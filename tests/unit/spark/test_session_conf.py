"""session_conf on a session shared by threads: what the session held before comes back."""
import os
import threading

import pytest

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.spark.platform.session import session_conf


class FakeConf:
    def __init__(self, values=None):
        self.values = dict(values or {})

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        self.values[key] = value

    def unset(self, key):
        self.values.pop(key, None)


class FakeSession:
    def __init__(self, values=None):
        self.conf = FakeConf(values)


KEY = "spark.sql.inMemoryColumnarStorage.compressed"


def test_overlapping_blocks_on_threads_leave_the_session_as_it_was():
    # the interleaving that leaked a value: both threads look before either sets
    session = FakeSession()
    inside = threading.Barrier(2)
    leave_first = threading.Event()
    seen = []

    def block(first):
        with session_conf(session, {KEY: "false"}, keep_set=True):
            seen.append(session.conf.get(KEY))
            inside.wait()
            if first:
                return
            leave_first.wait()
        # the second thread leaves after the first

    def first():
        block(True)
        leave_first.set()

    threads = [threading.Thread(target=first), threading.Thread(target=block, args=(False,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == ["false", "false"]
    assert KEY not in session.conf.values


def test_a_profile_value_is_kept_and_restored():
    session = FakeSession({KEY: "true"})
    with session_conf(session, {KEY: "false"}, keep_set=True):
        assert session.conf.get(KEY) == "true"
    assert session.conf.values == {KEY: "true"}
    with session_conf(session, {KEY: "false"}):
        assert session.conf.get(KEY) == "false"
    assert session.conf.values == {KEY: "true"}


def test_two_open_blocks_asking_different_values_is_refused_and_nothing_leaks():
    session = FakeSession()
    with session_conf(session, {KEY: "false"}):
        with pytest.raises(MirrorspecError, match=KEY):
            with session_conf(session, {"other": "1", KEY: "true"}):
                pass
        assert session.conf.values == {KEY: "false"}
    assert session.conf.values == {}


def test_a_local_driver_has_the_cached_jars_on_its_class_path_a_cluster_ships_them(
        monkeypatch, tmp_path):
    """A local master is one JVM: Delta's and Kafka's jars go on its class path (nothing copied
    to a local executor before its first task); a cluster's executors get them as spark.jars."""
    from mirrorspec.spark.platform import jars, session

    delta = [tmp_path / "delta-spark.jar", tmp_path / "delta-storage.jar"]
    kafka = [tmp_path / "spark-sql-kafka.jar"]
    monkeypatch.setattr(jars, "fetch", lambda quiet=True: delta)
    monkeypatch.setattr(jars, "cached_kafka_jars", lambda: kafka)
    local = session.driver_conf({}, "local[2]")
    assert local["spark.driver.extraClassPath"].split(os.pathsep) == [str(p) for p in delta + kafka]
    assert "spark.jars" not in local
    cluster = session.driver_conf({}, "spark://master:7077")
    assert cluster["spark.jars"].split(",") == [str(p) for p in delta + kafka]
    assert "spark.driver.extraClassPath" not in cluster
    # a profile's own class path is kept, ahead of the cached jars
    mine = session.driver_conf({"spark.driver.extraClassPath": "/opt/my.jar"}, "local[*]")
    assert mine["spark.driver.extraClassPath"].split(os.pathsep)[0] == "/opt/my.jar"
