"""`mirrorspec diff` in-process on projects written from dicts: --state and --base (real git)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.support.no_jvm import run_without_jvm
from tests.support.project_files import write

from mirrorspec.cli import cli

ORDERS = {
    "name": "orders", "schema": "sales", "key_columns": ["id"], "format": "csv",
    "columns": [{"name": "id", "type": "Int32", "nullable": False},
                {"name": "customer", "type": "String"},
                {"name": "amount", "type": "Double"}],
}
CUSTOMERS = {"name": "customers", "schema": "crm", "key_columns": ["id"]}


def write_project(folder: Path, tables: list[dict], name: str = "shop") -> Path:
    """A project from dicts: mirrorspec_project.yml + tables/tables.yml."""
    return write(folder, {"mirrorspec_project.yml": {"name": name},
                          "tables/tables.yml": {"tables": tables}})


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def compile_state(project: Path, into: Path) -> Path:
    result = invoke("compile", "--project-dir", str(project))
    assert result.exit_code == 0, result.output
    (project / "target").rename(into)
    return into


def changed(table: dict, **updates) -> dict:
    table = copy.deepcopy(table)
    table.update(updates)
    return table


@pytest.fixture
def state(tmp_path):
    """A project with orders + customers, its compiled target/ saved as the state."""
    project = write_project(tmp_path / "shop", [ORDERS, CUSTOMERS])
    return project, compile_state(project, tmp_path / "prod-target")


def diff(project: Path, state_dir: Path, *extra: str):
    return invoke("diff", "--project-dir", str(project), "--state", str(state_dir), *extra)


# --- --state -----------------------------------------------------------------------------------

def test_no_change(state):
    project, saved = state
    result = diff(project, saved)
    assert result.exit_code == 0, result.output
    assert "0 table(s) changed" in result.stdout and "no breaking changes" in result.stdout


def test_diff_writes_nothing_into_the_project(state):
    project, saved = state
    assert diff(project, saved).exit_code == 0
    assert not (project / "target").exists()


def test_state_may_be_the_plan_file(state):
    project, saved = state
    assert diff(project, saved / "plan.json").exit_code == 0


def test_column_type_change_is_breaking_and_exits_1(state):
    project, saved = state
    columns = copy.deepcopy(ORDERS["columns"])
    columns[2]["type"] = "Int64"
    write_project(project, [changed(ORDERS, columns=columns), CUSTOMERS])
    result = diff(project, saved)
    assert result.exit_code == 1
    assert "sales.orders  modified  BREAKING" in result.stdout
    assert "column type changed: amount Double → Int64" in result.stdout
    assert "recreat" in result.stdout  # what to do, in Fabric's terms
    assert "1 breaking change(s) in sales.orders" in result.stderr
    assert "--allow-breaking" in result.stderr


def test_recreate_true_acknowledges_the_breaking_change(state):
    project, saved = state
    write_project(project, [changed(ORDERS, key_columns=["customer"], recreate=True), CUSTOMERS])
    result = diff(project, saved, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["breaking"] is True and doc["blocking"] is False
    orders = doc["tables"][0]
    assert orders["recreate"] is True and orders["changes"][0]["kind"] == "key_columns_changed"


def test_allow_breaking(state):
    project, saved = state
    write_project(project, [changed(ORDERS, key_columns=["customer"]), CUSTOMERS])
    assert diff(project, saved).exit_code == 1
    result = diff(project, saved, "--allow-breaking")
    assert result.exit_code == 0 and "allowed by --allow-breaking" in result.stdout


def test_added_column_and_table_are_not_breaking(state):
    project, saved = state
    columns = ORDERS["columns"] + [{"name": "note", "type": "String"}]
    write_project(project, [changed(ORDERS, columns=columns), CUSTOMERS,
                            {"name": "invoices", "schema": "sales"}])
    result = diff(project, saved, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["summary"]["tables_added"] == 1 and doc["summary"]["tables_modified"] == 1
    kinds = {t["unique_id"]: [c["kind"] for c in t["changes"]] for t in doc["tables"]}
    assert kinds == {"sales.invoices": ["table_added"], "sales.orders": ["column_added"]}


def test_removed_table_and_renamed_column(state):
    project, saved = state
    columns = copy.deepcopy(ORDERS["columns"])
    columns[1]["name"] = "client"
    write_project(project, [changed(ORDERS, columns=columns)])
    result = diff(project, saved, "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    status = {t["unique_id"]: t["status"] for t in doc["tables"]}
    assert status == {"crm.customers": "removed", "sales.orders": "modified"}
    change = doc["tables"][1]["changes"][0]
    assert (change["kind"], change["before"], change["after"]) == \
        ("column_renamed", "customer", "client")


def test_dialect_change_is_breaking(state):
    project, saved = state
    write_project(project, [changed(ORDERS, delimited={"column_separator": ";"}), CUSTOMERS])
    result = diff(project, saved, "--format", "json")
    assert result.exit_code == 1
    change = json.loads(result.stdout)["tables"][0]["changes"][0]
    assert change["kind"] == "dialect_changed"
    assert change["subject"] == "FileFormatTypeProperties.ColumnSeparator"
    assert (change["before"], change["after"]) == (",", ";")


def test_file_detection_change_is_breaking(state):
    project, saved = state
    write_project(project, [ORDERS, changed(CUSTOMERS, file_detection="last_update_time")])
    result = diff(project, saved, "--format", "json")
    assert result.exit_code == 1
    change = json.loads(result.stdout)["tables"][0]["changes"][0]
    assert change["kind"] == "file_detection_changed"


def test_description_only_is_modified_not_breaking(state):
    project, saved = state
    write_project(project, [changed(ORDERS, description="Orders, one per line"), CUSTOMERS])
    result = diff(project, saved, "--format", "json")
    assert result.exit_code == 0
    table = json.loads(result.stdout)["tables"][0]
    assert table["status"] == "modified" and table["breaking"] is False


def test_markdown_format_and_output_file(state, tmp_path):
    project, saved = state
    write_project(project, [changed(ORDERS, key_columns=["customer"]), CUSTOMERS])
    out = tmp_path / "report" / "diff.md"
    result = diff(project, saved, "--format", "markdown", "--output", str(out))
    assert result.exit_code == 1
    assert result.stdout.startswith("<!-- mirrorspec-diff -->")
    assert "| `sales.orders` | modified | 1 | ❌ yes |" in result.stdout
    assert out.read_text() == result.stdout


def test_json_log_format_emits_one_diff_event(state):
    project, saved = state
    result = invoke("--log-format", "json", "diff", "--project-dir", str(project),
                    "--state", str(saved))
    assert result.exit_code == 0
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events] == ["diff"]
    assert events[0]["summary"]["tables_unchanged"] == 2


def test_missing_state(tmp_path):
    project = write_project(tmp_path / "shop", [ORDERS])
    result = diff(project, tmp_path / "nowhere")
    assert result.exit_code == 1
    assert "no plan.json there" in result.stderr and "previous target/" in result.stderr


def test_state_of_another_plan_version(state):
    project, saved = state
    doc = json.loads((saved / "plan.json").read_text())
    doc["plan_version"] = 99
    (saved / "plan.json").write_text(json.dumps(doc))
    result = diff(project, saved)
    assert result.exit_code == 1 and "plan_version 99" in result.stderr


def test_invalid_project_is_a_located_error(state):
    project, saved = state
    write_project(project, [changed(ORDERS, key_colums=["id"])])
    result = diff(project, saved)
    assert result.exit_code == 1
    assert "tables.yml" in result.stderr


@pytest.mark.parametrize("args", [[], ["--state", "x", "--base", "HEAD"]])
def test_needs_exactly_one_base(tmp_path, args):
    project = write_project(tmp_path / "shop", [ORDERS])
    result = invoke("diff", "--project-dir", str(project), *args)
    assert result.exit_code == 1 and "exactly one of --state" in result.output  # a user error


# --- --base with a real git repository ------------------------------------------------------

def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path):
    """A git repo whose `pipelines/shop` project was committed on main."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    project = write_project(root / "pipelines" / "shop", [ORDERS, CUSTOMERS])
    (root / ".gitignore").write_text("target/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "shop")
    return root, project


def worktrees(root: Path) -> list[str]:
    return [line for line in git(root, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def test_base_ref_breaking_change(repo):
    root, project = repo
    write_project(project, [changed(ORDERS, key_columns=["id", "customer"]), CUSTOMERS])
    result = invoke("diff", "--project-dir", str(project), "--base", "main",
                    "--format", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["base"].startswith("main (") and doc["head"] == "working tree"
    change = doc["tables"][0]["changes"][0]
    assert (change["kind"], change["before"], change["after"]) == \
        ("key_columns_changed", ["id"], ["id", "customer"])
    assert len(worktrees(root)) == 1  # the temporary worktree is gone
    assert not (project / "target").exists()


def test_base_ref_compares_committed_history(repo):
    root, project = repo
    write_project(project, [ORDERS])
    git(root, "commit", "-qam", "drop customers")
    result = invoke("diff", "--project-dir", str(project), "--base", "HEAD~1",
                    "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(t["unique_id"], t["status"]) for t in doc["tables"]] == \
        [("crm.customers", "removed")]
    assert len(worktrees(root)) == 1


def test_base_ref_where_the_project_did_not_exist(repo):
    root, _ = repo
    other = write_project(root / "pipelines" / "new", [ORDERS], name="new")
    result = invoke("diff", "--project-dir", str(other), "--base", "main", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert "no project there" in doc["base"]
    assert [t["status"] for t in doc["tables"]] == ["added"]


def test_base_ref_that_does_not_compile(repo):
    root, project = repo
    (project / "tables" / "tables.yml").write_text("tables: [{name: x, bogus: 1}]\n")
    git(root, "commit", "-qam", "broken")
    write_project(project, [ORDERS])
    result = invoke("diff", "--project-dir", str(project), "--base", "HEAD")
    assert result.exit_code == 1
    assert "the project at HEAD does not compile" in result.stderr
    assert "bogus" in result.stderr
    assert len(worktrees(root)) == 1


def test_base_ref_uses_untracked_profiles_of_the_working_copy(repo):
    root, project = repo
    (root / ".gitignore").write_text("target/\nprofiles.yml\n")
    (project / "profiles.yml").write_text(yaml.safe_dump(
        {"shop": {"outputs": {"ci": {"landing_zone": "lz", "warehouse": "wh"}}}}))
    result = invoke("diff", "--project-dir", str(project), "--base", "main", "--target", "ci")
    assert result.exit_code == 0, result.output
    assert "0 table(s) changed" in result.stdout


def test_unknown_ref(repo):
    root, project = repo
    result = invoke("diff", "--project-dir", str(project), "--base", "no-such-branch")
    assert result.exit_code == 1
    assert "git revision 'no-such-branch' not found" in result.stderr
    assert len(worktrees(root)) == 1


def test_base_outside_a_git_repository(tmp_path):
    project = write_project(tmp_path / "plain", [ORDERS])
    result = invoke("diff", "--project-dir", str(project), "--base", "main")
    assert result.exit_code == 1
    assert "not inside a git repository" in result.stderr and "--state" in result.stderr




def test_diff_and_docs_never_import_pyspark(state):
    project, saved = state
    for args in (["diff", "--project-dir", str(project), "--state", str(saved)],
                 ["docs", "generate", "--project-dir", str(project)]):
        done = run_without_jvm(*args, cwd=project, log_format="text")
        assert done.returncode == 0, done.stdout + done.stderr
