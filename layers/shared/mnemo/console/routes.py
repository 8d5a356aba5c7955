"""Serves the console's static files at ``/ui`` on `mnemo serve`.

What each path answers (the files, their headers, NOT_FOUND for anything else) is
``mnemo.console.files``', shared with the deployed API's console function; this module only
mounts it on Starlette. Only files of the package's ``static/`` folder with a known type are
served, so no path can reach anything else.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from mnemo.console.files import PREFIX, console_answer


async def serve(request: Request) -> Response:
    answer = console_answer(request.method, request.url.path)
    # The answer's headers name its Content-Type: no media_type, so Starlette adds none of its own.
    return Response(answer.body, status_code=answer.status, headers=answer.headers)


def console_routes() -> list[BaseRoute]:
    """The routes to add to `mnemo serve`'s application."""
    return [
        Route(PREFIX, serve, methods=["GET"]),
        Route(PREFIX + "/{path:path}", serve, methods=["GET"]),
    ]


__all__ = ["console_routes"]
