"""ls, clean, retry and the project options of mirror/reconcile/replay, through the CLI with
pyspark refused: each answers, or stops on a bad path, before any Spark start."""

from __future__ import annotations

import json

import pytest

from mirrorspec.artifacts.run_results import RunResults, TableRunResult
from tests.support.no_jvm import run_without_jvm
from tests.support.project_files import write


@pytest.fixture()
def project(tmp_path):
    return write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {
            "dev": {"landing_zone": "landing", "warehouse": "warehouse"},
            "prod": {"landing_zone": "prod_landing", "warehouse": "prod_wh"}}}},
        "tables/shop.yml": {"tables": [
            {"name": "orders", "schema": "sales", "key_columns": ["id"], "tags": ["nightly"]},
            {"name": "customers", "schema": "sales", "key_columns": ["id"]},
            {"name": "stock", "key_columns": ["sku"]}]},
    })


def results(project, *entries, command="run"):
    target = project / "target"
    target.mkdir(exist_ok=True)
    done = RunResults(command=command, args={"threads": 2})
    done.results.extend(TableRunResult(u, status=s) for u, s in entries)
    done.write(target)


def test_ls_text_json_and_result_selectors(project, tmp_path):
    done = run_without_jvm("ls", "--project-dir", str(project), cwd=tmp_path, log_format="text")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["dbo.stock", "sales.customers", "sales.orders"]
    assert not (project / "target").exists()  # ls writes nothing
    done = run_without_jvm("ls", "--project-dir", str(project), "-s", "tag:nightly",
                           "--output", "json", cwd=tmp_path, log_format="text")
    [entry] = [json.loads(line) for line in done.stdout.splitlines()]
    assert entry["unique_id"] == "sales.orders" and entry["tags"] == ["nightly"]
    assert entry["delta_path"].endswith("warehouse/sales/orders")
    results(project, ("sales.orders", "error"), ("dbo.stock", "skipped"),
            ("sales.customers", "success"))
    done = run_without_jvm("ls", "--project-dir", str(project), "-s", "result:error",
                           "-s", "result:skipped", cwd=tmp_path, log_format="text")
    assert done.stdout.split() == ["dbo.stock", "sales.orders"]


