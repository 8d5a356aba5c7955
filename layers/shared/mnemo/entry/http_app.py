"""`mnemo serve`'s ASGI application, on Starlette: the tools API, its docs, health and MCP.

Routes: ``POST /v1/tools/{name}`` (one tool call), ``GET /v1/tools`` (the
listing), ``GET /v1/openapi.json``, ``GET /docs`` (Swagger UI), ``GET /health``,
``/mcp`` (Streamable HTTP, the MCP SDK's own ASGI handler, stateless) and
``GET /ui/`` (the console, ``mnemo.console``: static files that call the tools API).

Identity comes from the ``X-Mnemo-*`` headers: this server plays the Lambda
authorizer (``identity.local``). Every route sits behind ``BrowserGuard``
(Host and Origin checks); a tool call must be ``Content-Type:
application/json`` (415 otherwise), so a web page cannot send one without a
CORS preflight, which this server never grants.

Tool calls run in worker threads side by side (``tool_http``); nothing holds a
process-wide lock. Every failure is the error envelope; an unknown route or
method is NOT_FOUND, as behind API Gateway.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from mnemo import __version__
from mnemo.console.routes import console_routes
from mnemo.entry.http_body import BodyError, read_body
from mnemo.entry.http_guard import BrowserGuard, send_envelope
from mnemo.entry.identity.local import context_from_headers
from mnemo.errors import MnemoError, NotFound, ProviderError, UnsupportedMediaType, invalid_field
from mnemo.observability import logger
from mnemo.tools.registry import load_catalog
from mnemo.tools.schema import openapi_document, tool_listing

#: Tool calls in progress at once per process. Enough to overlap what releases the GIL (the embedding
#: model, SQLite, file I/O); more threads only contend for the GIL and the stores. Calls beyond it wait
#: their turn on the event loop, which keeps answering /health and reading other requests.
TOOL_THREADS = 4


def _json(payload: Any, status: int = 200) -> Response:
    return Response(json.dumps(payload), status_code=status, media_type="application/json")


def _envelope(error: MnemoError, *, close: bool = False) -> Response:
    headers = {"Connection": "close"} if close else None
    return Response(
        json.dumps(error.envelope()), status_code=error.status, media_type="application/json", headers=headers
    )


async def health(request: Request) -> Response:
    return _json({"status": "ok", "version": __version__, "tools": len(load_catalog())})


async def listing(request: Request) -> Response:
    return _json({"tools": tool_listing(load_catalog())})


async def openapi(request: Request) -> Response:
    # The Host has passed BrowserGuard, so it is a name this server answers to.
    host = request.headers.get("host", "127.0.0.1")
    return _json(openapi_document(load_catalog(), server_url=f"http://{host}", identity_headers=True))


async def docs(request: Request) -> Response:
    return Response(_docs_page(), media_type="text/html; charset=utf-8")


async def docs_asset(request: Request) -> Response:
    name = request.path_params["asset"]
    if name not in ("swagger-ui-bundle.min.js", "swagger-ui.min.css"):
        return _envelope(NotFound(f"No route for GET {request.url.path}", {"path": request.url.path}))
    kind = "text/javascript" if name.endswith(".js") else "text/css"
    return Response((_swagger_dir() / name).read_bytes(), media_type=kind)


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type header names JSON (parameters such as charset allowed)."""
    return (content_type or "").split(";", 1)[0].strip().lower() == "application/json"


async def call(request: Request) -> Response:
    """POST /v1/tools/{name}: identity from the headers, the body as the tool's arguments."""
    from mnemo.entry.tool_http import call_tool
    from mnemo.runtime import get_services

    name = request.path_params["name"]
    sent = request.headers.get("content-type")
    if not is_json(sent):
        named = f"not {sent!r}" if sent else "and the header is missing"
        return _envelope(
            UnsupportedMediaType(f"Content-Type: tool calls are application/json, {named}", {"field": "Content-Type"})
        )
    try:
        context = context_from_headers(request.headers, get_services().settings.default_local_roles)
        raw = await read_body(request)
        body = raw.decode("utf-8")
    except BodyError as error:
        return _envelope(error.error, close=error.close)
    except MnemoError as error:
        return _envelope(error)
    except UnicodeDecodeError:
        return _envelope(invalid_field("body", "not UTF-8"))
    except ClientDisconnect:  # the client hung up: nobody to answer, nothing to log above DEBUG
        logger.debug("client disconnected", extra={"path": request.url.path})
        return Response(status_code=400)
    status, answer = await anyio.to_thread.run_sync(
        call_tool, name, body or None, context, limiter=request.app.state.tool_threads
    )
    return Response(answer, status_code=status, media_type="application/json")


