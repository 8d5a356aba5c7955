"""A consolidation state machine: sequences of batches of scripted model output, checked after every step.

Each step is one batch of turns with what the scripted model proposes for each turn: a subject from a small
pool, stated in one of a few wordings (a repeat, an echo of the turn before, a paraphrase), changed to
another value, retracted, sometimes dated in the past ("in 2020 ..."), at turn times drawn out of order
(a backfill). Other steps resend a batch's turns (add_messages finds them stored) or redeliver one (its turns
waiting again, as after a crash before they were settled; the model words it anew). It runs with the judge off,
and on with a scripted judge that answers any valid decision (update, same, merge with a wording of its own).

After every step the stored memories are checked against a plain reference model kept here, the statements
made per subject (docs/extraction.md, "Consolidation"):

1. a subject that was ever stated has exactly one current memory, and it stands for the latest statement
   (by time, not arrival): it cites a turn of that time;
2. its wording is one that was stated, or one the judge merged;
3. a superseded memory names its successor, which exists and is about the same subject;
4. nothing is ever deleted;
5. a resend or a redelivery changes nothing that is current.

On the embedded default and on DynamoDB (moto).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from mnemo.learning import ledger
from mnemo.learning.service import stream_of
from mnemo.memory.extracted import subject_key
from mnemo.memory.records import RECORD, partition_of
from mnemo.ports import Item, Put
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool
from tests.support.aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server
from tests.support.helpers import ctx
from tests.support.scripted_model import ScriptedModel

ALICE = ctx("alice", session="s1")
SUBJECTS = ("Alice's employer", "Alice's diet", "Alice's home city")
VALUES = {
    "Alice's employer": ("Acme", "Globex", "Initech"),
    "Alice's diet": ("vegetarian", "vegan", "pescatarian"),
    "Alice's home city": ("Lisbon", "Porto", "Oslo"),
}
WORDINGS = ("{subject} is {value}.", "As for {subject}: {value}, she said.", "{value} is what {subject} is now.")
BASE = datetime(2025, 1, 1, tzinfo=UTC)
_tables = itertools.count()

#: One statement: (subject, text, explicit occurredAt or None).
Statement = tuple[str, str, str | None]

statements = st.builds(
    lambda subject, value, wording, retract, past: (
        subject,
        f"Alice no longer has {subject} set to {VALUES[subject][value]}."
        if retract
        else WORDINGS[wording].format(subject=subject, value=VALUES[subject][value]),
        (BASE - timedelta(days=400 + 30 * past)).isoformat().replace("+00:00", "Z") if past is not None else None,
    ),
    st.sampled_from(SUBJECTS),
    st.integers(0, 2),
    st.integers(0, 2),
    st.sampled_from([False, False, False, True]),
    st.none() | st.none() | st.integers(0, 3),
)
#: One turn: its hour offset from BASE (out of order) and what the model proposes for it (0 to 2 statements,
#: the second often an echo of the first).
turn_outputs = st.tuples(st.integers(0, 48), st.lists(statements, max_size=2))


class ConsolidationMachine(RuleBasedStateMachine):
    """See the module docstring. ``backend`` and ``judge`` are set by each test."""

    backend = "embedded"
    judge = False
    #: The facts strategy's expiresAfterDays (None: never).
    expires: float | None = None
    tmp: Path
    #: One model server for every example of a test (a server's shutdown alone takes a quarter of a second).
    model: ScriptedModel

    def __init__(self) -> None:
        super().__init__()
        self.outputs: dict[str, list[Statement]] = {}
        self.times: dict[str, str] = {}
        self.batches: list[list[str]] = []
        self.stated: dict[str, list[tuple[str, float]]] = {}  # subject key -> (message id, time) statements
        self.texts: dict[str, set[str]] = {}
        self.seen_ids: set[str] = set()
        self.merged: set[str] = set()
        self.rng = random.Random(0)
        self.rewording = False
        self.count = itertools.count()

    @initialize(seed=st.integers(0, 2**16))
    def start(self, seed: int) -> None:
        self.rng.seed(seed)
        self.model.script = self.answer
        values: dict[str, Any] = {
            "openai_base_url": self.model.url,
            "extraction_strategies": ("facts",),
            "extraction_judge": self.judge,
        }
        if self.expires is not None:
            values["extraction_config"] = {"facts": {"expiresAfterDays": self.expires}}
        folder = self.tmp / f"run{next(_tables)}"
        folder.mkdir()
        if self.backend == "dynamodb":
            server = shared_moto_server()
            table = f"consolidation-{next(_tables)}"
            create_records_table(server.client("dynamodb"), table, stream=False)
            self.services = Services(dynamodb_settings(server, table, folder, **values))
        else:
            self.services = Services(Settings(data_dir=folder, embedder="hashing", **values))

    # -------------------------------------------------------------- the model
    def answer(self, tool: str, request: dict[str, Any], ids: list[str]) -> dict[str, Any] | None:
        if tool == "record_facts":
            facts = []
            for message_id in ids:
                for subject, said, occurred in self.outputs.get(message_id, []):
                    # Asked again (a redelivery), a model words it anew.
                    text = f"{said[:-1]}, as she put it." if self.rewording else said
                    self.texts.setdefault(subject_key(subject), set()).add(text)
                    fact: dict[str, Any] = {"text": text, "subject": subject, "sourceIds": [message_id]}
                    if occurred:
                        fact["occurredAt"] = occurred
                    facts.append(fact)
            return {"facts": facts}
        if tool == "decide_updates":
            pairs = request["messages"][-1]["content"].count("\n  newer: ")
            decisions = []
            for pair in range(pairs):
                choice = self.rng.choice(["update", "same", "merge"])
                decision: dict[str, Any] = {"pair": pair, "decision": choice}
                if choice == "merge":
                    decision["text"] = f"Merged statement number {next(self.count)} of the judge."
                    self.merged.add(decision["text"])
                decisions.append(decision)
            return {"decisions": decisions}
        return None

    # ------------------------------------------------------------- the steps
    def call(self, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
        return get_tool(tool).invoke(self.services, ALICE, payload)

    @rule(turns=st.lists(turn_outputs, min_size=1, max_size=3), echo=st.booleans())
    def say(self, turns: list[tuple[int, list[Statement]]], echo: bool) -> None:
        ids = []
        messages = []
        for hours, said in turns:
            message_id = f"m{len(self.outputs)}"
            if echo and ids and self.outputs[ids[-1]]:
                said = [*said, self.outputs[ids[-1]][0]]  # the assistant's echo of the turn before
            self.outputs[message_id] = said
            at = (BASE + timedelta(hours=hours)).isoformat().replace("+00:00", "Z")
            self.times[message_id] = at
            ids.append(message_id)
            messages.append({"id": message_id, "role": "user", "content": f"turn {message_id}", "at": at})
            for subject, text, occurred in said:
                key = subject_key(subject)
                self.stated.setdefault(key, []).append(
                    (message_id, datetime.fromisoformat((occurred or at).replace("Z", "+00:00")).timestamp())
                )
                self.texts.setdefault(key, set()).add(text)
        self.batches.append(ids)
        self.call("add_messages", {"messages": messages})
        run = self.call("memory_extract", {})
        assert run["pendingTurns"] == 0
        failures = [part["failure"] for part in (run["run"] or {}).get("strategies", []) if part["failure"]]
        assert not failures, failures

    @rule(data=st.data())
    def resend(self, data: st.DataObject) -> None:
        if not self.batches:
            return
        ids = data.draw(st.sampled_from(self.batches))
        before = self.current_ids()
        messages = [{"id": i, "role": "user", "content": f"turn {i}", "at": self.times[i]} for i in ids]
        assert self.call("add_messages", {"messages": messages})["repeated"] == len(ids)
        assert self.call("memory_extract", {})["run"] is None
        assert self.current_ids() == before

    @rule(data=st.data())
    def redeliver(self, data: st.DataObject) -> None:
        """A batch's turns waiting again, as after a crash between writing its memories and settling its turns."""
        if not self.batches:
            return
        ids = data.draw(st.sampled_from(self.batches))
        before = self.current_ids()
        stream = stream_of(ALICE)
        markers = [
            ledger.turn_marker(
                stream,
                self.times[i],
                self.times[i],
                "conversation",
                i,
                ALICE.scope_key("user"),
                {"tenant": ALICE.tenant, "user": "alice", "session": "s1"},
            )
            for i in ids
        ]
        self.services.records.write([Put(m.item) for m in markers])
        self.rewording = True
        try:
            run = self.call("memory_extract", {})["run"]
        finally:
            self.rewording = False
        assert run is not None and sorted(run["turns"]) == sorted(ids), "the batch was read again"
        assert self.current_ids() == before, "a redelivered batch changed what is current"

    # ------------------------------------------------------------ the checks
    def memories(self) -> list[dict[str, Any]]:
        items: list[Item] = self.services.records.query(partition_of(ALICE.scope_key("user")), RECORD, limit=10_000)
        return [item.data for item in items]

    def current_ids(self) -> dict[str, str]:
        return {m["metadata"]["subjectKey"]: m["memoryId"] for m in self.memories() if not m.get("supersededBy")}

    @invariant()
    def one_current_memory_per_subject_standing_for_the_latest_statement(self) -> None:
        if not hasattr(self, "services"):
            return
        memories = self.memories()
        by_id = {m["memoryId"]: m for m in memories}
        assert self.seen_ids <= set(by_id), f"deleted: {self.seen_ids - set(by_id)}"
        self.seen_ids |= set(by_id)
        current: dict[str, list[dict[str, Any]]] = {}
        for memory in memories:
            key = memory["metadata"]["subjectKey"]
            successor = memory.get("supersededBy")
            if successor:
                assert successor in by_id, f"{memory['memoryId']} names a successor that is gone"
                assert by_id[successor]["metadata"]["subjectKey"] == key, "superseded by another subject"
            else:
                current.setdefault(key, []).append(memory)
        assert set(current) == set(self.stated), (sorted(current), sorted(self.stated))
        for key, standing in current.items():
            assert len(standing) == 1, f"{key}: {[m['content'] for m in standing]}"
            (memory,) = standing
            latest = max(at for _, at in self.stated[key])
            newest_turns = {message_id for message_id, at in self.stated[key] if at == latest}
            cited = set(memory["metadata"]["provenance"]["messageIds"])
            assert cited & newest_turns, f"{key}: {memory['content']!r} cites {cited}, not the latest {newest_turns}"
            assert memory["content"] in self.texts[key] | self.merged


