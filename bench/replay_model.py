"""An OpenAI-compatible extraction model that replays LoCoMo's own observations and session summaries.

    python bench/replay_model.py [--data FILE] [--port N] [--smoke]

Serves until interrupted (bench/extraction.py starts one in-process instead). --smoke: on
bench/fixtures/locomo-smoke.json, answers one record_facts request sent by the real adapter and writes it
to replay-model.json (results folder of bench/common.py), then stops.

``POST /chat/completions``, as ``mnemo.adapters.local.openai_extractor.OpenAICompatibleExtractor`` sends it
(one forced tool), is answered with a ``tool_calls`` message for that tool, built from the data instead of
a model:

- the message ids of the batch are read from the transcript lines of the last message
  (``mnemo.learning.transcript.LINE``); a batch belongs to the conversation whose turns it quotes;
- ``record_facts``: each observation of the batch's sessions whose evidence turns are in the batch, as
  ``{text, subject, sourceIds, occurredAt}``: sourceIds its evidence ids that are in the batch (never the
  whole batch), subject the observation itself (cut to 200 characters: specific to that fact, so two
  observations never supersede each other), occurredAt the session's date;
- ``record_summary``: the session summary of the batch's last session, citing the batch's turns of it;
- ``record_profile``: the changed memories the prompt lists, then the profile so far, cut to about 200
  tokens, citing every memory id it was given (``profile_answer``);
- any other tool (preferences, lessons, the graph, the consolidation judge): an empty list for each array
  property of its schema.

``usage`` is estimated as characters / 4 (prompt: the messages and the tool's definition; completion: the
arguments). ``ReplayModel`` counts requests and tokens per tool. The data is the LoCoMo format
(../shared/bench/README.md) with ``observation`` and ``session_summary``; observations use LoCoMo's own
evidence ids, malformed ones normalised as bench/locomo.py does. Nothing here is a model's judgement: the
figures a bench gets through it measure storage, consolidation and retrieval given perfect extraction.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mnemo.learning.transcript import LINE

_DIA_ID = re.compile(r"D(\d+):(\d+)")
#: A subject's most characters (the facts schema's maxLength).
SUBJECT_CHARS = 200
#: The most facts one answer proposes (the pipeline refuses more than its max_candidates, 50 by default).
MAX_FACTS = 50


def session_date(raw: str) -> datetime:
    """A LoCoMo session date ("1:56 pm on 8 May, 2023") as UTC."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def evidence_ids(raw: Any) -> list[str]:
    """The dia_ids of an observation's evidence (a string or a list; "D8:6; D9:17" and "D30:05" normalised)."""
    entries = [raw] if isinstance(raw, str) else [str(entry) for entry in raw or []]
    ids: list[str] = []
    for entry in entries:
        for session, turn in _DIA_ID.findall(entry):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id not in ids:
                ids.append(dia_id)
    return ids


def flat(text: str) -> str:
    """Text as a transcript line shows it: whitespace runs as one space."""
    return " ".join(text.split())


@dataclass
class Observation:
    text: str
    evidence: list[str]
    session: int


@dataclass
class Sample:
    """One LoCoMo conversation: its sessions' dates and summaries, its observations, its turns' texts."""

    sample_id: str
    dates: dict[int, datetime] = field(default_factory=dict)
    summaries: dict[int, str] = field(default_factory=dict)
    observations: list[Observation] = field(default_factory=list)
    turns: dict[str, str] = field(default_factory=dict)


def load_samples(path: Path) -> list[Sample]:
    """The conversations of a LoCoMo-format file."""
    samples = []
    for raw in json.loads(path.read_text()):
        sample = Sample(raw["sample_id"])
        conversation = raw["conversation"]
        for key, value in conversation.items():
            match = re.fullmatch(r"session_(\d+)", key)
            if match is None:
                continue
            number = int(match.group(1))
            sample.dates[number] = session_date(conversation[f"{key}_date_time"])
            for turn in value:
                sample.turns[turn["dia_id"]] = flat(turn["text"])
        for key, per_speaker in (raw.get("observation") or {}).items():
            match = re.fullmatch(r"session_(\d+)_observation", key)
            if match is None:
                continue
            for items in per_speaker.values():
                for text, evidence in items:
                    sample.observations.append(Observation(text, evidence_ids(evidence), int(match.group(1))))
        for key, text in (raw.get("session_summary") or {}).items():
            match = re.fullmatch(r"session_(\d+)_summary", key)
            if match is not None:
                sample.summaries[int(match.group(1))] = text
        samples.append(sample)
    return samples


