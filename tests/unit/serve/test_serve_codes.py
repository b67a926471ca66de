"""Every status code `serve` answers is in docs/onelake.md, the guessed ones marked guessed."""

from __future__ import annotations

from pathlib import Path

from mirrorspec.serve.codes import CODES, guessed

DOC = (Path(__file__).resolve().parents[3] / "docs" / "onelake.md").read_text()


def test_every_code_is_documented_and_guessed_ones_are_marked():
    rows = [line for line in DOC.splitlines() if line.startswith("| `")]
    for key, code in CODES.items():
        row = next((r for r in rows if f"`{key}`" in r), None)
        assert row is not None, f"{key} is not in docs/onelake.md's status-code table"
        assert f"| {code.status} |" in row and code.code in row, row
        assert ("**guessed**" in row) == code.guessed, row
    assert len(guessed()) >= 5
