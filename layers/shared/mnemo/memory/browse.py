"""Browsing memories without a query: one layer's memories newest first, and one memory's history, paged.

Both read only the partitions of layers the caller may read (``RequestContext.scope_key``): a memory of
another user, team or tenant answers NOT_FOUND exactly as an id that never existed.
"""

from __future__ import annotations

from typing import Any

from mnemo.budget import fit_head
from mnemo.context import Layer, RequestContext
from mnemo.errors import InvalidInput, NotFound
from mnemo.memory.filters import matches, parse_filter
from mnemo.memory.models import (
    ListedMemory,
    MemoryChange,
    MemoryHistoryInput,
    MemoryHistoryOutput,
    MemoryListInput,
    MemoryListOutput,
)
from mnemo.memory.records import RECORD, history_prefix, partition_of, record_sk, with_folded
from mnemo.paging import decode_after, encode_after, fingerprint
from mnemo.ports import RecordStore

#: The most records one listing reads from a layer. Records are keyed by random id, so newest first means
#: reading the layer and sorting it; a layer holding more lists the newest of the records read.
LISTED_RECORDS = 5000
#: Past the last sort key of any item under a prefix (the files listing bounds its ranges alike).
_TOP = "\U0010ffff"


class MemoryBrowse:
    """``list_layer`` and ``history_page``: the memory tools' reads that take no query (records only)."""

    def __init__(self, records: RecordStore) -> None:
        self._records = records

    # --------------------------------------------------------------- list
    def list_layer(self, context: RequestContext, request: MemoryListInput) -> MemoryListOutput:
        """One page of the caller's memories in one layer passing ``filter``, newest first, orphaned pointers left
        out.

        Reads at most ``LISTED_RECORDS`` records, eventually consistent, and filters those (the records
        themselves, ``mnemo.memory.filters.matches``: no index is involved); the page fits the response budget
        and ``nextCursor`` pages on from its last memory under the same filter (INVALID_INPUT for a cursor of
        another listing or filter). INVALID_INPUT when the request context lacks the layer's ids.
        """
        scope = readable_scope(context, request.layer)
        wanted = parse_filter(request.filter)
        owner = fingerprint({"list": scope} if request.filter is None else {"list": scope, "filter": request.filter})
        after = decode_after(request.cursor, owner)
        items = self._records.query(partition_of(scope), RECORD, limit=LISTED_RECORDS, consistent=False)
        # An orphaned knowledge pointer is hidden from search; a listing hides it too.
        records = sorted(
            (item.data for item in items if not item.data.get("orphaned") and matches(wanted, item.data)),
            key=_position,
            reverse=True,
        )
        if after is not None:
            records = [data for data in records if _position(data) < after]
        page = [_listed(data) for data in records[: request.limit]]
        output = MemoryListOutput(memories=page, layer=request.layer)
        page = fit_head(output, page, context.response_budget)
        has_more = len(page) < len(records)
        output.memories = page
        output.has_more = has_more
        output.next_cursor = encode_after(_position(records[len(page) - 1]), owner) if has_more and page else None
        return output

    # ------------------------------------------------------------ history
    def history_page(self, context: RequestContext, request: MemoryHistoryInput) -> MemoryHistoryOutput:
        """One page of a memory's changes, oldest first, from the readable layer that holds it.

        NOT_FOUND when no readable layer holds any change of it (as for another caller's memory);
        INVALID_INPUT for a cursor issued for another memory or listing.
        """
        prefix = history_prefix(request.memory_id)
        for layer in context.readable_layers():
            scope = context.scope_key(layer)
            owner = fingerprint({"history": request.memory_id, "scope": scope})
            try:
                after = decode_after(request.cursor, owner)
            except InvalidInput:
                continue  # the cursor was issued for this memory in another layer (or is not ours)
            low = prefix if after is None else after + "\x00"
            # An added memory's ADD entry is folded into its record (mnemo.memory.records); the record is read
            # first, so a delete in between leaves the entry in the history items the query then reads. Read
            # even once expired: until storage removes it (writing the entry out), the record holds its ADD.
            record = self._records.get(partition_of(scope), record_sk(request.memory_id), expired=True)
            items = self._records.query(partition_of(scope), between=(low, prefix + _TOP), limit=request.limit + 1)
            items = with_folded(items, record, low, prefix + _TOP)[: request.limit + 1]
            if not items and after is None:
                continue
            page = [_change(item.data) for item in items[: request.limit]]
            output = MemoryHistoryOutput(
                memory_id=request.memory_id,
                layer=layer,
                changes=page,
                versions=self._versions(scope, request.memory_id),
            )
            page = fit_head(output, page, context.response_budget)
            has_more = len(page) < len(items)
            output.changes = page
            output.has_more = has_more
            output.next_cursor = encode_after(items[len(page) - 1].sk, owner) if has_more and page else None
            return output
        if request.cursor:
            decode_after(request.cursor, "")  # INVALID_INPUT naming the cursor, as for any foreign cursor
        raise NotFound(f"Memory '{request.memory_id}' not found", {"field": "memoryId", "memoryId": request.memory_id})

    def _versions(self, scope: str, memory_id: str) -> list[ListedMemory]:
        """Every version of an extracted fact this memory is part of, oldest first ([] when it stands alone):
        the memories it superseded, back, and those that superseded it, forward (``MAX_VERSIONS`` at most)."""
        partition = partition_of(scope)
        found = self._records.get(partition, record_sk(memory_id))
        if found is None or not (found.data.get("supersedes") or found.data.get("supersededBy")):
            return []
        chain = [found.data]
        while chain[0].get("supersedes") and len(chain) < MAX_VERSIONS:
            older = self._records.get(partition, record_sk(chain[0]["supersedes"]))
            if older is None:
                break
            chain.insert(0, older.data)
        while chain[-1].get("supersededBy") and len(chain) < MAX_VERSIONS:
            newer = self._records.get(partition, record_sk(chain[-1]["supersededBy"]))
            if newer is None:
                break
            chain.append(newer.data)
        return [_listed(data) for data in chain]


#: The most versions of one fact memory_history shows.
MAX_VERSIONS = 20


def readable_scope(context: RequestContext, layer: Layer) -> str:
    """The scope key a read of ``layer`` goes to; INVALID_INPUT naming the ids the request context lacks."""
    missing = context.missing_ids(layer)
    if missing:
        raise InvalidInput(
            f"layer: the {layer} layer needs a {missing[0]} id in the request context",
            {"field": "layer", "layer": layer, "missingIds": missing},
        )
    return context.scope_key(layer)


def _position(data: dict[str, Any]) -> str:
    """A record's place in the listing, as a cursor keeps it: its creation time, then its id."""
    return f"{data['createdAt']}|{data['memoryId']}"


def _listed(data: dict[str, Any]) -> ListedMemory:
    """A memory record as the listing shows it."""
    return ListedMemory(
        content=data["content"],
        layer=data["layer"],
        memory_id=data["memoryId"],
        tags=data["tags"],
        metadata=data["metadata"],
        created_at=data["createdAt"],
        occurred_at=data.get("occurredAt"),
        superseded_by=data.get("supersededBy"),
        supersedes=data.get("supersedes"),
        expires_at=data.get("expiresAt"),
    )


def _change(data: dict[str, Any]) -> MemoryChange:
    """A history item as ``history_page`` shows it."""
    return MemoryChange(
        event=data["event"],
        at=data["at"],
        actor=data.get("actor"),
        content_hash=data.get("contentHash"),
        superseded_by=data.get("supersededBy"),
        message_ids=data.get("messageIds") or (data.get("provenance") or {}).get("messageIds"),
    )
