"""/docs in a real browser: Debian's chromium (installed by `make browser`, a step of `make test`) loads Swagger
UI from the local server, the identity is set through Swagger UI's own authorisation (what its Authorize dialog
does), and a "Try it out" request goes out through Swagger UI's own request path. The server then holds the
memory under that identity, which only the X-Mnemo-* headers can have given it.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: fd 3 in, fd 4 out, one JSON
message per NUL), so the test needs no driver package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import http_request, local_server
from mnemo.runtime import Services

CHROMIUM = shutil.which("chromium")


class DevTools:
    """A DevTools protocol session with one page, over chromium's debugging pipe."""

    def __init__(self, process: subprocess.Popen[bytes], send_fd: int, receive_fd: int) -> None:
        self.process, self.send_fd, self.receive_fd = process, send_fd, receive_fd
        self.next_id, self.buffer, self.session = 0, b"", None

    def command(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.send_fd, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.receive_fd, 1 << 16)
                assert chunk, "chromium closed the debugging pipe"
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                assert "error" not in answer, answer
                result: dict[str, Any] = answer["result"]
                return result

    def evaluate(self, expression: str) -> Any:
        result = self.command(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"not true within {timeout} s: {expression}")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[DevTools]:
    assert CHROMIUM, "chromium is missing: `make browser` (a step of `make test`) installs Debian's chromium"
    to_chromium, from_us = os.pipe()
    from_chromium, to_us = os.pipe()

    def pipes() -> None:  # in the child: the protocol's fds 3 (commands in) and 4 (answers out), inheritable
        os.dup2(to_chromium, 100)  # by way of free fds, since either pipe end may itself be 3 or 4
        os.dup2(to_us, 101)
        os.dup2(100, 3)
        os.dup2(101, 4)

    process = subprocess.Popen(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--remote-debugging-pipe", f"--user-data-dir={tmp_path / 'profile'}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=pipes, close_fds=False,
    )  # fmt: skip
    os.close(to_chromium)
    os.close(to_us)
    try:
        yield DevTools(process, from_us, from_chromium)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        os.close(from_us)
        os.close(from_chromium)


@pytest.fixture
def server(services: Services) -> Iterator[str]:
    with local_server(services) as url:
        yield url


TRY_IT_OUT = """
(async () => {
  const path = "/v1/tools/memory_add", method = "post";
  ui.authActions.authorize(%(authorized)s);
  ui.oas3Actions.setRequestContentType({ value: "application/json", pathMethod: [path, method] });
  ui.oas3Actions.setRequestBodyValue({ value: %(body)s, pathMethod: [path, method] });
  ui.specActions.requestResolvedSubtree(["paths", path, method]);  // what expanding the operation does
  let operation = null;
  for (let i = 0; i < 200 && !operation; i++) {
    await new Promise((done) => setTimeout(done, 50));
    operation = ui.specSelectors.specJsonWithResolvedSubtrees().getIn(["paths", path, method]);
  }
  ui.specActions.execute({ path, method, operation });  // what the Execute button does
  for (let i = 0; i < 200; i++) {
    const response = ui.specSelectors.responseFor(path, method);
    if (response) {
      const sent = ui.specSelectors.requestFor(path, method);
      return { status: response.get("status"), body: response.get("text"), headers: sent.get("headers").toJS() };
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  return null;
})()
"""


def test_docs_sends_the_identity_set_in_swagger_ui(browser: DevTools, server: str) -> None:
    target = browser.command("Target.createTarget", {"url": f"{server}/docs"}, session=False)
    attached = browser.command(
        "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=False
    )
    browser.session = attached["sessionId"]
    browser.wait_for("typeof ui !== 'undefined' && ui.specSelectors.operations().size > 0")
    schemes = browser.evaluate("Object.keys(ui.specSelectors.securityDefinitions().toJS())")
    assert {"mnemoTenant", "mnemoUser", "mnemoProject", "mnemoRoles"} <= set(schemes)

    def authorised(scheme: str, value: str) -> dict[str, Any]:
        definition = browser.evaluate(f"ui.specSelectors.securityDefinitions().get('{scheme}').toJS()")
        return {"name": scheme, "schema": definition, "value": value}

    authorized = {
        scheme: authorised(scheme, value)
        for scheme, value in (("mnemoTenant", "acme"), ("mnemoUser", "alice"), ("mnemoRoles", "writer"))
    }
    body = json.dumps({"content": "Alice keeps the release notes", "layer": "user"})
    answer = browser.evaluate(TRY_IT_OUT % {"authorized": json.dumps(authorized), "body": json.dumps(body)})
    assert answer, answer
    assert answer["status"] == 200, answer
    sent = {name.lower(): value for name, value in answer["headers"].items()}
    assert sent.items() >= {"x-mnemo-tenant": "acme", "x-mnemo-user": "alice", "x-mnemo-roles": "writer"}.items()
    memory_id = json.loads(answer["body"])["memoryId"]

    query = {"query": "release notes", "layers": ["user"], "threshold": 0.0}
    for user, expected in (("alice", [memory_id]), ("local", [])):
        headers = {"Content-Type": "application/json", "X-Mnemo-Tenant": "acme", "X-Mnemo-User": user}
        if user == "local":
            headers.pop("X-Mnemo-Tenant")
        status, found = http_request(server, "POST", "/v1/tools/memory_search", query, headers)
        assert status == 200, (user, found)
        assert [hit["memoryId"] for hit in found["results"]] == expected, (user, found)
