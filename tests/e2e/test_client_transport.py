"""mnemo.client's transport on the wire's bad days, against a scripted HTTP server and a real local one:
redirects are not followed, cut-off answers are typed and retried, a cancelled async call is not sent
again, SigV4 looks its credentials up once, and a CONFLICT the same call cannot get past is sent once."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from client_support import Answer, Script
from helpers import local_server
from mnemo.client import ApiKey, ConflictError, LocalIdentity, MnemoClient, SigV4, TransportError
from mnemo.client.transport import Transport
from mnemo.runtime import Services

BUSY = {"success": False, "errorCode": "PROVIDER_ERROR", "message": "busy", "details": {}, "retryable": True}


def test_a_redirect_is_refused_not_followed(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answers = [Answer(302, b"", {"Location": f"{url}/elsewhere"}), Answer(200, b'{"success": true}')]
    with pytest.raises(TransportError) as refused:
        Transport(url, auth=ApiKey("secret"), sleep=lambda _: None).call("memory_add", {"content": "x"})
    assert refused.value.status == 302
    assert refused.value.retryable is False
    assert [(method, path) for method, path, _ in script.requests] == [("POST", "/v1/tools/memory_add")]


def test_an_answer_cut_off_is_a_typed_error_and_retried(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answers = [Answer(200, b'{"succ', length=100), Answer(200, b'{"success": true, "memoryId": "m"}')]
    waits: list[float] = []
    assert Transport(url, sleep=waits.append).call("memory_add", {"content": "x"})["memoryId"] == "m"
    assert len(waits) == 1
    assert len(script.requests) == 2
    script.answers = [Answer(502, b'{"success": false', length=100)] * 2
    with pytest.raises(TransportError) as failed:
        Transport(url, retries=1, sleep=lambda _: None).call("memory_add", {"content": "x"})
    assert failed.value.retryable
    assert "IncompleteRead" in failed.value.message


def test_a_cancelled_async_call_is_not_sent_again(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    answering = threading.Event()
    script.answers = [Answer(503, json.dumps(BUSY).encode(), before=answering.set)] + [Answer(200)] * 3
    transport = Transport(url, backoff=0.5)

    async def scenario() -> None:
        call = asyncio.create_task(transport.call_async("memory_add", {"content": "x"}))
        await asyncio.to_thread(answering.wait, 10)
        await asyncio.sleep(0.1)  # the busy answer is in: the call waits out its backoff on the loop
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(scenario())
    assert len(script.requests) == 1
    assert len(script.answers) == 3


def test_sigv4_looks_its_credentials_up_once(scripted: tuple[str, Script], monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.credentials import Credentials
    from botocore.session import Session

    lookups: list[int] = []

    def get_credentials(self: Session) -> Credentials:
        lookups.append(1)
        return Credentials("AKIDEXAMPLE", "secret")

    monkeypatch.setattr(Session, "get_credentials", get_credentials)
    url, script = scripted
    script.answers = [Answer(200)] * 3
    transport = Transport(url, auth=SigV4("eu-west-1"))
    for _ in range(3):
        transport.call("memory_search", {"query": "x"})
    assert len(lookups) == 1
    assert all(
        headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        for *_, headers in script.requests
    )


def test_a_conflict_the_same_call_cannot_get_past_is_sent_once(services: Services) -> None:
    topic = {"topic": "deploys", "tags": ["ops"], "summary": "How we deploy.", "content": "Blue-green."}
    with local_server(services) as url:
        client = MnemoClient(url, auth=LocalIdentity(user="alice", project="atlas", roles=("writer",)))
        client.call("memorize_new_topic", topic)
        sent: list[str] = []
        once = client.transport.once

        def counted(tool: str, body: Any) -> dict[str, Any]:
            sent.append(tool)
            return once(tool, body)

        client.transport.once = counted  # type: ignore[method-assign]
        with pytest.raises(ConflictError) as taken:
            client.call("memorize_new_topic", topic)
        assert taken.value.retryable is False
        assert sent == ["memorize_new_topic"]
        with pytest.raises(ConflictError) as stale:
            client.call("refine_memory", {"topic": "deploys", "newContent": "Canary.", "expectedVersion": 7})
        assert stale.value.retryable is False
        assert stale.value.field == "expectedVersion"
        assert sent == ["memorize_new_topic", "refine_memory"]
