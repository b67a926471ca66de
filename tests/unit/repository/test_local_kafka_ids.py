"""The local test broker's KRaft cluster id never looks like a command-line option."""

from __future__ import annotations

import uuid

import local_kafka


def test_an_id_starting_with_a_dash_is_drawn_again(monkeypatch):
    draws = iter([uuid.UUID(bytes=b"\xf8" + b"\x00" * 15), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(local_kafka.uuid, "uuid4", lambda: next(draws))
    cluster = local_kafka._cluster_id()
    assert cluster == "AQEBAQEBAQEBAQEBAQEBAQ"  # the second draw; the first began with "-"
