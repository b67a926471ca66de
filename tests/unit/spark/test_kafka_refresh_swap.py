"""The swap at the end of a Kafka table's full refresh (no JVM: local files only): the landing
file, the staged messages still held back (an unfinished transaction) and the recorded offsets
move from the refresh's own folder into the table's, and the state names the moved files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from mirrorspec.base.files import Files
from mirrorspec.compile import compile_project
from mirrorspec.landing.processed import LandingFiles
from mirrorspec.progress.publish import load_state, save_state, staging_folder
from mirrorspec.sources.kafka import offsets_sidecar, staged_name
from mirrorspec.spark.publish.publisher import PublishResult
from mirrorspec.spark.publish.refresh import _swap_in, shadow_root
from tests.support.project_files import write


def test_held_back_messages_and_offsets_move_in_with_the_landing_file(tmp_path):
    root = write(tmp_path / "proj", {
        "mirrorspec_project.yml": {"name": "k"},
        "profiles.yml": {"k": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/t.yml": {"tables": [{"name": "orders", "source": {
            "type": "qlik_replicate",
            "kafka": {"topics": ["t"], "bootstrap_servers": "127.0.0.1:9"}}}]}})
    plan = compile_project(root).plan
    table = plan.table("dbo.orders")
    folder = shadow_root(plan, table)
    shadow_plan = replace(plan, state_path=folder)
    shadow = replace(table, landing_path=f"{folder}/landing")
    fs = Files()
    staged = staging_folder(shadow_plan, shadow)
    done, held = staged_name("t", 0, 0), staged_name("t", 0, 5)
    for name in (done, held):
        fs.write_text(f"{staged}/{name}", "{}\n")
        fs.write_text(f"{staged}/{offsets_sidecar(name)}", "0\n")
    fs.write_text(f"{shadow.landing_path}/_metadata.json", '{"keyColumns": ["ID"]}')
    fs.write_text(f"{shadow.landing_path}/00000000000000000001.parquet", "rows")
    batch = {"sequence": 1, "files": [f"{staged}/{done}", f"{staged}/{held}"],
             "consumed": [f"{staged}/{done}"], "held_back": [f"{staged}/{held}"], "rows": 3,
             "reader": {}}
    state = load_state(fs, shadow_plan, shadow)
    state["kafka"] = {"offsets": {"t": {"0": 7}}, "end_offsets": {"t": {"0": 7}}}
    save_state(fs, shadow_plan, shadow, state)

    result = PublishResult(table.unique_id, status="Published", batch=batch)
    _swap_in(fs, LandingFiles(), shadow, shadow_plan, table, plan, result)

    target = staging_folder(plan, table)
    assert sorted(p.name for p in Path(target).iterdir()) == sorted(
        [done, held, offsets_sidecar(done), offsets_sidecar(held)])
    assert not any(Path(staged).iterdir())
    assert Path(table.landing_path, "00000000000000000001.parquet").read_text() == "rows"
    moved = load_state(fs, plan, table)
    assert moved["kafka"]["offsets"] == {"t": {"0": 7}}
    assert moved["held_back"] == [f"{target}/{held}"]
    assert moved["files"] == {f"{target}/{done}": 1}
    assert moved["pending"] is None
    assert result.files_written == [f"{table.landing_path}/00000000000000000001.parquet"]
    assert "refresh" not in json.dumps(moved)
