"""The one error handler: exit 1 for user errors, 2 with a traceback log for internal ones."""

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mirrorspec.cli import MirrorspecGroup
from mirrorspec.base.errors import Location, MirrorspecError, ProjectError


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


# --- usage errors: click's exit 2, documented as such beside the internal error's 2 ----------

@pytest.mark.parametrize("args", [["nosuch"], ["compile", "--nope"], ["--log-format", "xml",
                                  "validate"], ["docs", "nosuch"], ["compile", "--vars"]])
def test_usage_errors_exit_2_without_an_internal_error(args):
    from mirrorspec.cli import cli

    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "Internal error" not in result.output and "Traceback" not in result.output


def test_the_docs_say_exit_2_covers_usage_errors():
    docs = Path(__file__).resolve().parents[2] / "docs"
    workflow = (docs / "getting-started.md").read_text()
    assert "`2` an internal error (the traceback goes to a log file named in the message) **or a " \
           "usage\nerror**" in workflow
    assert "| 2 | a usage error" in (docs / "orchestration.md").read_text()


# --- MIRRORSPEC_LOG_DIR -------------------------------------------------------------------------

def test_a_missing_log_folder_is_created(tmp_path, monkeypatch):
    from mirrorspec.base import logfile

    folder = tmp_path / "not" / "yet"
    monkeypatch.setenv("MIRRORSPEC_LOG_DIR", str(folder))
    assert logfile.log_folder() == str(folder) and folder.is_dir()


def test_the_log_file_is_readable_by_its_owner_only_and_never_written_through_a_link(
        tmp_path, monkeypatch):
    import os
    import stat

    from mirrorspec.base import logfile

    monkeypatch.setenv("MIRRORSPEC_LOG_DIR", str(tmp_path))
    monkeypatch.setattr(logfile, "_path", None)
    previous = os.umask(0o022)  # the usual umask: 0644 for a file opened plainly
    try:
        path = logfile.log_exception("reading feed.txt", ValueError("a registry's answer"))
        loose = tmp_path / "loose.log"
        loose.write_text("old\n")
        loose.chmod(0o644)
        os.close(logfile.open_private(loose))  # a file of this user's is narrowed
        (tmp_path / "link.log").symlink_to(tmp_path / "target.log")
        with pytest.raises(OSError):
            logfile.open_private(tmp_path / "link.log")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "a registry's answer" in open(path).read()
    assert stat.S_IMODE(loose.stat().st_mode) == 0o600
    assert not (tmp_path / "target.log").exists()


def test_a_log_folder_that_cant_exist_is_one_line(tmp_path, monkeypatch):
    from mirrorspec.base import logfile

    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("MIRRORSPEC_LOG_DIR", str(blocker / "logs"))
    with pytest.raises(MirrorspecError) as caught:
        logfile.log_folder()
    assert caught.value.message.startswith(f"MIRRORSPEC_LOG_DIR={blocker / 'logs'} can't hold")
    assert "\n" not in caught.value.message


def test_an_internal_error_with_a_broken_log_folder_still_logs_once(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("MIRRORSPEC_LOG_DIR", str(blocker / "logs"))
    result = CliRunner().invoke(make_cli(), ["boom"])
    assert result.exit_code == 2
    assert result.output.count("Internal error") == 1 and "the traceback is in" in result.output
