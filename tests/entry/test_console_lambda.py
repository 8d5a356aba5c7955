"""The console's Lambda (functions/console) on API Gateway events, REST (1.0) and HTTP API (2.0) as AWS sends them.

The routes are the template's: ``GET /ui`` (API Gateway routes ``/ui/`` to it too, keeping the slash in the
path) and ``GET /ui/{proxy+}``, with no authorizer. Each answer must be the one `mnemo serve` gives for the
same path: the same files, types and Content-Security-Policy, NOT_FOUND for anything else.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from http_api_events import http_api_event
from identity_events import fixture
from starlette.applications import Starlette

from aws_events import FakeLambdaContext
from mnemo.console.files import MEDIA_TYPES, SECURITY_HEADERS, STATIC
from mnemo.console.routes import console_routes

ROOT = Path(__file__).resolve().parents[2]


def _handler() -> Any:
    spec = importlib.util.spec_from_file_location("fn_console", ROOT / "functions" / "console" / "app.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def rest_event(path: str) -> dict[str, Any]:
    """GET ``path`` on the REST API's console routes: no authorizer, the stage in requestContext.path only."""
    event = fixture("rest_cognito")
    proxy = path.removeprefix("/ui/") if path.startswith("/ui/") and path != "/ui/" else None
    resource = "/ui/{proxy+}" if proxy is not None else "/ui"
    for headers in (event["headers"], event["multiValueHeaders"]):
        headers.pop("Authorization")
        headers.pop("Content-Type")
    event["headers"]["Accept"] = "text/html,*/*"
    event["multiValueHeaders"]["Accept"] = ["text/html,*/*"]
    event.update(resource=resource, path=path, httpMethod="GET", body=None)
    event["pathParameters"] = {"proxy": proxy} if proxy is not None else None
    context = event["requestContext"]
    context.update(resourcePath=resource, httpMethod="GET", path=f"/dev{path}")
    del context["authorizer"]
    return event


def http_event(path: str) -> dict[str, Any]:
    """GET ``path`` on the HTTP API's console routes (a named stage: rawPath begins with /dev), no authorizer."""
    proxy = path.removeprefix("/ui/") if path.startswith("/ui/") and path != "/ui/" else None
    event = http_api_event(path, None, method="GET", headers={"accept": "text/html,*/*"})
    route = "GET /ui/{proxy+}" if proxy is not None else "GET /ui"
    event["routeKey"] = event["requestContext"]["routeKey"] = route
    if proxy is not None:
        event["pathParameters"] = {"proxy": proxy}
    return event


EVENTS = {"rest": rest_event, "http": http_event}


def call(kind: str, path: str) -> dict[str, Any]:
    answer: dict[str, Any] = _handler()(EVENTS[kind](path), FakeLambdaContext())
    return answer


def local(path: str) -> tuple[int, dict[str, str], bytes]:
    """What `mnemo serve`'s console routes answer for GET ``path`` (the ASGI app called directly)."""
    app = Starlette(routes=console_routes())
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"host", b"127.0.0.1")], "scheme": "http", "server": ("127.0.0.1", 8765),
             "root_path": "", "http_version": "1.1"}  # fmt: skip
    asyncio.run(app(scope, receive, send))
    start = sent[0]
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return start["status"], headers, b"".join(m.get("body", b"") for m in sent[1:])


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


@pytest.mark.parametrize("kind", sorted(EVENTS))
def test_the_index_is_the_page_with_the_local_headers(kind: str) -> None:
    answer = call(kind, "/ui/")
    assert answer["statusCode"] == 200
    assert answer["isBase64Encoded"] is False
    assert answer["headers"]["Content-Type"] == "text/html; charset=utf-8"
    for name, value in SECURITY_HEADERS.items():
        assert answer["headers"][name] == value, name
    assert answer["body"] == (STATIC / "index.html").read_text(encoding="utf-8")
    assert '<script type="module" src="js/app.js">' in answer["body"]
    assert "multiValueHeaders" not in answer


