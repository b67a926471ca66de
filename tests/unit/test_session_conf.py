"""session_conf on a session shared by threads: what the session held before comes back."""
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
