"""Serves the console's static files at ``/ui`` on `mnemo serve`.

Only files of the package's ``static/`` folder with a known type are served,
so no path can reach anything else. Every answer carries a Content-Security-Policy
that allows this origin alone: the console loads nothing from elsewhere (it
works offline) and calls only this server's tools API.
"""

from __future__ import annotations

import json
from pathlib import Path

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from mnemo.errors import NotFound

STATIC = Path(__file__).parent / "static"
PREFIX = "/ui"

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


def static_file(relative: str) -> Path | None:
    """The file of ``static/`` that ``relative`` names, or None when it names nothing servable."""
    if not relative or "\\" in relative or any(part in ("", ".", "..") for part in relative.split("/")):
        return None
    path = STATIC.joinpath(*relative.split("/"))
    if path.suffix not in MEDIA_TYPES or not path.is_file():
        return None
    return path


def _not_found(request: Request) -> Response:
    error = NotFound(f"No route for GET {request.url.path}", {"path": request.url.path})
    return Response(json.dumps(error.envelope()), status_code=error.status, media_type="application/json")


async def index(request: Request) -> Response:
    return Response((STATIC / "index.html").read_bytes(), media_type=MEDIA_TYPES[".html"], headers=SECURITY_HEADERS)


async def bare(request: Request) -> Response:
    # /ui -> /ui/, so that the page's relative asset paths resolve under /ui/.
    return RedirectResponse(f"{PREFIX}/", status_code=308)


async def asset(request: Request) -> Response:
    path = static_file(request.path_params["path"])
    if path is None:
        return _not_found(request)
    return Response(path.read_bytes(), media_type=MEDIA_TYPES[path.suffix], headers=SECURITY_HEADERS)


def console_routes() -> list[BaseRoute]:
    """The routes to add to `mnemo serve`'s application."""
    return [
        Route(PREFIX, bare, methods=["GET"]),
        Route(f"{PREFIX}/", index, methods=["GET"]),
        Route(PREFIX + "/{path:path}", asset, methods=["GET"]),
    ]


__all__ = ["console_routes", "static_file"]
