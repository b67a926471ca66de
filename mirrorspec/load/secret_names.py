"""Which `env_var()` values are secrets that must never reach an artifact.

dbt's rule is the anchor: a variable named `DBT_ENV_SECRET_*` is a secret and is kept out of
artifacts (dbt-labs/dbt-core, `core/dbt/constants.py`: SECRET_ENV_PREFIX). mirrorspec's prefix is
`MIRRORSPEC_SECRET_` (a placeholder resolved at run time). A project also reads variables set
for other tools (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`), so a variable outside the prefix is
refused when its name is on the deny-list below or its value looks like a credential, unless
the project file lists it under `env-vars-not-secret:` (docs/security.md).

The same value-shape rule finds a credential written literally in profiles.yml
(`literal_secrets`): compile refuses it, since everything in the chosen output reaches
target/plan.json.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

NOT_SECRET_KEY = "env-vars-not-secret"  # the project file's list of variables that are not secrets
# Words of a variable name (split on `_`) that name a credential.
DENIED_WORDS = frozenset({
    "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD", "PASS", "PASSPHRASE", "KEY", "APIKEY",
    "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "SAS", "PAT", "PRIVATE", "SIGNATURE",
    "COOKIE", "DSN",
})
# Pairs of words that only together name a credential.
DENIED_PAIRS = frozenset({("CONNECTION", "STRING"), ("CONN", "STR")})

_TOKEN_VALUE = re.compile(
    r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|xox[abposr]-[\w-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}|sk-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{30,}|pypi-[\w-]{50,}"
    r"|eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}"  # a JWT
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|(?i:AccountKey=|SharedAccessSignature=|[?&]sig=|password=|pwd=)[^;&\s]+")
_OPAQUE = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
# A value that starts like a path or a URI (absolute, home, relative, a drive, a scheme).
_PATH_START = re.compile(r"(?:/|~|\.{1,2}/|[A-Za-z]:[\\/]|[A-Za-z][\w+.-]*://)")


def _opaque_words(value: str) -> Iterator[str]:
    """The long opaque words of `value`; a path's are the long words of its folder names (a
    path through `Shop_Mirror_2024_Region42` holds no key)."""
    for word in _OPAQUE.findall(value):
        # base64 (`+/`) never holds `-` or `_`, and url-safe base64 (`-_`) never `/`
        if "/" in word and (_PATH_START.match(value) or re.search(r"[-_]", word)):
            yield from (part for part in re.split(r"[/_-]", word) if len(part) >= 32)
        else:
            yield word


def _value_looks_secret(value: str) -> bool:
    if _TOKEN_VALUE.search(value):
        return True
    # A long opaque word mixing upper case, lower case and digits (a key, not a path or hash).
    return any(re.search(r"[a-z]", word) and re.search(r"[A-Z]", word) and re.search(r"\d", word)
               for word in _opaque_words(value))


def secret_reason(name: str, value: str | None) -> str | None:
    """Why `env_var(name)` (with `value`, None when unset) would leak a secret, or None."""
    words = name.upper().split("_")
    if DENIED_WORDS.intersection(words) or any(
            (a, b) in DENIED_PAIRS for a, b in zip(words, words[1:])):
        return "its name says it holds a credential"
    if value is not None and _value_looks_secret(value):
        return "its value looks like a credential"
    return None


def literal_secrets(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The key paths (below `path`) of every string in `value` (dicts and lists walked) that
    looks like a credential by `secret_reason`'s value rule."""
    if isinstance(value, str):
        if _value_looks_secret(value):
            yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from literal_secrets(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from literal_secrets(item, (*path, index))
