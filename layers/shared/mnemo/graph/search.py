"""graph_search, and the graph context memory_search adds with includeGraph.

Entities and facts are ranked by the calibrated hybrid score (``mnemo.retrieval.ranker``),
within the caller's readable scopes; every hit is read back from the records,
dropped unless its scope is the caller's, and a fact is kept only if it holds at
``asOf`` (as known at ``knownAt``) unless history is asked for.
"""

from __future__ import annotations

from typing import Any

from mnemo.budget import fit_head
from mnemo.context import Layer, RequestContext
from mnemo.graph.index import NAMESPACE
from mnemo.graph.models import EntityHit, FactHit, FactView, GraphContext, GraphSearchInput, GraphSearchOutput
from mnemo.graph.names import type_key
from mnemo.graph.store import ENTITY, FACT, GraphStore, partition, versioned
from mnemo.graph.temporal import now, stamp, status_at
from mnemo.graph.views import FactViews, entity_view
from mnemo.ports import Embedder, Filter, Hit, Item, VectorIndex
from mnemo.retrieval.ranker import hybrid_rank

#: includeGraph: entities the query finds, facts taken from each, and facts answered in all.
CONTEXT_ENTITIES, FACTS_PER_ENTITY, CONTEXT_FACTS = 5, 5, 20


class GraphSearch:
    def __init__(self, store: GraphStore, views: FactViews, index: VectorIndex, embedder: Embedder) -> None:
        self._store = store
        self._records = store.records
        self._views = views
        self._index = index
        self._embedder = embedder

    def search(self, context: RequestContext, request: GraphSearchInput) -> GraphSearchOutput:
        """graph_search: entities and facts in the caller's readable layers, each read back from the records; a fact is
        kept only if it holds at ``asOf`` (as known at ``knownAt``) unless ``includeInvalid``. Cut to the response
        budget."""
        layers = context.readable_layers(list(request.layers) if request.layers else None)
        moment_time = request.as_of or now()
        output = GraphSearchOutput(entities=[], facts=[], as_of=moment_time, searched_layers=layers)
        if not layers:
            return output
        scopes = {context.scope_key(layer): layer for layer in layers}
        moment, known = stamp(moment_time), stamp(request.known_at) if request.known_at else None
        dense = True
        if request.kind in ("all", "entities"):
            flt: Filter = {"scope": list(scopes), "kind": ["entity"]}
            if request.types:
                flt["type"] = sorted({type_key(kind) for kind in request.types})
            hits, dense = self._rank(request.query, flt)
            output.entities = self._entity_hits(hits, scopes, request.threshold, known)[: request.limit]
        if request.kind in ("all", "facts"):
            flt = {"scope": list(scopes), "kind": ["fact"]}
            hits, dense = self._rank(request.query, flt)
            output.facts = self._fact_hits(hits, scopes, request, moment, known)[: request.limit]
        output.retrieval = "hybrid" if dense else "lexical"
        kept_facts = fit_head(output, output.facts, context.response_budget)
        kept_entities = fit_head(
            output.model_copy(update={"facts": kept_facts}), output.entities, context.response_budget
        )
        output.has_more = len(kept_facts) < len(output.facts) or len(kept_entities) < len(output.entities)
        output.facts, output.entities = kept_facts, kept_entities
        return output

    def _read_hits(
        self, hits: list[tuple[Hit, float]], scopes: dict[str, Layer], prefix: str, threshold: float
    ) -> list[tuple[Item, float]]:
        """The records of the hits above ``threshold`` in the caller's scopes, best first."""
        wanted = [
            (hit, score)
            for hit, score in hits
            if score >= threshold and (hit.keywords.get("scope") or [""])[0] in scopes
        ]
        keys = [(partition(hit.keywords["scope"][0]), prefix + hit.id) for hit, _ in wanted]
        found = {(item.pk, item.sk): item for item in self._records.batch_get(keys, consistent=False)}  # read-back
        return [(found[key], score) for key, (_, score) in zip(keys, wanted, strict=True) if key in found]

    def _rank(self, query: str, flt: Filter) -> tuple[list[tuple[Hit, float]], bool]:
        ranking = hybrid_rank(self._index, self._embedder, NAMESPACE, query, flt)
        return [(found.hit, found.score) for found in ranking.candidates], ranking.dense

    def _entity_hits(
        self, hits: list[tuple[Hit, float]], scopes: dict[str, Layer], threshold: float, known: str | None
    ) -> list[EntityHit]:
        results = []
        for item, score in self._read_hits(hits, scopes, ENTITY, threshold):
            if item.data.get("deleting") or (known is not None and item.data["createdAt"] > known):
                continue
            results.append(EntityHit(**entity_view(versioned(item)).model_dump(), score=score))
        return results

    def _fact_hits(
        self,
        hits: list[tuple[Hit, float]],
        scopes: dict[str, Layer],
        request: GraphSearchInput,
        moment: str,
        known: str | None,
    ) -> list[FactHit]:
        by_partition: dict[str, list[tuple[dict[str, Any], float]]] = {}
        for item, score in self._read_hits(hits, scopes, FACT, request.threshold):
            by_partition.setdefault(item.pk, []).append((versioned(item), score))
        results: list[FactHit] = []
        for pk, scored in by_partition.items():
            score_of = {fact["factId"]: score for fact, score in scored}
            for view in self._views(pk, [fact for fact, _ in scored], moment, known, consistent=False):
                if request.include_invalid or view.status == "valid":
                    results.append(FactHit(**view.model_dump(), score=score_of[view.fact_id]))
        results.sort(key=lambda hit: (-hit.score, hit.fact_id))
        return results

    def context_for(self, context: RequestContext, query: str, layers: list[Layer] | None) -> GraphContext:
        """memory_search's includeGraph: the entities a query finds, with their current facts, and the facts it
        finds itself."""
        found = self.search(context, GraphSearchInput(query=query, layers=layers, limit=CONTEXT_ENTITIES))
        facts: dict[str, FactView] = {
            fact.fact_id: FactView(**fact.model_dump(exclude={"score"})) for fact in found.facts
        }
        moment = stamp(now())
        for entity in found.entities:
            pk = partition(context.scope_key(entity.layer))
            # memory_search's graph context is a read-back too: eventually consistent reads throughout.
            edges = [
                e
                for e in self._store.edges(pk, entity.entity_id, consistent=False)
                if status_at(e.data, moment) == "valid"
            ]
            edges.sort(key=lambda edge: edge.data["validAt"], reverse=True)
            newest = [edge.data["factId"] for edge in edges[:FACTS_PER_ENTITY]]
            found_facts = [versioned(item) for item in self._store.facts(pk, newest, consistent=False)]
            for view in self._views(pk, found_facts, moment, consistent=False):
                facts.setdefault(view.fact_id, view)
        entities = [entity.name for entity in found.entities]
        return GraphContext(entities=entities, facts=list(facts.values())[:CONTEXT_FACTS])
