"""The driver JVM's class-data archive: which archive a session maps, and when none."""

from __future__ import annotations

import os

import pytest

from mirrorspec.spark.platform import cds


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORSPEC_JARS_DIR", str(tmp_path))
    monkeypatch.delenv(cds.ENV, raising=False)
    return tmp_path


def _make_archive(conf: dict) -> None:
    path = cds.archive_path(conf)
    assert path is not None, "these tests need java on the PATH"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"archive")


def test_no_archive_leaves_the_java_options_alone(cache):
    conf = {"spark.jars": "/x/delta.jar"}
    assert cds.add_archive(conf) is None
    assert cds.JAVA_OPTIONS not in conf


def test_an_archive_for_this_class_path_is_mapped_before_the_users_options(cache):
    conf = {"spark.jars": "/x/delta.jar", cds.JAVA_OPTIONS: "-Dmine=1"}
    _make_archive(conf)
    used = cds.add_archive(conf)
    assert used == cds.archive_path(conf)
    assert conf[cds.JAVA_OPTIONS] == f"-XX:SharedArchiveFile={used} -Xshare:auto -Dmine=1"


def test_another_class_path_or_jar_set_needs_its_own_archive(cache):
    base = {"spark.jars": "/x/delta.jar"}
    _make_archive(base)
    for other in ({"spark.jars": "/x/delta.jar,/x/kafka.jar"},
                  {"spark.jars": "/x/delta.jar", "spark.driver.extraClassPath": "/x/aws.jar"}):
        assert cds.archive_path(other) != cds.archive_path(base)
        assert cds.add_archive(dict(other)) is None


def test_off_and_require(cache, monkeypatch):
    conf = {"spark.jars": "/x/delta.jar"}
    _make_archive(conf)
    monkeypatch.setenv(cds.ENV, "off")
    assert cds.add_archive(dict(conf)) is None
    monkeypatch.setenv(cds.ENV, "require")
    required = dict(conf)
    cds.add_archive(required)
    assert required[cds.JAVA_OPTIONS].endswith("-Xshare:on")


def test_a_users_own_archive_option_wins(cache):
    conf = {"spark.jars": "/x/delta.jar", cds.JAVA_OPTIONS: "-XX:SharedArchiveFile=/mine.jsa"}
    _make_archive(conf)
    assert cds.add_archive(conf) is None
    assert conf[cds.JAVA_OPTIONS] == "-XX:SharedArchiveFile=/mine.jsa"


def test_each_pyspark_install_has_its_own_archive(cache, monkeypatch, tmp_path):
    conf = {"spark.jars": "/x/delta.jar"}
    here = cds.archive_path(conf)
    other = tmp_path / "other-venv" / "pyspark" / "jars"
    other.mkdir(parents=True)
    monkeypatch.setattr(cds, "_spark_jars", lambda: other)
    assert cds.archive_path(conf) != here  # the JVM compares class path entries by path


def test_archives_of_removed_or_reinstalled_installs_and_older_training_are_forgotten(
        cache, tmp_path, monkeypatch):
    folder = tmp_path / "cds"
    folder.mkdir()
    kept_jars = tmp_path / "venv" / "jars"
    kept_jars.mkdir(parents=True)
    (kept_jars / "spark-core.jar").write_bytes(b"jar")
    monkeypatch.setattr(cds, "_spark_jars", lambda: kept_jars)  # this install's
    other_jars = tmp_path / "other-venv" / "jars"  # another worktree's install, alive
    other_jars.mkdir(parents=True)
    (other_jars / "spark-core.jar").write_bytes(b"other jar")
    signature = cds.jars_signature(kept_jars)
    current = f"training {cds.TRAINING_VERSION}"
    older = f"training {cds.TRAINING_VERSION - 1}"
    other = f"{other_jars}\n{older}\n{cds.jars_signature(other_jars)}\n"
    for name, source in (("driver-kept.jsa", f"{kept_jars}\n{current}\n{signature}\n"),
                         ("driver-other-install.jsa", other),
                         ("driver-gone.jsa", f"{tmp_path / 'x'}\n{current}\n{signature}\n"),
                         ("driver-reinstalled.jsa", f"{kept_jars}\n{current}\nother\n"),
                         ("driver-unsigned.jsa", f"{kept_jars}\n{current}\n"),
                         ("driver-old-training.jsa", f"{kept_jars}\n"),
                         ("driver-older.jsa", f"{kept_jars}\ntraining 1\n{signature}\n")):
        (folder / name).write_bytes(b"archive")
        (folder / f"{name}.source").write_text(source)
    cds.forget_stale_archives(folder)
    # another live install's archive of its own (older) training stays: its code maps it
    assert sorted(p.name for p in folder.iterdir()) == [
        "driver-kept.jsa", "driver-kept.jsa.source", "driver-other-install.jsa",
        "driver-other-install.jsa.source"]


def test_a_pyspark_installed_again_at_the_same_path_names_a_new_archive(cache, monkeypatch,
                                                                        tmp_path):
    """The JVM refuses an archive whose class path jars have another mtime or size (a venv made
    again where the old one was): such an install must not find the old archive."""
    jars = tmp_path / "venv" / "pyspark" / "jars"
    jars.mkdir(parents=True)
    jar = jars / "slf4j-api.jar"
    jar.write_bytes(b"jar")
    monkeypatch.setattr(cds, "_spark_jars", lambda: jars)
    conf = {"spark.jars": "/x/delta.jar"}
    before = cds.archive_path(conf)
    assert cds.archive_path(conf) == before  # stable while nothing changes
    stat = jar.stat()
    os.utime(jar, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert cds.archive_path(conf) != before


def test_a_new_training_pass_names_a_new_archive(cache, monkeypatch):
    conf = {"spark.jars": "/x/delta.jar"}
    before = cds.archive_path(conf)
    monkeypatch.setattr(cds, "TRAINING_VERSION", cds.TRAINING_VERSION + 1)
    assert cds.archive_path(conf) != before
