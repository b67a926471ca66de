"""Setup that explains itself: Delta's jars downloaded without Maven and checked
against the published SHA-1, an unwritable cache, no Java or an old one — each a SetupError that
names the fix, never an internal error."""

from __future__ import annotations

import hashlib
import http.server
import os
import stat
import threading
from pathlib import Path

import pytest

from mirrorspec.base.errors import SetupError
from mirrorspec.spark.platform import java, jars

JAR = b"PK\x03\x04 not really a jar, but bytes with a checksum"
COORDINATE = "io.delta:delta-storage:9.9.9"


@pytest.fixture
def repository(tmp_path):
    """A Maven repository layout served on 127.0.0.1: (url, folder of the artifact)."""
    root = tmp_path / "repo"
    folder = root / "io" / "delta" / "delta-storage" / "9.9.9"
    folder.mkdir(parents=True)
    (folder / "delta-storage-9.9.9.jar").write_bytes(JAR)
    (folder / "delta-storage-9.9.9.jar.sha1").write_text(hashlib.sha1(JAR).hexdigest() + "\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", folder
    server.shutdown()


def test_a_jar_is_downloaded_and_its_checksum_verified(repository, tmp_path, monkeypatch):
    url, _folder = repository
    monkeypatch.setenv(jars.MAVEN_REPO_ENV, url)
    target = tmp_path / "cache" / "delta-storage-9.9.9.jar"
    target.parent.mkdir()
    assert jars.download_jar(COORDINATE, target) == target
    assert target.read_bytes() == JAR
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temp file left


def test_a_wrong_checksum_keeps_nothing_and_says_so(repository, tmp_path, monkeypatch):
    url, folder = repository
    (folder / "delta-storage-9.9.9.jar.sha1").write_text("0" * 40)
    monkeypatch.setenv(jars.MAVEN_REPO_ENV, url)
    target = tmp_path / "delta-storage-9.9.9.jar"
    with pytest.raises(SetupError, match="SHA-1 .* is not the published 0000") as caught:
        jars.download_jar(COORDINATE, target)
    assert not target.exists() and list(tmp_path.iterdir()) == [tmp_path / "repo"]
    assert "MIRRORSPEC_MAVEN_REPO" in caught.value.hint


def test_offline_the_error_says_how_to_get_the_jars(tmp_path, monkeypatch):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(jars.MAVEN_REPO_ENV, f"http://127.0.0.1:{port}")
    with pytest.raises(SetupError, match="could not download io.delta:delta-storage") as caught:
        jars.download_jar(COORDINATE, tmp_path / "x.jar", timeout=5)
    assert "copy x.jar" in caught.value.hint and str(tmp_path) in caught.value.hint


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_cache_is_a_setup_error(tmp_path):
    tmp_path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(SetupError, match="not writable") as caught:
            jars.writable_cache(tmp_path / "jars")
    finally:
        tmp_path.chmod(stat.S_IRWXU)
    assert "MIRRORSPEC_JARS_DIR" in caught.value.hint


def test_a_cache_path_that_is_a_file_is_a_setup_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SetupError, match="jar cache .* is not writable") as caught:
        jars.writable_cache(blocker / "jars")
    assert "MIRRORSPEC_JARS_DIR" in caught.value.hint


def _fake_java(folder: Path, version_line: str) -> Path:
    home = folder / "jdk"
    (home / "bin").mkdir(parents=True)
    script = home / "bin" / "java"
    script.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    script.chmod(0o755)
    return home


def test_no_java_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(SetupError, match="Spark needs Java, and none was found") as caught:
        java.check_java()
    assert "JAVA_HOME" in caught.value.message and "openjdk-17" in caught.value.hint
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SetupError, match="no `java` on PATH"):
        java.check_java()


def test_an_old_java_is_refused_and_a_supported_one_accepted(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path / "8", 'openjdk version "1.8.0_392"')))
    with pytest.raises(SetupError, match="needs Java 17 or later; .* is Java 1.8.0_392"):
        java.check_java()
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path / "21",
                                                   'openjdk version "21.0.4" 2024-07-16')))
    info = java.check_java()
    assert (info.major, info.version, info.source) == (21, "21.0.4", "JAVA_HOME")


@pytest.mark.parametrize("text,major", [("17.0.15", 17), ("1.8.0_392", 8), ("21", 21),
                                        ("25-ea", 25)])
def test_java_major(text, major):
    assert java.java_major(text) == major
