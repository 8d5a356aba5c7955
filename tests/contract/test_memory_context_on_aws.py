"""memory_context on the AWS adapters: records in DynamoDB (the serial moto server, a table built from
template.yaml), the memory and conversation indexes in OpenSearch (an osmem-server clone, service ``aoss`` as
template.yaml deploys it), extraction on the scripted OpenAI-compatible model.

osmem answers every OpenSearch request but k-NN; a k-NN search (``_search`` or ``_msearch``) is answered here
from the documents its filter clause selects, each scored by the cosine of the query vector with the
embedding of the document's stored text (the hashing embedder the stack uses), as faiss's inner product
would score it (``score_from_cosine``). No warning of a failed k-NN search may be logged: the hybrid ranking
memory_context relies on runs whole.

The same core promises as tests/service/test_memory_context_tool.py: the budget, the sources in the text's order,
profile and summary first, an extracted fact standing for its turns, superseded and expired memories left
out, asOf, pinned blocks, no model call, no other user's data. And the cost: bench/cost_meter.py counts the
DynamoDB requests (and read units, as DynamoDB bills them) and OpenSearch requests one call sends. The count
is structural: a fixed number of requests, the same for a small store and one several times larger, never a
scan.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server
from cost_meter import Meter, OpenSearchMeter, Tally
from scripted_model import ScriptedModel

from helpers import ctx
from mnemo.adapters.aws.opensearch.scoring import score_from_cosine
from mnemo.context import RequestContext
from mnemo.files.tokens import count_tokens
from mnemo.memory.records import iso
from mnemo.ports import Item, Put
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx("alice", session="s1")
BOB = ctx("bob", session="s1")
EMPLOYER = "Alice's employer"
QUERY = "Where does Alice work?"
BLOCK = "mnemo:///blocks/persona.md"
_names = itertools.count()

#: What one memory_context call may send to DynamoDB, whatever the store holds (reads by key; a BatchGetItem
#: holds at most 100 keys): the profile's and the summary's subject pointers (2 BatchGetItem) and their records
#: (2 GetItem); the ranked memories read back (1: at most 100 of them); the ranked turns (2: one page of the
#: fused ranking, limit + 1 = 101 keys at most; another page only for records gone from under their index
#: entries); the superseded memories' records with asOf (1); the pin set, its files' heads and contents (3).
MOST_DYNAMODB_REQUESTS = 2 + 2 + 1 + 2 + 1 + 3
#: The OpenSearch requests: a k-NN search and a lexical _msearch for each of the two indexes.
OPENSEARCH_REQUESTS = {"opensearch:search k-NN": 2, "opensearch:msearch": 2}


class Script:
    """The scripted model: the facts ``facts`` assigns to turns; a summary naming the batch's turns; a profile
    made of the memories the prompt lists (as tests/service/test_profile.py does)."""

    def __init__(self) -> None:
        self.facts: dict[str, tuple[str, str]] = {}

    def __call__(self, tool: str, request: dict[str, Any], turns: list[str]) -> dict[str, Any] | None:
        if tool == "record_facts":
            cited: dict[tuple[str, str], list[str]] = {}
            for turn in turns:
                if turn in self.facts:
                    cited.setdefault(self.facts[turn], []).append(turn)
            return {"facts": [{"text": t, "subject": s, "sourceIds": c} for (t, s), c in cited.items()]}
        if tool == "record_summary":
            return {"summary": [{"text": f"Alice and the assistant talked ({', '.join(turns)}).", "sourceIds": turns}]}
        if tool == "record_profile":
            lines = [line for line in request["messages"][-1]["content"].splitlines() if line.startswith("[mem_")]
            text = "Profile: " + " ".join(line.split("] ", 1)[1] for line in lines)
            return {"profile": [{"text": text, "sourceIds": [line[1 : line.index("]")] for line in lines]}]}
        return None


@dataclass
class Stack:
    services: Services
    model: ScriptedModel
    script: Script
    meter: Meter
    table: str

    def call(self, tool: str, body: dict[str, Any], who: RequestContext = ALICE) -> dict[str, Any]:
        return get_tool(tool).invoke(self.services, who, body)

    def context(self, who: RequestContext = ALICE, **body: Any) -> dict[str, Any]:
        """memory_context as ``who`` (``body`` in wire names); the model gets no request meanwhile."""
        asked = len(self.model.requests)
        answer = self.call("memory_context", {"query": QUERY, **body}, who)
        assert len(self.model.requests) == asked, "memory_context called the model"
        return answer

    def metered(self, phase: str, who: RequestContext = ALICE, **body: Any) -> tuple[dict[str, Any], Tally]:
        """memory_context with what it sends counted (under ``phase``)."""
        with self.meter.attributed(phase) as tally:
            answer = self.context(who, **body)
        return answer, tally

    def say(self, *turns: tuple[str, str, str, str]) -> None:
        messages = [{"id": i, "role": role, "content": text, "at": at} for i, role, text, at in turns]
        assert self.call("add_messages", {"messages": messages})["stored"] == len(turns)

    def extract(self) -> dict[str, Any]:
        run = self.call("memory_extract", {})
        assert run["pendingTurns"] == 0 and all(p["failure"] is None for p in run["run"]["strategies"]), run
        return run

    def record(self, memory_id: str, layer: str = "user") -> Item:
        item = self.services.records.get(f"MEM|{ALICE.scope_key(layer)}", f"MEM#{memory_id}", consistent=True)
        assert item is not None
        return item


class KnnFromText:
    """Answers a k-NN search on osmem (which has none): the documents the search's filter selects, scored by the
    cosine of the query vector with the embedding of each one's stored text."""

    def __init__(self, url: str, services: Services) -> None:
        from mnemo.adapters.aws.opensearch.client import make_client

        self._plain = make_client(
            url, None, "es", endpoint_is_local=True
        )  # its own client: its requests are not metered
        self._services = services

    def __call__(self, index: str, body: dict[str, Any]) -> dict[str, Any]:
        search = body["query"]["knn"]["vector"]
        clauses = (search.get("filter") or {}).get("bool", {}).get("filter", [])
        query = {"bool": {"filter": clauses}} if clauses else {"match_all": {}}
        found = self._plain.search(index=index, body={"size": 10_000, "query": query})["hits"]["hits"]
        vectors = self._services.embedder.embed([hit["_source"]["text"] for hit in found]) if found else []
        hits = []
        for hit, vector in zip(found, vectors, strict=True):
            cosine = sum(a * b for a, b in zip(search["vector"], vector, strict=True))
            source = {name: hit["_source"].get(name) for name in body.get("_source", [])}
            hits.append({"_index": index, "_id": hit["_id"], "_score": score_from_cosine(cosine), "_source": source})
        hits.sort(key=lambda hit: -hit["_score"])
        top = hits[: int(search["k"])]
        return {"took": 1, "timed_out": False, "hits": {"total": {"value": len(top)}, "hits": top}}


