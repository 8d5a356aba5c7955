"""The topics family's record layout: its keys, in one place.

Records (partition ``TOPIC|{scope}``) are the source of truth:

- ``GENERAL``: the general section ``{content, lastUpdated, updatedBy}``;
- ``TOPIC#{key}``: a topic's head ``{name, tags, summary, createdAt, lastUpdated, ...}``;
- ``BODY#{key}``: its content, written in the same transaction, at the head's version.

``key`` is the name case-folded (``mnemo.topics.names.topic_key``). The
service, export and import take these keys from here.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the layout is read by light modules (mnemo.topics.family): no pydantic model at import
    from mnemo.topics.models import TopicLayer

PARTITION = "TOPIC|"
#: The index namespace of topics, and their family in the index outbox.
NAMESPACE = "topics"
GENERAL = "GENERAL"
HEAD = "TOPIC#"
BODY = "BODY#"


def partition_of(scope_key: str) -> str:
    """The topics partition of a scope: ``TOPIC|{scope key}``."""
    return f"{PARTITION}{scope_key}"


def scope_key_of(pk: str) -> str:
    """The scope key of a topics partition."""
    return pk.removeprefix(PARTITION)


def key_of(sk: str) -> str:
    """The topic key of a head's sort key."""
    return sk.removeprefix(HEAD)


def layer_of(scope_key: str) -> TopicLayer:
    """Whose topics a scope holds: a user's own (without a project), else a project's."""
    return "user" if "|user|" in f"{scope_key}|" else "project"


def head_of(sk: str) -> str | None:
    """The sort key of the head of the topic an item belongs to (its own for a head); None for the general
    section, which stands alone."""
    kind, _, rest = sk.partition("#")
    if f"{kind}#" == HEAD:
        return sk
    if f"{kind}#" == BODY:
        return f"{HEAD}{rest}"
    return None


def doc_id(scope_key: str, key: str) -> str:
    """The index id of a topic: short, and unique across scopes."""
    return "tpc_" + hashlib.sha256(f"{scope_key}\n{key}".encode()).hexdigest()[:40]
