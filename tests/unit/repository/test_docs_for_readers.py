"""What a user reads names things in the user's words and cites files that exist: the docs, the
README and every command's `--help` carry no internal labels (numbered specification files,
acceptance-test numbers, issue numbers, rounds of work, who worked on it), and every repository
path they cite (`tests/…py`, `mirrorspec/…py`, `bench/…`, `scripts/…`, a `…::test_name`) is there.
Pure Python: the help comes from click's CliRunner, no JVM."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
PAGES = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]

# Labels only the people who built mirrorspec could place: "seed 000" (a numbered copy of a
# specification; name the specification instead), "AT3" (an acceptance-test number; say what it
# tests), "issue #12", "round 2", and the helpers or sessions that did the work.
LABEL = re.compile(
    r"\bseeds? ?`?0\d\d|\bthe seed(?:'s)?\b(?! value)|\bAT\d\b|\bissues? #\d|\bissue \d"
    r"|\bround \d|\bhelpers? ran\b|\bother helpers\b|\bsession \d",
    re.IGNORECASE)

# A repository path: a top-level folder of the repo, then a file with an extension or a folder
# ending in `/` (`mirrorspec/run-results/v1` is a schema name, `tests/integration` a user's own
# folder in an example: neither is checked). An optional `::test_name` names a test in it.
REPO_PATH = re.compile(
    r"(?<![\w/.<-])((?:tests|mirrorspec|bench|scripts|schemas|projects|docs)/"
    r"[\w./-]*(?:\.[A-Za-z]\w*|/))(?:::(\w+))?(?![\w<>*{])")
TEST_NAME = re.compile(r"::(test_\w+)")
BARE_TEST_FILE = re.compile(r"(?<![\w/.-])(test_\w+\.py)\b")


def labels_in(text: str) -> list[str]:
    """Each internal label of `text`, as `line: label`."""
    return [f"{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}" for m in LABEL.finditer(text)]


def command_helps() -> dict[str, str]:
    """`mirrorspec … --help` of every command and group, as a user's terminal shows it."""
    from mirrorspec.cli import cli

    def paths(group: click.Command, path: tuple[str, ...] = ()):
        yield path
        if isinstance(group, click.Group):
            for name, command in group.commands.items():
                yield from paths(command, path + (name,))

    helps = {}
    for path in paths(cli):
        result = CliRunner().invoke(cli, [*path, "--help"], terminal_width=80)
        assert result.exit_code == 0, (path, result.output)
        helps[" ".join(("mirrorspec", *path))] = result.output
    return helps


def missing_paths(text: str, root: Path = REPO) -> list[str]:
    """The repository paths `text` cites that don't exist, and `::test_name`s no test file
    defines (in the cited file when there is one), as `line: citation`."""
    defined: dict[Path, set[str]] = {}

    def tests_in(path: Path) -> set[str]:
        if path not in defined:
            defined[path] = set(re.findall(r"def (test_\w+)", path.read_text(encoding="utf-8")))
        return defined[path]

    test_files = {p.name: p for p in (root / "tests").rglob("test_*.py")}
    every_test = set().union(*(tests_in(p) for p in test_files.values())) if test_files else set()
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in REPO_PATH.finditer(line):
            path, test = match.group(1), match.group(2)
            if "…" in path or ".." in path:
                continue
            target = root / path.rstrip("/")
            if not target.exists():
                problems.append(f"{number}: {path} (no such file)")
            elif test and target.is_file() and test not in tests_in(target):
                problems.append(f"{number}: {path}::{test} (no such test)")
        for name in BARE_TEST_FILE.findall(line):
            if name not in test_files:
                problems.append(f"{number}: {name} (no test file of that name)")
        for test in TEST_NAME.findall(line):
            if test not in every_test:
                problems.append(f"{number}: ::{test} (no such test)")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_docs_carry_no_internal_labels(page):
    assert labels_in(page.read_text(encoding="utf-8")) == []


def test_no_command_help_carries_an_internal_label():
    found = {name: labels_in(text) for name, text in command_helps().items()}
    assert {name: hits for name, hits in found.items() if hits} == {}


def message_strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module that are not docstrings: what its messages can say."""
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def test_no_message_carries_an_internal_label():
    """Errors, warnings and lint findings are read by users too (a terminal, a log, SARIF)."""
    found = [f"{path.relative_to(REPO)}:{line}: {label}"
             for path in sorted((REPO / "mirrorspec").rglob("*.py"))
             for line, text in message_strings(path) for label in labels_in(text)]
    assert found == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_repository_path_the_docs_cite_exists(page):
    assert missing_paths(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("text, hits", [
    ("checked against seed 000.", ["1: 'seed 000'"]),
    ("the landing-zone contract (seed `000`)", ["1: 'seed `000'"]),
    ("as the seed allows;\nthe seed's example", ["1: 'the seed'", "2: \"the seed's\""]),
    ("| AT3 | abfs |", ["1: 'AT3'"]),
    ("fixed in issue #27 and issue 11", ["1: 'issue #2'", "1: 'issue 1'"]),
    ("round 2 of the work, while seven other helpers ran", ["1: 'round 2'", "1: 'other helpers'"]),
    ("the seed value of each column; a reseed; SEED_FILES; AT&T; a round-trip", []),
])
def test_labels_are_found_and_plain_words_are_not(text, hits):
    assert labels_in(text) == hits


def test_missing_paths_and_tests_are_found(tmp_path):
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_a.py").write_text("def test_one():\n    pass\n")
    (tmp_path / "scripts").mkdir()
    text = ("`tests/unit/test_a.py::test_one` and tests/unit/test_a.py, `scripts/`\n"
            "`tests/spark/test_gone.py`, `tests/unit/test_a.py::test_two`, `…::test_three`\n"
            "`test_a.py`, `test_renamed.py`; `mirrorspec/run-results/v1`, `tests/integration`,\n"
            "`tests/fixtures/<source>/`, `scripts/*.py`, `mirrorspec/sources/debezium-*/…/x.java`")
    assert missing_paths(text, tmp_path) == [
        "2: tests/spark/test_gone.py (no such file)",
        "2: tests/unit/test_a.py::test_two (no such test)",
        "2: ::test_two (no such test)",
        "2: ::test_three (no such test)",
        "3: test_renamed.py (no test file of that name)"]
