"""The lines of an export file (format version 2), as pydantic models: the file's schema.

A file is JSON Lines, in this order:

1. one ``header``: ``{"type": "header", "mnemoExport": 2, "kind": "tenant", "selection": {...}, ...}``;
2. ``record`` lines: the records of every family, exactly as stored (keys, body,
   version, expiry);
3. ``blob`` lines: every kept version of each knowledge file, then every version of
   each workspace file that an exported workspace record names, oldest first, content in base64;
4. one ``end`` line with the counts, so a cut-off file is refused, never half-imported.

``mnemo export --schema`` prints the JSON Schema of a line (``line_schema``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel
from pydantic.json_schema import models_json_schema

from mnemo.context import MEMORY_LAYERS

FORMAT_VERSION = 2
#: A record family's export name (``RecordFamily.exported_as``): which ones a Mnemo carries is its registry's,
#: and the import refuses a line whose partition is not of the family it names.
Family = Annotated[str, Field(pattern=r"^[a-z][A-Za-z]{0,63}$")]
BlobFamily = Literal["knowledge", "workspace"]
Layer = Literal[MEMORY_LAYERS]  # type: ignore[valid-type]


class _Line(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class SelectionModel(_Line):
    tenant: str = Field(min_length=1, max_length=256)
    user: str | None = Field(None, min_length=1, max_length=256)
    layers: list[Layer] = Field(default_factory=list)


class Header(_Line):
    """What the file holds and where it came from."""

    type: Literal["header"]
    mnemo_export: Literal[2]
    kind: Literal["tenant", "user", "layer"]
    selection: SelectionModel
    exported_at: str
    #: The source's adapters and embedder, for the reader; vectors are never exported (the target re-embeds).
    source: dict[str, str] = Field(default_factory=dict)


class RecordLine(_Line):
    """One stored record, as the records store holds it."""

    type: Literal["record"]
    family: Family
    pk: str = Field(min_length=1, max_length=2048)
    sk: str = Field(min_length=1, max_length=1024)
    version: int = Field(ge=0, le=2**63 - 1)
    #: Epoch seconds after which the store drops the record (idempotency records, locks).
    expires_at: int | None = Field(None, ge=0, le=2**63 - 1)
    data: dict[str, Any]


class BlobLine(_Line):
    """One version of one file in the blob store."""

    type: Literal["blob"]
    family: BlobFamily
    key: str = Field(min_length=1, max_length=4096)
    #: The version's id in the source store; workspace records name it, and the import maps it to the target's.
    version: str = Field(min_length=1, max_length=1024)
    modified_at: str = ""
    metadata: dict[str, str] = Field(default_factory=dict)
    content: str = Field(description="the bytes, base64")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="of the bytes")


class End(_Line):
    """The last line: how many lines of each kind came before it."""

    type: Literal["end"]
    records: dict[str, int]
    blobs: dict[str, int]


Line = Annotated[RecordLine | BlobLine | End, Field(discriminator="type")]
LINE = TypeAdapter(Line)


def line_schema() -> dict[str, Any]:
    """The JSON Schema of every line: the header, or a record, blob or end line."""
    models = (Header, RecordLine, BlobLine, End)
    _, schema = models_json_schema(
        [(model, "validation") for model in models], by_alias=True, ref_template="#/$defs/{model}"
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Mnemo export line, format version {FORMAT_VERSION}",
        "description": "The first line is a Header; then Record lines, Blob lines, and one End line.",
        "anyOf": [{"$ref": f"#/$defs/{model.__name__}"} for model in models],
        **schema,
    }
