"""A Strands ``SessionManager`` backed by Mnemo: the agent's exact records in files, its words as turns.

    from strands import Agent
    from mnemo.client import LocalIdentity, MnemoClient
    from mnemo.client.strands import MnemoSessionManager
    client = MnemoClient(url, auth=LocalIdentity(user="alice", project="atlas"))
    agent = Agent(model=model, session_manager=MnemoSessionManager("chat-42", client))

``MnemoSessionManager`` is Strands' ``RepositorySessionManager`` over a ``SessionRepository`` of its own, as
AgentCore Memory's ``AgentCoreMemorySessionManager`` is. What it keeps, and where:

- **The exact records** (the session, each agent's state and conversation-manager state, every message with
  its tool uses, tool results and bytes) are JSON files of the user's own workspace, written and read through
  the file tools, one file per record as Strands' ``FileSessionManager`` lays them out::

      .strands/sessions/<session>/session.json
      .strands/sessions/<session>/agents/<agent>/agent.json
      .strands/sessions/<session>/agents/<agent>/messages/0000000000.json   (the message's index)
      .strands/sessions/<session>/multi_agents/<id>.json

  The workspace is the user's own (the client's identity without its project: ``mnemo.files.scopes`` gives a
  caller without a project the user's personal workspace), so a project's other members never read a user's
  transcripts, no writer role is needed, and nothing is embedded or indexed (a block would be). An id that is
  not a plain path segment (``chat:42``, ``a/b``, ``..``) is stored under ``~`` and its hash.
- **The conversation** (the text of each user and assistant message) goes to ``add_messages`` as turns of the
  Mnemo session named ``session_id`` (``client.in_session(session_id)``), so that extraction learns from it
  and ``memory_context`` and ``memory_search`` find it. Tool uses, tool results, images and reasoning are not
  words anyone said and stay in the exact records only. A message's turns wait until the end of the
  invocation (``AfterInvocationEvent``), then go in one call: a guardrail's redaction within the invocation
  (``redact_latest_message``) replaces the words before they are stored. ``flush()`` sends them at once.

Identity: the user, tenant and roles are the client's; the Mnemo session is ``session_id``; a Strands
``agent_id`` names an agent's records inside the session and nothing else; the identity's ``agent`` (the
``agent`` memory layer) is the client's own, so build the client with ``agent=...`` to have one.

Nothing is stored twice when a call is repeated. Every write names the version it expects (0 for a new
record): a repeat of a write that landed answers CONFLICT, the record is read back, and the same content
means the write was this one. Turns carry ids derived from the session, the agent, the message's index and
its creation time, so ``add_messages`` stores a resent turn once. A call whose outcome is unknown (a 504 or
502, no answer in time) is sent again here, twice at most, since both kinds of write are safe to repeat.
A record changed by another writer since this manager read it is a ``SessionException``, never overwritten.

Errors: a failed call surfaces as Strands' ``SessionException`` naming the record and the service's error
code (the ``MnemoClientError`` as its cause); an unreadable record (not the JSON of a Strands record) too.
Needs ``strands-agents`` (the ``strands`` extra) and a ``MnemoClient`` whose identity names its session per
call (``LocalIdentity``, or a delegate's ``on_behalf_of``).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import re
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from strands.hooks import AfterInvocationEvent
from strands.session.repository_session_manager import RepositorySessionManager
from strands.session.session_repository import SessionRepository
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage

from mnemo.client import MnemoClient
from mnemo.client.errors import ConflictError, MnemoClientError, NotFoundError
from mnemo.client.repeat import outcome_unknown
from mnemo.client.strands import MnemoContextHook, message_text
from mnemo.client.transport import LocalIdentity

logger = logging.getLogger(__name__)

ROOT = ".strands/sessions"
#: add_messages' limits: messages per call, characters per message (a longer text goes as several turns).
MAX_TURNS_PER_CALL = 100
MAX_TURN_CHARS = 10_000
#: Times a write whose outcome is unknown is sent again.
REPEATS = 2
#: Messages read side by side when an agent is restored.
READERS = 8
#: A path segment kept as it is: what mnemo.files.paths accepts, minus '~' (which marks a hashed id).
_PLAIN = re.compile(r"[A-Za-z0-9_=,+@-][A-Za-z0-9._=,+@-]{0,199}")
_MESSAGE_FILE = re.compile(r"(\d{10,})\.json")


def segment(record_id: str) -> str:
    """``record_id`` as one path segment: itself when it is plain, else ``~`` and its SHA-256 (40 hex)."""
    if not isinstance(record_id, str) or not record_id:
        raise ValueError(f"id=<{record_id!r}> | a session, agent or multi-agent id is a non-empty string")
    if _PLAIN.fullmatch(record_id):
        return record_id
    return "~" + hashlib.sha256(record_id.encode()).hexdigest()[:40]


def session_folder(session_id: str) -> str:
    return f"{ROOT}/{segment(session_id)}"


def agent_folder(session_id: str, agent_id: str) -> str:
    return f"{session_folder(session_id)}/agents/{segment(agent_id)}"


def message_path(session_id: str, agent_id: str, message_id: int) -> str:
    if not isinstance(message_id, int) or isinstance(message_id, bool) or message_id < 0:
        raise ValueError(f"message_id=<{message_id}> | message id must be a non-negative integer")
    return f"{agent_folder(session_id, agent_id)}/messages/{message_id:010d}.json"


def turn_id(session_id: str, agent_id: str, message_id: int, created_at: str) -> str:
    """The add_messages id of a message's (first) turn: stable across repeats, new for a recreated session."""
    key = "\n".join([session_id, agent_id, str(message_id), created_at])
    return "strands:" + hashlib.sha256(key.encode()).hexdigest()[:32]


