"""Knowledge rules: what a caller may see, how items rank, and which constraints apply.

Items come from the synced catalog (mnemo.knowledge.catalog). A caller sees the
company layer and the org, team and project its identity names. When the same
id exists in several of those layers the most specific wins (project > team >
org > company): it overrides the item, and its constraints, of the wider layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mnemo.context import RequestContext
from mnemo.errors import NotFound, invalid_field
from mnemo.knowledge import catalog
from mnemo.knowledge.catalog import Catalog, effective_status, stored_item, visible_layers
from mnemo.knowledge.models import (
    KNOWLEDGE_LAYERS,
    KnowledgeCheckInput,
    KnowledgeCheckOutput,
    KnowledgeDetail,
    KnowledgeItem,
    KnowledgeQueryInput,
    KnowledgeQueryOutput,
    KnowledgeShowInput,
    KnowledgeShowOutput,
    KnowledgeSummary,
)
from mnemo.knowledge.repository import KnowledgeRepository
from mnemo.ports import Embedder, Filter, Item, RecordStore, VectorIndex
from mnemo.retrieval.ranker import hybrid_rank

#: (layer precedence, relevance, catalog record data)
Ranked = tuple[int, float, dict[str, Any]]
PRECEDENCE: dict[str, int] = {layer: rank for rank, layer in enumerate(KNOWLEDGE_LAYERS)}


def _summary(data: dict[str, Any], score: float | None = None) -> KnowledgeSummary:
    item = KnowledgeItem.model_validate(data["item"])
    return KnowledgeSummary(
        id=item.id,
        type=item.type,
        layer=item.layer,
        title=item.title,
        summary=item.summary,
        status=effective_status(data),
        tags=item.tags,
        has_constraints=bool(item.constraints),
        score=score,
    )


class KnowledgeService:
    def __init__(
        self, records: RecordStore, index: VectorIndex, embedder: Embedder, repository: KnowledgeRepository
    ) -> None:
        self._catalog = Catalog(records)
        self._records = records
        self._index = index
        self._embedder = embedder
        self._repository = repository

    # -------------------------------------------------------------- query
    def query(self, context: RequestContext, request: KnowledgeQueryInput) -> KnowledgeQueryOutput:
        layers = visible_layers(context, request.layer)
        scopes = {context.scope_key(layer): layer for layer in layers}
        ranked = self._browse(scopes, request) if request.query is None else self._search(scopes, request)
        # The most specific layer's copy of an id wins. Items rank by relevance: a
        # project's unrelated item must not outrank the org's answer to the query.
        best: dict[str, tuple[int, float, dict[str, Any]]] = {}
        for rank, score, data in ranked:
            item_id = data["item"]["id"]
            if item_id not in best or rank < best[item_id][0]:
                best[item_id] = (rank, score, data)
        ordered = sorted(best.values(), key=lambda entry: (-entry[1], entry[0], entry[2]["item"]["id"]))
        items = [_summary(data, round(score, 4) if request.query else None) for _, score, data in ordered]
        return KnowledgeQueryOutput(items=items[: request.limit], total_count=len(items), searched_layers=layers)

    def ids(self, context: RequestContext) -> list[str]:
        """The id of every item the caller can read, whatever its status, sorted (for file_list)."""
        found: set[str] = set()
        for layer in visible_layers(context):
            listed = self._catalog.in_layer(context.scope_key(layer), consistent=False)  # a listing
            found.update(record.data["item"]["id"] for record in listed)
        return sorted(found)

    @staticmethod
    def _matches(data: dict[str, Any], request: KnowledgeQueryInput) -> bool:
        item = data["item"]
        if request.type and item["type"] != request.type:
            return False
        if effective_status(data) not in request.status:
            return False
        if request.tags:
            wanted = {tag.lower() for tag in request.tags}
            if not wanted & {tag.lower() for tag in item["tags"]}:
                return False
        return True

    def _browse(self, scopes: Mapping[str, str], request: KnowledgeQueryInput) -> list[Ranked]:
        found, taken = [], set()
        for scope, layer in scopes.items():  # most specific first: its copy of an id hides the others
            for record in self._catalog.in_layer(scope, consistent=False):  # a listing
                item_id = record.data["item"]["id"]
                if item_id not in taken:
                    taken.add(item_id)
                    if self._matches(record.data, request):
                        found.append((PRECEDENCE[layer], 0.0, record.data))
        return found

    def _overridden(self, scopes: Mapping[str, str], found: list[Ranked]) -> set[tuple[int, str]]:
        """(rank, id) of found items that a more specific layer redefines, whatever that copy says."""
        keys = {
            (catalog.partition(scope), catalog.item_key(data["item"]["id"]))
            for rank, _, data in found
            for scope, layer in scopes.items()
            if PRECEDENCE[layer] < rank
        }
        if not keys:
            return set()
        specific = {
            (PRECEDENCE[scopes[record.pk.removeprefix(catalog.PARTITION_PREFIX)]], record.data["item"]["id"])
            for record in self._records.batch_get(sorted(keys), consistent=False)
        }
        return {
            (rank, data["item"]["id"])
            for rank, _, data in found
            if any(other < rank and item_id == data["item"]["id"] for other, item_id in specific)
        }

    def _search(self, scopes: Mapping[str, str], request: KnowledgeQueryInput) -> list[Ranked]:
        if not scopes:
            return []
        flt: Filter = {"scope": list(scopes), "status": list(request.status)}
        if request.type:
            flt["type"] = [request.type]
        if request.tags:
            flt["tags"] = sorted({tag.lower() for tag in request.tags})
        assert request.query is not None
        ranking = hybrid_rank(self._index, self._embedder, catalog.NAMESPACE, request.query, flt)
        keys: dict[str, tuple[str, str]] = {}
        scored: dict[str, float] = {}
        for candidate in ranking.candidates:
            scope = (candidate.hit.keywords.get("scope") or [""])[0]
            item_id = (candidate.hit.keywords.get("itemId") or [""])[0]
            if scope in scopes and item_id:
                keys[candidate.id] = (scope, item_id)
                scored[candidate.id] = candidate.score
        wanted = [doc for doc, score in scored.items() if score >= request.threshold]
        records = self._records.batch_get(
            [(catalog.partition(keys[d][0]), catalog.item_key(keys[d][1])) for d in wanted], consistent=False
        )
        by_key = {(r.pk, r.sk): r for r in records}
        found: list[Ranked] = []
        for doc in wanted:
            scope, item_id = keys[doc]
            record = by_key.get((catalog.partition(scope), catalog.item_key(item_id)))
            # The index may lag the records: the record decides, filters included.
            if record is not None and self._matches(record.data, request):
                found.append((PRECEDENCE[scopes[scope]], scored[doc], record.data))
        hidden = self._overridden(scopes, found)
        return [entry for entry in found if (entry[0], entry[2]["item"]["id"]) not in hidden]

    # --------------------------------------------------------------- show
    def show(self, context: RequestContext, request: KnowledgeShowInput) -> KnowledgeShowOutput:
        record = self._catalog.find(context, request.id)
        if record is None:
            raise NotFound(
                f"Knowledge item '{request.id}' not found",
                {"field": "id", "requestedId": request.id, "searchedLayers": visible_layers(context)},
            )
        item = stored_item(record)
        detail = KnowledgeDetail(
            id=item.id,
            type=item.type,
            layer=item.layer,
            title=item.title,
            summary=item.summary,
            content=item.content,
            status=effective_status(record.data),
            severity=item.severity,
            tags=item.tags,
            constraints=item.constraints if request.include_constraints else None,
            metadata=item.metadata,
            created_at=item.created_at or record.data.get("firstSyncedAt") or "",
            updated_at=item.updated_at or record.data.get("syncedAt") or "",
            supersedes=item.supersedes,
            superseded_by=record.data.get("supersededBy", []),
        )
        history = self._repository.history(context.tenant, item.path) if request.include_history else None
        return KnowledgeShowOutput(item=detail, history=history)

    # -------------------------------------------------------------- check
    def applicable(self, context: RequestContext, ids: Sequence[str] | None) -> list[KnowledgeItem]:
        """The items whose constraints a check applies: named ones, or every accepted one in view."""
        if ids is not None:
            items = []
            for position, item_id in enumerate(dict.fromkeys(ids)):
                record = self._catalog.find(context, item_id)
                if record is None:
                    raise NotFound(
                        f"Knowledge item '{item_id}' not found",
                        {
                            "field": f"knowledgeItemIds.{position}",
                            "requestedId": item_id,
                            "searchedLayers": visible_layers(context),
                        },
                    )
                items.append(stored_item(record))
            return items
        chosen: dict[str, Item] = {}
        for layer in reversed(visible_layers(context)):  # wider layers first; specific ones override
            for record in self._catalog.in_layer(context.scope_key(layer)):
                chosen[record.data["item"]["id"]] = record
        return [
            stored_item(record)
            for record in chosen.values()
            if effective_status(record.data) == "accepted" and record.data["item"]["constraints"]
        ]

    def check(self, context: RequestContext, request: KnowledgeCheckInput) -> KnowledgeCheckOutput:
        if not request.files and not request.dependencies:
            raise invalid_field("files", "give files or dependencies to check")
        from mnemo.knowledge.check import evaluate  # the checker and its parsers load on first check

        items = self.applicable(context, request.knowledge_item_ids)
        return evaluate(items, request.files, request.dependencies, request.min_severity)
