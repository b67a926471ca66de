"""`source.options.keyless_repeats` (`stop` | `land`): valid for every CDC source type, carried
into the plan's `SourceSpec.options`, and a bad value is a located error naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrorspec.base.errors import ProjectError
from mirrorspec.compile import compile_project
from mirrorspec.sources.delivery import repeats_land
from tests.support.project_files import write

CDC_TYPES = ["qlik_replicate", "arcion", "debezium", "aws_dms", "goldengate", "canal", "maxwell"]
COLUMNS = [{"name": "id", "type": "Int32"}, {"name": "name", "type": "String"}]


def make(tmp_path: Path, source_type: str, value: str) -> Path:
    table = {"name": "items", "schema": "s", "columns": COLUMNS,
             "source": {"type": source_type, "path": "feed",
                        "options": {"keyless_repeats": value}}}
    return write(tmp_path / "proj", {"mirrorspec_project.yml": {"name": "p"},
                                     "tables/t.yml": {"tables": [table]}})


@pytest.mark.parametrize("source_type", CDC_TYPES)
def test_land_validates_and_reaches_the_plan(tmp_path, source_type):
    plan = compile_project(make(tmp_path, source_type, "land"), infer=lambda *a: None).plan
    options = plan.tables[0].source.options
    assert options["keyless_repeats"] == "land" and repeats_land(options)


def test_a_bad_value_is_a_located_error_naming_the_file(tmp_path):
    with pytest.raises(ProjectError) as err:
        compile_project(make(tmp_path, "canal", "twice"), infer=lambda *a: None)
    found = [p.render() for p in err.value.problems]
    assert any("t.yml" in p and "keyless_repeats" in p and "twice" in p for p in found), found
