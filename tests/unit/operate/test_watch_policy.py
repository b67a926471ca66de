"""`mirror --watch` between passes: the backoff schedule of a failed table
and the once-only reporting, as pure logic (the clock and folder signatures are passed in)."""

from __future__ import annotations

from mirrorspec.base.console import Console
from mirrorspec.operate.watch import Backoff, QuietConsole


def test_a_failed_table_backs_off_exponentially_up_to_the_cap():
    backoff = Backoff(interval=2, cap=30)
    assert [backoff.delay(n) for n in range(1, 7)] == [2, 4, 8, 16, 30, 30]


def test_a_failed_table_is_skipped_until_its_retry_time():
    backoff = Backoff(interval=2, cap=30)
    assert backoff.due("t", 0, "sig")  # never failed
    backoff.record("t", True, now=100, signature="sig")
    assert not backoff.due("t", 101, "sig")
    assert backoff.due("t", 102, "sig")
    backoff.record("t", True, now=102, signature="sig")  # second failure: 4 s
    assert not backoff.due("t", 105.9, "sig") and backoff.due("t", 106, "sig")


def test_a_changed_folder_is_retried_at_once():
    backoff = Backoff(interval=2, cap=30)
    for now in (0, 2, 6, 14):
        backoff.record("t", True, now=now, signature="old")
    assert not backoff.due("t", 15, "old")
    assert backoff.due("t", 15, "re-written file")


def test_a_success_ends_the_backoff():
    backoff = Backoff(interval=2)
    backoff.record("t", True, now=0, signature="s")
    backoff.record("t", False, now=2, signature=None)
    assert backoff.failing == {} and backoff.due("t", 2, "s")


class Recorder(Console):
    def __init__(self):
        super().__init__(log_format="json")
        self.lines: list[str] = []

    def event(self, kind, message, **fields):
        self.lines.append(f"{kind}: {message}")


def run_pass(quiet: QuietConsole, events, outcomes):
    for kind, message, table in events:
        quiet.event(kind, message, table=table)
    return quiet.end_pass(outcomes)


def test_a_failure_is_reported_once_until_it_changes():
    out = Recorder()
    quiet = QuietConsole(out)
    failing = [("info", "3 table(s) in /lz", None), ("info", "t: 1 file(s) pending", "t"),
               ("error", "t: f.parquet: bad marker", "t")]
    failed = {"t": ("Failed", "bad marker", ())}
    assert run_pass(quiet, failing, failed) == ["t"]
    assert len(out.lines) == 3
    for _ in range(5):  # retries failing the same way: nothing new to say
        assert run_pass(quiet, failing, failed) == []
    assert len(out.lines) == 3
    changed = [("info", "t: 1 file(s) pending", "t"), ("error", "t: f.parquet: NULL key", "t")]
    run_pass(quiet, changed, {"t": ("Failed", "NULL key", ())})
    assert out.lines[3:] == ["error: t: f.parquet: NULL key"]


def test_idle_passes_are_quiet_and_work_is_always_shown():
    out = Recorder()
    quiet = QuietConsole(out)
    applying = [("info", "3 table(s) in /lz", None), ("info", "t: applying 1 file(s)", "t")]
    for n in range(3):  # a file lands before every pass: each pass's work is news
        run_pass(quiet, applying, {"t": ("Replicating", None, (f"{n}.parquet",))})
    assert out.lines.count("info: t: applying 1 file(s)") == 3
    assert out.lines.count("info: 3 table(s) in /lz") == 1
    before = len(out.lines)
    for _ in range(10):  # idle
        assert run_pass(quiet, [("info", "3 table(s) in /lz", None),
                                ("warning", "t: no _metadata.json", "t")],
                        {"t": ("Replicating", None, ())}) in ([], ["t"])
    assert len(out.lines) == before + 1  # the warning once, then nothing


def test_a_recovered_table_that_fails_again_is_reported_again():
    out = Recorder()
    quiet = QuietConsole(out)
    error = [("error", "t: bad", "t")]
    run_pass(quiet, error, {"t": ("Failed", "bad", ())})
    run_pass(quiet, [], {"t": ("Replicating", None, ("f",))})
    run_pass(quiet, error, {"t": ("Failed", "bad", ())})
    assert out.lines == ["error: t: bad", "error: t: bad"]


def test_news_is_files_applied_or_a_changed_status_or_error():
    quiet = QuietConsole(Recorder())
    ok, applied = ("Replicating", None, ()), ("Replicating", None, ("f1",))
    assert quiet.news("t", ok)  # never seen: the first pass shows every table
    quiet.end_pass({"t": applied})
    assert not quiet.news("t", ok)  # idle after a busy pass: nothing to show
    assert quiet.news("t", ("Replicating", None, ("f2",)))
    quiet.end_pass({"t": ok})
    assert not quiet.news("t", ok)
    assert quiet.news("t", ("Failed", "bad marker", ()))
    quiet.end_pass({"t": ("Failed", "bad marker", ())})
    assert not quiet.news("t", ("Failed", "bad marker", ()))
    assert quiet.news("t", ("Failed", "another error", ()))
