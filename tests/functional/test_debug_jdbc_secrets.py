"""`debug --jdbc URL` never shows a credential: every form `reconcile` hides (PostgreSQL
user-info and `?password=`, SQL Server `;password=`, Oracle thin `user/pw@`, MySQL) is checked
against the server it names and printed redacted; none crashes (exit 2)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mirrorspec.commands.debug import _services
from mirrorspec.security.jdbc_urls import host_and_port

REPO = Path(__file__).resolve().parents[2]
SECRET = "S3CR3T-pw"

FORMS = [  # (URL, the server it connects to)
    ("jdbc:postgresql://alice:" + SECRET + "@db.example:5433/shop", ("db.example", 5433)),
    ("jdbc:postgresql://db.example/shop?user=alice&password=" + SECRET, ("db.example", 5432)),
    ("jdbc:sqlserver://db.example:1433;databaseName=shop;user=alice;password=" + SECRET
     + ";encrypt=true", ("db.example", 1433)),
    ("jdbc:sqlserver://;serverName=db.example;user=alice;password=" + SECRET,
     ("db.example", 1433)),
    ("jdbc:oracle:thin:alice/" + SECRET + "@db.example:1521/svc", ("db.example", 1521)),
    ("jdbc:oracle:thin:alice/" + SECRET + "@//db.example:1522/svc", ("db.example", 1522)),
    ("jdbc:oracle:thin:@db.example:1521:ORCL", ("db.example", 1521)),
    ("jdbc:mysql://alice:" + SECRET + "@db.example/shop", ("db.example", 3306)),
    ("jdbc:mysql://db.example:3307/shop?user=alice&password=" + SECRET, ("db.example", 3307)),
]


@pytest.mark.parametrize("url,server", FORMS)
def test_the_server_is_found_in_every_form(url, server):
    assert host_and_port(url) == server


@pytest.mark.parametrize("url", ["jdbc:postgresql:shop", "jdbc:postgresql://h:99999/x",
                                 "jdbc:oracle:thin:alice/" + SECRET])
def test_a_url_naming_no_server_fails_its_check_without_the_password(url):
    [check] = _services(None, url)
    assert check.status == "FAIL" and "names no host:port" in check.detail
    assert SECRET not in check.detail


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("url", [
    "jdbc:sqlserver://127.0.0.1:{port};user=alice;password=" + SECRET,
    "jdbc:oracle:thin:alice/" + SECRET + "@127.0.0.1:{port}/svc",
    "jdbc:postgresql://alice:" + SECRET + "@127.0.0.1:{port}/shop?password=" + SECRET,
])
def test_debug_checks_the_server_and_prints_no_password(tmp_path, url):
    logs = tmp_path / "logs"
    env = dict(os.environ, PYTHONPATH=str(REPO), MIRRORSPEC_LOG_DIR=str(logs))
    done = subprocess.run([sys.executable, "-m", "mirrorspec", "debug", "--no-spark", "--jdbc",
                           url.format(port=_closed_port())], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    shown = done.stdout + done.stderr
    assert done.returncode == 1, shown  # the server is down: a failed check, not a crash
    assert "jdbc 127.0.0.1" in shown and "Internal error" not in shown
    assert SECRET not in shown
    for log in logs.glob("*") if logs.exists() else []:
        assert SECRET not in log.read_text(encoding="utf-8")
