"""The options every command shares: env-var fallbacks, global flags anywhere, registration."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from tests.support.project_files import write

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


@pytest.mark.parametrize("how, said", [
    ("env", "(MIRRORSPEC_PROFILES_DIR)"), ("option", "(--profiles-dir)")])
def test_a_profiles_folder_without_profiles_yml_names_where_it_came_from(elsewhere, tmp_path,
                                                                         how, said):
    empty = tmp_path / "no-profiles"
    empty.mkdir()
    args = ["validate", "--project-dir", str(elsewhere)]
    env = {}
    if how == "env":
        env["MIRRORSPEC_PROFILES_DIR"] = str(empty)
    else:
        args += ["--profiles-dir", str(empty)]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 1
    assert f"no profiles.yml in {empty} {said}" in result.stderr
    other = "(--profiles-dir)" if how == "env" else "(MIRRORSPEC_PROFILES_DIR)"
    assert other not in result.stderr


@pytest.mark.parametrize("how, said", [
    ("env", "(MIRRORSPEC_PROJECT_DIR)"), ("option", "(--project-dir)"),
    ("default", "(the current folder)")])
def test_a_folder_without_a_project_names_where_it_came_from(elsewhere, tmp_path, how, said):
    args, env = ["validate"], {}
    folder = tmp_path / "cwd" if how == "default" else tmp_path / "empty"
    folder.mkdir(exist_ok=True)
    if how == "env":
        env["MIRRORSPEC_PROJECT_DIR"] = str(folder)
    elif how == "option":
        args += ["--project-dir", str(folder)]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 1
    shown = "." if how == "default" else str(folder)
    assert f"no mirrorspec_project.yml in {shown} {said}" in result.stderr
    if how != "default":  # a folder that is not there at all
        gone = str(tmp_path / "gone")
        missing = CliRunner().invoke(
            cli, ["validate", "--project-dir", gone] if how == "option" else ["validate"],
            env={"MIRRORSPEC_PROJECT_DIR": gone} if how == "env" else {})
        assert f"does not exist {said}" in missing.stderr


def test_debug_says_which_profiles_yml_and_where_it_came_from(elsewhere, tmp_path):
    profiles = tmp_path / "profiles"
    write(profiles, {"profiles.yml": {"shop": {"outputs": {"dev": {"landing_zone": "lz"}}}}})
    (elsewhere / "mirrorspec_project.yml").write_text("name: shop\nprofile: shop\n")
    runner = CliRunner()
    by_env = runner.invoke(cli, ["debug", "--no-spark", "--project-dir", str(elsewhere)],
                           env={"MIRRORSPEC_PROFILES_DIR": str(profiles), "COLUMNS": "300"})
    assert f"{profiles / 'profiles.yml'} (from MIRRORSPEC_PROFILES_DIR)" in by_env.output
    by_option = runner.invoke(cli, ["debug", "--no-spark", "--project-dir", str(elsewhere),
                                    "--profiles-dir", str(profiles)], env={"COLUMNS": "300"})
    assert f"{profiles / 'profiles.yml'} (from --profiles-dir)" in by_option.output
    none = runner.invoke(cli, ["debug", "--no-spark", "--project-dir", str(elsewhere)],
                         env={"HOME": str(tmp_path / "home")})
    assert "none: the local defaults" in none.output


def test_the_api_names_its_own_argument(elsewhere, tmp_path):
    from mirrorspec.api import Project, ProjectError

    empty = tmp_path / "no-profiles"
    empty.mkdir()
    with pytest.raises(ProjectError, match=r"\(Project\(profiles_dir=…\)\)"):
        Project(elsewhere, profiles_dir=empty).compile()


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


@pytest.mark.parametrize("how", ["env", "option"])
def test_a_bad_serve_client_names_where_it_came_from(tmp_path, how):
    args = ["serve", "--root", str(tmp_path / "fabric")]
    env = {"MIRRORSPEC_SERVE_CLIENTS": "no-colon"} if how == "env" else {}
    if how == "option":
        args += ["--client", "no-colon"]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 1
    said = "MIRRORSPEC_SERVE_CLIENTS" if how == "env" else "--client"
    assert result.stderr.startswith(f"Error: {said} ")  # the value itself is never echoed
    assert "give ID:SECRET or ID:@CERT.pem" in result.stderr


def test_serve_outside_a_project_names_every_way_to_give_its_folders(elsewhere):
    result = CliRunner().invoke(cli, ["serve", "--self-signed"])
    assert result.exit_code == 1
    assert "no mirrorspec_project.yml in . (the current folder)" in result.stderr
    for option in ("--landing-zone DIR --warehouse DIR", "--root DIR", "--project-dir"):
        assert option in result.stderr
