"""MCP resources: the caller's profile, pinned context and pinned files, and knowledge items, read through the tools.

==================================  ===========================================================================
URI                                 what resources/read answers
==================================  ===========================================================================
``mnemo://profile``                 the caller's running profile (extraction's ``profile`` strategy), as
                                    extraction_status shows it
``mnemo://pinned``                  the caller's whole pinned context, as pinned_context returns it
``mnemo:///blocks/<name>``          one of the caller's own blocks (``mnemo:///skills/<name>`` a skill)
``mnemo://project/blocks/<name>``   a block of the caller's project (``user`` and ``agent`` name those layers)
``knowledge://<id>``                a knowledge item of the caller's layers (company, org, team, project)
==================================  ===========================================================================

A block's or knowledge item's URI is the very path the file tools take (file_read, file_edit, block_pin,
expand_prompt's ``@path``), so what a client reads as a resource it can edit, pin or expand by the same name;
resources/templates/list gives the shapes, resources/list the profile, the pinned context, each pinned file
and every knowledge item. Workspace files and topic notes stay behind the file tools.

Identity: every read runs tools (extraction_status, pinned_context, file_read, file_list, knowledge_show)
with the caller's RequestContext, the one a tools/call of the same request gets, and nothing in a URI names
a tenant, user, agent or project: ``mnemo:///`` is always the caller's own, ``mnemo://project/`` the
caller's project, so a URI can only name what the caller's tools could read. A path is checked by the file
tools' own parser (``mnemo.files.paths``) before anything is read: ``..``, percent escapes and owners other
than ``user``, ``agent`` and ``project`` are refused.

Errors: resources/read has no ``isError`` result, so a failure is a JSON-RPC error. ``-32602`` (invalid
params) for what the caller can fix: a URI that is not a Mnemo resource, a malformed path, a resource that
does not exist for this caller (the SDK's ``ResourceNotFoundError`` code, per SEP-2164; ``-32002`` is
retired), a bad cursor; ``-32603`` for a failure on the server's side. ``data.error`` carries the Mnemo
envelope (``errorCode``, ``message``, ``details``, ``retryable``) and ``data.uri`` the URI.

Pages: resources/list answers at most ``PAGE_SIZE`` resources a page, the profile, the pinned context and
the pinned files first (in pin order), then the knowledge items by id; ``nextCursor`` is opaque and names
where the next page starts, so a pin made between two pages may shift the listing (a listing is not a
snapshot). Contents are read whole: resources are not paged as the tools' answers are.

Subscriptions (``resources/subscribe``, on a session that lasts: ``mnemo mcp`` over stdio): the server
keeps, per connection, each subscribed URI with a fingerprint of what resources/read answered for it
(``None`` while it does not exist). After every tools/call of that connection it reads each subscribed
resource again and sends ``notifications/resources/updated`` for each whose fingerprint changed, before
the tool's result, so a client that pins, edits or deletes a block learns it at once. A change made
elsewhere (another session, the extraction worker, a scheduled sync) is noticed at this session's next tool
call. Streamable HTTP is served stateless (``mcp_asgi``, ``mcp_lambda``): no connection outlives a POST, so
those servers neither advertise nor accept subscriptions (docs/mcp-resources.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import mcp.types as types
from mcp import MCPError

from mnemo.context import RequestContext
from mnemo.errors import InvalidInput, MnemoError, NotFound, ProviderError
from mnemo.files.models import MAX_READ_LINES
from mnemo.files.paths import parse_path
from mnemo.learning.strategies import PROFILE
from mnemo.observability import logger
from mnemo.runtime import get_services
from mnemo.tools.registry import get_tool

PROFILE_URI = "mnemo://profile"
PINNED_URI = "mnemo://pinned"
#: The most resources one resources/list page holds.
PAGE_SIZE = 50
#: The most URIs one connection may subscribe to: each is read again after every tool call.
MAX_SUBSCRIPTIONS = 100
#: The schemes of resource URIs; the file tools' other paths (workspace files, ``topic://``) are not resources.
RESOURCE_SCHEMES = frozenset({"mnemo", "knowledge"})
#: Error codes the caller can fix (-32602); every other one failed on the server's side (-32603).
CALLER_ERRORS = frozenset({"INVALID_INPUT", "NOT_FOUND", "UNAUTHORIZED", "CONFLICT"})

TEMPLATES = [
    types.ResourceTemplate(
        name="block",
        title="Your block",
        uri_template="mnemo:///blocks/{+name}",
        description="One of your own blocks (your agent's, else your user's), by the path the file tools take.",
    ),
    types.ResourceTemplate(
        name="skill",
        title="Your skill",
        uri_template="mnemo:///skills/{+name}",
        description="One of your own skills, by the path the file tools take.",
    ),
    types.ResourceTemplate(
        name="layer-block",
        title="A block of one of your layers",
        uri_template="mnemo://{owner}/blocks/{+name}",
        description="owner is project (your project's shared blocks), user or agent (your own, named explicitly).",
    ),
    types.ResourceTemplate(
        name="layer-skill",
        title="A skill of one of your layers",
        uri_template="mnemo://{owner}/skills/{+name}",
        description="owner is project (your project's shared skills), user or agent.",
    ),
    types.ResourceTemplate(
        name="knowledge",
        title="Knowledge item",
        uri_template="knowledge://{id}",
        description="A decision, policy, pattern or spec of your company, org, team or project, by id.",
        mime_type="text/markdown",
    ),
]


# ------------------------------------------------------------ shared with prompts ---
def run_tool(context: RequestContext, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A tool's answer for the caller, whole: a resource or prompt is one answer, never the tools' parts."""
    whole = context.model_copy(update={"response_budget": None})
    return get_tool(name).invoke(get_services(), whole, payload)


