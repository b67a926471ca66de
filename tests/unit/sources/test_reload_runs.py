"""Where a producer's full load starts again (`sources.reload_runs`): the runs of full-load
reads (Qlik REFRESH rows, Arcion snapshot rows) among a batch's rows, in file order."""

from __future__ import annotations

from mirrorspec.sources.reload_runs import Run, reload_runs


def test_the_feeds_first_load_replaces_nothing_and_a_load_after_changes_replaces():
    runs, last = reload_runs([("a", 1, True), ("a", 4, False), ("b", 1, True)], None, False)
    assert runs == [Run("a", 1, replaces=False), Run("b", 1, replaces=True)] and last is True


def test_reads_continuing_across_files_and_batches_are_one_load():
    runs, last = reload_runs([("a", 1, True), ("b", 1, True)], True, True)
    assert runs == [Run("a", 1, replaces=False, continues=True)] and last is True
    assert reload_runs([("a", 1, True), ("b", 1, True)], None, False)[0] == [
        Run("a", 1, replaces=False)]


def test_a_first_load_after_an_earlier_publish_replaces():
    """A table that published before (rows of another origin, or a state lost) and whose feed
    now starts with reads: the load replaces what the table holds."""
    assert reload_runs([("a", 1, True)], None, True)[0] == [Run("a", 1, replaces=True)]


def test_changes_only_end_in_a_change():
    assert reload_runs([("a", 1, False), ("b", 1, False)], True, True) == ([], False)
