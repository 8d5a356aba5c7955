"""The memory graph's records: an adjacency list in one partition per scope, read by key and prefix only.

======================================  =========================================================
sk (partition ``GRAPH|{scope}``)        holds
======================================  =========================================================
``ENT#{entityId}``                      an entity ``{name, type, summary, aliases, ...}``
``NAME#{key of a name or alias}``       ``{entityId}``: names are unique within a scope
``FACT#{factId}``                       a fact ``{subjectId, predicate, objectId, text, times...}``
``EDGE#{entityId}#{predicate}#{factId}``  one per end of a fact, with what traversal needs
``LINK#{subject}#{predicate}#{object}``   ``{factId}`` of the open fact of that triple
``EXCL#{subject}#{predicate}``            ``{factId}`` of the last exclusive add: its version
                                        serialises exclusive adds of one subject and predicate
======================================  =========================================================

An entity's facts are one prefix query (``EDGE#{entityId}#``), its facts with
one predicate a longer one, so nothing on a request path scans. A fact and its
two edges are always written in one transaction at the same version; ``LINK``
makes adding the same open fact twice (even concurrently) store it once; ``EXCL``
makes two concurrent exclusive adds of one subject and predicate take turns, so
the second sees (and ends) the first one's fact.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from typing import Any

from mnemo.graph.names import name_key
from mnemo.ports import Delete, Item, Put, RecordStore

PARTITION = "GRAPH|"
#: The index namespace of entities and facts, and their family in the index outbox (``mnemo.graph.index``).
NAMESPACE = "graph"
ENTITY = "ENT#"
NAME = "NAME#"
FACT = "FACT#"
EDGE = "EDGE#"
LINK = "LINK#"
EXCLUSIVE = "EXCL#"
#: The most edges of one entity a request reads (a hub beyond it answers hasMore).
MAX_EDGES = 2000


def partition(scope: str) -> str:
    """The partition key of a scope's graph: ``GRAPH|{scope}``."""
    return PARTITION + scope


def new_id(prefix: str) -> str:
    """A fresh entity (``ent``) or fact (``fct``) id."""
    return f"{prefix}_{secrets.token_hex(12)}"


def versioned(item: Item) -> dict[str, Any]:
    """A record's data with its version, as the services pass records around."""
    return {**item.data, "version": item.version}


def edge_sk(entity_id: str, predicate: str, fact_id: str) -> str:
    """The sort key of a fact's edge at one of its ends: ``EDGE#{entityId}#{predicate}#{factId}``."""
    return f"{EDGE}{entity_id}#{predicate}#{fact_id}"


def link_sk(subject_id: str, predicate: str, object_id: str) -> str:
    """The sort key of the record naming the open fact of a triple: ``LINK#{subject}#{predicate}#{object}``."""
    return f"{LINK}{subject_id}#{predicate}#{object_id}"


def exclusive_sk(subject_id: str, predicate: str) -> str:
    """The sort key that serialises exclusive adds of one subject and predicate: ``EXCL#{subject}#{predicate}``."""
    return f"{EXCLUSIVE}{subject_id}#{predicate}"


def head_of(sk: str, data: dict[str, Any]) -> str | None:
    """The sort key of the entity or fact a record belongs to (its own for those two); None for any other.

    The pointer records belong to what they point at: a name to its entity, the open-fact and
    exclusivity records of a triple to their fact, an edge to its fact."""
    kind, _, rest = sk.partition("#")
    pointed = {NAME: f"{ENTITY}{data.get('entityId')}", LINK: f"{FACT}{data.get('factId')}"}
    pointed[EXCLUSIVE] = pointed[LINK]
    return {ENTITY: sk, FACT: sk, EDGE: f"{FACT}{rest.rsplit('#', 1)[-1]}", **pointed}.get(f"{kind}#")


def edge_data(fact: dict[str, Any], entity_id: str) -> dict[str, Any]:
    """What an edge copies of its fact: enough to filter by time and walk to the other end."""
    outgoing = fact["subjectId"] == entity_id
    return {
        "factId": fact["factId"],
        "direction": "out" if outgoing else "in",
        "otherId": fact["objectId"] if outgoing else fact["subjectId"],
        "predicate": fact["predicate"],
        "validAt": fact["validAt"],
        "invalidAt": fact.get("invalidAt"),
        "createdAt": fact["createdAt"],
        "expiredAt": fact.get("expiredAt"),
    }


