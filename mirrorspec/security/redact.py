"""Credentials out of everything written: one rule for query values and auth schemes in text.

`redact_text` replaces the value of every credential-shaped query parameter (`sig=`, `token=`,
`code=`, `client_secret=`, … in `SECRET_PARAMETERS`) and of `Bearer`/`SharedKey`/`Basic`
credentials with `REDACTED`, wherever they sit in a text: a request target, a URL inside a
header value or an error message, a path. Percent-encoded names and separators (`%73ig=`,
`a%3Fsig%3D…`) are decoded before matching, so an encoding can't smuggle a secret past it.
SAS fields that are ids or times (`skoid`, `sktid`, `se`, `sv`) stay readable.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

REDACTED = "REDACTED"

SECRET_PARAMETERS = frozenset({
    "sig", "token", "code", "api_key", "apikey", "key", "password", "secret", "client_secret",
    "access_token", "refresh_token", "id_token", "assertion", "client_assertion",
})

_ENCODED = r"%(?!3[DdFfBb]|26)[0-9A-Fa-f]{2}"  # an encoded character, not = ? ; &
# a separator (? & ;, maybe percent-encoded), a name, =, and the value up to the next separator
_PARAMETER = re.compile(
    r"(?P<head>(?:[?&;]|%3[Ff]|%26|%3[Bb])(?P<name>(?:[\w.\-]|" + _ENCODED + r")+)"
    r"(?:=|%3[Dd]))(?P<value>(?:(?!%26|%3[Bb])[^&;#\s\"'<>])*)")
_SCHEME = re.compile(r"(?i)\b(Bearer|SharedKey|Basic|SharedAccessSignature)(\s+)[^\s,\"'<>]+")


def _name(raw: str) -> str:
    for _ in range(3):  # %2573 → %73 → s
        decoded = unquote(raw)
        if decoded == raw:
            break
        raw = decoded
    return raw.lower()


def _parameter(match: re.Match[str]) -> str:
    if _name(match["name"]) in SECRET_PARAMETERS and match["value"]:
        return match["head"] + REDACTED
    return match[0]


def redact_text(text: str) -> str:
    """`text` with every credential value it carries replaced by REDACTED."""
    if not text:
        return text
    text = _PARAMETER.sub(_parameter, text)
    return _SCHEME.sub(lambda m: m[1] + m[2] + REDACTED, text)


def redact_fields(fields: dict[str, object]) -> dict[str, object]:
    """A log record's fields with every string (nested in dicts and lists too) redacted."""
    return {key: _redact_value(value) for key, value in fields.items()}


def _redact_value(value: object) -> object:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_value(v) for v in value]
    return value
