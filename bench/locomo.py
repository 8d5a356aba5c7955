"""LoCoMo dev split loading, as ../shared/bench/README.md prescribes.

Each conversation is its own user; each turn is one memory "speaker: text",
happening at its session's date, with its dia_id in metadata. Questions of
categories 1-4 are scored; category 5 (adversarial) has no evidence to find.

In smoke mode (bench/common.py) ``load()`` reads bench/fixtures/locomo-smoke.json, two short conversations
written by hand in the same shape, whatever MNEMO_LOCOMO says: a smoke run never needs ../shared.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from common import FIXTURES, smoke

#: The dev split lives beside a development checkout, not in the project (CC BY-NC 4.0);
#: MNEMO_LOCOMO points elsewhere.
DEFAULT_PATH = Path(
    os.environ.get("MNEMO_LOCOMO", Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "locomo-dev.json")
)
#: What smoke mode reads instead.
SMOKE_PATH = FIXTURES / "locomo-smoke.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA_ID = re.compile(r"D(\d+):(\d+)")


@dataclass
class Turn:
    dia_id: str
    content: str
    occurred_at: datetime


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]
    #: The reference answer, as LoCoMo gives it (bench/context.py looks for it in the context's text).
    answer: str = ""


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    adversarial: list[str]


def _session_date(raw: str) -> datetime:
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _normalise_evidence(raw: list[str], known: set[str]) -> list[str]:
    ids: list[str] = []
    for entry in raw:
        for session, turn in _DIA_ID.findall(entry):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id in known and dia_id not in ids:
                ids.append(dia_id)
    return ids


def load(path: Path | None = None) -> list[Conversation]:
    """The conversations of ``path``: by default the dev split, or the smoke fixture in smoke mode."""
    path = path or (SMOKE_PATH if smoke() else DEFAULT_PATH)
    if not path.is_file():
        raise SystemExit(
            f"LoCoMo dev split not found at {path}: the retrieval benchmarks need it "
            "(snap-research/LoCoMo, CC BY-NC 4.0, not shipped with Mnemo); set MNEMO_LOCOMO=/path/to/locomo-dev.json"
        )
    conversations = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        turns: list[Turn] = []
        for key, value in conv.items():
            if not re.fullmatch(r"session_\d+", key):
                continue
            when = _session_date(conv[f"{key}_date_time"])
            turns += [Turn(t["dia_id"], f"{t['speaker']}: {t['text']}", when) for t in value]
        known = {turn.dia_id for turn in turns}
        questions, adversarial = [], []
        for qa in sample["qa"]:
            if qa["category"] == 5:
                adversarial.append(qa["question"])
                continue
            evidence = _normalise_evidence(qa.get("evidence", []), known)
            if evidence:
                questions.append(Question(qa["question"], qa["category"], evidence, str(qa.get("answer", ""))))
        conversations.append(Conversation(sample["sample_id"], turns, questions, adversarial))
    return conversations