def protocol_error(error: MnemoError, **data: Any) -> MCPError:
    """A Mnemo error as a JSON-RPC error: -32602 when the caller can fix it, else -32603; the envelope in data."""
    code = types.INVALID_PARAMS if error.code in CALLER_ERRORS else types.INTERNAL_ERROR
    return MCPError(code=code, message=error.message, data={**data, "error": error.envelope()})


def guarded[T](work: Callable[[], T], what: str, **data: Any) -> T:
    """``work()``; a MnemoError becomes its protocol error (``data`` added), anything unexpected a logged -32603."""
    try:
        return work()
    except MCPError:
        raise
    except MnemoError as error:
        raise protocol_error(error, **data) from None
    except Exception:
        logger.exception("MCP %s failed", what)
        raise protocol_error(ProviderError("Internal error; it has been logged"), **data) from None


# ------------------------------------------------------------------------ URIs ---
@dataclass(frozen=True)
class Target:
    """What a resource URI names."""

    kind: Literal["profile", "pinned", "file", "knowledge"]
    #: The file path (for a file) or the knowledge id.
    name: str = ""


def target_of(uri: str) -> Target:
    """The resource ``uri`` names; -32602 for anything else (a workspace file, a topic, a bad path)."""
    if uri == PROFILE_URI:
        return Target("profile")
    if uri == PINNED_URI:
        return Target("pinned")
    scheme, colon, _ = uri.partition(":")
    if colon and scheme.lower() in RESOURCE_SCHEMES:
        try:
            path = parse_path(uri, field="uri")
        except InvalidInput as error:
            raise protocol_error(error, uri=uri) from None
        if path.store == "asset":
            return Target("file", path.uri)
        if path.store == "knowledge":
            return Target("knowledge", path.name)
    shapes = [PROFILE_URI, PINNED_URI, *(template.uri_template for template in TEMPLATES)]
    message = f"Not a Mnemo resource: {uri} (workspace files and topics are read with file_read)"
    raise MCPError(code=types.INVALID_PARAMS, message=message, data={"uri": uri, "resources": shapes})


def _mime(path: str) -> str:
    guessed, _ = mimetypes.guess_type(path)
    return guessed if guessed and guessed.startswith("text/") else "text/plain"


# ----------------------------------------------------------------------- reads ---
@dataclass(frozen=True)
class Read:
    text: str
    mime: str
    meta: dict[str, Any]


def _profile(context: RequestContext) -> dict[str, Any] | None:
    return run_tool(context, "extraction_status", {"runs": 0}).get("profile")


def _read_profile(context: RequestContext, target: Target) -> Read:
    status = run_tool(context, "extraction_status", {"runs": 0})
    profile = status.get("profile")
    if profile is None:
        on = any(s["strategy"] == PROFILE.name and s["enabled"] for s in status["strategies"])
        reason = (
            "the profile strategy has not written one for you yet"
            if on
            else "the profile strategy is off (MNEMO_EXTRACTION_STRATEGIES)"
        )
        raise NotFound(f"No profile: {reason}", {"uri": PROFILE_URI})
    meta = {key: profile[key] for key in ("memoryId", "builtAt", "tokens", "memoryIds")}
    return Read(profile["text"], "text/plain", meta)


def _read_pinned(context: RequestContext, target: Target) -> Read:
    pinned = run_tool(context, "pinned_context", {})
    meta = {key: pinned[key] for key in ("blocks", "count", "totalTokens", "budgetTokens", "inactive")}
    return Read(pinned["context"], "text/plain", meta)