def _run(tmp_path: Path, backend: str, judge: bool, examples: int, expires: float | None = None) -> None:
    model = ScriptedModel()
    fields = {"backend": backend, "judge": judge, "tmp": tmp_path, "model": model, "expires": expires}
    machine = type(f"{backend}_{judge}", (ConsolidationMachine,), fields)
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=examples,
                stateful_step_count=8,
                derandomize=True,
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                print_blob=False,
            ),
        )
    finally:
        model.close()


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    yield


@pytest.mark.parametrize("judge", [False, True], ids=["judge-off", "judge-on"])
def test_consolidation_holds_its_invariants_on_the_embedded_default(tmp_path: Path, judge: bool) -> None:
    _run(tmp_path, "embedded", judge, examples=100)


def test_consolidation_holds_its_invariants_when_extracted_memories_expire(tmp_path: Path) -> None:
    """With ``expiresAfterDays`` the memories carry an expiry, which the keep and supersede rules weigh (a stored
    memory stands for a new one only if it lives as long), while a redelivery, reworded, must still change
    nothing current."""
    _run(tmp_path, "embedded", True, examples=60, expires=30)


@pytest.mark.parametrize("judge", [False, True], ids=["judge-off", "judge-on"])
def test_consolidation_holds_its_invariants_on_dynamodb(tmp_path: Path, judge: bool, aws_credentials: None) -> None:
    _run(tmp_path, "dynamodb", judge, examples=20)
