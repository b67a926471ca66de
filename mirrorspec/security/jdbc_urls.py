"""URLs fit to print: credentials hidden in every form JDBC drivers accept (`redact`), and an
HTTP(S) service URL shown without its user-info or query values (`shown_url`).

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



# the port a driver connects to when the URL names none
DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306, "sqlserver": 1433,
                 "oracle": 1521, "db2": 50000, "databricks": 443, "redshift": 5439,
                 "snowflake": 443}
_SERVER = re.compile(r"^(?:\[(?P<ip6>[0-9a-fA-F:.]+)\]|(?P<host>[\w.\-]+))(?::(?P<port>\d{1,5}))?$")
_SERVER_NAME = re.compile(r"(?i);\s*serverName\s*=\s*([^;]+)")


def host_and_port(url: str) -> tuple[str, int] | None:
    """The server a JDBC URL connects to, in every form `redact` knows (user-info, Oracle's
    `user/pw@host:port/svc` and `@//host`, `;`-properties, `?` parameters); None when the URL
    names no host, or a port that isn't one."""
    if not url.startswith("jdbc:"):
        return None
    driver = url[5:].split(":", 1)[0].lower()
    rest = url[5:]
    if "//" in rest:
        rest = rest.split("//", 1)[1]
    elif "@" in rest:
        rest = rest.rsplit("@", 1)[1]  # Oracle thin: jdbc:oracle:thin:user/pw@host:1521:sid
    else:
        return None
    authority = re.split(r"[/?;]", rest, maxsplit=1)[0].rpartition("@")[2]
    server = authority.split(",", 1)[0]  # the first of several hosts
    if not server:
        named = _SERVER_NAME.search(rest)  # jdbc:sqlserver://;serverName=db;…
        server = named.group(1).strip() if named else ""
    if driver == "oracle" and server.count(":") == 2:
        server = server.rsplit(":", 1)[0]  # host:port:SID
    found = _SERVER.match(server)
    if not found:
        return None
    port = int(found.group("port")) if found.group("port") else DEFAULT_PORTS.get(driver)
    if port is None or not 0 < port < 65536:
        return None
    return found.group("ip6") or found.group("host"), port


def shown_url(url: str) -> str:
    """An http(s) URL as it may be printed: no `user:password@`, every query value (`?code=`,
    `?api_key=`, a SAS `sig=`) and the fragment replaced by ***; the names stay, so the user
    can still tell which URL it is."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    query = "&".join(f"{pair.partition('=')[0]}={HIDDEN}" if "=" in pair else HIDDEN
                     for pair in parts.query.split("&") if pair)
    return (f"{parts.scheme}://{host}{parts.path}" + (f"?{query}" if query else "")
            + (f"#{HIDDEN}" if parts.fragment else ""))
