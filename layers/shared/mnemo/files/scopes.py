"""Whose files a path names, from the caller's identity (never from the request body).

StoredAssets without an owner in the URI are the caller's own: the agent's
when the context names an agent (and its user), else the user's. The
workspace is the project's, or the user's own without a project id. Shared
scopes (a project's) are read by its members and changed with the writer role.
"""

from __future__ import annotations

from mnemo.context import WRITER_ROLE, RequestContext, parse_scope
from mnemo.errors import InvalidInput, Unauthorized
from mnemo.files.paths import FilePath
from mnemo.files.store import ASSET_PREFIX, WORKSPACE_PREFIX, Location, blob_prefix

WORKSPACE_ROOT = "workspace/"


def own_layer(context: RequestContext) -> str:
    """The layer a pinner and an owner-less mnemo:/// URI stand for: the agent's, else the user's."""
    if context.agent is not None and context.user is not None:
        return "agent"
    if context.user is not None:
        return "user"
    raise InvalidInput(
        "user: StoredAssets need a user id (and, for an agent's own, an agent id) in the request context",
        {"field": "user", "missingIds": ["user"]},
    )


def pinner_key(context: RequestContext) -> str:
    return context.scope_key(own_layer(context))


def asset_layer(context: RequestContext, owner: str) -> str:
    layer = own_layer(context) if owner == "" else owner
    missing = context.missing_ids(layer)
    if missing:
        raise InvalidInput(
            f"{missing[0]}: mnemo://{owner}/ needs a {missing[0]} id in the request context",
            {"field": missing[0], "missingIds": missing},
        )
    return layer


def _writable(context: RequestContext, layer: str) -> None:
    if layer == "project" and WRITER_ROLE not in context.roles:
        raise Unauthorized(
            f"Changing the project's files needs the '{WRITER_ROLE}' role",
            {"field": "path", "layer": "project", "requiredRole": WRITER_ROLE},
        )


def asset_location(context: RequestContext, path: FilePath, *, write: bool = False) -> Location:
    layer = asset_layer(context, path.owner)
    if write:
        _writable(context, layer)
    return Location(ASSET_PREFIX + context.scope_key(layer))


def workspace_layer(context: RequestContext) -> str:
    if context.project is not None:
        return "project"
    if context.user is not None:
        return "user"
    raise InvalidInput(
        "project: the workspace needs a project id (or, for a personal one, a user id) in the request context",
        {"field": "project", "missingIds": ["project", "user"]},
    )


def workspace_location(context: RequestContext, *, write: bool = False) -> Location:
    layer = workspace_layer(context)
    if write:
        _writable(context, layer)
    owner = context.project if layer == "project" else context.user
    assert owner is not None
    return Location(
        WORKSPACE_PREFIX + context.scope_key(layer),
        WORKSPACE_ROOT + blob_prefix(context.tenant, layer, owner),
    )


def workspace_location_of(pk: str) -> Location | None:
    """The Location of a workspace partition (``WS|{scope key}``), blob prefix included; None if it is none."""
    scope = parse_scope(pk.removeprefix(WORKSPACE_PREFIX)) if pk.startswith(WORKSPACE_PREFIX) else None
    if scope is None or scope.layer not in ("project", "user"):
        return None
    owner = scope.ids[scope.layer]
    return Location(pk, WORKSPACE_ROOT + blob_prefix(scope.tenant, scope.layer, owner))


def display_uri(context: RequestContext, pk: str, name: str) -> str:
    """How the caller names the StoredAsset ``name`` of partition ``pk``: relative to its own scope."""
    scope = pk.removeprefix(ASSET_PREFIX)
    try:
        if scope == context.scope_key(own_layer(context)):
            return f"mnemo:///{name}"
    except (InvalidInput, ValueError):
        pass
    for layer in ("user", "agent", "project"):
        if context.can_read(layer) and scope == context.scope_key(layer):
            return f"mnemo://{layer}/{name}"
    return f"mnemo://?/{name}"
