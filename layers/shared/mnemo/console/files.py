"""What the console's address space answers: a request path under ``/ui`` -> (status, headers, body).

One answer for every server of the page: `mnemo serve` (``mnemo.console.routes``, on Starlette) and
the deployed API (``mnemo.entry.console_lambda``, a Lambda behind API Gateway), so both send the same
files with the same headers and refuse the same paths. Plain Python: the Lambda layer has no web
framework to lean on.

Only files of the package's ``static/`` folder with a known type are served, so no path can reach
anything else. Every file carries a Content-Security-Policy that allows its own origin alone: the
console loads nothing from elsewhere (it works offline) and calls only the tools API beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from mnemo.errors import NotFound

STATIC = Path(__file__).parent / "static"
PREFIX = "/ui"

#: Every type is text, so that a Lambda proxy answer carries each file as it is (no base64 encoding,
#: which a REST API would only decode for its configured binary media types).
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}

#: Same origin only: no CDN, no inline script, no frame of this page on another site.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The files change with the package: revalidate rather than keep a stale console after an upgrade.
    "Cache-Control": "no-cache",
}

#: Methods that read a file; any other is NOT_FOUND, as an unknown route is.
READS = ("GET", "HEAD")


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: its status, headers and body."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def static_file(relative: str) -> Path | None:
    """The file of ``static/`` that ``relative`` names, or None when it names nothing servable."""
    if not relative or "\\" in relative or any(part in ("", ".", "..") for part in relative.split("/")):
        return None
    path = STATIC.joinpath(*relative.split("/"))
    if path.suffix not in MEDIA_TYPES or not path.is_file():
        return None
    return path


def not_found(method: str, path: str) -> Answer:
    """The NOT_FOUND envelope for a request that names nothing, as every unknown route answers."""
    error = NotFound(f"No route for {method} {path}", {"path": path})
    return Answer(error.status, {"Content-Type": "application/json"}, json.dumps(error.envelope()).encode())


def console_answer(method: str, path: str) -> Answer:
    """The answer to ``method path``, ``path`` being the request's path from the API's root (``/ui/js/app.js``).

    ``/ui`` redirects to ``/ui/`` with a relative Location, so that the page's relative addresses (its files
    and ``../v1/tools/``) resolve under whatever prefix the API sits behind: a deployed stage (``/dev/ui``)
    or none (`mnemo serve`).
    """
    if method not in READS or not (path == PREFIX or path.startswith(f"{PREFIX}/")):
        return not_found(method, path)
    if path == PREFIX:
        return Answer(308, {"Location": "ui/"})
    relative = path.removeprefix(f"{PREFIX}/") or "index.html"
    found = static_file(relative)
    if found is None:
        return not_found(method, path)
    return Answer(200, {"Content-Type": MEDIA_TYPES[found.suffix], **SECURITY_HEADERS}, found.read_bytes())


__all__ = ["MEDIA_TYPES", "PREFIX", "SECURITY_HEADERS", "STATIC", "Answer", "console_answer", "static_file"]
