"""Knowledge files: where they live, and how a markdown file becomes a KnowledgeItem.

A tenant's repository is a tree of markdown files with YAML front matter:

    company/**.md            the company layer (the tenant)
    orgs/{orgId}/**.md       one org
    teams/{teamId}/**.md     one team
    projects/{projectId}/**.md

In the blob store the tree sits under ``knowledge/{tenant}/``. A file that is
not valid (layout, YAML, schema, pattern) raises DocumentError naming its path
and the failing field; it never stops the other files.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from pydantic import ValidationError

from mnemo.errors import InvalidInput
from mnemo.knowledge.models import Constraint, KnowledgeItem, KnowledgeLayer
from mnemo.knowledge.patterns import validate_pattern
from mnemo.schema_check import Problem, first_problem

ROOT = "knowledge"
LAYER_FOLDERS: dict[str, KnowledgeLayer] = {"orgs": "org", "teams": "team", "projects": "project"}
MAX_DOCUMENT_BYTES = 256 * 1024  # a catalog record must stay well under DynamoDB's 400 KB item limit
#: Bump when ``parse_document`` reads the same bytes into a different item: sync keeps this beside each file's
#: content tag and reads again every file synced under another format.
DOCUMENT_FORMAT = "1"

_LAYER_ID = re.compile(r"^[A-Za-z0-9._@:+=,\-]{1,256}$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?P<yaml>.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(?P<body>.*)\Z", re.DOTALL)


class DocumentError(ValueError):
    def __init__(self, path: str, field: str, message: str) -> None:
        super().__init__(f"{path}: {field}: {message}")
        self.path = path
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Place:
    """Where a file sits in the repository: its layer and the id of that layer."""

    layer: KnowledgeLayer
    layer_id: str | None


def tenant_prefix(tenant: str) -> str:
    """The tenant's root in the blob store. A tenant id with '/' would reach into another's tree."""
    if "/" in tenant or not tenant:
        raise InvalidInput(
            "tenant: a tenant whose id contains '/' cannot hold knowledge", {"field": "tenant", "tenant": tenant}
        )
    return f"{ROOT}/{tenant}/"


def split_key(key: str) -> tuple[str, str] | None:
    """(tenant, relative path) of a blob key under the knowledge root, else None."""
    parts = key.split("/", 2)
    if len(parts) != 3 or parts[0] != ROOT or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def is_knowledge_file(path: str) -> bool:
    return path.endswith(".md") and path.split("/", 1)[0] in {"company", *LAYER_FOLDERS}


def place_of(path: str) -> Place:
    """The layer a relative path belongs to; DocumentError if the path fits no layer."""
    parts = path.split("/")
    if any(part in {"", ".", ".."} for part in parts):
        raise DocumentError(path, "path", "empty, '.' or '..' segments are not allowed")
    if parts[0] == "company" and len(parts) >= 2:
        return Place("company", None)
    if parts[0] in LAYER_FOLDERS and len(parts) >= 3:
        if not _LAYER_ID.match(parts[1]):
            raise DocumentError(path, "path", f"'{parts[1]}' is not a valid {LAYER_FOLDERS[parts[0]]} id")
        return Place(LAYER_FOLDERS[parts[0]], parts[1])
    raise DocumentError(path, "path", "knowledge files live under company/, orgs/{id}/, teams/{id}/ or projects/{id}/")


@cache
def front_matter_schema() -> dict[str, Any]:
    text = resources.files("mnemo.knowledge").joinpath("front_matter.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _yaml_loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader that keeps dates and times as the strings the author wrote."""

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return Loader


def _field_of(problem: Problem) -> str:
    path = [str(part) for part in problem.path]
    if problem.subject is not None:  # the property a "required" or "additionalProperties" problem names
        path.append(problem.subject)
    return ".".join(part for part in path if part) or "frontMatter"


def read_front_matter(path: str, text: str) -> tuple[dict[str, Any], str]:
    """The validated front matter and the markdown body of one file."""
    import yaml

    match = _FRONT_MATTER.match(text.lstrip("\ufeff"))
    if match is None:
        raise DocumentError(path, "frontMatter", "the file must start with YAML front matter between '---' lines")
    try:
        data = yaml.load(match["yaml"], Loader=_yaml_loader())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise DocumentError(path, "frontMatter", f"invalid YAML{where}: {getattr(error, 'problem', error)}") from None
    if not isinstance(data, dict):
        raise DocumentError(path, "frontMatter", "the front matter must be a YAML mapping")
    problem = first_problem(front_matter_schema(), data)
    if problem is not None:
        raise DocumentError(path, _field_of(problem), problem.message)
    if data.get("supersedes") == data["id"]:
        raise DocumentError(path, "supersedes", "an item cannot supersede itself")
    for number, constraint in enumerate(data.get("constraints", [])):
        reason = validate_pattern(constraint["pattern"])
        if reason:
            raise DocumentError(path, f"constraints.{number}.pattern", reason)
    return data, match["body"].strip("\n")


def content_hash(item: KnowledgeItem) -> str:
    """SHA-256 over everything the file says (content, constraints, status and the rest).

    Call it before ``updated_at`` falls back to the blob's time: a re-upload of the
    same bytes is not a change.
    """
    said = item.model_dump(mode="json", exclude={"path", "version", "content_hash", "superseded_by"})
    return hashlib.sha256(json.dumps(said, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def parse_document(path: str, raw: bytes, *, version: str = "", modified_at: str = "") -> KnowledgeItem:
    """One file as a KnowledgeItem; DocumentError names the path and field that failed."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise DocumentError(path, "content", f"the file is over {MAX_DOCUMENT_BYTES // 1024} KB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DocumentError(path, "content", "the file is not UTF-8 text") from None
    place = place_of(path)
    data, body = read_front_matter(path, text)
    try:
        item = _item(path, place, data, body, version)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"]) or "frontMatter"
        raise DocumentError(path, field, first["msg"]) from None
    item.content_hash = content_hash(item)
    item.updated_at = item.updated_at or modified_at or None
    return item


def _item(path: str, place: Place, data: dict[str, Any], body: str, version: str) -> KnowledgeItem:
    severity = data.get("severity", "warn")
    constraints = [
        Constraint(
            operator=c["operator"],
            target=c["target"],
            pattern=c["pattern"],
            applies_to=c.get("appliesTo", []),
            severity=c.get("severity", severity),
            message=c.get("message", ""),
        )
        for c in data.get("constraints", [])
    ]
    return KnowledgeItem(
        id=data["id"],
        type=data["type"],
        layer=place.layer,
        layer_id=place.layer_id,
        title=data["title"],
        summary=data["summary"],
        content=body,
        status=data.get("status", "accepted"),
        severity=severity,
        tags=data.get("tags", []),
        constraints=constraints,
        metadata=data.get("metadata", {}),
        supersedes=data.get("supersedes"),
        created_at=data.get("created"),
        updated_at=data.get("updated"),
        path=path,
        version=version,
    )