class Kept(logging.Handler):
    """The messages of the records a logger handles (the mnemo loggers may not propagate to pytest's caplog)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, osmem_clone: Any) -> Iterator[Stack]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    table = f"context-records-{next(_names)}"
    plain = server.client("dynamodb")  # setup and the meter's peeks: not metered
    create_records_table(plain, table, stream=False)
    script = Script()
    model = ScriptedModel(script)
    settings = dynamodb_settings(
        server,
        table,
        tmp_path,
        vector_index="opensearch",
        opensearch_endpoint=osmem_clone.url,
        opensearch_service="aoss",
        openai_base_url=model.url,
        extraction_strategies=("facts", "summary", "profile"),
        extraction_judge=False,
        extraction_config={"profile": {"maxTokens": 200}},
    )
    services = Services(settings)
    meter = Meter(lambda name, key: plain.get_item(TableName=name, Key=key, ConsistentRead=True).get("Item"))
    meter.attach(services.records.client)  # type: ignore[attr-defined]
    OpenSearchMeter(meter, knn=KnnFromText(osmem_clone.url, services)).attach(services.index.client)  # type: ignore[attr-defined]

    def refused_scan(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a user request scanned the table")

    monkeypatch.setattr(services.records, "scan", refused_scan)
    ranker, kept = logging.getLogger("mnemo.retrieval.ranker"), Kept()
    ranker.addHandler(kept)
    try:
        yield Stack(services, model, script, meter, table)
        assert kept.messages == [], "a k-NN search failed: the ranking fell back to keywords"
    finally:
        ranker.removeHandler(kept)
        meter.detach()
        model.close()
        plain.delete_table(TableName=table)


def ids(answer: dict[str, Any], kind: str | None = None) -> list[str]:
    return [source["id"] for source in answer["sources"] if kind is None or source["kind"] == kind]


def follows_text(answer: dict[str, Any], markers: dict[str, str]) -> None:
    """Each source's marker is in the context in the order of the sources; every marker shown has its source."""
    text, at = answer["context"], 0
    for source in answer["sources"]:
        found = text.find(markers[source["id"]], at)
        assert found >= 0, f"{source['id']} ({markers[source['id']]!r}) is not in the text after {at}: {text!r}"
        at = found + 1
    assert {item for item, marker in markers.items() if marker in text} <= set(ids(answer))


