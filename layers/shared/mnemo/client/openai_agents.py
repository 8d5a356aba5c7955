"""OpenAI Agents SDK memory on Mnemo: ``MnemoSession`` keeps a session's items, ``mnemo_instructions`` puts
Mnemo's memory of the user into an agent's instructions.

    from agents import Agent, Runner
    from mnemo.client import AsyncMnemoClient, LocalIdentity
    from mnemo.client.openai_agents import MnemoSession, mnemo_instructions
    mnemo = AsyncMnemoClient(url, auth=LocalIdentity(user="alice"))
    session = MnemoSession("chat-42", mnemo)
    agent = Agent(name="helper", instructions=mnemo_instructions(session, "You are a helpful assistant."))
    await Runner.run(agent, "I moved to Lisbon", session=session)

``MnemoSession`` implements the SDK's ``Session`` protocol (``agents.memory.session``): ``session_id``,
``session_settings`` and the coroutines ``get_items(limit=None)``, ``add_items(items)``, ``pop_item()`` and
``clear_session()``. Needs ``openai-agents`` (the client's ``openai-agents`` extra).

Identity. The SDK's session id is the Mnemo session: every call goes through ``client.in_session(session_id)``
(``session.client``), so the user, agent and project are the client's own identity and the session is the
SDK's. That needs an identity that names its session per call (``LocalIdentity``, or a delegate's
``on_behalf_of``): ``ValueError`` otherwise, and ``IdentityValueError`` for a session id Mnemo refuses (1 to
256 of letters, digits and ``._@:+=,/-``).

Where the items live. Two records, each written with a tool the service already has:

- The item log, exactly as the SDK handed the items over: a workspace file of the user's own,
  ``openai-agents/sessions/<session>.jsonl`` (``log_path``), read and written with ``file_read`` and
  ``file_write``. The file calls leave the identity's project out, so the log is the user's personal
  workspace file (the workspace is the project's only when the identity names one): the project's members
  never see it and no writer role is needed. JSON Lines: a header (the session, the log's random ``epoch``,
  the next entry number, the turns already sent, the id of the write that made this version), then one
  entry per item, oldest first: ``{"n": 7, "at": "...", "item": {...}}``. ``get_items(limit)`` answers the
  last ``limit`` items in chronological order (all for None, none for 0 or less), ``pop_item`` takes the
  last off and answers it, ``clear_session`` deletes the file. A line that is not an entry (someone edited
  the file) is skipped, as the SDK's own sessions skip a corrupt row; a file whose header is not a log's
  is refused (``ValueError``) rather than overwritten.
- The conversation: the text of each user and assistant message is also stored as a turn of the Mnemo
  session with ``add_messages``, so that Mnemo's extraction learns from it (function calls, their outputs,
  reasoning and system or developer messages are not turns). A turn's id is ``oa-<epoch>-<n>`` and its
  ``at`` the entry's (a text over add_messages's 10,000 characters goes in pieces ``.<k>``, a microsecond
  apart), both from the log: sending a turn again is a repeat the service stores once. Turns are sent after
  the log is written, from the first entry whose turns are not known to be sent; a failure raises, and the
  next ``add_items`` sends them again. A popped or cleared item's turns stay in the conversation (no tool
  removes one turn).

Concurrency and retries. Every write of the log names the version it was computed from
(``expectedVersion``): a write that lost a race is CONFLICT, and the change is made again on the log as it
now is (up to ``MAX_ATTEMPTS`` times), so concurrent ``add_items`` and ``pop_item`` lose nothing and pop each
item once. When a write's outcome is unknown (a gateway's 504, a timeout: the client does not send it again)
the log says whether it landed: the new log's own write id in the version after the one it expected, or, for
a log it created, its epoch. So nothing is written twice, and ``add_messages`` is sent again only with ids
and times it stores once. Errors are the client's exceptions (``mnemo.client.errors``). As in the SDK's own
sessions, a cancelled ``add_items``, ``pop_item`` or ``clear_session`` finishes its change before the
``CancelledError`` is raised, so the log never stays half changed.

The client may be an ``AsyncMnemoClient`` (its calls are awaited) or a ``MnemoClient`` (each call in a
worker thread).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import hashlib
import json
import random
import string
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from mnemo.client import AsyncMnemoClient, MnemoClient
from mnemo.client.errors import ConflictError, MnemoClientError, NotFoundError
from mnemo.client.transport import LocalIdentity

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings

__all__ = ["MAX_ATTEMPTS", "MnemoSession", "latest_user_text", "log_path", "mnemo_instructions"]

#: The workspace folder of the session logs.
FOLDER = "openai-agents/sessions"
#: What a log's header says it is.
LOG_KIND = "mnemo.openai-agents.session"
LOG_FORMAT = 1
#: Tries of one change of the log when other writers keep winning (each loss means another write landed).
MAX_ATTEMPTS = 64
#: add_messages takes at most this many messages per call, each at most this many characters.
TURNS_PER_CALL = 100
TURN_CHARS = 10_000
#: Lines file_read answers at most per call.
READ_LINES = 10_000
#: Sends of one add_messages call whose outcome stayed unknown (a repeat is stored once).
TURN_SENDS = 3
#: Entries are timed at least this far apart, and the pieces of one entry's long text a microsecond apart,
#: so that every turn has a time of its own, in the log's order.
_ENTRY_STEP = timedelta(milliseconds=1)
#: memory_context's query takes at most this many characters: a longer message is queried by its end.
QUERY_CHARS = 4000
#: A path segment's bytes (mnemo.files.paths).
_SEGMENT_BYTES = 255
#: Session-id characters that stay as they are in the file name; the rest (``:``, ``/``, ``=``) become =XX.
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "._@+,-")

Client = AsyncMnemoClient | MnemoClient


def log_path(session_id: str) -> str:
    """The workspace path of a session's item log: the id with ``:``, ``/`` and ``=`` written ``=XX`` (so
    two ids never share a file and none leaves the folder), or, when that name would pass a path segment's
    255 bytes, ``long/`` and the id's SHA-256."""
    name = "".join(char if char in _NAME_CHARS else f"={ord(char):02X}" for char in session_id) + ".jsonl"
    if len(name.encode()) > _SEGMENT_BYTES:
        return f"{FOLDER}/long/{hashlib.sha256(session_id.encode()).hexdigest()}.jsonl"
    return f"{FOLDER}/{name}"


