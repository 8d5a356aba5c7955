"""Identity on `mnemo serve`: the ``X-Mnemo-*`` headers, read as a Lambda authorizer's context.

``X-Mnemo-Tenant``, ``-User``, ``-Agent``, ``-Session``, ``-Project``, ``-Team``
and ``-Org`` are used exactly as sent: no trimming (``u1\\xa0`` is not ``u1``),
and the whole value must be an id (``mnemo.context``). An empty one is refused,
UNAUTHORIZED naming it: leave a header out to use its default (tenant and user
``local``, the others unset). ``X-Mnemo-Roles`` is a comma-separated list; when
absent the server's default roles apply, and an empty one means no roles.

Headers are trusted only because this server is the authorizer: it listens on
loopback and refuses web pages (``http_guard``). The Lambda doors never read
these headers.
"""

from __future__ import annotations

from collections.abc import Mapping

from mnemo.context import RequestContext
from mnemo.entry.identity import context_from_event
from mnemo.entry.identity.headers import PREFIX, display
from mnemo.errors import Unauthorized
from mnemo.identity_claims import IDENTITY_KEYS


def authorizer_from_headers(headers: Mapping[str, str], default_roles: tuple[str, ...]) -> dict[str, str]:
    """What a Lambda authorizer would return for these headers (tenant and user default to ``local``)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    context = {"tenant": "local", "user": "local"}
    for key in IDENTITY_KEYS:
        value = lowered.get(f"{PREFIX}{key}")
        if value is None:
            continue
        if value == "":
            header = display(f"{PREFIX}{key}")
            raise Unauthorized(
                f"identity {key}: the {header} header is empty; leave it out for the default", {"field": key}
            )
        context[key] = value
    roles = lowered.get(f"{PREFIX}roles")
    context["roles"] = roles if roles is not None else ",".join(default_roles)
    return context


def context_from_headers(headers: Mapping[str, str], default_roles: tuple[str, ...]) -> RequestContext:
    """The caller's context; UNAUTHORIZED naming the field when a value is empty or not an id."""
    return context_from_event({"requestContext": {"authorizer": authorizer_from_headers(headers, default_roles)}})
