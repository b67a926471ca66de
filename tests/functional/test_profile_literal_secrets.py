"""A credential written as is in profiles.yml (an s3a secret key, an AKIA… id, a SAS in a
URI) is refused by compile with a located error naming env_var(): the compiled plan never
holds it. Through env_var('MIRRORSPEC_SECRET_…') the plan holds a placeholder that `run`
resolves from the environment."""

from __future__ import annotations

import json

import pytest

from mirrorspec.base.errors import ProjectError
from mirrorspec.compile import compile_project
from mirrorspec.artifacts.plan import resolve_secrets
from tests.support.no_jvm import run_without_jvm
from tests.support.project_files import write

SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documentation example
ACCESS_ID = "AKIAIOSFODNN7EXAMPLE"


def _project(tmp_path, conf: dict, **output):
    return write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse",
            "spark": {"conf": conf}, **output}}}},
        "tables/shop.yml": {"tables": [{"name": "orders", "key_columns": ["id"]}]}})


@pytest.mark.parametrize("conf,output,where", [
    ({"spark.hadoop.fs.s3a.secret.key": SECRET_KEY}, {},
     "shop.outputs.dev.spark.conf.spark.hadoop.fs.s3a.secret.key"),
    ({"spark.hadoop.fs.s3a.access.key": ACCESS_ID}, {},
     "shop.outputs.dev.spark.conf.spark.hadoop.fs.s3a.access.key"),
    ({}, {"warehouse": "abfss://wh@acct.dfs.core.windows.net/x?sv=2024&sig=Zm9vYmFyYmF6cXV4"},
     "shop.outputs.dev.warehouse"),
])
def test_a_literal_credential_is_refused_where_it_is_written(tmp_path, conf, output, where):
    project = _project(tmp_path, conf, **output)
    done = run_without_jvm("compile", "--project-dir", str(project), cwd=tmp_path,
                           log_format="text")
    shown = done.stdout + done.stderr
    assert done.returncode == 1, shown
    assert "profiles.yml:" in shown and f"{where}: looks like a credential" in shown
    assert "env_var('MIRRORSPEC_SECRET_" in shown
    assert SECRET_KEY not in shown and ACCESS_ID not in shown and "Zm9vYmFy" not in shown
    assert not (project / "target" / "plan.json").exists()


def test_env_var_keeps_it_out_of_the_plan_and_run_resolves_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORSPEC_SECRET_S3", SECRET_KEY)
    project = _project(tmp_path, {
        "spark.hadoop.fs.s3a.secret.key": "{{ env_var('MIRRORSPEC_SECRET_S3') }}",
        "spark.hadoop.fs.s3a.aws.credentials.provider":
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"})
    result = compile_project(project)
    text = result.plan_path.read_text(encoding="utf-8")
    assert SECRET_KEY not in text
    conf = json.loads(text)["spark"]["conf"]
    assert resolve_secrets(conf)["spark.hadoop.fs.s3a.secret.key"] == SECRET_KEY


def test_the_api_raises_a_project_error(tmp_path):
    project = _project(tmp_path, {"spark.hadoop.fs.s3a.secret.key": SECRET_KEY})
    with pytest.raises(ProjectError) as caught:
        compile_project(project)
    assert SECRET_KEY not in caught.value.render()