async def _call(client: Client, tool: str, body: dict[str, Any]) -> dict[str, Any]:
    if isinstance(client, AsyncMnemoClient):
        return await client.call(tool, body)
    return await asyncio.to_thread(client.call, tool, body)


def _personal(client: Client) -> Client:
    """``client`` without its project: the workspace it writes is the user's own (in_session has made sure
    the identity is a LocalIdentity or a delegation, the two that name ids per call)."""
    view = copy.copy(client)
    transport = client.transport
    if transport.delegation is not None:
        delegation = dataclasses.replace(transport.delegation, project=None)
        view.transport = dataclasses.replace(transport, delegation=delegation)
    elif isinstance(transport.auth, LocalIdentity):
        view.transport = dataclasses.replace(transport, auth=dataclasses.replace(transport.auth, project=None))
    return view


async def _settled[T](change: Coroutine[Any, Any, T]) -> T:
    """``change``'s result; a cancellation waits for the change to finish, then is raised (the SDK's sessions
    do the same: a mutation is never left half done)."""
    task = asyncio.ensure_future(change)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as error:
            cancelled = cancelled or error
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the cancellation is what the caller sees
        raise cancelled
    return task.result()


def _dumps(value: Any) -> str:
    """One JSON line, non-ASCII text as it is (readable, and smaller under the file's 1,000,000 characters);
    a lone surrogate, which UTF-8 cannot carry, escaped."""
    line = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        line.encode()
    except UnicodeEncodeError:
        line = json.dumps(value, separators=(",", ":"))
    return line


