"""The VectorIndex port on Amazon S3 Vectors: nothing provisioned, nothing billed while idle.

One vector bucket (``MNEMO_S3VECTORS_BUCKET``, the template's ``VectorBucket``) and one vector index per
namespace, named ``index_prefix`` + the namespace escaped into the characters an index name allows
(``queries.index_name``), created by the first write with the dimension of its first vector, float32,
cosine distance. One vector per document, under the document's id as its key, so a write of an id replaces
it and every write, delete and lookup is exact (S3 Vectors writes are strongly consistent):
``refresh_window`` is 0 and ``prune`` has nothing to do.

Each vector's metadata:

- the document's filter fields, each a list of strings under its own name (filterable; S3 Vectors allows 2 KB
  of filterable metadata per vector, ``queries.FILTERABLE_BYTES``, and a write that needs more is refused
  before it is sent);
- ``mnemo_terms``: the document's BM25 terms (``mnemo.adapters.bm25_text.analyse``) joined by spaces,
  non-filterable and full-text searchable, cut at ``queries.TERMS_BYTES``.

Searches (``QueryVectors``, top-k at most 100):

- ``knn``: a vector query with the filter; cosine = 1 - the returned cosine distance.
- ``hybrid`` (the ``HybridSearchIndex`` capability the ranker uses): the same one query, its candidates'
  terms rescored by BM25 among themselves (``mnemo.adapters.bm25_rescoring``). S3 Vectors' own full-text
  search ranks with its own analyser and corpus statistics that it does not return, so its scores cannot be
  put on the port's absolute 0-1 scale; the ranking is vector-first instead. What that loses on LoCoMo dev is
  in docs/benchmarks.md.
- ``lexical`` (keyword-only searches, e.g. retrieve_conversation's ``keyword`` strategy): a full-text query
  on ``mnemo_terms`` (the query's terms, analysed as the documents' were), its candidates rescored as above.

Filters (``queries.compile_filter``) become S3 Vectors filter documents: a field's accepted values ``$in``,
``AllOf``/``AnyOf`` ``$and``/``$or``, ``NoneOf`` pushed down to its leaves (``$nin``), ``TermRange`` with
neither prefix nor bounds ``$exists``. Ordered string ranges and substring tests have no S3 Vectors form
(its ``$gt``... compare numbers): they are refused with INVALID_INPUT before any request, never dropped.

The package's modules: ``queries`` (names, metadata, filters, limits) and ``adapter``
(``S3VectorsIndex``).
"""
