"""Requests a web page sends, refused: serve's clients are SDKs, tools and scripts, never a
browser, and a page on another site must not reach it through the user's browser (CSRF).

A browser sends a cross-origin `POST` with `Content-Type: text/plain` (or a form type) and no
CORS preflight, to any address, IP literals included: the Host check (DNS rebinding) does not
see it, since the page names serve's own address. Such a request carries what no SDK sends:
`Sec-Fetch-Site` (Fetch Metadata, every current browser) other than `same-origin` or `none`
(a URL typed by the user), or an `Origin` (every cross-origin `POST`, older browsers too) that
is not serve's own. Either is refused before the request is read further.

The Fabric API takes JSON only: a body with another `Content-Type` (what a page can send
without a preflight) is refused too (`json_body_problem`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

JSON_TYPES = ("application/json", "text/json")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def cross_site_problem(headers: Any, host: str, scheme: str) -> str | None:
    """Why a request comes from a web page of another origin, or None. `host` is the request's
    `Host` header (name and port), `scheme` serve's own (`http`, `https`)."""
    site = (headers.get("Sec-Fetch-Site") or "").strip().lower()
    if site and site not in ("same-origin", "none"):
        return (f"Sec-Fetch-Site: {site}: a web page of another origin sent this request "
                "(serve answers SDKs and tools, not browsers)")
    origin = headers.get("Origin")
    if origin is not None and not _same_origin(origin.strip(), host, scheme):
        return (f"Origin {origin.strip()[:80]!r} is not this endpoint's origin: a web page "
                "sent this request (serve answers SDKs and tools, not browsers)")
    return None


def _same_origin(origin: str, host: str, scheme: str) -> bool:
    try:
        seen, here = urlsplit(origin), urlsplit(f"{scheme}://{host}")
        seen_port = seen.port or _DEFAULT_PORTS.get(seen.scheme.lower())
        here_port = here.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:  # `null`, a bad port, an unclosed IPv6 literal
        return False
    return (seen.scheme.lower() == scheme and bool(seen.hostname)
            and seen.hostname == here.hostname and seen_port == here_port)


def json_body_problem(content_type: str | None, body: bytes) -> str | None:
    """Why a Fabric API body is not JSON by its `Content-Type`, or None (an empty body needs
    no type: `startMirroring` and the other actions are sent without one)."""
    if not body:
        return None
    media = (content_type or "").partition(";")[0].strip().lower()
    if media in JSON_TYPES or (media.startswith("application/") and media.endswith("+json")):
        return None
    return (f"the request body's Content-Type is {media or '(none)'!r}: the Fabric REST API "
            "takes application/json")