def own_workspace(client: MnemoClient) -> MnemoClient:
    """``client`` without its project: the file tools' workspace is then the user's own."""
    transport = client.transport
    view = copy.copy(client)
    if transport.delegation is not None:
        if transport.delegation.project is None:
            return client
        delegation = dataclasses.replace(transport.delegation, project=None)
        view.transport = dataclasses.replace(transport, delegation=delegation)
    elif isinstance(transport.auth, LocalIdentity):
        if transport.auth.project is None:
            return client
        view.transport = dataclasses.replace(transport, auth=dataclasses.replace(transport.auth, project=None))
    else:
        raise ValueError(
            "MnemoSessionManager needs an identity that names its session per call (LocalIdentity, or a "
            "delegate's on_behalf_of)"
        )
    return view


def _dump(record: dict[str, Any]) -> str:
    # ASCII only: no character of the text can break a line, so the lines file_read pages by are JSON's own.
    return json.dumps(record, indent=1, ensure_ascii=True)


def _unknown(error: MnemoClientError) -> bool:
    """Whether the call may have run although it failed (mnemo.client.repeat)."""
    return outcome_unknown(error.code, error.status, error.details)


@contextmanager
def _surfaced(what: str) -> Iterator[None]:
    """A client error as Strands' SessionException, naming what failed."""
    try:
        yield
    except MnemoClientError as error:
        raise SessionException(f"{what} failed: {error.code}: {error.message}") from error


@dataclass(frozen=True)
class _Turn:
    base: str
    id: str
    role: str
    content: str
    at: str


def _turns(base: str, message: dict[str, Any], at: str) -> list[_Turn]:
    """What add_messages is given for a message: its text, in pieces of at most 10,000 characters."""
    role = message.get("role")
    text = message_text(message)
    if role not in ("user", "assistant") or not text.strip():
        return []
    pieces = [text[start : start + MAX_TURN_CHARS] for start in range(0, len(text), MAX_TURN_CHARS)]
    return [
        _Turn(base, base if n == 0 else f"{base}.{n + 1}", role, piece, at)
        for n, piece in enumerate(pieces)
        if piece.strip()
    ]


