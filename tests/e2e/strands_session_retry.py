"""Run in the Strands virtual environment by test_client_strands_session.py: nothing is stored twice when a
write's answer is lost.

A proxy in front of the server passes every call on, but answers the first sending of each distinct
file_write and add_messages body with API Gateway's 504 (its integration timeout: the function ran, the
caller cannot know). The same conversation is held once through the proxy (session ``flaky``) and once
directly (session ``steady``); the files' versions, the turns and the restored messages are compared.

    python strands_session_retry.py URL   ->  one JSON line
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from strands import Agent
from strands_session_model import ScriptedModel, text

from mnemo.client import LocalIdentity, MnemoClient
from mnemo.client.strands import MnemoSessionManager
from mnemo.client.strands_session import own_workspace, session_folder

#: The writes whose first answer the proxy loses.
FLAKY = ("file_write", "add_messages")


class Proxy(ThreadingHTTPServer):
    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.upstream = upstream
        self.seen: set[str] = set()
        self.lost: dict[str, int] = {}
        self.sent: dict[str, int] = {}
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    server: Proxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        tool = self.path.rsplit("/", 1)[-1]
        headers = {k: v for k, v in self.headers.items() if k.lower().startswith("x-mnemo-") or k == "Content-Type"}
        request = urllib.request.Request(self.server.upstream + self.path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        key = hashlib.sha256(tool.encode() + b"\n" + body).hexdigest()
        with self.server.lock:
            self.server.sent[tool] = self.server.sent.get(tool, 0) + 1
            lose = tool in FLAKY and key not in self.server.seen
            self.server.seen.add(key)
            if lose:
                self.server.lost[tool] = self.server.lost.get(tool, 0) + 1
        if lose:  # what the function did stands; the caller hears only that the gateway gave up
            status, raw = 504, b'{"message": "Endpoint request timed out"}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def converse(client: MnemoClient, session: str) -> list[Any]:
    """One conversation of two invocations in ``session``; the agent's messages."""
    model = ScriptedModel([text("Noted, window seats."), text("Lisbon it is.")])
    agent = Agent(model=model, session_manager=MnemoSessionManager(session, client), callback_handler=None)
    agent("I prefer window seats.")
    agent.state.set("seat", "window")
    agent("Book me a flight to Lisbon.")
    return agent.messages


def versions(client: MnemoClient, session: str) -> dict[str, int]:
    """Each record file of ``session`` (its path inside the session) and its version."""
    folder = session_folder(session) + "/"
    listed = own_workspace(client).call("file_list", {"path": folder})["entries"]
    return {entry["path"].removeprefix(folder): entry["version"] for entry in listed}


def turns(client: MnemoClient, session: str) -> list[list[str]]:
    found = client.call(
        "retrieve_conversation",
        {"query": "seats", "explanation": "what was said", "retrieval_strategy": "recent", "max_results": 50},
    )["data"]["conversations"]
    mine = [c for c in found if (c.get("meta_data") or {}).get("session") == session]
    return sorted(
        [c["meta_data"]["mnemo_message"]["role"], c.get("user_input") or c.get("agent_response")] for c in mine
    )


def main(url: str) -> None:
    proxy = Proxy(url)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    identity = LocalIdentity(user="dave", project="atlas")
    flaky = MnemoClient(f"http://127.0.0.1:{proxy.server_address[1]}", auth=identity)
    steady = MnemoClient(url, auth=identity)
    written = converse(flaky, "flaky")
    converse(steady, "steady")
    restored = Agent(
        model=ScriptedModel([]),
        session_manager=MnemoSessionManager("flaky", steady, context=False),
        callback_handler=None,
    )
    proxy.shutdown()
    print(
        json.dumps(
            {
                "lost": proxy.lost,
                "sent": {tool: proxy.sent.get(tool, 0) for tool in FLAKY},
                "versions_flaky": versions(steady, "flaky"),
                "versions_steady": versions(steady, "steady"),
                "turns_flaky": turns(steady, "flaky"),
                "turns_steady": turns(steady, "steady"),
                "restored_same": restored.messages == written,
                "restored_state": restored.state.get(),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
