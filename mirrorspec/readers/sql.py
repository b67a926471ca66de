"""`--where` keeps Spark SQL's meaning when DataFusion (delta-rs' QueryBuilder) evaluates it.

The differences that matter for a row filter are lexical: Spark matches column names
case-insensitively and quotes them with backticks, and takes "…" as a string literal, while
DataFusion matches names exactly, quotes them with "…" and knows no backticks. Anything else
DataFusion can't plan makes the caller fall back to Spark.
"""

from __future__ import annotations

import re
from typing import Iterable

_TOKEN = re.compile(r"""
    (?P<single>'(?:[^'\\]|\\.|'')*')
  | (?P<double>"(?:[^"\\]|\\.|"")*")
  | (?P<backtick>`(?:[^`]|``)*`)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<eqeq>==)
  | (?P<other>\s+|.)
""", re.VERBOSE | re.DOTALL)


def quote_identifier(name: str) -> str:
    """A DataFusion identifier for the exact column name."""
    return '"' + name.replace('"', '""') + '"'


def _literal(body: str) -> str:
    """Spark string-literal body (backslash escapes, doubled quotes) → a DataFusion literal."""
    text = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)
    return "'" + text.replace("'", "''") + "'"


def spark_where_to_datafusion(where: str, columns: Iterable[str]) -> str:
    """The Spark SQL condition `where` rewritten for DataFusion over a table with `columns`."""
    by_lower = {c.lower(): c for c in columns}
    out: list[str] = []
    tokens = list(_TOKEN.finditer(where))
    for index, match in enumerate(tokens):
        kind, text = match.lastgroup, match.group()
        if kind == "single":
            out.append(_literal(text[1:-1].replace("''", "\\'")))
        elif kind == "double":
            out.append(_literal(text[1:-1].replace('""', '\\"')))
        elif kind == "backtick":
            name = text[1:-1].replace("``", "`")
            out.append(quote_identifier(by_lower.get(name.lower(), name)))
        elif kind == "ident":
            after = next((t.group() for t in tokens[index + 1:] if not t.group().isspace()), "")
            before = out[-1] if out else ""
            column = by_lower.get(text.lower())
            if column is not None and after != "(" and before != ".":
                out.append(quote_identifier(column))
            else:
                out.append(text)
        elif kind == "eqeq":
            out.append("=")
        else:
            out.append(text)
    return "".join(out)