def learned_at_acme(aws: Stack) -> dict[str, str]:
    """m0 asks, m1 and m2 state the fact (one memory citing both), a summary of s1, a profile; a dated manual
    memory, a memory that expires (made to), a pinned block. The memory ids by name."""
    aws.script.facts = {"m1": ("Alice works at Acme Corp.", EMPLOYER), "m2": ("Alice works at Acme Corp.", EMPLOYER)}
    aws.say(
        ("m0", "user", "Where does Alice work these days?", "2023-05-08T09:00:00Z"),
        ("m1", "user", "I started a new job at Acme last week", "2023-05-08T09:01:00Z"),
        ("m2", "assistant", "Congratulations on the Acme job!", "2023-05-08T09:02:00Z"),
    )
    run = aws.extract()
    made = {
        part["strategy"]: part["candidates"][0]["memoryId"] for part in run["run"]["strategies"] if part["candidates"]
    }
    manual = aws.call(
        "memory_add", {"content": "Alice works from the Lisbon office", "occurredAt": "2023-05-08T13:56:00Z"}
    )
    ends = iso((datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0))
    ending = aws.call("memory_add", {"content": "Alice works remotely this week", "expiresAt": ends})
    expired = aws.record(ending["memoryId"])
    aws.services.records.write(
        [Put(Item(expired.pk, expired.sk, expired.data, expired.version, expires_at=int(time.time()) - 5))]
    )
    aws.call("file_write", {"path": BLOCK, "content": "Answer in one sentence."})
    aws.call("block_pin", {"path": BLOCK})
    return {
        "fact": made["facts"],
        "summary": made["summary"],
        "profile": made["profile"],
        "manual": manual["memoryId"],
        "expired": ending["memoryId"],
    }


def test_memory_context_keeps_its_promises_on_dynamodb_and_opensearch(aws: Stack) -> None:
    learned = learned_at_acme(aws)
    markers = {
        learned["profile"]: "Profile: Alice works at Acme Corp.",
        learned["summary"]: "talked (m0, m1, m2)",
        learned["fact"]: "- (8 May 2023) Alice works at Acme Corp.",
        learned["manual"]: "- (8 May 2023) Alice works from the Lisbon office",
        learned["expired"]: "remotely this week",
        "m0": "Where does Alice work these days?",
        "m1": "Acme last week",
        "m2": "Congratulations",
        BLOCK: f'<block path="{BLOCK}"',
    }
    for budget in (100, 200, 400, 1500, 16000):
        answer = aws.context(budget=budget)
        assert answer["tokens"] <= budget and answer["tokens"] == count_tokens(answer["context"])
        follows_text(answer, markers)
        assert learned["expired"] not in ids(answer), "an expired memory never appears"
    whole = aws.context(budget=16000)
    kinds = [s["kind"] for s in whole["sources"]]
    assert kinds == sorted(kinds, key=["profile", "summary", "memory", "turn", "block"].index), kinds
    assert ids(whole)[:2] == [learned["profile"], learned["summary"]] and ids(whole, "block") == [BLOCK]
    assert set(ids(whole, "memory")) == {learned["fact"], learned["manual"]}
    # Which of m1 and m2 the fact stands for depends on how each ranks (mnemo.retrieval.fusion); never both.
    assert "m0" in ids(whole, "turn") and set(ids(whole, "turn")) < {"m0", "m1", "m2"}, ids(whole, "turn")
    cited = {s["id"]: s["messageIds"] for s in whole["sources"]}
    assert cited[learned["fact"]] == ["m1", "m2"] and cited["m0"] == ["m0"] and cited[learned["manual"]] == []
    assert cited[learned["summary"]] == ["m0", "m1", "m2"] and cited[learned["profile"]] == []
    assert whole["truncated"] is False
    assert aws.context(budget=100)["truncated"] is True
    assert ids(aws.context(sections=["turns", "blocks"]))[-1] == BLOCK

    # A change supersedes the fact: gone now, shown as of before it.
    before = aws.record(learned["fact"]).data["createdAt"]
    aws.script.facts = {"m4": ("Alice works at Globex.", EMPLOYER)}
    aws.say(("m4", "user", "I left Acme and joined Globex", "2023-06-01T09:00:00Z"))
    aws.extract()
    globex = aws.record(learned["fact"]).data["supersededBy"]
    assert globex
    # Each statement shows as its fact or as its turns, whichever ranks better (mnemo.retrieval.fusion).
    now = aws.context(budget=16000)
    assert learned["fact"] not in ids(now) and "Acme Corp." not in now["context"], now["context"]
    assert globex in ids(now) or "m4" in ids(now), now["sources"]
    then = aws.context(budget=16000, asOf=before)
    assert globex not in ids(then) and "Globex" not in then["context"], then["context"]
    assert learned["fact"] in ids(then) or {"m1", "m2"} <= set(ids(then)), then["sources"]
    assert "m4" not in ids(then) and learned["manual"] not in ids(then), "said or stored after asOf"
    ahead = iso((datetime.now(UTC) + timedelta(days=365)).replace(microsecond=0))
    aws.say(("m9", "user", "Next year Alice visits the Acme office in Lisbon", ahead))
    stored = aws.services.records.get(f"CONV|{ALICE.scope_key('user')}", "MSG#m9")
    assert stored is not None
    assert "m9" not in ids(aws.context(budget=16000, asOf=stored.data["stored_at"], sections=["turns"])), "said later"
    assert "m9" in ids(aws.context(budget=16000, asOf=ahead, sections=["turns"]))

    # Nothing of alice's reaches bob (same tenant, same session id).
    bobs = aws.call("memory_add", {"content": "Bob works at Acme too"}, BOB)["memoryId"]
    for body in ({}, {"budget": 16000}, {"query": "Acme Corp persona profile summary"}):
        answer = aws.context(BOB, **body)
        assert ids(answer) == [bobs], answer["sources"]
        assert "Alice" not in answer["context"] and "one sentence" not in answer["context"]


