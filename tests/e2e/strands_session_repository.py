"""Run in the Strands virtual environment by test_client_strands_session.py: behaviour checks adapted from
Strands' own tests of its repository and file session managers (tests/strands/session/ in
strands-agents/sdk-python), run against MnemoSessionManager over a real server. Each check records what it
observed; the test asserts on it.

    python strands_session_repository.py URL   ->  one JSON line: check name -> observation
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from strands import Agent
from strands.agent.conversation_manager.null_conversation_manager import NullConversationManager
from strands.agent.conversation_manager.sliding_window_conversation_manager import SlidingWindowConversationManager
from strands.agent.conversation_manager.summarizing_conversation_manager import SummarizingConversationManager
from strands.interrupt import _InterruptState
from strands.multiagent import Swarm
from strands.types.session import Session, SessionAgent, SessionMessage, SessionType
from strands_session_model import ScriptedModel, text

from mnemo.client import ApiKey, LocalIdentity, MnemoClient
from mnemo.client.strands import MnemoSessionManager
from mnemo.client.strands_session import own_workspace, session_folder


def raised(action: Callable[[], Any]) -> str | None:
    """``ExceptionClass: message`` of what ``action`` raised, or None."""
    try:
        action()
    except Exception as error:  # the check records which exception, whatever it is
        return f"{type(error).__name__}: {error}"
    return None


def message(words: str, index: int) -> SessionMessage:
    return SessionMessage.from_message({"role": "user", "content": [{"text": words}]}, index)


def sample_agent(agent_id: str = "test-agent") -> SessionAgent:
    return SessionAgent(
        agent_id=agent_id, state={"key": "value"}, conversation_manager_state=NullConversationManager().get_state()
    )


def main(url: str) -> None:
    client = MnemoClient(url, auth=LocalIdentity(user="carol", project="atlas"))
    seen: dict[str, Any] = {}

    # test_init_creates_session_if_not_exists / test_init_uses_existing_session
    manager = MnemoSessionManager("test", client, context=False)
    seen["created"] = manager.read_session("test").to_dict() == manager.session.to_dict()
    seen["created_type"] = manager.read_session("test").session_type == SessionType.AGENT
    again = MnemoSessionManager("test", client, context=False)
    seen["existing_reused"] = again.session.to_dict() == manager.session.to_dict()

    # test_create_session / test_read_session / test_read_nonexistent_session / creating one twice
    repo = manager
    sample = Session(session_id="test-session", session_type=SessionType.AGENT)
    repo.create_session(sample)
    seen["read_session"] = repo.read_session("test-session").to_dict() == sample.to_dict()
    seen["read_missing_session"] = repo.read_session("nonexistent-session")
    seen["create_session_twice"] = raised(lambda: repo.create_session(Session("test-session", SessionType.AGENT)))

    # test_create_agent / test_read_agent / test_read_nonexistent_agent / test_update_agent(_nonexistent)
    agent = sample_agent()
    repo.create_agent("test-session", agent)
    read = repo.read_agent("test-session", "test-agent")
    seen["read_agent"] = read.to_dict() == agent.to_dict()
    seen["read_missing_agent"] = repo.read_agent("test-session", "nonexistent_agent")
    agent.state = {"updated": "value"}
    created_at = agent.created_at
    agent.created_at = "2000-01-01T00:00:00+00:00"
    repo.update_agent("test-session", agent)
    updated = repo.read_agent("test-session", "test-agent")
    seen["updated_agent"] = [updated.state, updated.created_at == created_at]
    seen["update_missing_agent"] = raised(lambda: repo.update_agent("test-session", sample_agent("ghost")))
    # Another manager changes the agent: this one's next update is refused, not written over the change.
    other = MnemoSessionManager("test", client, context=False)
    other.read_agent("test-session", "test-agent")
    other.update_agent("test-session", sample_agent())
    seen["update_over_a_change"] = raised(lambda: repo.update_agent("test-session", agent))

    # test_create_message / test_read_message / test_list_messages_* / test_update_message(_nonexistent)
    for index in range(10):
        repo.create_message("test-session", "test-agent", message(f"Message {index}", index))
    seen["read_message"] = repo.read_message("test-session", "test-agent", 1).message["content"][0]["text"]
    seen["read_missing_message"] = repo.read_message("test-session", "test-agent", 999)
    listed = repo.list_messages("test-session", "test-agent")
    seen["list_all"] = [m.message_id for m in listed]
    seen["list_limit"] = [m.message_id for m in repo.list_messages("test-session", "test-agent", limit=3)]
    seen["list_offset"] = [m.message_id for m in repo.list_messages("test-session", "test-agent", offset=5)]
    seen["list_window"] = [m.message_id for m in repo.list_messages("test-session", "test-agent", 2, 4)]
    repo.create_agent("test-session", sample_agent("new-agent"))
    seen["list_new_agent"] = repo.list_messages("test-session", "new-agent")
    seen["create_message_twice"] = raised(
        lambda: repo.create_message("test-session", "test-agent", message("Another", 0))
    )
    first = listed[0]
    first.message["content"] = [{"text": "Updated content"}]
    repo.update_message("test-session", "test-agent", first)
    seen["updated_message"] = repo.read_message("test-session", "test-agent", 0).message["content"][0]["text"]
    seen["update_missing_message"] = raised(
        lambda: repo.update_message("test-session", "test-agent", message("Nobody", 500))
    )
    seen["invalid_message_id"] = raised(lambda: repo.read_message("test-session", "test-agent", "x"))  # type: ignore[arg-type]

    # test_delete_session / test_delete_nonexistent_session
    repo.delete_session("test-session")
    seen["deleted"] = [repo.read_session("test-session"), repo.list_messages("test-session", "test-agent")]
    seen["delete_missing"] = raised(lambda: repo.delete_session("nonexistent-session"))

    # test_corrupted_json_file: a record that is not JSON is a SessionException
    repo.create_session(Session("broken", SessionType.AGENT))
    files = own_workspace(client)
    path = f"{session_folder('broken')}/session.json"
    files.call("file_write", {"path": path, "content": "{ not json"})
    seen["corrupted"] = raised(lambda: repo.read_session("broken"))

    # Ids that are not path segments: still one session each, and the records tell the ids back.
    for odd in ("chat:42/a", "..", "chat:42/b"):
        MnemoSessionManager(odd, client, context=False)
    seen["odd_ids"] = [repo.read_session(odd).session_id for odd in ("chat:42/a", "..", "chat:42/b")]

    # test_initialize_multiple_agents_without_id: agent ids are unique in a session
    unique = MnemoSessionManager("unique", client, context=False)
    Agent(agent_id="custom-agent", session_manager=unique, callback_handler=None)
    seen["same_agent_id"] = raised(
        lambda: Agent(agent_id="custom-agent", session_manager=unique, callback_handler=None)
    )

    # test_initialize_restores_existing_agent: state and interrupt state come back
    repo.create_session(Session("existing", SessionType.AGENT))
    repo.create_agent(
        "existing",
        SessionAgent(
            agent_id="existing-agent",
            state={"key": "value"},
            conversation_manager_state=NullConversationManager().get_state(),
            _internal_state={"interrupt_state": {"interrupts": {}, "context": {"test": "init"}, "activated": False}},
        ),
    )
    repo.create_message("existing", "existing-agent", message("Hello", 0))
    restored = Agent(
        agent_id="existing-agent",
        session_manager=MnemoSessionManager("existing", client, context=False),
        conversation_manager=NullConversationManager(),
        callback_handler=None,
    )
    seen["restored"] = [
        restored.state.get("key"),
        [m["content"][0]["text"] for m in restored.messages],
        restored._interrupt_state == _InterruptState(interrupts={}, context={"test": "init"}, activated=False),
    ]

    # test_initialize_restores_existing_agent_with_summarizing_conversation_manager: the offset is honoured
    summarizing = SummarizingConversationManager()
    summarizing.removed_message_count = 1
    summarizing._summary_message = {"role": "assistant", "content": [{"text": "summary"}]}
    repo.create_session(Session("summarized", SessionType.AGENT))
    repo.create_agent(
        "summarized",
        SessionAgent(agent_id="existing-agent", state={}, conversation_manager_state=summarizing.get_state()),
    )
    repo.create_message("summarized", "existing-agent", message("Dropped", 0))
    repo.create_message("summarized", "existing-agent", message("Hello", 1))
    resumed = Agent(
        agent_id="existing-agent",
        session_manager=MnemoSessionManager("summarized", client, context=False),
        conversation_manager=SummarizingConversationManager(),
        callback_handler=None,
    )
    seen["summarized"] = [[m["role"], m["content"][0]["text"]] for m in resumed.messages]

    # test_fix_broken_tool_use_adds_missing_tool_results: an orphaned tool use gets its error result
    repo.create_session(Session("broken-tools", SessionType.AGENT))
    sliding = SlidingWindowConversationManager().get_state()
    repo.create_agent(
        "broken-tools", SessionAgent(agent_id="existing-agent", state={}, conversation_manager_state=sliding)
    )
    orphan = {"toolUse": {"toolUseId": "orphaned-123", "name": "test_tool", "input": {"input": "test"}}}
    for index, broken in enumerate(
        [{"role": "assistant", "content": [orphan]}, {"role": "user", "content": [{"text": "Some other message"}]}]
    ):
        repo.create_message("broken-tools", "existing-agent", SessionMessage(message=broken, message_id=index))
    fixed = Agent(
        agent_id="existing-agent",
        session_manager=MnemoSessionManager("broken-tools", client, context=False),
        callback_handler=None,
    )
    seen["fixed_tool_use"] = [sorted(block) for m in fixed.messages for block in m["content"]]
    seen["fixed_result"] = fixed.messages[1]["content"][0]["toolResult"]["status"]

    # A Swarm's state is kept and updated after its run (create/read/update_multi_agent).
    swarm_manager = MnemoSessionManager("swarm", client, context=False)
    swarm = Swarm(
        [Agent(name="solo", model=ScriptedModel([text("Done.")]), callback_handler=None)],
        session_manager=swarm_manager,
    )
    swarm("Say done.")
    state = swarm_manager.read_multi_agent("swarm", swarm.id)
    seen["swarm"] = [state["status"], state["node_history"]]

    # A guardrail redacts the user's message within the invocation: the record and the turn hold the redaction.
    guarded = Agent(
        model=ScriptedModel([{"redactedUserContent": "[redacted]", "redactedAssistantContent": "Blocked."}]),
        session_manager=MnemoSessionManager("guarded", client, context=False),
        callback_handler=None,
    )
    guarded("My card is 4111 1111 1111 1111.")
    record = repo.read_message("guarded", "default", 0)
    seen["redacted_record"] = [record.message["content"][0]["text"], record.to_message()["content"][0]["text"]]
    said = client.call(
        "retrieve_conversation",
        {"query": "card", "explanation": "what was said", "retrieval_strategy": "recent", "max_results": 50},
    )["data"]["conversations"]
    seen["redacted_turns"] = sorted(
        c.get("user_input") or c.get("agent_response")
        for c in said
        if (c.get("meta_data") or {}).get("session") == "guarded"
    )

    # Errors: an unreachable service is a SessionException; a credential that fixes its session is refused.
    down = MnemoClient("http://127.0.0.1:9", auth=LocalIdentity(user="carol"), retries=0)
    seen["unreachable"] = raised(lambda: MnemoSessionManager("s", down, context=False))
    seen["api_key"] = raised(lambda: MnemoSessionManager("s", MnemoClient(url, auth=ApiKey("k")), context=False))
    print(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv[1])