def _entry(line: str) -> dict[str, Any] | None:
    """The entry a log line holds, or None for a line that is not one."""
    try:
        found = json.loads(line)
    except ValueError:
        return None
    if isinstance(found, dict) and isinstance(found.get("n"), int) and isinstance(found.get("item"), dict):
        return found
    return None


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class _Log:
    """A session's item log: the header and the entry lines as stored, at a version of the file (0: none)."""

    header: dict[str, Any]
    lines: list[str]
    version: int = 0

    @classmethod
    def new(cls, session_id: str) -> _Log:
        header = {"kind": LOG_KIND, "format": LOG_FORMAT, "session": session_id, "epoch": uuid.uuid4().hex}
        return cls({**header, "next": 0, "turnsSent": 0, "write": ""}, [])

    @classmethod
    def parse(cls, text: str, version: int, path: str) -> _Log:
        first, *rest = text.split("\n")
        try:
            header = json.loads(first)
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("kind") != LOG_KIND or not isinstance(header.get("next"), int):
            raise ValueError(f"{path} is not a Mnemo session log (its first line is not a log header)")
        return cls(header, [line for line in rest if line.strip()], version)

    @property
    def text(self) -> str:
        return "\n".join([_dumps(self.header), *self.lines]) + "\n"

    def entries(self) -> list[dict[str, Any]]:
        return [found for line in self.lines if (found := _entry(line)) is not None]

    def changed(self, lines: list[str], **header: Any) -> _Log:
        """The next version's log: ``lines`` and ``header``'s fields, under a new write id."""
        return _Log({**self.header, **header, "write": uuid.uuid4().hex}, lines)

    def appended(self, items: Sequence[Any], turns_sent: int) -> _Log:
        """The log with ``items`` after its entries, each numbered and timed after the last."""
        entries = self.entries()
        moment = _now()
        if entries:  # ``at`` orders the turns: never before the last entry's, even if clocks disagree
            moment = max(moment, datetime.fromisoformat(entries[-1]["at"]) + _ENTRY_STEP)
        number = self.header["next"]
        lines = list(self.lines)
        for offset, item in enumerate(items):
            at = _iso(moment + offset * _ENTRY_STEP)
            lines.append(_dumps({"n": number + offset, "at": at, "item": item}))
        sent = max(int(self.header.get("turnsSent", 0)), turns_sent)
        return self.changed(lines, next=number + len(items), turnsSent=sent)

    def popped(self) -> tuple[_Log | None, dict[str, Any] | None]:
        """The log without its last entry (and any line after it that is not one), and that entry; (None,
        None) when there is nothing to take off."""
        for index in range(len(self.lines) - 1, -1, -1):
            found = _entry(self.lines[index])
            if found is not None:
                return self.changed(self.lines[:index]), found
        return (self.changed([]), None) if self.lines else (None, None)


