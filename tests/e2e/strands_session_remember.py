"""Run in the Strands virtual environment by test_client_strands_session.py: a Strands agent that remembers.

Session ``trip-1``: the user says where they moved (with an image); the scripted model stores it with the
memory_add tool, then answers. A new Agent in ``trip-1`` is restored from Mnemo. A new Agent in ``trip-2``
is asked twice; its model sees what memory_context found in its system prompt. An Agent with the hook
alone (no session manager, no system prompt) is asked once.

    python strands_session_remember.py URL   ->  one JSON line of what each agent and model saw
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

from strands import Agent
from strands_session_model import ScriptedModel, text

from mnemo.client import LocalIdentity, MnemoClient
from mnemo.client.strands import MnemoContextHook, MnemoSessionManager, mnemo_tools

SYSTEM = "You are Alice's travel assistant."
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def turns(client: MnemoClient, session: str) -> list[dict[str, Any]]:
    """The conversation turns Mnemo holds for ``session``, oldest first."""
    found = client.call(
        "retrieve_conversation",
        {"query": "Lisbon", "explanation": "what was said", "retrieval_strategy": "recent", "max_results": 50},
    )["data"]["conversations"]
    mine = [c for c in found if (c.get("meta_data") or {}).get("session") == session]
    return [
        {
            "id": c["message_id"],
            "role": c["meta_data"]["mnemo_message"]["role"],
            "text": c.get("user_input") or c.get("agent_response"),
        }
        for c in reversed(mine)
    ]


def main(url: str) -> None:
    client = MnemoClient(url, auth=LocalIdentity(user="alice", project="atlas"))
    remember = {"toolUseId": "t1", "name": "memory_add", "input": {"content": "Alice lives in Lisbon"}}
    first_model = ScriptedModel(
        [
            {"role": "assistant", "content": [{"text": "I'll remember that."}, {"toolUse": remember}]},
            text("Noted: you live in Lisbon now."),
        ]
    )
    with MnemoSessionManager("trip-1", client) as manager:
        first = Agent(
            model=first_model,
            tools=mnemo_tools(client.in_session("trip-1"), names=["memory_add"]),
            session_manager=manager,
            system_prompt=SYSTEM,
            state={"trips": 1},
            callback_handler=None,
        )
        first([{"text": "I moved to Lisbon last month."}, {"image": {"format": "png", "source": {"bytes": PNG}}}])
        waiting = manager.pending_turns()

    restored = Agent(
        model=ScriptedModel([]),
        session_manager=MnemoSessionManager("trip-1", client, context=False),
        callback_handler=None,
    )

    second_model = ScriptedModel([text("You live in Lisbon."), text("Pack light.")])
    second = Agent(
        model=second_model,
        session_manager=MnemoSessionManager("trip-2", client),
        system_prompt=SYSTEM,
        callback_handler=None,
    )
    second("Where do I live now?")
    second("What should I pack?")

    # The hook alone, on an agent without a system prompt of its own, with memories only.
    third_model = ScriptedModel([text("Lisbon.")])
    third = Agent(
        model=third_model,
        hooks=[MnemoContextHook(client.in_session("trip-3"), sections=["memories"])],
        callback_handler=None,
    )
    third("Which city do I live in?")

    print(
        json.dumps(
            {
                "restored_same": restored.messages == first.messages,
                "restored_state": restored.state.get(),
                "blocks": [[sorted(block) for block in message["content"]] for message in restored.messages],
                "image_bytes": restored.messages[0]["content"][1]["image"]["source"]["bytes"] == PNG,
                "tool_result": restored.messages[2]["content"][0]["toolResult"]["status"],
                "first_prompts": first_model.system_prompts,
                "waiting_after_invocation": waiting,
                "second_prompts": second_model.system_prompts,
                "second_prompt_after": second.system_prompt,
                "third_prompts": third_model.system_prompts,
                "third_prompt_after": third.system_prompt,
                "turns_1": turns(client, "trip-1"),
                "turns_2": turns(client, "trip-2"),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
