"""The replay extraction model of bench/extraction.py answers what the OpenAI-compatible adapter sends."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from replay_model import ReplayModel, load_samples

from mnemo.adapters.local.openai_extractor import OpenAICompatibleExtractor
from mnemo.learning.consolidation import JUDGE_SYSTEM, JUDGE_TOOL
from mnemo.learning.strategies import FACTS, LESSONS, SUMMARY, Strategy
from mnemo.learning.transcript import Turn, prompt
from mnemo.ports import ExtractionTool

FIXTURE = Path(__file__).resolve().parents[2] / "bench" / "fixtures" / "locomo-smoke.json"


@pytest.fixture
def model() -> Iterator[ReplayModel]:
    served = ReplayModel(load_samples(FIXTURE)).start()
    try:
        yield served
    finally:
        served.stop()


def tool_of(strategy: Strategy) -> ExtractionTool:
    return ExtractionTool(name=strategy.tool_name, description=strategy.tool_description, schema=strategy.schema)


def turns(sample: int, ids: list[str]) -> list[Turn]:
    """Turns of the fixture as the pipeline shows them (content without the speaker)."""
    raw = json.loads(FIXTURE.read_text())[sample]["conversation"]
    said = {t["dia_id"]: (t["speaker"], t["text"]) for key, value in raw.items() if key[-1].isdigit() for t in value}
    return [Turn(i, "2023-03-03T09:15:00.000000Z", said[i][0], said[i][1]) for i in ids]


def test_facts_cite_only_their_evidence_within_the_batch(model: ReplayModel) -> None:
    extractor = OpenAICompatibleExtractor(model.url, "replay")
    found = extractor.extract_counted(FACTS.system, prompt(turns(0, ["D1:1", "D1:2", "D1:3"])), tool_of(FACTS))
    facts = found.answer["facts"]
    assert [fact["sourceIds"] for fact in facts] == [["D1:1", "D1:3"], ["D1:3"]]
    assert facts[1]["text"] == "Nora's sister Ines is joining her pottery class."
    assert facts[1]["subject"] == facts[1]["text"]
    assert all(fact["occurredAt"].startswith("2023-03-03") for fact in facts)
    assert found.input_tokens > 0 and found.output_tokens > 0
    assert model.totals()["requests"] == {"record_facts": 1}


def test_a_batch_is_matched_to_the_conversation_it_quotes(model: ReplayModel) -> None:
    # Both conversations have a D1:1; the second one's text names its observations.
    extractor = OpenAICompatibleExtractor(model.url, "replay")
    answer = extractor.extract(FACTS.system, prompt(turns(1, ["D1:1", "D1:2", "D1:3"])), tool_of(FACTS))
    assert [fact["text"] for fact in answer["facts"]] == [
        "Priya adopted a rescue dog named Pepper, a three year old beagle mix."
    ]


def test_summary_is_the_last_sessions_citing_its_turns(model: ReplayModel) -> None:
    extractor = OpenAICompatibleExtractor(model.url, "replay")
    answer = extractor.extract(SUMMARY.system, prompt(turns(0, ["D1:6", "D2:1", "D2:2"])), tool_of(SUMMARY))
    [summary] = answer["summary"]
    assert summary["text"].startswith("On 21 March 2023")
    assert summary["sourceIds"] == ["D2:1", "D2:2"]


def test_other_tools_get_empty_lists(model: ReplayModel) -> None:
    extractor = OpenAICompatibleExtractor(model.url, "replay")
    batch = prompt(turns(0, ["D1:1"]))
    assert extractor.extract(LESSONS.system, batch, tool_of(LESSONS)) == {"lessons": []}
    assert extractor.extract(JUDGE_SYSTEM, "Pairs:\n0. a | b", JUDGE_TOOL) == {"decisions": []}
    totals = model.totals()
    assert totals["requests"] == {"record_lessons": 1, "decide_updates": 1}
    assert totals["promptTokensTotal"] > 0


def test_only_chat_completions_is_served(model: ReplayModel) -> None:
    call = urllib.request.Request(f"{model.url}/embeddings", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(call, timeout=10)
    assert raised.value.code == 404