def _text(content: Any) -> str:
    """The text of a message's content: a string, or its text and refusal parts joined by new lines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, dict):
            value = part.get("text") if part.get("type") in ("input_text", "output_text") else None
            value = part.get("refusal") if part.get("type") == "refusal" else value
            if isinstance(value, str):
                parts.append(value)
    return "\n".join(parts)


def _turns(entry: dict[str, Any], epoch: str) -> list[dict[str, Any]]:
    """The add_messages turns of one entry: a user's or assistant's message with text, else none."""
    item = entry["item"]
    role = item.get("role")
    if role not in ("user", "assistant") or item.get("type", "message") != "message":
        return []
    text = _text(item.get("content"))
    if not text.strip():
        return []
    base = f"oa-{epoch}-{entry['n']}"
    pieces = [text[start : start + TURN_CHARS] for start in range(0, len(text), TURN_CHARS)]
    if len(pieces) == 1:
        return [{"role": role, "content": text, "id": base, "at": entry["at"]}]
    at = datetime.fromisoformat(entry["at"])
    return [
        {"role": role, "content": piece, "id": f"{base}.{k}", "at": _iso(at + timedelta(microseconds=k))}
        for k, piece in enumerate(pieces)
        if piece.strip()
    ]


def _unknown(error: MnemoClientError) -> bool:
    """Whether the call may have run: the client gave up without knowing (a 504, a timeout)."""
    return error.details.get("outcome") == "unknown"


class MnemoSession:
    """The SDK's ``Session`` on Mnemo for ``session_id``, the user and the rest of the identity being
    ``client``'s (see the module's docstring). ``session_settings`` (a ``SessionSettings`` or a dict) gives
    ``get_items`` its default limit, as the SDK's own sessions do; ``turns=False`` keeps the items in the log
    only, storing no conversation turns."""

    session_id: str
    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        client: Client,
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        turns: bool = True,
    ) -> None:
        from agents.memory.session_settings import SessionSettings, coerce_session_settings

        self.session_id = session_id
        #: The client naming this session: the turns are its, and so is mnemo_instructions's context.
        self.client: Client = client.in_session(session_id)
        self.path = log_path(session_id)
        self.session_settings = (
            coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        )
        self._files = _personal(self.client)
        self._store_turns = turns
        #: The log as this session last read or wrote it: an add starts from it (a stale one costs a CONFLICT).
        self._known: _Log | None = None
        #: (epoch, n): the entries before ``n`` of that log have had their turns stored.
        self._sent: tuple[str, int] = ("", 0)
        #: The text and time of the latest user message this object added (mnemo_instructions's asOf).
        self._asked: tuple[str, datetime] | None = None

    # ----------------------------------------------------------------- the protocol
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items (``session_settings.limit`` when None; all when both are None) in
        chronological order, as they were added."""
        from agents.memory.session_settings import resolve_session_limit

        wanted = resolve_session_limit(limit, self.session_settings)
        log = await self._read()
        self._known = log  # the add that usually follows starts from it (a write checks it is still current)
        items = [entry["item"] for entry in log.entries()]
        if wanted is None:
            return items
        return items[-wanted:] if wanted > 0 else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Appends ``items`` to the log, then stores their user and assistant text as turns."""
        if not items:
            return
        copied = json.loads(json.dumps(list(items)))  # not JSON: TypeError before anything is written
        await _settled(self._add(copied))

    async def pop_item(self) -> TResponseInputItem | None:
        """Takes the latest item off the log and answers it; None when the session is empty."""
        return await _settled(self._pop())

    async def clear_session(self) -> None:
        """Deletes the log (its file's history stays in the workspace); the turns stay in the conversation."""
        await _settled(self._clear())

    # ----------------------------------------------------------------- changes
    async def _add(self, items: list[Any]) -> None:
        known = self._known

        def change(log: _Log) -> _Log:
            epoch, sent = self._sent
            return log.appended(items, sent if epoch == log.header["epoch"] else 0)

        # The log this session last read or wrote is where an add most likely lands (the SDK reads the
        # history before it adds a turn's items); a stale one costs a CONFLICT, then a read.
        _, after = await self._change(change, known)
        assert after is not None
        for entry in reversed(after.entries()[-len(items) :]):  # appended last: these are the items
            if asked := _user_text(entry["item"]):
                self._asked = (asked, datetime.fromisoformat(entry["at"]))
                break
        if self._store_turns:
            await self._send_turns(after)

    async def _pop(self) -> TResponseInputItem | None:
        taken: list[dict[str, Any] | None] = [None]

        def change(log: _Log) -> _Log | None:
            after, taken[0] = log.popped()
            return after

        await self._change(change, None)  # from a fresh read: an empty log is not written, so not checked
        entry = taken[0]
        return None if entry is None else entry["item"]

    async def _clear(self) -> None:
        self._known = None
        for _ in range(MAX_ATTEMPTS):
            try:
                await _call(self._files, "file_delete", {"path": self.path})
                return
            except NotFoundError:
                return
            except ConflictError:  # a write landed while deleting: delete what is there now
                continue
            except MnemoClientError as error:
                if not _unknown(error):
                    raise
                # Deleting again is deleting once (NOT_FOUND if the first one did it).
        raise ConflictError(f"{self.path}: other writers kept changing the log; not cleared")

    async def _change(self, change: Callable[[_Log], _Log | None], start: _Log | None) -> tuple[_Log, _Log | None]:
        """Applies ``change`` to the log (from ``start``, else as read) and writes the result expecting the
        version it came from; on CONFLICT again on the log as it now is. The log before and after (None when
        ``change`` wrote nothing)."""
        log = start or await self._read()
        for attempt in range(MAX_ATTEMPTS):
            after = change(log)
            if after is None:
                return log, None
            body = {"path": self.path, "content": after.text, "expectedVersion": log.version}
            try:
                written = await _call(self._files, "file_write", body)
                after.version = int(written["version"])
            except ConflictError:
                log = await self._read_after_loss(attempt)
                continue
            except MnemoClientError as error:
                if not _unknown(error):
                    raise
                if not await self._landed(log, after):
                    log = await self._read()
                    continue
                self._known = None  # its version is not known: the next change reads the log first
                return log, after
            self._known = after
            return log, after
        raise ConflictError(f"{self.path}: other writers won {MAX_ATTEMPTS} times in a row; nothing was changed")

    async def _read_after_loss(self, attempt: int) -> _Log:
        # A short random pause spreads writers that keep colliding; the first retry goes at once.
        if attempt:
            await asyncio.sleep(random.uniform(0, 0.01 * min(attempt, 10)))
        return await self._read()

    async def _landed(self, before: _Log, after: _Log) -> bool:
        """Whether ``after``'s write, expecting ``before``'s version, landed: then the version after that one
        carries its write id, or, when it created the log, the log there now carries its epoch (only that
        write can have made it; a log made after a clear has another)."""
        if before.version == 0:
            try:
                return (await self._read()).header["epoch"] == after.header["epoch"]
            except ValueError:
                return False
        try:
            answer = await _call(
                self._files, "file_read", {"path": self.path, "version": before.version + 1, "limit": 1}
            )
        except NotFoundError:
            return False
        return _header_of(answer["content"]).get("write") == after.header["write"]

    async def _read(self) -> _Log:
        """The log as stored now (a new, empty one when there is none), every page of one version."""
        pages: list[str] = []
        offset, version = 0, None
        while True:
            body: dict[str, Any] = {"path": self.path, "offset": offset, "limit": READ_LINES}
            if version is not None:
                body["version"] = version
            try:
                answer = await _call(self._files, "file_read", body)
            except NotFoundError:
                if version is not None:
                    raise
                return _Log.new(self.session_id)
            version = int(answer["version"])
            pages.append(answer["content"])
            if not answer.get("hasMore"):
                return _Log.parse("".join(pages), version, self.path)
            offset = int(answer["nextOffset"])

    async def _send_turns(self, log: _Log) -> None:
        """Stores the turns of ``log``'s entries from its first not known to be sent, 100 per call."""
        epoch = log.header["epoch"]
        start = int(log.header.get("turnsSent", 0))
        turns = [turn for entry in log.entries() if entry["n"] >= start for turn in _turns(entry, epoch)]
        for first in range(0, len(turns), TURNS_PER_CALL):
            body = {"messages": turns[first : first + TURNS_PER_CALL]}
            for send in range(TURN_SENDS):
                try:
                    await _call(self.client, "add_messages", body)
                    break
                except MnemoClientError as error:
                    # Each turn has its id and time: a repeat is stored once, so sending again is safe.
                    if not _unknown(error) or send == TURN_SENDS - 1:
                        raise
        self._sent = (epoch, int(log.header["next"]))


def _header_of(text: str) -> dict[str, Any]:
    try:
        found = json.loads(text.split("\n", 1)[0])
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _user_text(item: Any) -> str:
    """The text of a user message with text, else ''."""
    if isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message":
        text = _text(item.get("content"))
        if text.strip():
            return text
    return ""


def latest_user_text(items: Sequence[Any]) -> str:
    """The text of the last user message in ``items`` (a run's input items), or '' when there is none."""
    return next((text for item in reversed(items) if (text := _user_text(item))), "")


def mnemo_instructions(
    client: Client | MnemoSession, base: str = "", *, budget: int = 1500, sections: Sequence[str] | None = None
) -> Callable[[Any, Any], Awaitable[str]]:
    """Dynamic instructions for an ``Agent``: ``base``, then what ``memory_context`` answers for the run's
    latest user message (``run_context.turn_input``; a message over the tool's 4000 characters by its end),
    within ``budget`` tokens and ``sections`` (profile, summary, memories, turns, blocks; all when None).

    The user and session are ``client``'s. Given the ``MnemoSession`` the run uses, they are its client's (the
    session's own turns and summary), and the context is the one of just before the run's message was added
    (``asOf``): the SDK stores a run's input before it calls the model, and the message is no past turn of
    itself. Memories stored after that moment (by the service's clock, which should agree with this
    machine's) are left out too: within the run, the model has them from its own tool calls. Without a user
    message, or when memory_context has nothing, the instructions are ``base``. An error is raised (the run
    fails with it)."""

    session = client if isinstance(client, MnemoSession) else None
    caller = client.client if isinstance(client, MnemoSession) else client

    async def instructions(run_context: Any, agent: Any) -> str:
        query = latest_user_text(getattr(run_context, "turn_input", None) or [])
        if not query:
            return base
        body: dict[str, Any] = {"query": query[-QUERY_CHARS:], "budget": budget}
        if sections is not None:
            body["sections"] = list(sections)
        asked = session._asked if session is not None else None
        if asked is not None and asked[0] == query:
            body["asOf"] = _iso(asked[1] - timedelta(microseconds=1))
        context = str((await _call(caller, "memory_context", body)).get("context") or "")
        return "\n\n".join(part for part in (base, context) if part)

    return instructions