class GraphStore:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    # -------------------------------------------------------------- reads
    def entity(self, pk: str, entity_id: str) -> Item | None:
        """A live entity (one being deleted counts as gone)."""
        item = self.records.get(pk, ENTITY + entity_id)
        return None if item is None or item.data.get("deleting") else item

    def entity_by_name(self, pk: str, name: str) -> Item | None:
        """The live entity a name or alias points at, or None."""
        pointer = self.records.get(pk, NAME + name_key(name))
        return self.entity(pk, pointer.data["entityId"]) if pointer is not None else None

    def entities(self, pk: str, ids: Iterable[str], *, consistent: bool = True) -> dict[str, dict[str, Any]]:
        """The live entities among ``ids``, by id, each with its version (missing and deleting ones left out)."""
        keys = [(pk, ENTITY + entity_id) for entity_id in dict.fromkeys(ids)]
        return {
            item.data["entityId"]: {**item.data, "version": item.version}
            for item in self.records.batch_get(keys, consistent=consistent)
            if not item.data.get("deleting")
        }

    def fact(self, pk: str, fact_id: str) -> Item | None:
        """One fact record, or None."""
        return self.records.get(pk, FACT + fact_id)

    def facts(self, pk: str, ids: Iterable[str], *, consistent: bool = True) -> list[Item]:
        """The fact records among ``ids`` that exist (duplicates read once)."""
        return self.records.batch_get([(pk, FACT + fact_id) for fact_id in dict.fromkeys(ids)], consistent=consistent)

    def edges(
        self, pk: str, entity_id: str, predicate: str = "", limit: int = MAX_EDGES, *, consistent: bool = True
    ) -> list[Item]:
        """An entity's edges, with one ``predicate`` only when given, at most ``limit`` (one prefix query)."""
        prefix = f"{EDGE}{entity_id}#" + (f"{predicate}#" if predicate else "")
        return self.records.query(pk, prefix, limit=limit, consistent=consistent)

    def link(self, pk: str, subject_id: str, predicate: str, object_id: str) -> Item | None:
        """The record naming the open fact of the triple, or None when no open fact holds it."""
        return self.records.get(pk, link_sk(subject_id, predicate, object_id))

    def exclusive_guards(self, pk: str, entity_id: str, limit: int = MAX_EDGES) -> list[Item]:
        """The ``EXCL`` records of an entity as subject, at most ``limit``."""
        return self.records.query(pk, f"{EXCLUSIVE}{entity_id}#", limit=limit)

    # ------------------------------------------------------------- writes
    @staticmethod
    def fact_puts(pk: str, fact: dict[str, Any], version: int, expect: int | None) -> list[Put | Delete]:
        """The fact and its two edges at ``version`` (``expect``: the version they are at, None when new)."""
        condition: Any = "absent" if expect is None else expect
        puts: list[Put | Delete] = [Put(Item(pk, FACT + fact["factId"], fact, version=version), expect=condition)]
        ends = dict.fromkeys([fact["subjectId"], fact["objectId"]])  # a self-loop has one edge
        for entity_id in ends:
            sk = edge_sk(entity_id, fact["predicate"], fact["factId"])
            puts.append(Put(Item(pk, sk, edge_data(fact, entity_id), version=version), expect=condition))
        return puts

    @staticmethod
    def fact_deletes(pk: str, fact: Item) -> list[Put | Delete]:
        """The deletes of a fact (at its version) and its two edges; a self-loop has one edge."""
        data = fact.data
        deletes: list[Put | Delete] = [Delete(pk, fact.sk, expect=fact.version)]
        for entity_id in dict.fromkeys([data["subjectId"], data["objectId"]]):
            deletes.append(Delete(pk, edge_sk(entity_id, data["predicate"], data["factId"])))
        return deletes

    def link_release(self, pk: str, facts: Sequence[dict[str, Any]]) -> list[Put | Delete]:
        """Deletes of the LINK records that point at these facts (they no longer hold, or are gone)."""
        keys = [(pk, link_sk(f["subjectId"], f["predicate"], f["objectId"])) for f in facts]
        ids = {fact["factId"] for fact in facts}
        return [
            Delete(item.pk, item.sk, expect=item.version)
            for item in self.records.batch_get(keys)
            if item.data["factId"] in ids
        ]