class MnemoSessionManager(RepositorySessionManager, SessionRepository):
    """Strands session persistence in Mnemo (see the module): ``Agent(session_manager=...)``.

    ``context`` (default on) also registers a ``MnemoContextHook`` on the session's client with ``budget``
    and ``sections``, so each invocation's system prompt carries ``memory_context``; ``context=False`` keeps
    the prompt as it is. The session is created when it does not exist yet, as Strands' managers do.
    """

    def __init__(
        self,
        session_id: str,
        client: MnemoClient,
        *,
        context: bool = True,
        budget: int = 1500,
        sections: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(client, MnemoClient):
            raise TypeError(f"MnemoSessionManager takes a MnemoClient, not {type(client).__name__}")
        self.client = client
        self._files = own_workspace(client)
        self._clients: dict[str, MnemoClient] = {}
        self._lock = threading.Lock()
        #: Turns waiting for the end of the invocation, by session, oldest first.
        self._pending: dict[str, list[_Turn]] = {}
        #: Agent records: the version this manager last wrote or read, and their creation time.
        self._agents: dict[str, tuple[int, str]] = {}
        self.context_hook = (
            MnemoContextHook(self.client_for(session_id), budget=budget, sections=sections) if context else None
        )
        super().__init__(session_id=session_id, session_repository=self, **kwargs)

    def client_for(self, session_id: str) -> MnemoClient:
        """The client whose calls name the Mnemo session ``session_id``."""
        with self._lock:
            found = self._clients.get(session_id)
        if found is None:
            found = self.client.in_session(session_id)
            with self._lock:
                self._clients[session_id] = found
        return found

    def register_hooks(self, registry: Any, **kwargs: Any) -> None:
        super().register_hooks(registry, **kwargs)
        registry.add_callback(AfterInvocationEvent, lambda event: self.flush())
        if self.context_hook is not None:
            self.context_hook.register_hooks(registry)

    # ------------------------------------------------------------------ files
    def _read(self, path: str) -> tuple[dict[str, Any], int] | None:
        """The record at ``path`` and its version, or None; every page read at the first page's version."""
        pages: list[str] = []
        body: dict[str, Any] = {"path": path, "offset": 0, "limit": 10_000}
        while True:
            try:
                page = self._files.call("file_read", body)
            except NotFoundError:
                return None
            pages.append(page["content"])
            body["version"] = page["version"]
            if not page.get("hasMore"):
                break
            body["offset"] = page["nextOffset"]
        try:
            record = json.loads("".join(pages))
        except ValueError as error:
            raise SessionException(f"{path} is not the JSON of a Strands record: {error}") from None
        if not isinstance(record, dict):
            raise SessionException(f"{path} is not the JSON of a Strands record")
        return record, int(body["version"])

    def _write(self, path: str, text: str, expected: int) -> int:
        """Write ``text`` over version ``expected`` (0: a new file); the version written. ConflictError when
        the file has moved on to other content; a repeat of this very write answers its version."""
        attempt = 0
        while True:
            try:
                written = self._files.call("file_write", {"path": path, "content": text, "expectedVersion": expected})
                return int(written["version"])
            except ConflictError:
                found = self._read(path)
                if found is not None and _dump(found[0]) == text:
                    return found[1]
                raise
            except MnemoClientError as error:
                if not _unknown(error) or attempt >= REPEATS:
                    raise
                attempt += 1

    def _names(self, folder: str) -> list[str]:
        """The paths of every file under ``folder`` (a listing: a file written this second may be missing)."""
        names: list[str] = []
        body: dict[str, Any] = {"path": folder, "limit": 1000}
        while True:
            page = self._files.call("file_list", body)
            names += [entry["path"] for entry in page.get("entries", [])]
            if not page.get("hasMore") or not page.get("nextCursor"):
                return names
            body["cursor"] = page["nextCursor"]

    def _parsed(self, what: str, parse: Any, record: dict[str, Any]) -> Any:
        try:
            return parse(record)
        except (TypeError, ValueError, KeyError) as error:
            raise SessionException(f"{what} is not a Strands record: {error}") from None

    # --------------------------------------------------------------- sessions
    def create_session(self, session: Session, **kwargs: Any) -> Session:
        path = f"{session_folder(session.session_id)}/session.json"
        with _surfaced(f"Creating session {session.session_id}"):
            try:
                self._write(path, _dump(session.to_dict()), 0)
            except ConflictError:
                raise SessionException(f"Session {session.session_id} already exists") from None
        return session

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        with _surfaced(f"Reading session {session_id}"):
            found = self._read(f"{session_folder(session_id)}/session.json")
        return None if found is None else self._parsed(f"Session {session_id}", Session.from_dict, found[0])

    def delete_session(self, session_id: str, **kwargs: Any) -> None:
        """Delete the session's records (their history stays, as the file tools keep it); the turns already in
        conversation memory stay too, and turns still waiting are dropped."""
        folder = session_folder(session_id) + "/"
        with _surfaced(f"Deleting session {session_id}"):
            names = self._names(folder)
            if not names:
                raise SessionException(f"Session {session_id} does not exist")
            for name in names:
                with suppress(NotFoundError):  # deleted meanwhile
                    self._files.call("file_delete", {"path": name})
        with self._lock:
            self._pending.pop(session_id, None)
            for path in [path for path in self._agents if path.startswith(folder)]:
                del self._agents[path]

    # ----------------------------------------------------------------- agents
    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        path = f"{agent_folder(session_id, session_agent.agent_id)}/agent.json"
        with _surfaced(f"Creating agent {session_agent.agent_id} in session {session_id}"):
            try:
                version = self._write(path, _dump(session_agent.to_dict()), 0)
            except ConflictError:
                raise SessionException(
                    f"Agent {session_agent.agent_id} in session {session_id} already exists"
                ) from None
        with self._lock:
            self._agents[path] = (version, session_agent.created_at)

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        path = f"{agent_folder(session_id, agent_id)}/agent.json"
        with _surfaced(f"Reading agent {agent_id} in session {session_id}"):
            found = self._read(path)
        if found is None:
            return None
        agent: SessionAgent = self._parsed(f"Agent {agent_id}", SessionAgent.from_dict, found[0])
        with self._lock:
            self._agents[path] = (found[1], agent.created_at)
        return agent

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Replace the agent's record, keeping its creation time; over the version this manager last saw."""
        agent_id = session_agent.agent_id
        path = f"{agent_folder(session_id, agent_id)}/agent.json"
        with self._lock:
            known = self._agents.get(path)
        with _surfaced(f"Updating agent {agent_id} in session {session_id}"):
            if known is None:
                found = self._read(path)
                if found is None:
                    raise SessionException(f"Agent {agent_id} in session {session_id} does not exist")
                known = (found[1], str(found[0].get("created_at", session_agent.created_at)))
            session_agent.created_at = known[1]
            try:
                version = self._write(path, _dump(session_agent.to_dict()), known[0])
            except ConflictError:
                with self._lock:
                    self._agents.pop(path, None)
                raise SessionException(
                    f"Agent {agent_id} in session {session_id} was changed by another writer since this manager "
                    "read it (two managers on one agent?); create the Agent again to restore it"
                ) from None
        with self._lock:
            self._agents[path] = (version, known[1])

    # --------------------------------------------------------------- messages
    def create_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        path = message_path(session_id, agent_id, session_message.message_id)
        with _surfaced(f"Storing message {session_message.message_id} of agent {agent_id}"):
            try:
                self._write(path, _dump(session_message.to_dict()), 0)
            except ConflictError:
                raise SessionException(
                    f"Message {session_message.message_id} of agent {agent_id} in session {session_id} already exists"
                ) from None
        self._queue(session_id, agent_id, session_message)

    def read_message(self, session_id: str, agent_id: str, message_id: int, **kwargs: Any) -> SessionMessage | None:
        path = message_path(session_id, agent_id, message_id)
        with _surfaced(f"Reading message {message_id} of agent {agent_id}"):
            found = self._read(path)
        return None if found is None else self._parsed(path, SessionMessage.from_dict, found[0])

    def update_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        """Replace a message (a guardrail's redaction), keeping its creation time; a turn still waiting takes
        the new words, one already stored stays as it was (no tool takes back a single turn)."""
        message_id = session_message.message_id
        path = message_path(session_id, agent_id, message_id)
        with _surfaced(f"Updating message {message_id} of agent {agent_id}"):
            found = self._read(path)
            if found is None:
                raise SessionException(f"Message {message_id} does not exist")
            session_message.created_at = str(found[0].get("created_at", session_message.created_at))
            try:
                self._write(path, _dump(session_message.to_dict()), found[1])
            except ConflictError:
                raise SessionException(
                    f"Message {message_id} of agent {agent_id} was changed by another writer meanwhile"
                ) from None
        self._queue(session_id, agent_id, session_message, replace=True)

    def list_messages(
        self, session_id: str, agent_id: str, limit: int | None = None, offset: int = 0, **kwargs: Any
    ) -> list[SessionMessage]:
        """The agent's messages in index order from ``offset``, at most ``limit``. The listing may miss a file
        written within the last second (file_list reads eventually), so the indices after the last one
        listed are read until one is missing."""
        folder = f"{agent_folder(session_id, agent_id)}/messages/"
        with _surfaced(f"Listing the messages of agent {agent_id} in session {session_id}"):
            indices = sorted(
                int(found[1])
                for name in self._names(folder)
                if (found := _MESSAGE_FILE.fullmatch(name.rsplit("/", 1)[-1]))
            )
            probed: dict[int, SessionMessage] = {}
            following = indices[-1] + 1 if indices else 0
            while (message := self.read_message(session_id, agent_id, following)) is not None:
                probed[following] = message
                indices.append(following)
                following += 1
            wanted = indices[offset:] if limit is None else indices[offset : offset + limit]
            todo = [index for index in wanted if index not in probed]
            if todo:
                with ThreadPoolExecutor(max_workers=min(READERS, len(todo))) as pool:
                    read = pool.map(lambda index: self.read_message(session_id, agent_id, index), todo)
                    probed.update(zip(todo, read, strict=True))
        return [message for index in wanted if (message := probed.get(index)) is not None]

    # ------------------------------------------------------------ multi-agent
    def create_multi_agent(self, session_id: str, multi_agent: Any, **kwargs: Any) -> None:
        path = f"{session_folder(session_id)}/multi_agents/{segment(multi_agent.id)}.json"
        with _surfaced(f"Creating multi-agent {multi_agent.id} in session {session_id}"):
            try:
                self._write(path, _dump(multi_agent.serialize_state()), 0)
            except ConflictError:
                raise SessionException(f"MultiAgent {multi_agent.id} in session {session_id} already exists") from None

    def read_multi_agent(self, session_id: str, multi_agent_id: str, **kwargs: Any) -> dict[str, Any] | None:
        path = f"{session_folder(session_id)}/multi_agents/{segment(multi_agent_id)}.json"
        with _surfaced(f"Reading multi-agent {multi_agent_id} in session {session_id}"):
            found = self._read(path)
        return None if found is None else found[0]

    def update_multi_agent(self, session_id: str, multi_agent: Any, **kwargs: Any) -> None:
        path = f"{session_folder(session_id)}/multi_agents/{segment(multi_agent.id)}.json"
        with _surfaced(f"Updating multi-agent {multi_agent.id} in session {session_id}"):
            found = self._read(path)
            if found is None:
                raise SessionException(f"MultiAgent state {multi_agent.id} in session {session_id} does not exist")
            try:
                self._write(path, _dump(multi_agent.serialize_state()), found[1])
            except ConflictError:
                raise SessionException(f"MultiAgent {multi_agent.id} was changed by another writer meanwhile") from None

    # ------------------------------------------------------------------ turns
    def _queue(self, session_id: str, agent_id: str, message: SessionMessage, *, replace: bool = False) -> None:
        base = turn_id(session_id, agent_id, message.message_id, message.created_at)
        turns = _turns(base, dict(message.to_message()), message.created_at)
        with self._lock:
            queue = self._pending.setdefault(session_id, [])
            places = [n for n, turn in enumerate(queue) if turn.base == base]
            if places:
                queue[places[0] : places[-1] + 1] = turns
            elif replace:
                logger.warning(
                    "message_id=<%s> | the message's turns are stored already; conversation memory keeps them as "
                    "they were",
                    message.message_id,
                )
            else:
                queue.extend(turns)

    def pending_turns(self) -> int:
        """How many turns wait to be stored."""
        with self._lock:
            return sum(len(queue) for queue in self._pending.values())

    def flush(self) -> None:
        """Store the waiting turns now (the manager does at the end of each invocation); SessionException when
        the service refuses them, and they stay waiting for the next flush."""
        with self._lock:
            waiting = {session: list(queue) for session, queue in self._pending.items() if queue}
        for session_id, turns in waiting.items():
            for start in range(0, len(turns), MAX_TURNS_PER_CALL):
                batch = turns[start : start + MAX_TURNS_PER_CALL]
                self._send(session_id, batch)
                with self._lock:
                    sent = {id(turn) for turn in batch}
                    self._pending[session_id] = [t for t in self._pending.get(session_id, []) if id(t) not in sent]

    def _send(self, session_id: str, batch: list[_Turn]) -> None:
        body = {"messages": [{"role": t.role, "content": t.content, "id": t.id, "at": t.at} for t in batch]}
        client = self.client_for(session_id)
        attempt = 0
        with _surfaced(f"Storing {len(batch)} turn(s) of session {session_id}"):
            while True:
                try:
                    client.call("add_messages", body)
                    return
                except MnemoClientError as error:
                    # Every turn carries its id: a repeat of a call that landed stores nothing twice.
                    if not _unknown(error) or attempt >= REPEATS:
                        raise
                    attempt += 1

    def close(self) -> None:
        """Store the waiting turns (``flush``)."""
        self.flush()

    def __enter__(self) -> MnemoSessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
