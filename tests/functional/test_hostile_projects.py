"""Hostile project files: YAML bombs, costly templates, a target outside the project, hidden
names and secrets where they would leak. Each is a located error (exit 1), never a hang,
a crash or a file touched that compile didn't write."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirrorspec.cli import cli
from tests.support.project_files import write

REPO = Path(__file__).resolve().parents[2]
MIRRORSPEC = REPO / ".venv" / "bin" / "mirrorspec"
PROJECT = "name: shop\n"
TABLES = "tables:\n  - name: orders\n    key_columns: [id]\n"


def run(args):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MIRRORSPEC_PROFILES_DIR", raising=False)
    return tmp_path


# --- YAML bombs: in a subprocess with a memory cap, where a crash or a blow-up is possible ----

def _laughs() -> str:
    lines = ['a0: &a0 "lol"']
    for level in range(1, 9):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return "name: shop\n" + "\n".join(lines) + "\n"


def _deep_mapping(depth: int) -> str:
    return "name: shop\nvars:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(depth)) \
        + " " * (depth + 1) + "v\n"


BOMBS = {
    "billion_laughs_9x9_8_levels": _laughs(),
    "flow_1000": "name: shop\nvars: " + "[" * 1000 + "]" * 1000 + "\n",
    "flow_10000": "name: shop\nvars: " + "[" * 10000 + "]" * 10000 + "\n",
    "flow_30000": "name: shop\nvars: " + "[" * 30000 + "]" * 30000 + "\n",
    "mapping_5000": _deep_mapping(5000),
}


def _memory_cap():  # 1 GiB of address space: a bomb that expands fails instead of swapping
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_yaml_bomb_is_a_located_error_not_a_crash(tmp_path, name):
    write(tmp_path, {"mirrorspec_project.yml": BOMBS[name], "tables/t.yml": TABLES})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MIRRORSPEC_PROFILES_DIR", None)
    done = subprocess.run([str(MIRRORSPEC), "validate", "--project-dir", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120,
                          preexec_fn=_memory_cap)
    assert done.returncode == 1, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    output = done.stdout + done.stderr
    assert re.search(r"mirrorspec_project\.yml:\d+:\d+: YAML (nested deeper|aliases expand)",
                     output), output[-2000:]
    assert "Internal error" not in output and "Traceback" not in output


def test_bombs_in_a_table_file_are_located_in_that_file(in_tmp):
    write(in_tmp, {"mirrorspec_project.yml": PROJECT,
                   "tables/a.yml": "tables: " + "[" * 500 + "]" * 500 + "\n",
                   "tables/b.yml": "x: &x [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
                                   + "".join(f"x{i}: &x{i} [*x{'' if i == 0 else i - 1}, "
                                             f"*x{'' if i == 0 else i - 1}, "
                                             f"*x{'' if i == 0 else i - 1}]\n" for i in range(12))})
    result = run(["validate"])
    assert result.exit_code == 1
    assert re.search(r"tables/a\.yml:1:\d+: YAML nested deeper than 100 levels", result.output)
    assert re.search(r"tables/b\.yml:\d+:\d+: YAML aliases expand to more than", result.output)


def test_ordinary_aliases_and_nesting_still_load(in_tmp):
    write(in_tmp, {"mirrorspec_project.yml": PROJECT + "vars:\n  keys: &k [id]\n"
                   + "  deep: " + "[" * 40 + "]" * 40 + "\n",
                   "tables/t.yml": "tables:\n  - &base {name: orders, key_columns: [id]}\n"
                                   "  - {<<: *base, name: items}\n"})
    assert run(["validate"]).exit_code == 0


# --- templates: bounded work ---------------------------------------------------------------

@pytest.mark.parametrize("template,what", [
    ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}x",
     "loop iterations"),
    ("{{ ('a' * 10 ** 8) | length }}", "longer than"),
    ("{% for c in 'x' * 999999 %}{% for d in 'y' * 999999 %}{% endfor %}{% endfor %}",
     "loop iterations"),
    ("{% set a = 'a' * 900000 %}{{ a ~ a ~ a }}", "longer than"),
    ("{{ 7 ** (10 ** 9) }}", "too large"),
])
def test_costly_template_is_a_located_error(in_tmp, template, what):
    write(in_tmp, {"mirrorspec_project.yml": PROJECT,
                   "tables/t.yml": f"tables:\n  - name: orders\n    description: \"{template}\"\n"})
    result = run(["validate"])
    assert result.exit_code == 1
    assert re.search(r"tables/t\.yml:3:18: tables\[0\]\.description: template does too much "
                     r"work: .*" + what, result.output), result.output


def test_small_templates_still_render(in_tmp):
    write(in_tmp, {"mirrorspec_project.yml": PROJECT,
                   "tables/t.yml": "tables:\n  - name: orders\n    description: \""
                                   "{% for i in range(3) %}{{ i }}{% endfor %}{{ 'ab' * 2 }}\"\n"})
    assert run(["compile"]).exit_code == 0
    plan = json.loads((in_tmp / "target" / "plan.json").read_text())
    assert plan["tables"][0]["description"] == "012abab"


# --- target-path outside the project ----------------------------------------------------------

def test_target_outside_the_project_needs_the_opt_in(in_tmp):
    project = in_tmp / "shop"
    victim = in_tmp / "victim"
    victim.mkdir()
    (victim / "plan.json").write_text("precious\n")
    write(project, {"mirrorspec_project.yml": PROJECT + "target-path: ../victim\n",
                    "tables/t.yml": TABLES})
    result = run(["compile", "--project-dir", str(project)])
    assert result.exit_code == 1
    assert re.search(r"mirrorspec_project\.yml:2:14: target-path: target-path '\.\./victim' is "
                     r"outside the project folder", result.output), result.output
    assert "target-outside-project: true" in result.output
    assert (victim / "plan.json").read_text() == "precious\n"
    absolute = write(in_tmp / "abs", {"mirrorspec_project.yml":
                                      PROJECT + f"target-path: {in_tmp / 'elsewhere'}\n",
                                      "tables/t.yml": TABLES})
    assert run(["compile", "--project-dir", str(absolute)]).exit_code == 1
    assert not (in_tmp / "elsewhere").exists()


def test_opted_in_compile_never_overwrites_a_foreign_plan(in_tmp):
    project = in_tmp / "shop"
    victim = in_tmp / "victim"
    victim.mkdir()
    (victim / "plan.json").write_text("precious\n")
    write(project, {"mirrorspec_project.yml":
                    PROJECT + "target-path: ../victim\ntarget-outside-project: true\n",
                    "tables/t.yml": TABLES})
    result = run(["compile", "--project-dir", str(project)])
    assert result.exit_code == 1 and "is not a mirrorspec plan" in result.output
    assert (victim / "plan.json").read_text() == "precious\n"
    other = json.dumps({"plan_version": 1, "project_name": "other", "tables": []})
    (victim / "plan.json").write_text(other)
    result = run(["compile", "--project-dir", str(project)])
    assert result.exit_code == 1 and "plan of project 'other'" in result.output
    assert (victim / "plan.json").read_text() == other


def test_opted_in_compile_keeps_files_it_did_not_write(in_tmp):
    project = in_tmp / "shop"
    victim = in_tmp / "victim"
    foreign = victim / "landing_zone" / "orders" / "_metadata.json"
    foreign.parent.mkdir(parents=True)
    foreign.write_text('{"keyColumns": ["theirs"]}\n')
    write(project, {"mirrorspec_project.yml":
                    PROJECT + "target-path: ../victim\ntarget-outside-project: true\n",
                    "tables/t.yml": TABLES})
    result = run(["compile", "--project-dir", str(project)])
    assert result.exit_code == 1 and "no plan.json says compile wrote it" in result.output
    assert foreign.read_text() == '{"keyColumns": ["theirs"]}\n'


def test_stale_files_are_removed_only_when_unchanged(in_tmp):
    project = write(in_tmp / "shop", {"mirrorspec_project.yml": PROJECT, "tables/t.yml":
                                      TABLES + "  - name: items\n  - name: notes\n"})
    assert run(["compile", "--project-dir", str(project)]).exit_code == 0
    landing = project / "target" / "landing_zone"
    edited = landing / "notes" / "_metadata.json"
    edited.write_text('{"keyColumns": ["mine"]}\n')  # someone else's text now
    write(project, {"tables/t.yml": TABLES})
    assert run(["compile", "--project-dir", str(project)]).exit_code == 0
    assert not (landing / "items").exists()  # ours and unchanged: removed
    assert edited.read_text() == '{"keyColumns": ["mine"]}\n'  # changed since: kept
    assert (landing / "orders" / "_metadata.json").exists()


# --- hidden names ---------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["name", "schema"])
def test_dot_names_are_refused_with_the_rule(in_tmp, key):
    table = {"name": "orders", key: ".hidden"}
    write(in_tmp, {"mirrorspec_project.yml": PROJECT, "tables/t.yml": {"tables": [table]}})
    for command in ("validate", "compile"):
        result = run([command])
        assert result.exit_code == 1
        assert "'.hidden' starts with '.'" in result.output and "never mirrored" in result.output
        assert re.search(rf"tables/t\.yml:\d+:\d+: tables\[0\]\.{key}:", result.output)
    assert not (in_tmp / "target").exists()


# --- secrets --------------------------------------------------------------------------------

SECRET = "{{ env_var('MIRRORSPEC_SECRET_SCH') }}"


@pytest.mark.parametrize("files,where", [
    ({"tables/t.yml": f'tables:\n  - name: orders\n    schema: "{SECRET}"\n'},
     r"tables/t\.yml:3:13: tables\[0\]\.schema"),
    ({"tables/t.yml": f'tables:\n  - name: "{SECRET}"\n'}, r"tables/t\.yml:2:11: tables\[0\]\.name"),
    ({"tables/t.yml": f'tables:\n  - name: orders\n    key_columns: ["{SECRET}"]\n'},
     r"tables/t\.yml:3:19: tables\[0\]\.key_columns\[0\]"),
    ({"tables/t.yml": "tables:\n  - name: orders\n    source: {type: debezium, path: "
                      f'"feed/{SECRET}"}}\n'}, r"tables/t\.yml:3:\d+: tables\[0\]\.source\.path"),
    ({"mirrorspec_project.yml": f'name: shop\npartner: {{name: "{SECRET}"}}\n'},
     r"mirrorspec_project\.yml:2:17: partner\.name"),
    ({"mirrorspec_project.yml": f'name: shop\nvars: {{s: "{SECRET}"}}\n',
      "tables/t.yml": "tables:\n  - name: orders\n    schema: \"{{ var('s') }}\"\n"},
     r"tables/t\.yml:3:13: tables\[0\]\.schema"),
    ({"profiles.yml": f"shop:\n  outputs:\n    default:\n      landing_zone: \"lz/{SECRET}\"\n"},
     r"profiles\.yml:4:21: shop\.outputs\.default\.landing_zone"),
])
def test_secret_where_it_would_leak_is_refused_at_compile(in_tmp, monkeypatch, files, where):
    write(in_tmp, {"mirrorspec_project.yml": PROJECT, "tables/t.yml": TABLES, **files})
    monkeypatch.setenv("MIRRORSPEC_SECRET_SCH", "topsecret")
    result = run(["compile"])
    assert result.exit_code == 1, result.output
    assert re.search(where + r": a secret \(MIRRORSPEC_SECRET_\*\) can't be used here",
                     result.output), result.output
    assert "topsecret" not in result.output
    assert not (in_tmp / "target").exists()


def test_secrets_stay_placeholders_in_spark_conf_and_source_options(in_tmp, monkeypatch):
    write(in_tmp, {
        "mirrorspec_project.yml": PROJECT,
        "tables/t.yml": "tables:\n  - name: orders\n    key_columns: [id]\n"
                        "    columns: [{name: id, type: Int64}]\n"
                        "    source:\n      type: aws_dms\n      path: feed\n"
                        f"      options: {{null_value: \"{SECRET}\"}}\n",
        "feed/.keep": "",
        "profiles.yml": "shop:\n  outputs:\n    default:\n      spark:\n        conf:\n"
                        f"          fs.azure.account.key: \"{SECRET}\"\n"})
    monkeypatch.setenv("MIRRORSPEC_SECRET_SCH", "topsecret")
    result = run(["compile"])
    assert result.exit_code == 0, result.output
    plan = (in_tmp / "target" / "plan.json").read_text()
    assert "topsecret" not in plan and plan.count("MIRRORSPEC_SECRET_SCH") == 2


# --- env_var() of a credential outside the secret prefix ---------------------------------------

GH_TOKEN = "ghp_" + "A1b2C3d4E5" * 4


@pytest.mark.parametrize("name,value,reason", [
    ("GITHUB_TOKEN", GH_TOKEN, "its name says it holds a credential"),
    ("AWS_SECRET_ACCESS_KEY", "x" * 40, "its name says it holds a credential"),
    ("DB_PASSWORD", "hunter2", "its name says it holds a credential"),
    ("BUILD_INFO", GH_TOKEN, "its value looks like a credential"),
    ("STORAGE", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Zm9vYmFy",
     "its value looks like a credential"),
    ("OPAQUE", "Qm9vZ1x3Yk5RZ2V0aGVyMTIzNDU2Nzg5MGFi", "its value looks like a credential"),
])
def test_env_var_of_a_credential_never_reaches_an_artifact(in_tmp, monkeypatch, name, value,
                                                            reason):
    write(in_tmp, {"mirrorspec_project.yml": PROJECT,
                   "tables/t.yml": "tables:\n  - name: orders\n    key_columns: [id]\n"
                                   f"    description: \"built by {{{{ env_var('{name}') }}}}\"\n"})
    monkeypatch.setenv(name, value)
    result = run(["compile"])
    assert result.exit_code == 1, result.output
    assert re.search(r"tables/t\.yml:4:18: tables\[0\]\.description: env_var\('" + name
                     + r"'\) looks like a secret \(" + reason, result.output), result.output
    assert f"MIRRORSPEC_SECRET_{name}" in result.output and "env-vars-not-secret" in result.output
    assert value not in result.output
    assert not (in_tmp / "target").exists()


def test_a_listed_variable_and_ordinary_ones_still_render(in_tmp, monkeypatch):
    write(in_tmp, {"mirrorspec_project.yml": PROJECT + "env-vars-not-secret: [BUILD_KEY]\n",
                   "tables/t.yml": "tables:\n  - name: orders\n    key_columns: [id]\n"
                                   "    description: \"{{ env_var('BUILD_KEY') }} in "
                                   "{{ env_var('REGION') }} {{ env_var('GIT_SHA') }}\"\n"})
    monkeypatch.setenv("BUILD_KEY", "b-17")
    monkeypatch.setenv("REGION", "eu-west-1")
    monkeypatch.setenv("GIT_SHA", "0356a91d1e9c6f0e7b8a2f4c5d6e7f8091a2b3c4")  # a hash, no upper
    result = run(["compile"])
    assert result.exit_code == 0, result.output
    plan = json.loads((in_tmp / "target" / "plan.json").read_text())
    assert plan["tables"][0]["description"] == \
        "b-17 in eu-west-1 0356a91d1e9c6f0e7b8a2f4c5d6e7f8091a2b3c4"
