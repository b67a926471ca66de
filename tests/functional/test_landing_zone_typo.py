"""A mistyped `landing_zone` in the profile (`landing_zon`) no longer creates a second, empty
landing zone: `run` refuses before any Spark start when the warehouse already mirrors the
project's tables, naming the folder it probably meant; `compile` warns, `debug` fails the check.
A new project's (or a new output's) first run is not held up."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from mirrorspec.api import LandingZoneError, Project
from mirrorspec.base.console import Console
from mirrorspec.compile import load_plan_context
from mirrorspec.operate.preflight import missing_landing_zone, require_planned_landing_zone
from tests.support.no_jvm import run_without_jvm
from tests.support.project_files import write

deltalake = pytest.importorskip("deltalake")


def shop(root, landing_zone: str, warehouse: str = "warehouse"):
    return write(root, {
        "mirrorspec_project.yml": {"name": "shop", "profile": "shop"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": landing_zone, "warehouse": warehouse}}}},
        "tables/shop.yml": {"tables": [
            {"name": "orders", "schema": "sales", "key_columns": ["id"],
             "columns": [{"name": "id", "type": "Int64"}]}]},
    })


def debug_row(project) -> tuple[int, dict]:
    """`mirrorspec debug --no-spark`'s exit code and its landing zone check (debug imports
    Spark's modules, so it runs in this process; it starts no JVM with --no-spark)."""
    from click.testing import CliRunner

    from mirrorspec.cli import cli

    done = CliRunner().invoke(cli, ["--log-format", "json", "debug", "--no-spark",
                                    "--project-dir", str(project)])
    [table] = [json.loads(line) for line in done.stdout.splitlines()
               if line.startswith("{") and '"event": "debug"' in line]
    [row] = [r for r in table["rows"] if r["check"] == "landing zone"]
    return done.exit_code, row


@pytest.fixture()
def mirrored(tmp_path):
    """A project that has run (its landing zone and its mirrored table are there), whose
    profile now says `landing_zone: landing_zon`."""
    project = shop(tmp_path / "shop", "landing_zone")
    table = project / "landing_zone" / "sales.schema" / "orders"
    table.mkdir(parents=True)
    (table / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    deltalake.write_deltalake(str(project / "warehouse" / "sales" / "orders"),
                              pa.table({"id": pa.array([1], pa.int64())}))
    shop(project, "landing_zon")
    return project


def test_run_refuses_before_spark_and_creates_nothing(mirrored, tmp_path):
    done = run_without_jvm("run", "--project-dir", str(mirrored), cwd=tmp_path,
                           log_format="text")
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert (f"{mirrored / 'landing_zon'}: the landing zone does not exist, but the warehouse "
            f"{mirrored / 'warehouse'} already holds 1 mirrored table(s) of this project "
            "(sales.orders) (did you mean 'landing_zone'?)") in said
    assert "check landing_zone of output 'dev' in profiles.yml" in said
    assert f"mkdir -p {mirrored / 'landing_zon'}" in said
    assert not (mirrored / "landing_zon").exists()
    assert not (mirrored / "target" / "run_results.json").exists()


def test_compile_warns_and_debug_fails_the_check(mirrored, tmp_path):
    done = run_without_jvm("compile", "--project-dir", str(mirrored), cwd=tmp_path,
                           log_format="text")
    assert done.returncode == 0, done.stderr
    out = " ".join((done.stdout + done.stderr).split())
    assert "(did you mean 'landing_zone'?): `run` refuses to create it" in out
    code, row = debug_row(mirrored)
    assert code == 1
    assert row["status"] == "FAIL" and "(did you mean 'landing_zone'?)" in row["detail"]
    assert not (mirrored / "landing_zon").exists()


def test_the_api_refuses_too(mirrored):
    with pytest.raises(LandingZoneError, match=r"did you mean 'landing_zone'") as info:
        Project(mirrored).run()
    assert info.value.code == "LandingZoneNotFound"


def test_a_landing_zone_created_on_purpose_is_taken(mirrored):
    (mirrored / "landing_zon").mkdir()
    assert missing_landing_zone(load_plan_context(mirrored).plan) is None


def test_a_new_project_s_first_run_is_not_held_up(tmp_path):
    project = shop(tmp_path / "new", "landing_zone")
    plan = load_plan_context(project).plan
    missing = missing_landing_zone(plan)
    assert missing is not None and not missing.refused and missing.suggestion == ""
    events = []
    console = Console(log_format="json", stream=_Lines(events))
    require_planned_landing_zone(plan, console)  # no error, nothing said
    assert events == []
    done = run_without_jvm("compile", "--project-dir", str(project), cwd=tmp_path,
                           log_format="text")
    assert done.returncode == 0 and "landing zone" not in done.stderr
    _, row = debug_row(project)
    assert row["status"] == "warn" and "does not exist yet" in row["detail"]
    assert "writable" in row["detail"] and "the first `run` creates the folder" in row["fix"]


def test_a_new_output_beside_another_landing_zone_warns_and_goes_on(tmp_path):
    """`landing_prod` next to `landing_dev` (a folder of a similar name) with an empty warehouse:
    a new output's first run, so only a warning naming the other folder."""
    project = shop(tmp_path / "multi", "landing_dev", "warehouse_dev")
    (project / "landing_dev").mkdir()
    (project / "landing_dev" / "_partnerEvents.json").write_text("{}")
    shop(project, "landing_prod", "warehouse_prod")
    events = []
    require_planned_landing_zone(load_plan_context(project).plan,
                                 Console(log_format="json", stream=_Lines(events)))
    [warning] = [json.loads(e) for e in events]
    assert warning["level"] == "warning"
    assert "(did you mean 'landing_dev'?): this run creates it" in warning["message"]


class _Lines:
    def __init__(self, lines: list[str]):
        self.lines = lines

    def write(self, text: str) -> None:
        self.lines.extend(line for line in text.splitlines() if line)

    def flush(self) -> None:
        pass