def _read_file(context: RequestContext, target: Target) -> Read:
    """The whole file, page by page (file_read's pages join as they are); again from the start if it changed."""
    for _ in range(3):
        parts: list[str] = []
        first: dict[str, Any] | None = None
        offset: int | None = 0
        while offset is not None:
            page = run_tool(context, "file_read", {"path": target.name, "offset": offset, "limit": MAX_READ_LINES})
            first = first or page
            if page["version"] != first["version"]:
                break
            parts.append(page["content"])
            offset = page["nextOffset"] if page["hasMore"] else None
        if first is not None and offset is None:
            meta = {key: first[key] for key in ("kind", "version", "tokens", "lastUpdated", "pinned")}
            return Read("".join(parts), _mime(target.name), meta)
    raise ProviderError(f"{target.name} kept changing while it was read", {"uri": target.name})


def _read_knowledge(context: RequestContext, target: Target) -> Read:
    item = run_tool(context, "knowledge_show", {"id": target.name, "includeConstraints": False})["item"]
    meta = {key: item.get(key) for key in ("title", "type", "layer", "status", "updatedAt")}
    return Read(item["content"], "text/markdown", meta)


_READERS: dict[str, Callable[[RequestContext, Target], Read]] = {
    "profile": _read_profile,
    "pinned": _read_pinned,
    "file": _read_file,
    "knowledge": _read_knowledge,
}


def _contents(context: RequestContext, uri: str) -> types.ReadResourceResult:
    """What resources/read answers for ``uri``; a MnemoError (NOT_FOUND when there is no such resource) as raised."""
    target = target_of(uri)
    read = _READERS[target.kind](context, target)
    content = types.TextResourceContents(uri=uri, mime_type=read.mime, text=read.text, meta={"mnemo": read.meta})
    return types.ReadResourceResult(contents=[content])


def read(context: RequestContext, uri: str) -> types.ReadResourceResult:
    """resources/read, synchronously (the handler runs it in a worker thread)."""
    return guarded(lambda: _contents(context, uri), f"read of {uri}", uri=uri)


# ----------------------------------------------------------------------- lists ---
def _decode(cursor: str | None) -> tuple[str, Any]:
    """Where a page starts: ("head", offset) or ("knowledge", file_list's cursor)."""
    if cursor is None:
        return "head", 0
    try:
        section, at = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, TypeError, UnicodeError, binascii.Error):
        section, at = None, None
    if (section == "head" and isinstance(at, int) and at >= 0) or (section == "knowledge" and isinstance(at, str)):
        return section, at
    raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor", data={"cursor": cursor[:200]})


def _encode(section: str, at: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps([section, at]).encode()).decode("ascii")


def _head(context: RequestContext) -> list[types.Resource]:
    """The profile (when there is one), the pinned context and each pinned file, for a caller with a user id."""
    if context.missing_ids("user"):
        return []
    found: list[types.Resource] = []
    profile = _profile(context)
    if profile is not None:
        found.append(
            types.Resource(
                uri=PROFILE_URI,
                name="profile",
                title="Your profile",
                description="What extraction has learned about you, rewritten as memories change.",
                mime_type="text/plain",
                size=len(profile["text"].encode()),
                annotations=types.Annotations(last_modified=profile["builtAt"]),
            )
        )
    pinned = run_tool(context, "pinned_context", {})
    found.append(
        types.Resource(
            uri=PINNED_URI,
            name="pinned",
            title="Pinned context",
            description=f"Your {pinned['count']} pinned files in order, each in a <block> tag, "
            f"{pinned['totalTokens']} of {pinned['budgetTokens']} tokens: ready for a system prompt.",
            mime_type="text/plain",
            size=len(pinned["context"].encode()),
        )
    )
    for block in pinned["blocks"]:
        found.append(
            types.Resource(
                uri=block["path"],
                name=block["path"],
                title=block["path"].rsplit("/", 1)[-1],
                description=f"Pinned {block['kind']} at position {block['position']}: "
                f"{block['tokens']} tokens, version {block['version']}.",
                mime_type=_mime(block["path"]),
            )
        )
    return found


def _knowledge(context: RequestContext, cursor: str | None, limit: int) -> tuple[list[types.Resource], str | None]:
    listed = run_tool(context, "file_list", {"path": "knowledge://", "limit": limit, "cursor": cursor})
    found = [
        types.Resource(
            uri=entry["path"],
            name=entry["path"].removeprefix("knowledge://"),
            description="A knowledge item (decision, policy, pattern or spec): its full text.",
            mime_type="text/markdown",
        )
        for entry in listed["entries"]
    ]
    return found, listed["nextCursor"] if listed["hasMore"] else None


