"""What a file tool's ``path`` names: the scheme picks the store (seed 004), nothing may escape it.

==========================================  ====================================================
path                                        store
==========================================  ====================================================
``mnemo:///blocks/x.md``                    the caller's own StoredAssets (agent, else user)
``mnemo://user/skills/ddd.md``              the caller's user layer, named explicitly
``mnemo://project/blocks/x.md``             the project's shared StoredAssets
``src/auth.py``                             the project workspace (the user's without a project)
``knowledge://ADR-042``                     a knowledge item, read-only
``topic://deployment-process``              a topic note
==========================================  ====================================================

A name is made of ``/``-separated segments; a segment is never empty, ``.`` or
``..``, and holds no ``\\``, ``#``, ``%``, ``:``, ``?``, ``*``, quotes, angle
brackets or ``|``, no control or invisible character, and no leading or
trailing blank. Nothing is decoded (``%2e%2e`` is refused, not turned into
``..``), so what is checked is what is stored.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from mnemo.errors import InvalidInput, invalid_field
from mnemo.visible import hidden_character

Store = Literal["asset", "workspace", "knowledge", "topic"]
#: The folders of StoredAssets: blocks (pinnable context) and skills (pinnable how-tos).
ASSET_KINDS = ("blocks", "skills")
#: Whose StoredAssets a ``mnemo://`` authority names; empty means the caller's own.
OWNERS = ("", "agent", "user", "project")
SCHEMES = ("mnemo://", "knowledge://", "topic://")
MAX_PATH_CHARS = 1024
MAX_SEGMENT_BYTES = 255

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):")
_FORBIDDEN_CHARS = frozenset('\\#%:?*"<>|')
_KNOWLEDGE_ID = re.compile(r"^[A-Za-z0-9._@+=,\-]{1,128}$")


@dataclass(frozen=True)
class FilePath:
    """A parsed path: which store, whose (for StoredAssets) and the name inside it."""

    store: Store
    #: The name inside the store: ``blocks/x.md``, ``src/auth.py``, a knowledge id or a topic name.
    name: str
    owner: str = ""

    @property
    def uri(self) -> str:
        """The path as answers show it, normalised."""
        if self.store == "asset":
            return f"mnemo://{self.owner}/{self.name}"
        if self.store == "knowledge":
            return f"knowledge://{self.name}"
        if self.store == "topic":
            return f"topic://{self.name}"
        return self.name

    @property
    def kind(self) -> str:
        """What the answer calls it: block, skill, workspace, knowledge or topic."""
        if self.store == "asset":
            return "skill" if self.name.startswith("skills/") else "block"
        return self.store


def _hidden(char: str) -> bool:
    """A control or a character that shows nothing (mnemo.visible), or any space but the ASCII one: a name
    that looks like another must not be a different file."""
    return hidden_character(char) is not None or (char != " " and unicodedata.category(char) == "Zs")


def _bad(field: str, problem: str, value: str) -> InvalidInput:
    return invalid_field(field, problem, path=value[:200])


def _check_segments(name: str, field: str, raw: str, *, folder: bool) -> str:
    """``name`` as stored (NFC); a trailing ``/`` is allowed only for a folder (a listing)."""
    segments = name.split("/")
    if folder and segments and segments[-1] == "":
        segments = segments[:-1]
    for segment in segments:
        if segment in ("", ".", ".."):
            raise _bad(field, "a path segment is empty, '.' or '..'; paths cannot leave their scope", raw)
        bad = next((c for c in segment if c in _FORBIDDEN_CHARS or _hidden(c)), None)
        if bad is not None:
            shown = bad if bad.isprintable() else f"U+{ord(bad):04X}"
            raise _bad(field, f"'{shown}' is not allowed in a path (nothing in a path is decoded)", raw)
        if segment != segment.strip():
            raise _bad(field, "a path segment must not start or end with a blank", raw)
        if len(segment.encode()) > MAX_SEGMENT_BYTES:
            raise _bad(field, f"a path segment takes at most {MAX_SEGMENT_BYTES} bytes", raw)
    return "/".join(segments) + ("/" if folder and name.endswith("/") and segments else "")


def parse_path(raw: str, *, field: str = "path", folder: bool = False) -> FilePath:
    """The store and name a path names; INVALID_INPUT naming ``field`` for anything else.

    ``folder`` accepts what a listing takes: a prefix (``mnemo:///blocks/``,
    ``src/``, ``topic://``) or nothing (the workspace root).
    """
    value = unicodedata.normalize("NFC", raw)
    if len(value) > MAX_PATH_CHARS:
        raise _bad(field, f"a path has at most {MAX_PATH_CHARS} characters", raw)
    if "\x00" in value:
        raise _bad(field, "a path must not contain NUL", raw)
    found = _SCHEME.match(value)
    if found is None:
        return _workspace(value, field, raw, folder)
    scheme = found["scheme"].lower()
    rest = value[found.end() :]
    if not rest.startswith("//"):
        raise _bad(field, f"'{scheme}:' needs '//' after it, e.g. mnemo:///blocks/notes.md", raw)
    rest = rest[2:]
    if scheme == "mnemo":
        return _asset(rest, field, raw, folder)
    if scheme == "knowledge":
        if folder and rest == "":
            return FilePath("knowledge", "")
        if not _KNOWLEDGE_ID.match(rest):
            raise _bad(field, "a knowledge path is knowledge://<id>, e.g. knowledge://ADR-042", raw)
        return FilePath("knowledge", rest)
    if scheme == "topic":
        from mnemo.topics.names import check_topic_name

        if folder and rest == "":
            return FilePath("topic", "")
        try:
            return FilePath("topic", check_topic_name(rest))
        except ValueError as error:
            raise _bad(field, str(error), raw) from None
    raise _bad(
        field,
        f"unknown scheme '{scheme}:'; a path is relative (the project workspace) or starts with " + ", ".join(SCHEMES),
        raw,
    )


def _workspace(value: str, field: str, raw: str, folder: bool) -> FilePath:
    if value.startswith("/") or value.startswith("~"):
        raise _bad(field, "workspace paths are relative to the project (e.g. src/auth.py), never absolute", raw)
    if value == "":
        if folder:
            return FilePath("workspace", "")
        raise _bad(field, "a path is required", raw)
    if value.endswith("/") and not folder:
        raise _bad(field, "a file path must not end with '/'", raw)
    return FilePath("workspace", _check_segments(value, field, raw, folder=folder))


def _asset(rest: str, field: str, raw: str, folder: bool) -> FilePath:
    owner, _, name = rest.partition("/")
    if owner not in OWNERS:
        raise _bad(
            field,
            f"'{owner}' is not an owner of StoredAssets: use mnemo:///blocks/... (your own), "
            "mnemo://user/..., mnemo://agent/... or mnemo://project/...",
            raw,
        )
    if folder and name == "":
        return FilePath("asset", "", owner)
    kind = name.split("/", 1)[0]
    if kind not in ASSET_KINDS:
        raise _bad(field, "a StoredAsset lives under blocks/ or skills/, e.g. mnemo:///blocks/decisions.md", raw)
    if name == kind:
        if folder:
            return FilePath("asset", kind + "/", owner)
        raise _bad(field, f"name the file inside {kind}/, e.g. mnemo:///{kind}/notes.md", raw)
    if name.endswith("/") and not folder:
        raise _bad(field, "a file path must not end with '/'", raw)
    return FilePath("asset", _check_segments(name, field, raw, folder=folder), owner)