def test_retry_with_nothing_failed_and_without_results(project, tmp_path):
    done = run_without_jvm("retry", "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 1 and "no run results" in done.stdout
    results(project, ("sales.orders", "success"), ("sales.customers", "waiting"))
    done = run_without_jvm("retry", "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Nothing to retry" in done.stdout
    results(project, ("sales.orders", "error"), command="mirror")
    done = run_without_jvm("retry", "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 1 and "is of `mirror`" in done.stdout


def test_clean_deletes_the_target_folder_only(project, tmp_path):
    results(project, ("sales.orders", "success"))
    (project / "warehouse").mkdir()
    done = run_without_jvm("clean", "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (project / "target").exists() and (project / "warehouse").is_dir()
    done = run_without_jvm("clean", "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 0 and "Nothing to clean" in done.stdout


def test_clean_refuses_a_target_folder_holding_the_warehouse(project, tmp_path):
    (project / "profiles.yml").write_text(
        "shop:\n  target: dev\n  outputs:\n    dev:\n      landing_zone: landing\n"
        "      warehouse: target/warehouse\n")
    (project / "target" / "warehouse").mkdir(parents=True)
    done = run_without_jvm("clean", "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 1 and "the warehouse" in done.stdout and "not deleted" in done.stdout
    assert (project / "target" / "warehouse").is_dir()


def test_mirror_checks_its_landing_zone_before_spark(project, tmp_path):
    # from the project and its --target: prod's landing zone is missing
    done = run_without_jvm("mirror", "--project-dir", str(project), "--target", "prod",
                           cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "prod_landing: the landing zone folder does not exist" in done.stdout
    done = run_without_jvm("mirror", "--landing-zone", str(tmp_path / "none"), "--warehouse",
                           str(tmp_path / "wh"), cwd=tmp_path)
    assert done.returncode == 1 and "the landing zone folder does not exist" in done.stdout
    done = run_without_jvm("mirror", "--landing-zone", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1 and "give --landing-zone and --warehouse, or a project" \
        in done.stdout
    done = run_without_jvm("mirror", "--project-dir", str(project), "--conf", "nonsense",
                           cwd=tmp_path)
    assert done.returncode == 1 and "--conf 'nonsense' is not key=value" in done.stdout


def test_reconcile_and_replay_take_the_project_and_check_paths_first(project, tmp_path):
    done = run_without_jvm("reconcile", "orders", "--against", str(tmp_path / "snapshot"),
                           "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 1 and "the source snapshot does not exist" in done.stdout
    (tmp_path / "snapshot").mkdir()
    done = run_without_jvm("reconcile", "orders", "--against", str(tmp_path / "snapshot"),
                           "--project-dir", str(project), "--target", "prod", cwd=tmp_path)
    assert done.returncode == 1 and "no mirrored table sales.orders in" in done.stdout
    assert "prod_wh" in done.stdout  # the prod output's warehouse
    done = run_without_jvm("replay", "nosuch", "--project-dir", str(project), cwd=tmp_path)
    assert done.returncode == 1 and "no table 'nosuch' in the project" in done.stdout
    done = run_without_jvm("replay", "orders", "--project-dir", str(project), "-o",
                           str(tmp_path / "missing" / "out.json"), cwd=tmp_path)
    assert done.returncode == 1 and "does not exist" in done.stdout


def test_metrics_port_without_watch_is_refused_before_anything_runs(tmp_path):
    for command in ("run", "mirror"):
        done = run_without_jvm(command, "--metrics-port", "9100", cwd=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "--metrics-port 9100 needs --watch" in done.stdout


def test_a_selection_of_nothing_warns_and_succeeds_in_the_cli_and_the_api_alike(project, tmp_path,
                                                                                 caplog):
    """dbt warns "Nothing to do" and exits 0: `run -s nosuch` and `Project.run(select=…)` both
    warn the same words (the API through Python's logging) and succeed (no Spark is started:
    there is no table to start it for)."""
    import logging

    from click.testing import CliRunner

    from mirrorspec.api import Project
    from mirrorspec.cli import cli

    done = CliRunner().invoke(cli, ["--log-format", "json", "run", "--project-dir", str(project),
                                    "-s", "nosuch"])
    assert done.exit_code == 0, done.output
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    said = [e["message"] for e in events if e["level"] == "warning"]
    assert said == ["selector 'nosuch' matched no table",
                    "nothing selected: no table matches the selection, so there is nothing to do "
                    "(`mirrorspec ls` lists the tables)"]
    assert "0 table(s)" in [e for e in events if e["event"] == "result"][-1]["message"]
    with caplog.at_level(logging.WARNING, logger="mirrorspec"):
        results = Project(project).run(select="nosuch")
    assert results.results == [] and not results.failed
    assert [r.getMessage() for r in caplog.records if r.name == "mirrorspec"] == said
    assert caplog.records[-1].mirrorspec["select"] == ["nosuch"]  # the whole event rides along


def test_the_api_says_what_the_cli_says_when_nothing_is_left_to_retry(project, tmp_path, caplog):
    import logging

    from mirrorspec.api import Project

    results(project, ("sales.orders", "success"))
    done = run_without_jvm("retry", "--project-dir", str(project), cwd=tmp_path)
    said = [json.loads(line)["message"] for line in done.stdout.splitlines()
            if line.startswith('{"') and '"result"' in line]
    with caplog.at_level(logging.INFO, logger="mirrorspec"):
        Project(project).retry()
    assert said and said == [r.getMessage() for r in caplog.records if r.name == "mirrorspec"]
