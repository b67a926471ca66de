"""`reconcile` against file snapshots with one mutation each, and `replay` of a table from its
own landing files (intact, changed behind the mirror's back, purged history)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from mirrorspec.cli import cli
from mirrorspec.spark.mirror import engine
from mirrorspec.spark.ops import reconcile as rec
from mirrorspec.base.files import LocalFS
from mirrorspec.progress.mirror import read_state

M = "__rowMarker__"
T0 = dt.datetime(2025, 6, 17, 14, 30, 0)
# the table after both files: id → (name, note, at)
EXPECTED = {1: ("Alice", "", T0), 2: ("Bob", None, T0), 3: ("Carol", "x", T0),
            4: ("Dan", "y", T0 + dt.timedelta(hours=1))}


def changes(rows):
    ids, names, notes, ats, markers = zip(*rows)
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names),
                     "note": pa.array(notes, pa.string()),
                     "at": pa.array(ats, pa.timestamp("us")), M: pa.array(markers, pa.int32())})


def snapshot(path, rows=EXPECTED, at_type=pa.timestamp("us"), extra_column=False):
    ids = sorted(rows)
    columns = {"id": pa.array(ids, pa.int64()), "name": [rows[i][0] for i in ids],
               "note": pa.array([rows[i][1] for i in ids], pa.string()),
               "at": pa.array([rows[i][2] for i in ids], at_type)}
    if extra_column:
        columns["source_only"] = [1] * len(ids)
    pq.write_table(pa.table(columns), path)
    return str(path)


@pytest.fixture(scope="module")
def mirrored(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("verify")
    landing, warehouse = root / "landing", root / "warehouse"
    folder = landing / "sales.schema" / "orders"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    pq.write_table(changes([(1, "Alice", "", T0, 0), (2, "Bob", None, T0, 0),
                            (3, "Carl", "x", T0, 0), (9, "Zed", "z", T0, 0)]),
                   folder / f"{1:020d}.parquet")
    options = engine.MirrorOptions(threads=1)
    assert not engine.mirror_landing_zone(spark, str(landing), str(warehouse), options).failed
    pq.write_table(changes([(3, "Carol", "x", T0, 1), (9, None, None, None, 2),
                            (4, "Dan", "y", T0 + dt.timedelta(hours=1), 4)]),
                   folder / f"{2:020d}.parquet")
    assert not engine.mirror_landing_zone(spark, str(landing), str(warehouse), options).failed
    return {"root": root, "landing": landing, "warehouse": warehouse, "folder": folder,
            "delta": str(warehouse / "sales" / "orders")}


def compare(spark, mirrored, source_path, **kwargs):
    source = rec.read_source(spark, source_path, **kwargs)
    return rec.reconcile(spark, rec.read_mirror(spark, mirrored["delta"]), source, ["id"],
                         "sales.orders", source_path)


def test_equal_snapshot_in_parquet_csv_and_delta(spark, mirrored, tmp_path):
    assert compare(spark, mirrored, snapshot(tmp_path / "s.parquet")).equal
    csv = tmp_path / "s.csv"
    csv.write_text('id,name,note,at\n1,Alice,"",2025-06-17 14:30:00\n2,Bob,,2025-06-17 14:30:00\n'
                   '3,Carol,x,2025-06-17 14:30:00\n4,Dan,y,2025-06-17 15:30:00\n')
    result = compare(spark, mirrored, str(csv))
    assert result.equal, result.to_json()
    copy = tmp_path / "delta"
    shutil.copytree(mirrored["delta"], copy)
    assert compare(spark, mirrored, str(copy)).equal


@pytest.mark.parametrize("mutation, kind, expected", [
    ("deleted_row", "extra", [{"id": 2}]),
    ("extra_row", "missing", [{"id": 5}]),
    ("changed_cell", "changed", [{"key": {"id": 3}, "columns": ["name"]}]),
    ("null_vs_empty", "changed", [{"key": {"id": 1}, "columns": ["note"]},
                                  {"key": {"id": 2}, "columns": ["note"]}]),
    ("timestamp_zone", "changed", [{"key": {"id": 4}, "columns": ["at"]}]),
])
def test_each_mutation_is_found_by_key(spark, mirrored, tmp_path, mutation, kind, expected):
    rows = dict(EXPECTED)
    if mutation == "deleted_row":
        del rows[2]
    elif mutation == "extra_row":
        rows[5] = ("Eve", "e", T0)
    elif mutation == "changed_cell":
        rows[3] = ("Karl", "x", T0)
    elif mutation == "null_vs_empty":
        rows[1], rows[2] = ("Alice", None, T0), ("Bob", "", T0)
    elif mutation == "timestamp_zone":  # the source's 15:30 at +02:00: 13:30 UTC
        rows[4] = ("Dan", "y", dt.datetime(2025, 6, 17, 15, 30, tzinfo=dt.timezone(
            dt.timedelta(hours=2))))
    at_type = pa.timestamp("us", tz="UTC") if mutation == "timestamp_zone" else pa.timestamp("us")
    if mutation == "timestamp_zone":
        rows = {k: (v[0], v[1], v[2] if v[2].tzinfo else v[2].replace(tzinfo=dt.timezone.utc))
                for k, v in rows.items()}
    result = compare(spark, mirrored, snapshot(tmp_path / "s.parquet", rows, at_type))
    assert not result.equal
    assert getattr(result, kind) == expected
    others = {"missing", "extra", "changed"} - {kind}
    assert all(getattr(result, other) == [] for other in others)
    assert 0 < result.differing_buckets <= len(expected)


def test_cli_reports_one_sided_columns_and_writes_all_differences(spark, mirrored, tmp_path):
    source = snapshot(tmp_path / "s.parquet", extra_column=True)
    runner = CliRunner()
    args = ["reconcile", "sales.orders", "--warehouse", str(mirrored["warehouse"]),
            "--against", source, "--master", "local[2]"]
    ok = runner.invoke(cli, args)
    assert ok.exit_code == 0, ok.output
    assert "columns only in source: source_only" in ok.output and "equal" in ok.output
    # its phases, timestamped in a pipe, in order, no ANSI codes
    phases = [r"sales\.orders: reading the mirror…", r"sales\.orders: read the mirror: 4 column",
              r"sales\.orders: reading the source…", r"sales\.orders: read the source: 5 column",
              r"sales\.orders: counting rows per key range…",
              r"sales\.orders: counted rows: mirror 4, source 4; 0 of 64 key ranges differ "
              r"\(\d+\.\ds\)"]
    assert_phases(ok.output, phases)
    assert runner.invoke(cli, args + ["--strict-columns"]).exit_code == 1
    rows = dict(EXPECTED)
    for n in range(10, 25):
        rows[n] = ("new", "n", T0)
    output = tmp_path / "diff.json"
    bad = runner.invoke(cli, ["--log-format", "json", "reconcile", "sales.orders",
                              "--warehouse", str(mirrored["warehouse"]), "--against",
                              snapshot(tmp_path / "m.parquet", rows), "--show", "3",
                              "--output", str(output)])
    assert bad.exit_code == 1
    assert "missing 15" in bad.output and "... and 12 more missing" in bad.output
    # under --log-format json its phases are typed step events
    steps = {e["step"]: e for e in json_events(bad.output) if e["event"] == "step_finished"}
    assert list(steps) == ["read mirror", "read source", "count", "name"]
    assert (steps["count"]["mirror_rows"], steps["count"]["source_rows"]) == (4, 19)
    assert steps["count"]["differing_key_ranges"] > 0
    assert (steps["name"]["missing"], steps["name"]["extra"], steps["name"]["changed"]) == (
        15, 0, 0)
    assert all(isinstance(e["seconds"], float) and e["table"] == "sales.orders"
               for e in steps.values())
    doc = json.loads(output.read_text())
    assert doc["counts"] == {"missing": 15, "extra": 0, "changed": 0}
    assert [m["id"] for m in doc["missing"]] == list(range(10, 25))
    # the key comes from the engine's record; an earlier version is compared with --version
    first = runner.invoke(cli, ["reconcile", mirrored["delta"], "--against", source,
                                "--version", "0"])
    assert first.exit_code == 1 and "changed {\"id\": 3}: name" in first.output


def test_replay_passes_then_catches_a_manual_update_and_a_purged_file(spark, mirrored, tmp_path):
    runner = CliRunner()
    args = ["replay", "sales.orders", "--warehouse", str(mirrored["warehouse"])]
    processed = mirrored["folder"] / "_ProcessedFiles" / f"{1:020d}.parquet"
    assert processed.exists()  # file 1 was moved; file 2 (the last) stays in the folder
    intact = runner.invoke(cli, args)
    assert intact.exit_code == 0, intact.output
    assert "equal" in intact.output
    assert_phases(intact.output, [
        r"sales\.orders: reading its history…",
        r"sales\.orders: read its history: 2 applied file\(s\) \(\d+\.\ds\)",
        r"sales\.orders: staging 2 file\(s\)…", r"sales\.orders: staged 2 file\(s\) in ",
        r"sales\.orders: replaying 2 file\(s\) into ",
        r"sales\.orders: replayed 2 file\(s\), 7 change row\(s\) \(\d+\.\ds\)",
        r"sales\.orders: read the live table and the replay: 4 and 4 column\(s\)",
        r"sales\.orders: counted rows: mirror 4, source 4; 0 of 64 key ranges differ"])
    spark.sql(f"UPDATE delta.`{mirrored['delta']}` SET name = 'Bobby' WHERE id = 2")
    tampered = runner.invoke(cli, ["--log-format", "json", *args,
                                   "--output", str(tmp_path / "r.json")])
    assert tampered.exit_code == 1
    assert 'changed {"id": 2}: name' in tampered.output
    # under --log-format json its phases are typed step events
    steps = [(e["event"], e["step"]) for e in json_events(tampered.output)
             if e["event"].startswith("step_")]
    assert steps == [(kind, step) for step in ("history", "stage", "replay", "read", "count",
                                               "name")
                     for kind in ("step_started", "step_finished")]
    replayed = [e for e in json_events(tampered.output)
                if e["event"] == "step_finished" and e["step"] == "replay"][0]
    assert (replayed["files"], replayed["rows"]) == (2, 7)
    assert json.loads((tmp_path / "r.json").read_text())["replayed_files"] == [
        f"{1:020d}.parquet", f"{2:020d}.parquet"]
    processed.unlink()
    purged = runner.invoke(cli, args)
    assert purged.exit_code == 1
    assert "history incomplete" in purged.output and f"{1:020d}.parquet" in purged.output


def assert_phases(output: str, phases: list[str]) -> None:
    """Each phase line is there, timestamped (not a terminal), in this order; no ANSI codes."""
    assert "\x1b" not in output
    at = 0
    for phase in phases:
        found = re.compile(r"^\[\d\d:\d\d:\d\d\] " + phase, re.M).search(output, at)
        assert found, f"{phase!r} not after position {at} in:\n{output}"
        at = found.end()


def json_events(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


# --- a real JDBC source: a private PostgreSQL cluster -----------------------------------------

def _postgres_bin() -> str:
    import glob
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return os.path.dirname(found[-1])
    if os.environ.get("MIRRORSPEC_SKIP_POSTGRES") == "1":
        pytest.skip("no PostgreSQL and MIRRORSPEC_SKIP_POSTGRES=1")
    pytest.fail("PostgreSQL is not installed: run scripts/ensure_postgres.sh (apt-get install "
                "postgresql) or set MIRRORSPEC_SKIP_POSTGRES=1", pytrace=False)


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    """A PostgreSQL server on 127.0.0.1 and a free port, run as a non-root user; stopped after."""
    import socket
    import subprocess
    import tempfile

    bin_dir = _postgres_bin()
    root = tempfile.mkdtemp(prefix="mirrorspec-pg-")
    as_user = []
    if os.geteuid() == 0:  # initdb refuses root: run the cluster as the postgres user
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    os.chmod(root, 0o755)
    data, password = os.path.join(root, "data"), "s3cret-pg"
    pwfile = os.path.join(root, "pw")
    with open(pwfile, "w") as handle:
        handle.write(password + "\n")
    if as_user:
        shutil.chown(pwfile, "postgres")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = lambda *cmd: subprocess.run(as_user + list(cmd), check=True, capture_output=True,  # noqa: E731
                                      text=True, cwd=root)
    run(f"{bin_dir}/initdb", "-D", data, "-U", "mirror", "-A", "scram-sha-256",
        f"--pwfile={pwfile}")
    run(f"{bin_dir}/pg_ctl", "-D", data, "-l", os.path.join(root, "log"), "-w", "-o",
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start")
    env = {**os.environ, "PGPASSWORD": password}

    def sql(statement: str) -> None:
        subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "mirror", "-d",
                        "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", statement],
                       check=True, env=env, capture_output=True, text=True)
    try:
        yield {"url": f"jdbc:postgresql://127.0.0.1:{port}/postgres", "password": password,
               "sql": sql}
    finally:
        subprocess.run(as_user + [f"{bin_dir}/pg_ctl", "-D", data, "-m", "fast", "stop"],
                       capture_output=True, cwd=root)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.postgres
def test_reconcile_against_postgresql(spark, mirrored, postgres, monkeypatch):
    values = ", ".join(
        f"({i}, '{n}', {'NULL' if note is None else repr(note)}, '{at:%Y-%m-%d %H:%M:%S}')"
        for i, (n, note, at) in EXPECTED.items())
    postgres["sql"]("CREATE TABLE orders (id bigint PRIMARY KEY, name text, note text, "
                    f"at timestamp); INSERT INTO orders VALUES {values}")
    monkeypatch.setenv("MIRRORSPEC_SECRET_PG_USER", "mirror")
    monkeypatch.setenv("MIRRORSPEC_SECRET_PG_PASSWORD", postgres["password"])
    # as of the engine's last commit (another test updates the live table behind its back)
    version = read_state(LocalFS(), mirrored["delta"]).version
    args = ["reconcile", "sales.orders", "--warehouse", str(mirrored["warehouse"]),
            "--version", str(version), "--against", postgres["url"], "--dbtable", "public.orders",
            "--user-secret", "MIRRORSPEC_SECRET_PG_USER",
            "--password-secret", "MIRRORSPEC_SECRET_PG_PASSWORD"]
    runner = CliRunner()
    equal = runner.invoke(cli, args)
    assert equal.exit_code == 0, equal.output
    postgres["sql"]("DELETE FROM orders WHERE id = 2; UPDATE orders SET name = 'Karl' "
                    "WHERE id = 3; INSERT INTO orders VALUES (7, 'Gus', 'g', now())")
    differs = runner.invoke(cli, args)
    assert differs.exit_code == 1
    assert 'extra {"id": 2}' in differs.output and 'missing {"id": 7}' in differs.output
    assert 'changed {"id": 3}: name' in differs.output
    assert postgres["password"] not in differs.output


@pytest.mark.postgres
def test_jdbc_failures_say_the_drivers_words_and_never_the_credentials(
        spark, mirrored, postgres, monkeypatch, tmp_path):
    postgres["sql"]("CREATE TABLE IF NOT EXISTS creds (id bigint PRIMARY KEY)")
    monkeypatch.setenv("MIRRORSPEC_LOG_DIR", str(tmp_path / "logs"))
    # the log file is per process: an earlier test of this session may have opened it elsewhere
    monkeypatch.setattr("mirrorspec.base.logfile._path", None)
    monkeypatch.setenv("MIRRORSPEC_SECRET_PG_USER", "mirror")
    monkeypatch.setenv("MIRRORSPEC_SECRET_PG_PASSWORD", "wrong-" + postgres["password"])
    password = postgres["password"]
    url = postgres["url"]
    base = ["reconcile", "sales.orders", "--warehouse", str(mirrored["warehouse"])]
    secrets = ["--user-secret", "MIRRORSPEC_SECRET_PG_USER",
               "--password-secret", "MIRRORSPEC_SECRET_PG_PASSWORD"]
    refused_url = "jdbc:postgresql://127.0.0.1:1/postgres"
    tried = {
        "refused": (base + ["--against", refused_url, "--dbtable", "creds"] + secrets,
                    "Connection to 127.0.0.1:1 refused"),
        "auth": (base + ["--against", url, "--dbtable", "creds"] + secrets,
                 "password authentication failed"),
        "table": (base + ["--against", f"{url}?user=mirror&password={password}",
                          "--dbtable", "public.nope"], 'relation "public.nope" does not exist'),
    }
    for name, (args, words) in tried.items():
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1, (name, result.output)
        assert words in result.output, (name, result.output)
        assert "An error occurred while calling" not in result.output
        assert password not in result.output and "wrong-" not in result.output
    logs = "".join(p.read_text() for p in (tmp_path / "logs").glob("mirrorspec-*.log"))
    assert "PSQLException" in logs and "at org.postgresql" in logs  # the driver's trace
    assert password not in logs and "wrong-" + password not in logs

    # credentials in the URL itself: never in the output or the results file
    out = tmp_path / "result.json"
    version = read_state(LocalFS(), mirrored["delta"]).version
    result = CliRunner().invoke(cli, base + [
        "--version", str(version), "--against", f"{url}?user=mirror&password={password}",
        "--dbtable", "creds", "--output", str(out)])
    assert password not in result.output and "password=***" in result.output
    assert password not in out.read_text()
