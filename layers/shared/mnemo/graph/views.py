"""What the graph tools answer: entities and facts as the wire models show them.

A fact names its ends by their current names (read at answer time, so a
rename shows everywhere) and its status at the time asked about.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnemo.graph.models import EntityView, FactSource, FactView
from mnemo.graph.store import GraphStore
from mnemo.graph.temporal import status_at


def entity_view(data: dict[str, Any]) -> EntityView:
    """An entity record (with its version) as the tools answer it."""
    return EntityView(
        entity_id=data["entityId"],
        name=data["name"],
        type=data["type"],
        summary=data["summary"],
        aliases=data["aliases"],
        layer=data["layer"],
        version=data["version"],
        created_at=data["createdAt"],
        updated_at=data["updatedAt"],
    )


class FactViews:
    def __init__(self, store: GraphStore) -> None:
        self._store = store

    def __call__(
        self,
        pk: str,
        facts: Sequence[dict[str, Any]],
        moment: str,
        known: str | None = None,
        *,
        consistent: bool = True,
    ) -> list[FactView]:
        """The facts as answered at ``moment`` (and as known at ``known``); a fact with an end being deleted, or
        not yet learned at ``known``, is left out. ``consistent=False`` for a search's read-back."""
        ends = [f["subjectId"] for f in facts] + [f["objectId"] for f in facts]
        names = self._store.entities(pk, ends, consistent=consistent)
        views = []
        for fact in facts:
            subject, obj = names.get(fact["subjectId"]), names.get(fact["objectId"])
            status = status_at(fact, moment, known)
            if subject is None or obj is None or status is None:
                continue
            views.append(
                FactView(
                    fact_id=fact["factId"],
                    subject=subject["name"],
                    subject_id=fact["subjectId"],
                    predicate=fact["predicate"],
                    object=obj["name"],
                    object_id=fact["objectId"],
                    text=fact["text"],
                    valid_at=fact["validAt"],
                    invalid_at=fact.get("invalidAt"),
                    created_at=fact["createdAt"],
                    expired_at=fact.get("expiredAt"),
                    status=status,
                    invalidated_by=fact.get("invalidatedBy"),
                    reason=fact.get("reason"),
                    source=FactSource.model_validate(fact["source"]) if fact.get("source") else None,
                    layer=fact["layer"],
                )
            )
        return views
