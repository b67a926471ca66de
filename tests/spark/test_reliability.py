"""Reliability in process: relative paths, failures that are not a file's fault, a file moved away
by another process while this one reads or commits, progress that outlives Delta's log
cleanup (checkpoints, OPTIMIZE, VACUUM). The figures of docs/reliability.md come from here."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
from collections import Counter

import pytest
from click.testing import CliRunner

from mirrorspec.cli import cli
from mirrorspec.openmirroring.mirroring import mirror_id, sequence_file_name
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.spark.mirror import commit, engine, fold
from mirrorspec.spark.platform import failures
from mirrorspec.spark.ops import inspect, replay
from mirrorspec.spark.ops.datatests import run_data_tests
from mirrorspec.landing.processed import applied_files
from mirrorspec.landing.lint import lint_landing_zone
from mirrorspec.artifacts.plan import PLAN_VERSION, Plan, SparkSpec, TablePlan, TableStep
from mirrorspec.progress import mirror as progress
from mirrorspec.base import files as fsmod
from mirrorspec.artifacts.status import read_status

from tests.spark.test_engine import M, delta_rows, parquet, table_dir

KEYED = {"keyColumns": ["id"]}
TEST_ARGS = ["--master", "local[2]", "--threads", "1"]


def change(n: int) -> dict:
    """File n: a duplicate-key insert pair (doubled if applied twice), an update of key 1."""
    return {"id": [10 * n, 10 * n, 1], "v": [f"i{n}", f"i{n}", f"u{n}"], M: [0, 0, 4]}


def expected(numbers) -> Counter:
    rows = Counter()
    for n in numbers:
        rows[(10 * n, f"i{n}")] += 2
    last = max(numbers)
    rows[(1, f"u{last}")] = 1
    return rows


# --- 1. the README loop with relative paths ---------------------------------------------------

def test_readme_loop_with_relative_paths_from_another_folder(spark, tmp_path, monkeypatch):
    """`mirror --landing-zone LZ --warehouse WH` run twice from a folder that is not the repo:
    the second batch (a MERGE, which names the table as delta.`path` in SQL) applies too."""
    cwd = tmp_path / "somewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    folder = table_dir("LZ", "orders", metadata=KEYED)
    args = ["mirror", "--landing-zone", "LZ", "--warehouse", "WH", *TEST_ARGS]
    parquet(folder, 1, change(1))
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    parquet(folder, 2, change(2))
    second = CliRunner().invoke(cli, args)
    assert second.exit_code == 0, second.output
    assert delta_rows(spark, str(cwd / "WH" / "dbo" / "orders"), ["id", "v"]) == expected([1, 2])
    entry = read_status("WH")["tables"][0]
    assert (entry["status"], entry["error"]) == ("Replicating", None)
    status = CliRunner().invoke(cli, ["status", "--warehouse", "WH"])
    assert status.exit_code == 0 and str(cwd / "WH") in status.output, status.output


def test_paths_enter_in_one_absolute_form(tmp_path, monkeypatch):
    from mirrorspec.commands.params import absolute_location

    monkeypatch.chdir(tmp_path)
    assert absolute_location(None, None, "LZ/") == str(tmp_path / "LZ")
    assert absolute_location(None, None, ("a", "s3a://b/c/")) == (str(tmp_path / "a"),
                                                                   "s3a://b/c")
    target = engine._absolute(engine.MirrorTarget("dbo.t", None, "t", "LZ/t", "WH/dbo/t"))
    assert (target.landing_path, target.delta_path) == (str(tmp_path / "LZ" / "t"),
                                                        str(tmp_path / "WH" / "dbo" / "t"))


# --- 2. failures that are not the file's -------------------------------------------------------

def test_an_engine_error_is_not_reported_as_a_bad_file(spark, tmp_path, monkeypatch):
    """A Spark/Delta failure in the MERGE: EngineError, says the files are fine, names the log
    (which holds the traceback), and the command's hint doesn't ask to re-write the file."""
    monkeypatch.setenv("MIRRORSPEC_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr("mirrorspec.base.logfile._path", None)
    landing, warehouse = str(tmp_path / "l"), str(tmp_path / "w")
    folder = table_dir(landing, "t", metadata=KEYED)
    parquet(folder, 1, change(1))
    engine.mirror_landing_zone(spark, landing, warehouse)
    parquet(folder, 2, change(2))

    def broken_merge(*_args, **_kwargs):
        raise RuntimeError("DELTA_SOMETHING_INTERNAL: the engine broke")

    monkeypatch.setattr(fold, "run_merge", broken_merge)
    result = CliRunner().invoke(cli, ["mirror", "--landing-zone", landing, "--warehouse",
                                      warehouse, *TEST_ARGS])
    assert result.exit_code == 1
    error = read_status(warehouse)["tables"][0]["error"]
    assert error["errorCode"] == "EngineError", error
    assert "not a problem with the landing files" in error["message"]
    log = re.search(r"details in (\S+\.log)", error["message"]).group(1)
    assert "the engine broke" in open(log).read() and "Traceback" in open(log).read()
    assert "fix or re-write" not in result.output and "log file" in result.output
    assert "Traceback" not in result.output
    assert delta_rows(spark, os.path.join(warehouse, "dbo", "t"), ["id", "v"]) == expected([1])


def test_error_codes_of_failures_that_are_not_a_files(spark):
    assert engine.error_code_of(OSError(5, "EIO", "/wh/dbo/t/_delta_log/x"), "/wh/dbo/t") == \
        "StorageError"
    assert engine.error_code_of(OSError(5, "EIO", "/lz/t/x"), "/wh/dbo/t") == "StorageError"
    assert engine.error_code_of(RuntimeError("py4j"), "/wh/dbo/t") == "EngineError"
    try:  # a real Java IOException through py4j (what Hadoop raises on a full disk)
        spark._jvm.java.io.FileInputStream("/nonexistent/mirrorspec")
    except Exception as exc:  # noqa: BLE001 - Py4JJavaError
        assert engine.error_code_of(exc, "/wh/dbo/t") == "StorageError"
        assert failures.storage_cause(exc).startswith("java.io.FileNotFoundException")
    else:
        pytest.fail("no Java exception")


# --- 3. a file moved away by another process while this one commits -----------------------------

def test_files_moved_away_by_another_process_at_commit_time_are_a_reread(spark, tmp_path,
                                                                         monkeypatch):
    """This pass read files 2-5; before it commits, another pass (which saw only 2-4) commits
    them and moves 2-3 away. The commit can't read file 2: not a bad file, a re-read, which
    applies file 5 alone. Every file applied once."""
    landing, warehouse = str(tmp_path / "l"), str(tmp_path / "w")
    folder = table_dir(landing, "t", metadata=KEYED)
    parquet(folder, 1, change(1))
    engine.mirror_landing_zone(spark, landing, warehouse)
    for n in range(2, 6):
        parquet(folder, n, change(n))
    real_crash_point = commit.crash_point
    other_ran = []

    def other_process_commits_first(name, table=None):
        if name == "before_commit" and not other_ran:
            other_ran.append(True)
            fifth = os.path.join(folder, sequence_file_name(5))
            shutil.move(fifth, str(tmp_path / "aside"))  # the other one listed before it landed
            other = engine.mirror_landing_zone(spark, landing, warehouse)
            assert other.tables[0].files_applied == [sequence_file_name(n) for n in (2, 3, 4)]
            shutil.move(str(tmp_path / "aside"), fifth)
        real_crash_point(name, table)

    monkeypatch.setattr(commit, "crash_point", other_process_commits_first)
    result = engine.mirror_landing_zone(spark, landing, warehouse)
    assert other_ran
    outcome = result.tables[0]
    assert (outcome.status, outcome.error) == ("Replicating", None), outcome.error
    assert outcome.files_applied == [sequence_file_name(5)]
    assert delta_rows(spark, os.path.join(warehouse, "dbo", "t"), ["id", "v"]) == \
        expected(range(1, 6))


# --- 12. progress that outlives Delta's log cleanup ---------------------------------------------

def delta_log_json(path: str) -> list[int]:
    return sorted(int(os.path.basename(p)[:20])
                  for p in glob.glob(os.path.join(path, "_delta_log", "*.json")))


def clean_up_log(path: str) -> list[int]:
    """What Delta's log cleanup leaves once every commit is past `delta.logRetentionDuration`:
    the newest checkpoint and the commits after it. (Delta 4.4 only cleans commits older than
    the start of the day before the retention, by their commit time, so a test can't wait for
    it; it removes the same files.) Returns the versions removed."""
    log = os.path.join(path, "_delta_log")
    checkpoint = json.loads(open(os.path.join(log, "_last_checkpoint")).read())["version"]
    removed = []
    for file in glob.glob(os.path.join(log, "*")):
        name = os.path.basename(file)
        if re.match(r"^\d{20}\.(json|crc)$", name) and int(name[:20]) < checkpoint:
            os.remove(file)
            removed.append(int(name[:20]))
    return sorted(set(removed))


@pytest.mark.extra
def test_progress_outlives_log_cleanup_optimize_and_vacuum(spark, tmp_path):
    landing, warehouse = str(tmp_path / "l"), str(tmp_path / "w")
    seq = table_dir(landing, "seq", metadata=KEYED)
    bytime = table_dir(landing, "bytime", metadata={
        "keyColumns": ["id"], "fileDetectionStrategy": "LastUpdateTimeFileDetection"})
    paths = {name: os.path.join(warehouse, "dbo", name) for name in ("seq", "bytime")}
    times = iter(range(1_000_000, 2_000_000, 1000))

    def land(n: int) -> None:
        parquet(seq, n, change(n))
        path = parquet(bytime, f"batch_{n}.parquet", change(n))
        stamp = next(times)
        os.utime(path, (stamp, stamp))

    for n in range(1, 4):
        land(n)
        engine.mirror_landing_zone(spark, landing, warehouse)
        if n == 1:
            for path in paths.values():
                spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ("
                          "'delta.checkpointInterval' = '2', "
                          "'delta.logRetentionDuration' = 'interval 1 hours', "
                          "'delta.deletedFileRetentionDuration' = 'interval 1 hours')")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        for path in paths.values():  # another job's commits after ours
            spark.sql(f"OPTIMIZE delta.`{path}`").collect()
            spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS").collect()
            spark.sql(f"OPTIMIZE delta.`{path}`").collect()
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    for name, path in paths.items():
        removed = clean_up_log(path)
        assert removed, f"{name}: no checkpoint covered the mirrorspec commits"
        user = [json.loads(line)["commitInfo"].get("userMetadata") or ""
                for version in delta_log_json(path)
                for line in open(os.path.join(path, "_delta_log", f"{version:020d}.json"))
                if '"commitInfo"' in line]
        assert not any("mirrorspec" in u for u in user), f"{name}: a mirrorspec commit is left"
        state = progress.read_state(fsmod.LocalFS(), path, mirror_id(None, name))
        assert state.from_copy and state.record.txn_version == 3
    # new files after the cleanup: each applied once; a gap still waits
    land(4)
    parquet(seq, 6, change(6))
    result = {o.unique_id: o for o in engine.mirror_landing_zone(spark, landing, warehouse).tables}
    assert result["dbo.seq"].files_applied == [sequence_file_name(4)]
    assert (result["dbo.seq"].status, result["dbo.seq"].awaiting) == (
        "Waiting", sequence_file_name(5))
    assert result["dbo.bytime"].files_applied == ["batch_4.parquet"]
    parquet(seq, 5, change(5))
    again = {o.unique_id: o for o in engine.mirror_landing_zone(spark, landing, warehouse).tables}
    assert again["dbo.seq"].files_applied == [sequence_file_name(5), sequence_file_name(6)]
    assert again["dbo.bytime"].files_applied == []
    assert delta_rows(spark, paths["seq"], ["id", "v"]) == expected(range(1, 7))
    assert delta_rows(spark, paths["bytime"], ["id", "v"]) == expected(range(1, 5))
    # history still says which landing files every commit applied
    explained = [f for e in inspect.history(spark, paths["seq"], "dbo.seq")
                 for f in e.files_applied]
    assert sorted(explained) == [sequence_file_name(n) for n in range(1, 7)]
    # one reader of "which files did the commits apply", JVM-free, after the cleanup too
    lfs = fsmod.LocalFS()
    seq_files = applied_files(lfs, lfs, paths["seq"], seq)
    assert not seq_files.from_log and not seq_files.missing
    assert [f.name for f in seq_files.files] == [sequence_file_name(n) for n in range(1, 7)]
    time_files = applied_files(lfs, lfs, paths["bytime"], bytime)
    assert [f.name for f in time_files.files] == [f"batch_{n}.parquet" for n in range(1, 5)]
    assert replay.read_history(paths["seq"]).files == [f.name for f in seq_files.files]
    # the row_count data test (it failed once the log was cleaned up)
    for name, folder in (("seq", seq), ("bytime", bytime)):
        table = TablePlan(unique_id=f"dbo.{name}", name=name, schema=None, warehouse_schema="dbo",
                          landing_path=folder, delta_path=paths[name], metadata={},
                          key_columns=["id"], steps=[TableStep("MirrorTable")],
                          tests=[{"type": "row_count", "severity": "error"}])
        plan = Plan(plan_version=PLAN_VERSION, project_name="p", project_version="1",
                    profile="p", target="t", landing_zone=landing, warehouse=warehouse,
                    state_path=str(tmp_path / "state"), spark=SparkSpec(), partner_events=None,
                    tables=[table])
        results = run_data_tests(spark, plan, [table], threads=1).results
        assert [(r.status, r.message) for r in results] == [
            ("pass", f"{sum(expected(range(1, 7 if name == 'seq' else 5)).values())} row(s), "
                     "as the applied landing files imply")]
    # lint reads the progress and the schema as the engine does: no false gap, and a type
    # change waiting in the folder stops the table at the same file as the engine
    clean = {r.unique_id: r for r in lint_landing_zone(landing, warehouse=warehouse).tables}
    assert clean["dbo.seq"].stops_at is None, clean["dbo.seq"].findings
    assert not [f for f in clean["dbo.seq"].findings if f.rule == "files/gap"]
    retyped = parquet(seq, 7, {"id": [70], "v": [7], M: [0]})  # v: string → int
    report = {r.unique_id: r for r in lint_landing_zone(landing, warehouse=warehouse).tables}
    assert (report["dbo.seq"].stops_at.rule, report["dbo.seq"].stops_at.file.split("/")[-1]) == (
        "content/type-change", os.path.basename(retyped))
    stopped = {o.unique_id: o for o in engine.mirror_landing_zone(spark, landing, warehouse).tables}
    assert stopped["dbo.seq"].status == "Failed"
    assert stopped["dbo.seq"].error["file"].endswith(os.path.basename(retyped))


def test_a_txn_without_its_state_is_refused_not_guessed(tmp_path):
    """The snapshot says txn 5 but neither its JSON commit nor its copy survives: StateLost."""
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{7:020d}.json").write_text(
        json.dumps({"txn": {"appId": "mirrorspec:dbo.t", "version": 5}}) + "\n"
        + json.dumps({"commitInfo": {"operation": "OPTIMIZE"}}) + "\n")
    with pytest.raises(LandingZoneError) as caught:
        progress.read_state(fsmod.LocalFS(), str(tmp_path / "t"), "mirrorspec:dbo.t")
    assert caught.value.code == "StateLost"


# --- 4. symlinks: nothing outside the roots is read, moved, written or deleted ------------------

def age(path: str, days: float) -> None:
    stamp = os.path.getmtime(path) - days * 86400
    os.utime(path, (stamp, stamp), follow_symlinks=False)


def test_links_out_of_the_roots_stop_their_table_only(spark, tmp_path):
    landing, warehouse = tmp_path / "l", tmp_path / "w"
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "unrelated.txt"
    victim.write_text("not mirrorspec's")
    age(str(victim), 30)
    good = table_dir(str(landing), "good", metadata=KEYED)
    parquet(good, 1, change(1))
    # _ProcessedFiles is a link to a folder outside the landing zone
    proc = table_dir(str(landing), "proclink", metadata=KEYED)
    parquet(proc, 1, change(1))
    parquet(proc, 2, change(2))
    os.symlink(outside, os.path.join(proc, "_ProcessedFiles"))
    # a data file that is a link to a Parquet file outside
    data = table_dir(str(landing), "datalink", metadata=KEYED)
    foreign = parquet(str(outside), "foreign.parquet", change(7))
    os.symlink(foreign, os.path.join(data, sequence_file_name(1)))
    # a table folder that is a link to a folder outside
    elsewhere = table_dir(str(outside), "elsewhere", metadata=KEYED)
    parquet(elsewhere, 1, change(1))
    os.symlink(elsewhere, landing / "folderlink")
    # a warehouse table folder that is a link to a folder outside
    whl = table_dir(str(landing), "whlink", metadata=KEYED)
    parquet(whl, 1, change(1))
    (warehouse / "dbo").mkdir(parents=True)
    (outside / "wh").mkdir()
    os.symlink(outside / "wh", warehouse / "dbo" / "whlink")
    before = sorted(os.listdir(outside))

    result = engine.mirror_landing_zone(spark, str(landing), str(warehouse),
                                        engine.MirrorOptions(threads=1, retention_days=0))
    outcomes = {o.unique_id: o for o in result.tables}
    assert outcomes["dbo.good"].status == "Replicating"
    for name in ("proclink", "datalink", "folderlink", "whlink"):
        error = outcomes[f"dbo.{name}"].error
        assert error and error["errorCode"] == "LinkOutsideRoot", (name, error)
        assert str(outside) in error["message"] and "symlink" in error["message"]
        assert not os.path.exists(os.path.join(warehouse, "dbo", name, "_delta_log"))
    assert sorted(os.listdir(outside)) == before  # nothing moved there, nothing deleted
    assert victim.read_text() == "not mirrorspec's"
    assert os.listdir(outside / "wh") == []
    assert sorted(os.listdir(proc)) == sorted(
        ["_metadata.json", "_ProcessedFiles", sequence_file_name(1), sequence_file_name(2)])


def test_the_purge_deletes_only_files_the_engine_moved_and_never_follows_links(spark, tmp_path):
    landing, warehouse = str(tmp_path / "l"), str(tmp_path / "w")
    folder = table_dir(landing, "t", metadata=KEYED)
    for n in (1, 2):
        parquet(folder, n, change(n))
    engine.mirror_landing_zone(spark, landing, warehouse)
    processed = os.path.join(folder, "_ProcessedFiles")
    moved = os.path.join(processed, sequence_file_name(1))
    assert os.path.exists(moved)
    age(moved, 30)
    foreign = os.path.join(processed, sequence_file_name(50))  # a name like ours, not moved by us
    parquet(processed, 50, change(50))
    age(foreign, 30)
    unrelated = os.path.join(processed, "notes.txt")
    open(unrelated, "w").write("someone's")
    age(unrelated, 30)
    target = tmp_path / "outside.parquet"
    target.write_text("outside")
    age(str(target), 30)
    link = os.path.join(processed, sequence_file_name(2) + ".link")
    os.symlink(target, link)
    age(link, 30)
    result = engine.mirror_landing_zone(spark, landing, warehouse,
                                        engine.MirrorOptions(retention_days=7))
    assert result.tables[0].status == "Replicating"
    assert not os.path.exists(moved)  # ours, past the retention: purged
    assert os.path.exists(foreign) and os.path.exists(unrelated) and os.path.islink(link)
    assert target.read_text() == "outside"
