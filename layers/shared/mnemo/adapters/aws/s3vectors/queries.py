"""What the S3 Vectors adapter sends: index names, vector metadata, filter documents and the service's limits
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-limitations.html)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mnemo.adapters.bm25_text import analyse
from mnemo.errors import InvalidInput
from mnemo.ports import AllOf, AnyOf, AnyTerm, Filter, IndexDoc, Match, NoneOf, TermContains, TermRange

#: The most results one QueryVectors answers (``topK``).
TOP_K = 100
#: Vectors per PutVectors and DeleteVectors request, keys per GetVectors request.
PUT_BATCH = 500
DELETE_BATCH = 500
GET_BATCH = 100
#: Vectors per ListVectors page.
LIST_PAGE = 1000
#: Filterable metadata per vector, and all metadata per vector, in bytes.
FILTERABLE_BYTES = 2048
METADATA_BYTES = 40 * 1024
#: The BM25 terms kept per vector (the rest of a long document is not rescored), under the metadata limit.
TERMS_BYTES = 32 * 1024
#: The non-filterable, full-text searchable key holding a document's terms.
TERMS_KEY = "mnemo_terms"

_INDEX_NAME_KEEPS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_INDEX_NAME_MAX = 63


def index_name(prefix: str, namespace: str) -> str:
    """``prefix`` + ``namespace``, every character but lower-case letters and digits escaped as ``.xx`` per
    UTF-8 byte (an index name holds lower-case letters, digits, ``-`` and ``.``, and ends with a letter or
    digit), so distinct namespaces never share an index; a long name keeps a digest of the namespace."""
    escaped = "".join(
        char if char in _INDEX_NAME_KEEPS else "".join(f".{byte:02x}" for byte in char.encode()) for char in namespace
    )
    name = prefix + escaped
    if len(name) > _INDEX_NAME_MAX:
        digest = hashlib.sha256(namespace.encode()).hexdigest()[:16]
        name = f"{name[: _INDEX_NAME_MAX - len(digest) - 1]}-{digest}"
    return name


def metadata(doc: IndexDoc) -> dict[str, Any]:
    """A document's metadata: its filter fields (filterable) and its BM25 terms (``TERMS_KEY``).

    ValueError when the filter fields need more than S3 Vectors' filterable metadata allows.
    """
    if TERMS_KEY in doc.keywords:
        raise ValueError(f"{TERMS_KEY} is the S3 Vectors adapter's own metadata key, not a filter field")
    filterable = {name: list(values) for name, values in doc.keywords.items() if values}
    size = len(json.dumps(filterable, ensure_ascii=False, separators=(",", ":")).encode())
    if size > FILTERABLE_BYTES:
        raise ValueError(
            f"document {doc.id}: its filter fields take {size} bytes, over the {FILTERABLE_BYTES} bytes of "
            "filterable metadata S3 Vectors allows per vector"
        )
    terms = " ".join(analyse(doc.text)).encode()[:TERMS_BYTES].decode(errors="ignore")
    return {**filterable, TERMS_KEY: terms.rsplit(" ", 1)[0] if len(terms) == TERMS_BYTES else terms}


def keywords_of(meta: dict[str, Any] | None) -> dict[str, list[str]]:
    """A hit's filter fields, from its metadata."""
    return {name: list(values) for name, values in (meta or {}).items() if name != TERMS_KEY}


def terms_of(meta: dict[str, Any] | None) -> list[str]:
    """A hit's BM25 terms, from its metadata."""
    return str((meta or {}).get(TERMS_KEY, "")).split()


#: What a filter compiles to when it accepts every document, or none.
EVERYTHING: dict[str, Any] = {}
NOTHING = None


def compile_filter(flt: Filter, where: Match | None) -> dict[str, Any] | None:
    """``flt`` AND ``where`` as one S3 Vectors filter document; ``EVERYTHING`` ({}) when it accepts every
    document, ``NOTHING`` (None) when it accepts none. INVALID_INPUT (field ``filter``) for a condition S3
    Vectors cannot express."""
    parts: list[_Compiled] = [_any_term(name, values) for name, values in flt.items()]
    if where is not None:
        parts.append(_compile(where))
    return _document(_and(parts))


# A compiled condition: True (every document), False (none) or a filter document.
_Compiled = bool | dict[str, Any]


def _document(compiled: _Compiled) -> dict[str, Any] | None:
    if compiled is True:
        return EVERYTHING
    if compiled is False:
        return NOTHING
    return compiled


def _compile(where: Match) -> _Compiled:
    if isinstance(where, AnyTerm):
        return _any_term(where.field, where.values)
    if isinstance(where, TermRange):
        if where.prefix == "" and where.low is None and where.high is None:
            return {where.field: {"$exists": True}}
        raise _unsupported(f"a range on {where.field!r}")
    if isinstance(where, TermContains):
        raise _unsupported(f"a substring test on {where.field!r}")
    if isinstance(where, AllOf):
        return _and([_compile(part) for part in where.parts])
    if isinstance(where, AnyOf):
        return _or([_compile(part) for part in where.parts])
    if isinstance(where, NoneOf):
        return _and([_negate(part) for part in where.parts])
    raise ValueError(f"not a term-match expression: {where!r}")


def _negate(where: Match) -> _Compiled:
    """``not where``, pushed down to the leaves (S3 Vectors has no ``$not``)."""
    if isinstance(where, AnyTerm):
        if not where.values:
            return True
        # A document without the field holds none of the values: said outright, whatever $nin makes of it.
        return {"$or": [{where.field: {"$exists": False}}, {where.field: {"$nin": list(where.values)}}]}
    if isinstance(where, TermRange) and where.prefix == "" and where.low is None and where.high is None:
        return {where.field: {"$exists": False}}
    if isinstance(where, TermRange | TermContains):
        _compile(where)  # raises: no S3 Vectors form
    if isinstance(where, AllOf):
        return _or([_negate(part) for part in where.parts])
    if isinstance(where, AnyOf):
        return _and([_negate(part) for part in where.parts])
    if isinstance(where, NoneOf):
        return _or([_compile(part) for part in where.parts])
    raise ValueError(f"not a term-match expression: {where!r}")


def _any_term(field: str, values: Any) -> _Compiled:
    values = list(values)
    if not values:
        return False
    return {field: {"$eq": values[0]}} if len(values) == 1 else {field: {"$in": values}}


def _and(parts: list[_Compiled]) -> _Compiled:
    if any(part is False for part in parts):
        return False
    kept = [part for part in parts if part is not True]
    if not kept:
        return True
    return kept[0] if len(kept) == 1 else {"$and": kept}


def _or(parts: list[_Compiled]) -> _Compiled:
    if any(part is True for part in parts):
        return True
    kept = [part for part in parts if part is not False]
    if not kept:
        return False
    return kept[0] if len(kept) == 1 else {"$or": kept}


def _unsupported(what: str) -> InvalidInput:
    return InvalidInput(
        f"filter: {what} cannot be searched on the S3 Vectors store (its filters compare strings only for "
        "equality); use equality filters, or the OpenSearch store",
        {"field": "filter", "store": "s3vectors"},
    )