def session_of(dia_id: str) -> int | None:
    """The session number of a dia_id ("D3:7" -> 3)."""
    match = _DIA_ID.fullmatch(dia_id)
    return int(match.group(1)) if match else None


def empty_answer(schema: dict[str, Any]) -> dict[str, Any]:
    """An empty list for each array property of a tool's input schema."""
    properties = schema.get("properties") or {}
    return {name: [] for name, spec in properties.items() if isinstance(spec, dict) and spec.get("type") == "array"}


class ReplayModel:
    """The replaying model's answers and counters; ``start`` serves them on 127.0.0.1 (see the module docstring)."""

    def __init__(self, samples: list[Sample]) -> None:
        self.samples = samples
        # A turn's (dia_id, text) names its conversation: dia_ids repeat across conversations.
        self._by_turn: dict[tuple[str, str], Sample] = {}
        for sample in samples:
            for dia_id, text in sample.turns.items():
                self._by_turn.setdefault((dia_id, text), sample)
        self.requests: Counter[str] = Counter()
        self.prompt_tokens: Counter[str] = Counter()
        self.completion_tokens: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------ answers
    def batch(self, prompt: str) -> tuple[Sample | None, list[str]]:
        """The conversation a prompt's transcript quotes and the message ids of its lines, in order."""
        ids: list[str] = []
        votes: Counter[str] = Counter()
        found: dict[str, Sample] = {}
        for line in prompt.splitlines():
            match = LINE.match(line)
            if match is None:
                continue
            message_id = match.group("id")
            ids.append(message_id)
            sample = self._by_turn.get((message_id, flat(match.group("content"))))
            if sample is not None:
                votes[sample.sample_id] += 1
                found[sample.sample_id] = sample
        if not votes:
            return None, ids
        return found[votes.most_common(1)[0][0]], ids

    def answer(self, tool: str, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
        """The tool's arguments for one prompt."""
        if tool == "record_profile":
            return profile_answer(prompt)
        sample, ids = self.batch(prompt)
        if sample is None or tool not in ("record_facts", "record_summary"):
            return empty_answer(schema)
        batch = set(ids)
        if tool == "record_facts":
            facts = []
            for observation in sample.observations:
                cited = [dia_id for dia_id in ids if dia_id in observation.evidence]
                if not cited or observation.session not in {session_of(i) for i in batch}:
                    continue
                facts.append(
                    {
                        "text": observation.text,
                        "subject": observation.text[:SUBJECT_CHARS],
                        "sourceIds": cited,
                        "occurredAt": sample.dates[observation.session].isoformat(),
                    }
                )
            return {"facts": facts[:MAX_FACTS]}
        sessions = [session_of(i) for i in ids if session_of(i) is not None]
        last = sessions[-1] if sessions else None
        if last is None or last not in sample.summaries:
            return {"summary": []}
        cited = [dia_id for dia_id in ids if session_of(dia_id) == last]
        return {"summary": [{"text": sample.summaries[last][:4000], "sourceIds": cited[:50]}]}

    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        """The chat completion answering one request (counted)."""
        tools = request.get("tools") or []
        function = (tools[0].get("function") or {}) if tools and isinstance(tools[0], dict) else {}
        name = str(function.get("name") or "")
        messages = request.get("messages") or []
        last = messages[-1].get("content") if messages and isinstance(messages[-1], dict) else ""
        arguments = json.dumps(self.answer(name, function.get("parameters") or {}, str(last or "")))
        prompt_chars = sum(len(str(m.get("content") or "")) for m in messages if isinstance(m, dict))
        prompt_chars += len(json.dumps(tools))
        usage = {"prompt_tokens": max(1, prompt_chars // 4), "completion_tokens": max(1, len(arguments) // 4)}
        with self._lock:
            self.requests[name] += 1
            self.prompt_tokens[name] += usage["prompt_tokens"]
            self.completion_tokens[name] += usage["completion_tokens"]
        return {
            "id": f"replay-{sum(self.requests.values())}",
            "object": "chat.completion",
            "model": str(request.get("model") or "replay"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_0",
                                "type": "function",
                                "function": {"name": name, "arguments": arguments},
                            }
                        ],
                    },
                }
            ],
            "usage": {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]},
        }

    # ------------------------------------------------------------ serving
    @property
    def url(self) -> str:
        """The base URL to give the extractor (``openai_base_url``)."""
        if self._server is None:
            raise RuntimeError("the replay model is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self, port: int = 0) -> ReplayModel:
        """Serve on 127.0.0.1 (any free port by default) in a daemon thread."""
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "the body is not JSON"}})
                    return
                self._send(200, model.completion(request if isinstance(request, dict) else {}))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self._server.serve_forever, name="replay-model", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def totals(self) -> dict[str, Any]:
        """Requests and estimated tokens, per tool and in all."""
        with self._lock:
            return {
                "requests": dict(self.requests),
                "promptTokens": dict(self.prompt_tokens),
                "completionTokens": dict(self.completion_tokens),
                "requestsTotal": sum(self.requests.values()),
                "promptTokensTotal": sum(self.prompt_tokens.values()),
                "completionTokensTotal": sum(self.completion_tokens.values()),
            }


