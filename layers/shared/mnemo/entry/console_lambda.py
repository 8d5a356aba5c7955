"""Lambda entry for the console's files behind API Gateway: ``GET /ui`` and ``GET /ui/{proxy+}``.

The deployed API serves the console's page on its own origin, beside the tools it calls, so the
browser needs no CORS. The files come from the layer (``mnemo/console/static/``) and are answered
exactly as `mnemo serve` answers them (``mnemo.console.files``): same types, same
Content-Security-Policy, NOT_FOUND for anything else, no path out of ``static/``.

The files hold no data, so their routes carry no authorizer (a browser sends no credentials when
it opens a page); every tool call the page makes then passes the API's own authorizer with the
token the person pastes in **Who am I** (docs/console.md, "Deployed").

Both payload formats are read: a REST API's (1.0) and an HTTP API's (2.0, AuthMode JWT). The path
is rebuilt from the route's own ``proxy`` parameter, which API Gateway has already decoded, so
neither the stage in the address nor a custom domain's base path changes what is served.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemo import observability
from mnemo.console.files import PREFIX, console_answer


def _method(event: Mapping[str, Any]) -> str:
    if event.get("version") == "2.0":
        method = ((event.get("requestContext") or {}).get("http") or {}).get("method")
    else:
        method = event.get("httpMethod")
    return method if isinstance(method, str) and method else "GET"


def console_path(event: Mapping[str, Any]) -> str:
    """The request's path from the API's root: ``/ui``, ``/ui/`` or ``/ui/<file>``.

    ``/ui/{proxy+}`` names the file in ``pathParameters.proxy``; ``/ui`` carries none, and API Gateway routes
    ``/ui/`` to it too, keeping the slash in the raw path (REST ``path``, HTTP API ``rawPath``).
    """
    proxy = (event.get("pathParameters") or {}).get("proxy")
    if isinstance(proxy, str):
        return f"{PREFIX}/{proxy}"
    raw = event.get("rawPath") if event.get("version") == "2.0" else event.get("path")
    return f"{PREFIX}/" if isinstance(raw, str) and raw.endswith("/") else PREFIX


@observability.door(observability.API_GATEWAY)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    answer = console_answer(_method(event), console_path(event))
    # Every file is text (mnemo.console.files.MEDIA_TYPES): the body goes as it is, never base64.
    return {
        "statusCode": answer.status,
        "headers": answer.headers,
        "body": answer.body.decode("utf-8"),
        "isBase64Encoded": False,
    }


__all__ = ["console_path", "handler"]
