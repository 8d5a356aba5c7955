"""The VectorIndex port on OpenSearch (managed domain or OpenSearch Serverless).

One index per namespace, named ``index_prefix`` + the namespace (escaped into the
characters an index name allows). One document per memory:

- ``doc_id``: the memory id. Serverless vector collections assign ``_id`` themselves, so
  the id is a field and every write finds documents through it. On a managed domain
  (``serverless=False``) ``_id`` is also set to the memory id, which makes an upsert a
  single overwrite.
- ``text``: the text, analysed like the local index (standard tokenizer, lower case,
  English possessives, English stop words, Snowball), BM25 with the local k1 and b, for
  searches made outside this adapter (dashboards, ad hoc queries).
- ``terms``: the tokens of ``mnemo.adapters.local.lexical.analyse`` (with repeats) and
  ``length``: their number, so BM25 here uses exactly the local analysis. The sub-field
  ``terms.bm25`` (whitespace-analysed, same BM25 parameters) ranks lexical candidates
  on those same tokens.
- ``filters``: one ``field=value`` keyword per filter value; ``Hit.keywords`` is rebuilt
  from it.
- ``vector``: faiss HNSW, inner product (vectors are unit length, so it is the cosine), stored
  as 16-bit floats by the faiss ``sq`` encoder (OpenSearch 2.13 and later, and Serverless vector
  collections). A search filters inside the graph search (efficient k-NN filtering), so ``k``
  hits come back when ``k`` documents match. Sizes and limits: docs/scaling.md.

- ``written``: when the copy was written (epoch nanoseconds), so that ``prune`` keeps the
  latest copy of a memory.

The adapter never asks for a refresh (Serverless refuses it): writes become searchable
when the cluster refreshes on its own (about a second on a domain, 10 to 60 s on
Serverless). Until then a search may miss a fresh write and, on Serverless, a write or
delete of the same memory may not find the copy it replaces; searches drop a memory's
second copy. Serverless vector collections refuse a client-supplied ``_id`` (AWS documents
server-generated ids for VECTORSEARCH collections), so exact ids are not an option there;
keeping the assigned ``_id`` beside each record in DynamoDB would cost a second record
write per add. Instead the adapter reports its ``refresh_window`` (``SERVERLESS_REFRESH``
on Serverless, 0 on a domain, where ``_id`` is the memory id and every write is exact),
and the index outbox (``mnemo.outbox``) checks every delete and replacement again once
the window has passed: the delete is repeated, or ``prune`` keeps only the latest copy.
Adds of new memories cannot have missed a copy and are not checked again. The index is
created on the first upsert, with the dimension of the first vector, together with an
index template for ``index_prefix*`` (see ``mapping.index_template``);
``infra/bootstrap_opensearch.py`` can create both ahead.

Two optional capabilities serve memory_add (``mnemo.memory.writes``): ``insert`` writes documents
for ids the index never held (a new memory) without the lookup of earlier copies that a
Serverless replacement needs, and ``knn_many`` sends its near-duplicate check's two k-NN searches
in one ``_msearch``. Both wait at most the write timeout (``MNEMO_OPENSEARCH_WRITE_TIMEOUT``, 3 s);
on timeout memory_add queues the memory for the stream indexer. Everything else waits
``MNEMO_OPENSEARCH_TIMEOUT`` (25 s): a Serverless collection scaled to zero (0 OCU after 10 idle
minutes) answers its first request after 10 to 30 s, and a search must answer within API
Gateway's 29 s. A request that times out answers a retryable TIMEOUT naming the wait
(``errors.timed_out``), is not re-sent by the client (``client.MAX_RETRIES``), and a search's
k-NN timeout is not followed by a keyword search that would wait again (``mnemo.retrieval.ranker``).

The package's modules: ``mapping`` (the index definition, template and names), ``queries``
(filters as keywords and the request bodies), ``scoring`` (faiss scores and BM25),
``errors`` (OpenSearch failures as Mnemo errors), ``client`` (the signed client) and
``adapter`` (``OpenSearchVectorIndex``).
"""
