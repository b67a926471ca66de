"""The options every command shares: env-var fallbacks, global flags anywhere, registration."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from project_files import write

from mirrorspec.cli import cli, register

ORDERS = {"name": "orders", "schema": "sales", "key_columns": ["id"],
          "columns": [{"name": "id", "type": "Int32", "nullable": False}]}


def write_project(folder: Path) -> Path:
    return write(folder, {"mirrorspec_project.yml": {"name": "shop"},
                          "tables/tables.yml": {"tables": [ORDERS]}})


def commands(group: click.Group = cli, prefix: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, prefix + (name,))
        else:
            yield prefix + (name,), command


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A project, the working directory outside it, and no stray env vars."""
    project = write_project(tmp_path / "shop")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    for name in ("MIRRORSPEC_PROJECT_DIR", "MIRRORSPEC_PROFILES_DIR", "MIRRORSPEC_LOG_FORMAT"):
        monkeypatch.delenv(name, raising=False)
    return project


def test_every_project_dir_and_profiles_dir_option_has_its_env_var_in_help():
    seen = 0
    for path, command in commands():
        for param in command.params:
            if param.name in ("project_dir", "profiles_dir"):
                expected = f"MIRRORSPEC_{param.name.upper()}"
                assert param.envvar == expected, path
                text = CliRunner().invoke(cli, [*path, "--help"]).output
                assert expected in text, path
                seen += 1
    assert seen >= 20  # 12 commands take --project-dir, 11 --profiles-dir


def test_profiles_dir_is_described_once():
    helps = {p.help for _, c in commands() for p in c.params if p.name == "profiles_dir"}
    assert len(helps) == 1


def test_project_dir_env_var_works_for_diff_and_docs(elsewhere, tmp_path):
    env = {"MIRRORSPEC_PROJECT_DIR": str(elsewhere)}
    runner = CliRunner()
    compiled = runner.invoke(cli, ["compile"], env=env)
    assert compiled.exit_code == 0, compiled.output
    state = elsewhere / "target"
    diffed = runner.invoke(cli, ["diff", "--state", str(state)], env=env)
    assert diffed.exit_code == 0, diffed.output
    assert "0 table(s) changed" in diffed.output
    generated = runner.invoke(cli, ["docs", "generate"], env=env)
    assert generated.exit_code == 0, generated.output
    assert (elsewhere / "target" / "docs" / "index.html").is_file()


def test_profiles_dir_env_var_works_for_diff(elsewhere, tmp_path):
    empty = tmp_path / "no-profiles"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["diff", "--project-dir", str(elsewhere), "--state", "x"],
                                env={"MIRRORSPEC_PROFILES_DIR": str(empty)})
    assert result.exit_code == 1 and "no profiles.yml" in result.output


@pytest.mark.parametrize("args", [["--log-format", "json", "validate"],
                                  ["validate", "--log-format", "json"]])
def test_global_flags_before_or_after_the_subcommand(elsewhere, args):
    result = CliRunner().invoke(cli, [*args, "--project-dir", str(elsewhere)])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output.strip().splitlines()[-1])
    assert record["event"] == "result" and record["project"] == "shop"


def test_quiet_after_the_subcommand(elsewhere):
    loud = CliRunner().invoke(cli, ["compile", "--project-dir", str(elsewhere)])
    quiet = CliRunner().invoke(cli, ["compile", "--project-dir", str(elsewhere), "-q"])
    assert quiet.exit_code == 0 and "landing zone" in loud.output
    assert "landing zone" not in quiet.output and "Compiled 1 table(s)" in quiet.output


def test_show_limit_has_help():
    show = cli.commands["show"]
    assert next(p for p in show.params if p.name == "limit").help


def test_a_command_module_that_fails_to_import_fails_loudly():
    with pytest.raises(ModuleNotFoundError, match="no_such_area"):
        register(click.Group(), ("mirrorspec.commands.no_such_area",))
    with pytest.raises(RuntimeError, match="registers no commands"):
        register(click.Group(), ("mirrorspec.commands.params",))
