"""A dated memory_add embeds one text: its content, or the pair the index holds when it follows another memory.

A dated memory that follows another of its scope on the same day is indexed with the vector of
"content⏎previous content" (docs/scoring.md). It used to embed its content alone as well, for the near-duplicate
check; now that check finds exact repeats only (by content hash), since the one vector is the pair's. What the
index holds is unchanged: every document equals what ``mnemo reindex`` rebuilds from the records, so every
ranking is the same. Shown on the embedded stack (the
embedder's calls counted), for memory_add_batch, and on moto with Titan's calls counted by bench/cost_meter.py.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, shared_moto_server
from cost_meter import TITAN_CHARS_PER_TOKEN, Meter

from aws_events import FakeLambdaContext, rest_event
from helpers import ctx
from mnemo.memory.indexing import NAMESPACE, embedding_text
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

ALICE = ctx("alice")
DAY = "2023-05-08T13:56:00Z"
NEXT_DAY = "2023-05-09T09:00:00Z"
LONG_TURN = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful to hear the stories"
#: A day of conversation and an undated fact, as an agent stores them one by one.
TURNS = [
    ("Melanie: did you go camping with the kids in the mountains?", DAY),
    ("Caroline: yes, twice, it was lovely", DAY),
    ("Melanie: the weather was grey all week", DAY),
    ("Caroline: I started pottery classes on Tuesdays", NEXT_DAY),
    ("Melanie: what did you make first?", NEXT_DAY),
    ("Caroline: a blue bowl for my mother", NEXT_DAY),
]
QUERIES = ["camping with the kids", "pottery bowl", "grey weather", "what did Caroline make", "mountains twice"]


class Counted:
    """The embedder's ``embed``, recording the texts of each call."""

    def __init__(self, services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[list[str]] = []
        self._real = services.embedder.embed
        monkeypatch.setattr(services.embedder, "embed", self)

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return self._real(texts)


def add(services: Services, content: str, **fields: Any) -> dict[str, Any]:
    return get_tool("memory_add").invoke(services, ALICE, {"content": content, **fields})


def ranked(services: Services) -> list[list[tuple[str, float]]]:
    """Each query's results as (memory id, score), all memories considered (threshold 0)."""
    search = get_tool("memory_search")
    return [
        [
            (hit["memoryId"], hit["score"])
            for hit in search.invoke(services, ALICE, {"query": q, "threshold": 0.0})["results"]
        ]
        for q in QUERIES
    ]


def test_a_dated_add_embeds_its_one_text_the_pair_when_it_follows_another(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted(services, monkeypatch)
    add(services, "Caroline: I went to the support group", occurredAt=DAY)
    add(services, "Melanie: how did it feel?", occurredAt=DAY)
    add(services, "The build uses Python 3.12")
    add(services, "Melanie: and the next morning?", occurredAt=NEXT_DAY)
    assert counted.calls == [
        ["Caroline: I went to the support group"],  # the first of its day: its content
        [embedding_text("Melanie: how did it feel?", "Caroline: I went to the support group")],  # the pair only
        ["The build uses Python 3.12"],
        ["Melanie: and the next morning?"],  # a new day: nothing to follow
    ]


def test_what_the_index_holds_and_every_ranking_are_what_reindex_rebuilds_from_the_records(
    services: Services,
) -> None:
    for content, day in TURNS:
        add(services, content, occurredAt=day)
    add(services, "The team lunch is on Fridays")
    before = ranked(services)
    assert all(before)

    assert services.memory.reindex() == len(TURNS) + 1  # every vector embedded again, each pair from its records

    assert ranked(services) == before


def test_a_dated_add_that_follows_another_is_checked_for_exact_repeats_only(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its one vector is the pair's, not the content's: only the content hash says it repeats a memory."""
    first = add(services, LONG_TURN, occurredAt=DAY)
    searches: list[dict[str, list[str]]] = []
    knn = services.index.knn
    monkeypatch.setattr(
        services.index, "knn", lambda ns, v, flt, k, **kw: searches.append(flt) or knn(ns, v, flt, k, **kw)
    )
    reply = add(services, "Melanie: wow", occurredAt=DAY)  # its pair's vector is mostly the long turn's
    near = add(services, "Melanie: wow!", occurredAt=DAY)  # the same words: a near repeat, not an exact one
    counted = Counted(services, monkeypatch)
    again = add(services, LONG_TURN, occurredAt=DAY)
    undated = add(services, "Alice owns a red bicycle")
    undated_near = add(services, "Alice owns a red bicycle.")

    assert not reply["deduplicated"] and not near["deduplicated"]
    assert (again["deduplicated"], again["memoryId"]) == (True, first["memoryId"])  # found by its content hash
    assert (undated_near["deduplicated"], undated_near["memoryId"]) == (True, undated["memoryId"])  # as ever
    assert [len(texts) for texts in counted.calls] == [1, 1, 1]
    # One k-NN search (the content hash) for each dated add that follows another, two for the undated ones.
    assert ["contentHash" in flt for flt in searches] == [True, True, True, True, False, True, False]
    assert services.index.count(NAMESPACE) == 4


def test_memory_add_batch_embeds_undated_items_at_once_and_each_dated_item_once(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted(services, monkeypatch)
    items = [
        {"content": "The staging DB is Postgres 16"},
        {"content": "Caroline: I went to the support group", "occurredAt": DAY},
        {"content": "Releases go out on Tuesdays"},
        {"content": "Melanie: how did it feel?", "occurredAt": DAY},
    ]
    answer = get_tool("memory_add_batch").invoke(services, ALICE, {"items": items})
    assert (answer["added"], answer["failed"]) == (4, 0)
    assert counted.calls == [
        ["The staging DB is Postgres 16", "Releases go out on Tuesdays"],
        ["Caroline: I went to the support group"],
        [embedding_text("Melanie: how did it feel?", "Caroline: I went to the support group")],
    ]


def test_on_moto_a_dated_add_that_follows_another_makes_one_titan_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemo.entry.apigw import tool_handler

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    server = shared_moto_server()
    plain = server.client("dynamodb")
    table = f"dated-add-{tmp_path.name[-20:].replace('_', '-')}"
    create_records_table(plain, table, stream=False)
    meter = Meter(lambda name, key: plain.get_item(TableName=name, Key=key, ConsistentRead=True).get("Item"))
    settings = Settings(
        records="dynamodb",
        records_table=table,
        aws_endpoint=server.url,
        aws_region=REGION,
        data_dir=tmp_path,
        embedder="titan",
        titan_dimensions=256,
    )
    services = Services(settings)
    meter.attach(services.records.client)  # type: ignore[attr-defined]
    meter.attach(services.embedder.client)  # type: ignore[attr-defined]
    caller = {"sourceIp": "203.0.113.10", "userArn": "arn:aws:iam::123456789012:user/dated", "accountId": "1"}
    turns = [
        "Caroline: I went to the LGBTQ support group yesterday.",
        "Melanie: That sounds powerful, how did it feel?",
    ]
    set_services(services)
    try:
        for n, content in enumerate(turns):
            with meter.attributed(f"turn-{n}"):
                answer = tool_handler("memory_add")(
                    rest_event("memory_add", {"content": content, "occurredAt": DAY}, authorizer=None, identity=caller),
                    FakeLambdaContext(),
                )
            assert answer["statusCode"] == 200, answer["body"]
            assert json.loads(answer["body"])["deduplicated"] is False
    finally:
        set_services(None)
        meter.detach()
        plain.delete_table(TableName=table)
    first, second = meter.tallies["turn-0"], meter.tallies["turn-1"]
    assert (first.titan_calls, second.titan_calls) == (1, 1)
    assert second.requests["bedrock-runtime:InvokeModel"] == 1
    pair = embedding_text(turns[1], turns[0])
    assert second.titan_tokens == math.ceil(len(pair) / TITAN_CHARS_PER_TOKEN)  # the pair alone was embedded
    # The rest of a linked dated add: the LAST pointer read (its tail stands for the predecessor's content, so
    # no record is read), then its record and the pointer each in a PutItem of its own (no transaction: 2 WRU
    # where one was 4).
    assert {name: n for name, n in second.requests.items() if name.startswith("dynamodb:")} == {
        "dynamodb:GetItem": 1,
        "dynamodb:PutItem": 2,
    }
    assert (second.wru, second.rru) == (2, 1)
