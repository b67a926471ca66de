"""--watch's heartbeat (mirrorspec/operate/heartbeat.py): an 'alive' line every N idle passes in a row,
none while passes apply files, and a heartbeat file rewritten after every pass."""

from __future__ import annotations

import json

from mirrorspec.operate.heartbeat import Heartbeat


def test_a_line_every_n_idle_passes_and_the_count_restarts_after_work(tmp_path):
    path = tmp_path / "beat" / "heartbeat.json"
    beat = Heartbeat(str(path), every=3)
    lines = [beat.after_pass(n, applied, 1_700_000_000 + n)
             for n, applied in enumerate([0, 0, 0, 0, 0, 0, 2, 0, 0, 0], start=1)]
    said = [n for n, line in enumerate(lines, start=1) if line]
    assert said == [3, 6, 10]  # pass 7 applied files: the idle count starts again
    assert "pass 3, 3 idle pass(es) in a row" in lines[2] and str(path) in lines[2]
    stamp = json.loads(path.read_text())
    assert stamp["pass"] == 10 and stamp["files_applied"] == 0
    assert stamp["time"] == "2023-11-14T22:13:30Z"
    assert [p.name for p in path.parent.iterdir()] == ["heartbeat.json"]


def test_without_a_file_only_the_lines():
    beat = Heartbeat(None, every=1)
    assert beat.after_pass(1, 0, 0.0) == "alive: pass 1, 1 idle pass(es) in a row, nothing new " \
                                         "to apply"
    assert beat.after_pass(2, 5, 0.0) is None