def test_one_call_sends_a_fixed_number_of_requests_whatever_the_store_holds(aws: Stack) -> None:
    learned = learned_at_acme(aws)
    aws.script.facts = {"m4": ("Alice works at Globex.", EMPLOYER)}
    aws.say(("m4", "user", "I left Acme and joined Globex", "2023-06-01T09:00:00Z"))
    aws.extract()  # a superseded fact: asOf reads when it was superseded
    body = {"budget": 16000, "asOf": "2099-01-01T00:00:00Z"}  # every part: profile, summary, asOf, blocks
    small, small_tally = aws.metered("small store", **body)
    assert len(small["sources"]) >= 5, small["sources"]

    for n in range(60):
        aws.call("memory_add", {"content": f"Alice noted fact {n}: the Acme badge {n} opens floor {n % 7}"})
    aws.say(
        *[
            (f"x{n}", "user", f"Badge {n} works at the Acme office door", f"2023-05-09T10:{n:02d}:00Z")
            for n in range(60)
        ]
    )
    while aws.call("memory_extract", {})["pendingTurns"]:  # 50 turns a run: the new turns state no fact
        pass
    large, large_tally = aws.metered("large store", **body)
    assert len(large["sources"]) > 3 * len(small["sources"]), "the larger store shows many more items"
    _, plain_tally = aws.metered("without asOf", budget=16000)

    for name, tally in (("small", small_tally), ("large", large_tally), ("no asOf", plain_tally)):
        print(f"\nmemory_context on DynamoDB + OpenSearch, {name} store: {json.dumps(tally.as_dict())}")
    dynamodb = {phase: _dynamodb(t) for phase, t in (("small", small_tally), ("large", large_tally))}
    assert set(dynamodb["small"]) <= {"dynamodb:BatchGetItem", "dynamodb:GetItem"}, "reads by key: no query or scan"
    assert dynamodb["small"] == dynamodb["large"], "the same requests for 5 items and for 125"
    assert sum(dynamodb["large"].values()) <= MOST_DYNAMODB_REQUESTS
    assert sum(_dynamodb(plain_tally).values()) == sum(dynamodb["large"].values()) - 1, "asOf adds one read"
    for tally in (small_tally, large_tally, plain_tally):
        assert {k: v for k, v in tally.requests.items() if k.startswith("opensearch:")} == OPENSEARCH_REQUESTS
        assert tally.wru == 0, "a read: nothing written"
        assert tally.rru_strong <= 5, "strongly consistent: the profile's and summary's pointers and records, pins"
    assert [s["kind"] for s in large["sources"][:2]] + ids(large, "block") == ["profile", "summary", BLOCK]
    assert learned["summary"] not in ids(large), "the summary was rewritten by the last run"


def _dynamodb(tally: Tally) -> dict[str, int]:
    return {name: count for name, count in tally.requests.items() if name.startswith("dynamodb:")}