@pytest.mark.parametrize("kind", sorted(EVENTS))
def test_the_bare_prefix_redirects_relative_so_the_stage_is_kept(kind: str) -> None:
    """/dev/ui -> ui/ -> /dev/ui/: the page's relative paths (js/app.js, ../v1/tools/) then stay under the stage."""
    answer = call(kind, "/ui")
    assert answer["statusCode"] == 308
    assert answer["headers"]["Location"] == "ui/"
    assert answer["body"] == ""


@pytest.mark.parametrize("kind", sorted(EVENTS))
@pytest.mark.parametrize("path", ["/ui/js/app.js", "/ui/js/pages/memories.js", "/ui/console.css", "/ui/icon.svg"])
def test_a_file_is_served_with_its_type(kind: str, path: str) -> None:
    answer = call(kind, path)
    assert answer["statusCode"] == 200, answer
    file = STATIC / path.removeprefix("/ui/")
    assert answer["headers"]["Content-Type"] == MEDIA_TYPES[file.suffix]
    assert answer["headers"]["Content-Security-Policy"] == SECURITY_HEADERS["Content-Security-Policy"]
    assert answer["body"] == file.read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", sorted(EVENTS))
def test_a_missing_file_is_not_found_in_the_envelope(kind: str) -> None:
    answer = call(kind, "/ui/js/missing.js")
    assert answer["statusCode"] == 404
    assert answer["headers"] == {"Content-Type": "application/json"}
    assert json.loads(answer["body"]) == {
        "success": False,
        "errorCode": "NOT_FOUND",
        "message": "No route for GET /ui/js/missing.js",
        "details": {"path": "/ui/js/missing.js"},
        "retryable": False,
    }


ESCAPES = [
    "/ui/../routes.py",
    "/ui/js/../../files.py",
    "/ui/%2e%2e/routes.py",
    "/ui/routes.py",
    "/ui/files.py",
    "/ui/__init__.py",
    "/ui/static/index.html",
    "/ui/js//app.js",
    "/ui/js\\app.js",
    "/ui/./index.html",
    "/ui/js/",
]


@pytest.mark.parametrize("kind", sorted(EVENTS))
@pytest.mark.parametrize("path", ESCAPES)
def test_no_path_leaves_the_static_folder(kind: str, path: str) -> None:
    """API Gateway hands the proxy parameter decoded, dots and all: the handler still serves nothing outside."""
    answer = call(kind, path)
    assert answer["statusCode"] == 404, path
    assert json.loads(answer["body"])["errorCode"] == "NOT_FOUND"


@pytest.mark.parametrize("kind", sorted(EVENTS))
@pytest.mark.parametrize(
    "path", ["/ui", "/ui/", "/ui/index.html", "/ui/js/api.js", "/ui/icon.svg", "/ui/js/missing.js", *ESCAPES[:2]]
)
def test_the_deployed_answer_is_the_local_one(kind: str, path: str) -> None:
    status, headers, body = local(path)
    answer = call(kind, path)
    assert answer["statusCode"] == status, path
    assert answer["body"].encode() == body, path
    sent = _lower(answer["headers"])
    assert {name: headers[name] for name in sent} == sent, path  # the local server adds only content-length


def test_every_static_file_is_served_as_text() -> None:
    """Each file reaches a browser through the Lambda unchanged: a known text type, UTF-8, never base64."""
    files = [path for path in STATIC.rglob("*") if path.is_file()]
    assert len(files) >= 10
    for path in files:
        assert path.suffix in MEDIA_TYPES, path
        relative = path.relative_to(STATIC).as_posix()
        answer = call("http", f"/ui/{relative}")
        assert answer["statusCode"] == 200, relative
        assert answer["isBase64Encoded"] is False, relative
        assert answer["body"].encode("utf-8") == path.read_bytes(), relative
    assert all(kind.startswith(("text/", "image/svg+xml")) for kind in MEDIA_TYPES.values())


def test_the_door_loads_no_web_framework() -> None:
    """The console function starts without Starlette (`mnemo serve`'s) and without the services or the catalog."""
    code = (
        "import sys; sys.path.insert(0, 'functions/console'); import app; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn') "
        "or m in ('mnemo.runtime', 'mnemo.tools')))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