def _page(context: RequestContext, cursor: str | None) -> types.ListResourcesResult:
    section, at = _decode(cursor)
    found: list[types.Resource] = []
    inner: str | None = at if section == "knowledge" else None
    if section == "head":
        head = _head(context)
        found = head[at : at + PAGE_SIZE]
        if at + PAGE_SIZE < len(head):
            return types.ListResourcesResult(resources=found, next_cursor=_encode("head", at + PAGE_SIZE))
    room = PAGE_SIZE - len(found)
    if room == 0:  # the page is full: is anything left for the next one?
        more, _ = _knowledge(context, None, 1)
        return types.ListResourcesResult(resources=found, next_cursor=_encode("knowledge", "") if more else None)
    items, following = _knowledge(context, inner or None, room)
    following_cursor = _encode("knowledge", following) if following else None
    return types.ListResourcesResult(resources=found + items, next_cursor=following_cursor)


def list_page(context: RequestContext, cursor: str | None) -> types.ListResourcesResult:
    """resources/list, synchronously (the handler runs it in a worker thread)."""
    return guarded(lambda: _page(context, cursor), "resources/list")


# --------------------------------------------------------------- subscriptions ---
class _Unknown(Exception):
    """A resource that could not be read just now: neither changed nor unchanged."""


def fingerprint(context: RequestContext, uri: str) -> str | None:
    """A digest of what resources/read answers for ``uri``; None while there is no such resource."""
    try:
        answer = _contents(context, uri)
    except NotFound:
        return None
    except Exception as error:
        raise _Unknown(uri) from error
    return hashlib.sha256(answer.model_dump_json(by_alias=True).encode()).hexdigest()


class Subscriptions:
    """The URIs one connection subscribed to, each with the fingerprint it had when the client was last told."""

    def __init__(self) -> None:
        self._seen: dict[str, str | None] = {}

    async def subscribe(self, context: RequestContext, uri: str) -> None:
        target_of(uri)  # only a Mnemo resource may be subscribed to: the same -32602 resources/read answers
        if uri not in self._seen and len(self._seen) >= MAX_SUBSCRIPTIONS:
            message = f"At most {MAX_SUBSCRIPTIONS} subscriptions per session; unsubscribe from one first"
            raise MCPError(code=types.INVALID_PARAMS, message=message, data={"uri": uri})
        try:
            self._seen[uri] = await anyio.to_thread.run_sync(fingerprint, context, uri)
        except _Unknown as failed:
            logger.warning("MCP subscription to %s: first read failed: %s", uri, failed.__cause__)
            self._seen[uri] = ""  # never a digest: the first read that works counts as a change

    def unsubscribe(self, uri: str) -> None:
        self._seen.pop(uri, None)

    async def changed(self, context: RequestContext) -> list[str]:
        """The subscribed URIs whose resource changed since the client was last told, now taken as told."""
        if not self._seen:
            return []
        before = dict(self._seen)
        now = await anyio.to_thread.run_sync(_fingerprints, context, list(before))
        changed = [uri for uri, digest in now.items() if uri in self._seen and digest != before[uri]]
        for uri in changed:
            self._seen[uri] = now[uri]
        return changed


def _fingerprints(context: RequestContext, uris: list[str]) -> dict[str, str | None]:
    """Each URI's fingerprint, leaving out those that could not be read just now."""
    found: dict[str, str | None] = {}
    for uri in uris:
        try:
            found[uri] = fingerprint(context, uri)
        except _Unknown as failed:
            logger.warning("MCP subscription to %s: read failed: %s", uri, failed.__cause__)
    return found


#: Where a connection keeps its subscriptions (``Connection.state``, which lasts as long as the connection).
STATE_KEY = "mnemo.subscriptions"


def subscriptions_of(ctx: Any) -> Subscriptions:
    """The connection's subscriptions. SDK 2.3 hands lowlevel handlers a ``ServerRequestContext`` whose per-request
    ``ServerSession`` keeps the ``Connection`` (the per-client state that outlives a request) as ``_connection``;
    the public ``Context.connection`` is the same object, but the lowlevel runner does not build a Context."""
    state: dict[str, Any] = ctx.session._connection.state
    found = state.get(STATE_KEY)
    if not isinstance(found, Subscriptions):
        found = state[STATE_KEY] = Subscriptions()
    return found


async def notify_changes(ctx: Any, context: RequestContext) -> None:
    """After a tool call: ``notifications/resources/updated`` for each subscribed resource it (or anyone) changed."""
    for uri in await subscriptions_of(ctx).changed(context):
        await ctx.session.send_resource_updated(uri)
