"""The one error handler: exit 1 for user errors, 2 with a traceback log for internal ones."""

import click
from click.testing import CliRunner

from mirrorspec.cli import MirrorspecGroup
from mirrorspec.errors import Location, ProjectError


def make_cli():
    @click.group(cls=MirrorspecGroup)
    def group():
        pass

    @group.command()
    def user():
        raise ProjectError("bad key", Location("t.yml", 3, 5, "tables[0].name"))

    @group.command()
    def boom():
        raise RuntimeError("kaput")

    return group


def test_user_error_exits_1_with_location_and_no_traceback():
    result = CliRunner().invoke(make_cli(), ["user"])
    assert result.exit_code == 1
    assert "t.yml:3:5: tables[0].name: bad key" in result.output
    assert "Traceback" not in result.output


def test_internal_error_exits_2_and_names_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORSPEC_LOG_DIR", str(tmp_path))
    result = CliRunner().invoke(make_cli(), ["boom"])
    assert result.exit_code == 2
    logs = list(tmp_path.glob("mirrorspec-crash-*.log"))
    assert len(logs) == 1 and "RuntimeError: kaput" in logs[0].read_text()
    assert str(logs[0]) in result.output
