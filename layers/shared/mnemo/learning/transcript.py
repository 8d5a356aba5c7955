"""The turns a strategy reads, and the transcript its model is shown.

A conversation record (``add_conversation``) is two turns, the user's and the agent's; a message stored by
``add_messages`` is one turn with its role and name; an execution record is one turn of its own. Each turn
keeps the message id it is stored under, so a memory can cite it. The transcript shows one turn a line::

    [<message id>] <ISO 8601 time> <speaker>: <content>

Newlines inside a turn are shown as spaces, so a turn cannot forge the line of another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: A transcript line: the message id, the time, the speaker and the content.
LINE = re.compile(r"^\[(?P<id>[^\]]+)\] (?P<at>\S+) (?P<speaker>[^:]*): (?P<content>.*)$")
#: The most characters of one turn a model is shown: a whole message (add_messages and add_conversation
#: accept 10,000 characters), so no part of a turn is let go unread.
MAX_TURN_CHARS = 10_000


@dataclass(frozen=True)
class Turn:
    """One turn: the message id it is stored under, when it was said, who said it, and what."""

    message_id: str
    at: str
    speaker: str
    content: str
    #: "conversation" or "execution".
    kind: str = "conversation"
    role: str = "user"


def _flat(text: str) -> str:
    return " ".join(text.split())[:MAX_TURN_CHARS]


def _speaker(value: str) -> str:
    # The speaker is shown before a colon; one in a name would shift where the content starts.
    return _flat(value).replace(":", " ").replace("[", "(").replace("]", ")") or "unknown"


def conversation_turns(record: dict[str, Any]) -> list[Turn]:
    """The turns of one stored conversation record: a message from add_messages is one turn (its role and
    name in ``meta_data``), a pair from add_conversation is the user's turn and then the agent's."""
    meta = record.get("meta_data") or {}
    message_id, at = record["message_id"], record["timestamp"]
    message = meta.get("mnemo_message") if isinstance(meta, dict) else None
    if isinstance(message, dict):
        role = str(message.get("role") or "user")
        content = record.get("user_input") or record.get("agent_response") or ""
        speaker = str(message.get("name") or role)
        return [Turn(message_id, at, speaker, content, role=role)]
    turns = []
    if record.get("user_input"):
        turns.append(Turn(message_id, at, "user", record["user_input"], role="user"))
    if record.get("agent_response"):
        turns.append(Turn(message_id, at, "assistant", record["agent_response"], role="assistant"))
    return turns


def execution_turn(record: dict[str, Any]) -> Turn:
    """An execution record as one turn: its outcome, summary, tools, errors and observations."""
    errors = "; ".join(
        f"{error.get('error_type', 'error')}: {error.get('error_message', '')}" for error in record.get("errors") or []
    )
    parts = [
        f"{'succeeded' if record.get('success') else 'failed'}: {record.get('execution_summary', '')}",
        f"tools: {', '.join(record.get('tools_used') or []) or 'none'}",
    ]
    if errors:
        parts.append(f"errors: {errors}")
    if record.get("observations"):
        parts.append(f"observations: {record['observations']}")
    return Turn(record["message_id"], record["timestamp"], "execution", " | ".join(parts), kind="execution")


def transcript(turns: list[Turn]) -> str:
    """The turns as the model is shown them, one line each, oldest first."""
    return "\n".join(f"[{turn.message_id}] {turn.at} {_speaker(turn.speaker)}: {_flat(turn.content)}" for turn in turns)


def prompt(turns: list[Turn], *, previous_summary: str | None = None, extra_keys: tuple[str, ...] = ()) -> str:
    """The user message of a strategy's model call: the reference time, the summary so far, the transcript."""
    reference = turns[-1].at if turns else ""
    text = f"Reference time (the last turn): {reference}\n"
    if previous_summary:
        text += f"\nSummary so far:\n{_flat(previous_summary)}\n"
    if extra_keys:
        text += f"\nAlso fill metadata with these keys when the turns say: {', '.join(extra_keys)}\n"
    text += "\nTranscript (oldest first):\n" + transcript(turns)
    return text