#: The replayed profile's most characters: about 200 tokens, under the profile's default 300.
PROFILE_CHARS = 900


def profile_answer(prompt: str) -> dict[str, Any]:
    """A profile as a model bound to ``maxTokens`` writes one: the changed memories first (newest last in the
    prompt, so reversed), then the profile so far, cut at a sentence to ``PROFILE_CHARS``, citing every
    memory it was given. Its size, not its wording, is what the cost figures need."""
    lines = prompt.splitlines()
    so_far = lines[lines.index("Profile so far:") + 1] if "Profile so far:" in lines else ""
    memories = [(line[1 : line.index("]")], line.split("] ", 1)[1]) for line in lines if line.startswith("[mem_")]
    text = " ".join([*(content for _, content in reversed(memories)), "" if so_far == "(none yet)" else so_far])
    if len(text) > PROFILE_CHARS:
        text = text[:PROFILE_CHARS].rsplit(". ", 1)[0] + "."
    return {"profile": [{"text": text.strip() or "Nothing known yet.", "sourceIds": [m for m, _ in memories][:50]}]}


def smoke_request(model: ReplayModel) -> dict[str, Any]:
    """One record_facts call through the real adapter, on the first session of the first conversation."""
    from mnemo.adapters.local.openai_extractor import OpenAICompatibleExtractor
    from mnemo.learning.strategies import FACTS
    from mnemo.learning.transcript import Turn, prompt
    from mnemo.ports import ExtractionTool

    sample = model.samples[0]
    turns = [
        Turn(dia_id, sample.dates[1].isoformat(), "speaker", text)
        for dia_id, text in sample.turns.items()
        if session_of(dia_id) == 1
    ]
    extractor = OpenAICompatibleExtractor(model.url, "replay")
    tool = ExtractionTool(name=FACTS.tool_name, description=FACTS.tool_description, schema=FACTS.schema)
    found = extractor.extract_counted(FACTS.system, prompt(turns), tool)
    return {"answer": found.answer, "inputTokens": found.input_tokens, "outputTokens": found.output_tokens}


def main() -> None:
    """Serve the replay model until interrupted (or, with --smoke, answer one request and stop)."""
    from common import parse_args, smoke, write_results
    from locomo import DEFAULT_PATH, SMOKE_PATH

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="a LoCoMo-format JSON file")
    parser.add_argument("--port", type=int, default=0)
    args = parse_args(parser, {"data": SMOKE_PATH})
    model = ReplayModel(load_samples(args.data)).start(args.port)
    if smoke():
        try:
            answered = smoke_request(model)
        finally:
            model.stop()
        facts = answered["answer"].get("facts", [])
        print(f"replayed {len(facts)} facts for one session of {args.data.name}")
        print(f"wrote {write_results('replay-model', {'data': args.data.name, **answered})}")
        return
    print(f"replaying {args.data} at {model.url} (MNEMO_OPENAI_BASE_URL); Ctrl-C stops", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        model.stop()


if __name__ == "__main__":
    main()
