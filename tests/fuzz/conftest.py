"""Fuzz: every tool through the real local HTTP server, from its own schemas (schemathesis and Hypothesis,
derandomized) and from hand-written hostile requests; and the JSON screening behind every door, without HTTP.
Each module starts `mnemo serve` in a thread on a free port over a temporary data dir of its own (hashing
embedder, a stand-in model); nothing else is started.

Fixtures of the fuzz suite: the real local HTTP server over a temporary data dir, per module. The run's
request counts and digest are printed in the terminal summary (through tests/support/run_summary.py, so
that a run on pytest-xdist workers prints them too; the folder runs on one worker, see
tests/support/xdist_scopes.py)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz.fuzz_support import FUZZ_KINDS, REQUESTS, SENT, Client
from run_summary import add_summary_line

from helpers import local_server, make_services


class EchoExtractor:
    """A stand-in language model for build_memory_from_text: the text's first words as entities and facts.

    Deterministic and schema-valid, so fuzzed content (any character JSON can hold) reaches the graph's
    real save path instead of stopping at the "no model configured" error.
    """

    name = "echo"

    def extract(self, system: str, prompt: str, tool: Any) -> dict[str, Any]:
        text = prompt.rsplit("\nText:\n", 1)[-1]
        words = text.split()[:6]
        entities = [{"name": word[:300], "type": "thing", "summary": text[:100]} for word in words]
        facts = [
            {
                "subject": a[:300],
                "predicate": b[:50] or "x",
                "object": a[::-1][:300] or "x",
                "text": text[:300],
                "exclusive": len(words) % 2 == 1,
            }
            for a, b in itertools.pairwise(words)
        ]
        return {"entities": entities, "facts": facts}


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`mnemo serve` in a thread with the hashing embedder, an empty data dir of its own and a stand-in model."""
    data_dir: Path = tmp_path_factory.mktemp("fuzz")
    services = make_services(data_dir)
    services.extractor = EchoExtractor()  # type: ignore[misc]
    # The experimental tools are fuzzed too: the server serves them while the setting is on.
    with pytest.MonkeyPatch.context() as patch, local_server(services) as url:
        patch.setenv("MNEMO_EXPERIMENTAL", "1")
        yield url


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[Client]:
    made = Client(base_url)
    yield made
    made.close()


@pytest.fixture(scope="module")
def catalog(client: Client) -> dict[str, dict[str, Any]]:
    """Each tool's listing (inputSchema, outputSchema) as GET /v1/tools serves it."""
    reply = client.request("GET", "/v1/tools", kind="setup")
    assert reply.status == 200
    return {tool["name"]: tool for tool in reply.json()["tools"]}


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not REQUESTS:
        return
    fuzzed = sum(REQUESTS[kind] for kind in FUZZ_KINDS)
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(REQUESTS.items()))
    add_summary_line(
        session.config,
        "fuzz",
        f"fuzz: {fuzzed} generated requests to the local server ({kinds}); digest {SENT.hexdigest()[:16]}",
        sep="-",
    )
