"""JDBC URLs fit to print: credentials hidden in every form drivers accept.

- user-info: `jdbc:mysql://alice:PW@host/db`, `jdbc:postgresql://alice@host/db`
- Oracle's `user/password@`: `jdbc:oracle:thin:alice/PW@host:1521/svc` (and `@//host…`)
- query parameters: `…?user=alice&password=PW`, `…&sslpassword=PW`, `…&accessToken=T`
- `;`-separated properties: `jdbc:sqlserver://host;user=alice;password=PW;`,
  `…;UID=alice;PWD=PW`, `…;AccountKey=K`
"""

from __future__ import annotations

import re
from typing import Iterable

HIDDEN = "***"
_USER_INFO = re.compile(r"(//)[^/?;#\s]*@")
_SLASHED = re.compile(r"(?i)(jdbc:[a-z0-9]+(?::[a-z0-9]+)*:)(?!//)[^@/;?&\s]+/[^@;?&\s]*@")
_PROPERTY = re.compile(
    r"(?i)(\b[\w.\-]*(?:pass(?:word|wd|phrase)?|pwd|secret|token|credentials?|api_?key|"
    r"access_?key|account_?key|user(?:name|id)?|uid|sig)\s*=)[^&;\s]*")


def redact(url: str, secrets: Iterable[str | None] = ()) -> str:
    """`url` (or any text holding one) with user names, passwords and tokens replaced by ***,
    and every value in `secrets` (the credentials read from the environment) too."""
    text = _USER_INFO.sub(r"\1" + HIDDEN + "@", url)
    text = _SLASHED.sub(r"\1" + HIDDEN + "/" + HIDDEN + "@", text)
    text = _PROPERTY.sub(r"\1" + HIDDEN, text)
    for value in secrets:
        if value:
            text = text.replace(value, HIDDEN)
    return text
