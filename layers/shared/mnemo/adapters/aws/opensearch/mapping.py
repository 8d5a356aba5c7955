"""The definition of a memory index: its settings and mappings, the index template, and index names.

The document layout the mapping describes: the package docstring (``mnemo.adapters.aws.opensearch``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from mnemo.adapters.bm25_text import K1, B

#: HNSW graph parameters (docs/scaling.md, "On AWS: OpenSearch"): links per vector, the
#: candidate list while building, and the candidate list while searching. ``ef_search`` stays
#: above the k of memory_search (100 candidates), whose recall a list of exactly k would cap.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
HNSW_EF_SEARCH = 256
#: Keywords longer than this (in characters) are kept in _source but not indexed, so that
#: one enormous token cannot get a document rejected (Lucene refuses terms over 32766 bytes).
KEYWORD_IGNORE_ABOVE = 8191

_INDEX_NAME_KEEPS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_INDEX_NAME_MAX_BYTES = 255


def index_definition(dimension: int, *, serverless: bool = False) -> dict[str, Any]:
    """The settings and mappings of a memory index (``infra/opensearch/memory.json`` at 1024).

    Serverless manages shards and replicas itself, so those settings are left out there.
    """
    index_settings: dict[str, Any] = {"knn": True}
    if not serverless:
        index_settings.update({"number_of_shards": 2, "number_of_replicas": 1})
    return {
        "settings": {
            "index": index_settings,
            "analysis": {
                "analyzer": {
                    "mnemo_text": {
                        "type": "custom",
                        "tokenizer": "standard",
                        "filter": ["lowercase", "english_possessive", "english_stop", "english_snowball"],
                    }
                },
                "filter": {
                    "english_possessive": {"type": "stemmer", "language": "possessive_english"},
                    "english_stop": {"type": "stop", "stopwords": "_english_"},
                    "english_snowball": {"type": "snowball", "language": "English"},
                },
            },
            "similarity": {"mnemo_bm25": {"type": "BM25", "k1": K1, "b": B}},
        },
        "mappings": {
            "dynamic": "strict",
            # The vectors are only searched, never read back: keeping them out of _source
            # saves most of the storage and of every response.
            "_source": {"excludes": ["vector"]},
            "properties": {
                "doc_id": {"type": "keyword"},
                "text": {"type": "text", "analyzer": "mnemo_text", "similarity": "mnemo_bm25"},
                "terms": {
                    "type": "keyword",
                    "ignore_above": KEYWORD_IGNORE_ABOVE,
                    "fields": {"bm25": {"type": "text", "analyzer": "whitespace", "similarity": "mnemo_bm25"}},
                },
                "length": {"type": "integer"},
                "filters": {"type": "keyword", "ignore_above": KEYWORD_IGNORE_ABOVE},
                "written": {"type": "long"},
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    "method": {
                        "name": "hnsw",
                        "engine": "faiss",
                        "space_type": "innerproduct",
                        "parameters": {
                            "m": HNSW_M,
                            "ef_construction": HNSW_EF_CONSTRUCTION,
                            "ef_search": HNSW_EF_SEARCH,
                            # Faiss 16-bit scalar quantization: half the memory of float32 vectors.
                            # Unit vectors lie in [-1, 1], well inside fp16's [-65504, 65504].
                            "encoder": {"name": "sq", "parameters": {"type": "fp16"}},
                        },
                    },
                },
            },
        },
    }


def index_template(prefix: str, dimension: int, *, serverless: bool = False) -> dict[str, Any]:
    """A composable index template giving every ``prefix*`` index the memory definition.

    The adapter creates its indexes explicitly; the template covers the race in which a
    handle that still believes an index exists writes to it just after another handle
    deleted it (``clear``, as ``reindex`` does): the bulk request then creates the index
    itself, and without the template it would get a dynamic mapping with no k-NN field.
    """
    return {
        "index_patterns": [f"{prefix}*"],
        "priority": 100,
        "template": index_definition(dimension, serverless=serverless),
    }


def template_name(prefix: str) -> str:
    """The name of the index template that covers ``prefix*``."""
    return f"{prefix}index-template"


def index_name(prefix: str, namespace: str) -> str:
    """``prefix`` + ``namespace``, with every character an index name may not hold escaped.

    Index names are lower case and refuse ``|``, spaces and more; namespaces are free text.
    Lower-case letters, digits and ``-`` are kept, anything else becomes ``_xx`` per UTF-8
    byte (``_`` included), so distinct namespaces never share an index.
    """
    escaped = "".join(
        char if char in _INDEX_NAME_KEEPS else "".join(f"_{byte:02x}" for byte in char.encode()) for char in namespace
    )
    name = prefix + escaped
    if len(name.encode()) > _INDEX_NAME_MAX_BYTES:
        digest = hashlib.sha256(namespace.encode()).hexdigest()[:16]
        name = f"{name[: _INDEX_NAME_MAX_BYTES - len(digest) - 1]}-{digest}"
    return name