async def _not_found(request: Request, error: Exception) -> Response:
    path = request.url.path
    return _envelope(NotFound(f"No route for {request.method} {path}", {"path": path}))


async def _unexpected(request: Request, error: Exception) -> Response:
    logger.exception("local server failure")
    return _envelope(ProviderError("Internal error; it has been logged"))


def create_app(allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = (), *, warm_up: bool = False) -> Any:
    """The ASGI application, behind its BrowserGuard; ``--allow-host`` and ``--allow-origin`` feed the lists.

    ``warm_up`` loads the embedding model in the background at start, before the first request needs it.
    """
    from mnemo.entry.mcp_asgi import McpEndpoint

    mcp = McpEndpoint()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.tool_threads = anyio.CapacityLimiter(TOOL_THREADS)
        # Before the first request: what a crash (kill -9) left queued is indexed, so a caller who resends or
        # searches after a restart finds every memory the records hold.
        await anyio.to_thread.run_sync(_drain_outbox, "start")
        if warm_up:
            threading.Thread(target=_warm_up, name="warm-up", daemon=True).start()
        async with mcp.running():
            yield
        await anyio.to_thread.run_sync(_drain_outbox, "shutdown")

    app = Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/v1/tools", listing, methods=["GET"]),
            Route("/v1/openapi.json", openapi, methods=["GET"]),
            Route("/docs", docs, methods=["GET"]),
            Route("/docs/", docs, methods=["GET"]),
            Route("/docs/{asset}", docs_asset, methods=["GET"]),
            Route("/v1/tools/{name}", call, methods=["POST"]),
            # API Gateway matches a resource with a trailing slash as without one.
            Route("/v1/tools/{name}/", call, methods=["POST"]),
            Route("/mcp", mcp),
            *console_routes(),
        ],
        exception_handlers={HTTPException: _not_found, Exception: _unexpected},
        lifespan=lifespan,
    )
    # A path with a trailing slash is another path (NOT_FOUND), as behind API Gateway, not a redirect.
    app.router.redirect_slashes = False
    return BrowserGuard(app, list(allowed_hosts), list(allowed_origins))


def _warm_up() -> None:
    from mnemo.runtime import get_services

    try:
        get_services().embedder.embed(["warm up"])
    except MnemoError as error:
        logger.warning("embedder unavailable: %s", error.message)


#: The longest the start-up drain may hold the first request back: through a long index or embedder outage,
#: the background maintenance drains the rest.
START_DRAIN_SECONDS = 30.0


def _drain_outbox(moment: str) -> None:
    """Index what is still queued: at start (what a crash left; for at most ``START_DRAIN_SECONDS``) and on
    shutdown (so the next start finds the index whole)."""
    from mnemo.runtime import get_services

    try:
        get_services().outbox.drain(seconds=START_DRAIN_SECONDS if moment == "start" else None)
    except Exception:  # the background maintenance and the next start retry; neither moment may fail on it
        logger.warning("could not drain the index outbox on %s; the drains retry it", moment, exc_info=True)


def _swagger_dir() -> Path:
    from aws_lambda_powertools.event_handler.openapi import swagger_ui

    return Path(swagger_ui.__file__).parent


@lru_cache(maxsize=2)
def _docs_page_for(experimental: bool) -> str:
    from aws_lambda_powertools.event_handler.openapi.swagger_ui.html import generate_swagger_html

    spec = json.dumps(openapi_document(load_catalog(experimental), identity_headers=True))
    # persist_authorization keeps the identity set in the Authorize dialog across reloads of /docs.
    return generate_swagger_html(
        spec, "/docs/swagger-ui-bundle.min.js", "/docs/swagger-ui.min.css", "/docs", None, persist_authorization=True
    )


def _docs_page() -> str:
    from mnemo.tools.registry import experimental_enabled

    return _docs_page_for(experimental_enabled())


__all__ = ["create_app", "is_json", "send_envelope"]
