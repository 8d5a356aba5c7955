"""The file families: StoredAssets and skills (``ASSET|{scope}``, blocks), pinned contexts (``PINS|{scope}``)
and workspace files (``WS|{scope}``): what the cross-cutting parts know of them (``mnemo.families``).

Events: a file head (``F#{name}``) written live is file.written, or block.written for a StoredAsset under
``blocks/``; one that becomes a tombstone or is removed is file.deleted / block.deleted.
Erasure: the user's personal scopes; a workspace file's blob goes with every version before its records
(``BlobStore.purge``: a delete would keep the versions), and blobs no record named go after the families
(``workspaceBlobs``); a pin set first takes the user off the pinner lists (``P#{name}``) of the shared files
it held, which stay. The index mirrors each live block head.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from mnemo.changes import ChangeEvent, Owner, RecordChange, make_event
from mnemo.errors import Conflict
from mnemo.families import ErasurePage, ErasureScope, ErasureStep, IndexEntry, RecordFamily
from mnemo.files.pins import PIN_SET, PINS_PREFIX
from mnemo.files.scopes import WORKSPACE_ROOT, workspace_location_of
from mnemo.files.store import ASSET_PREFIX, CONTENT, HEAD, HISTORY, PINNERS, WORKSPACE_PREFIX, blob_prefix
from mnemo.ports import ConditionFailed, Item, Put


def captures(sk: str) -> bool:
    return sk.startswith(HEAD)


def events(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    """file.written / block.written when a live head is written, file.deleted / block.deleted when it goes."""
    if not change.sk.startswith(HEAD):
        return []
    name = change.sk.removeprefix(HEAD)
    family = "block" if change.pk.startswith(ASSET_PREFIX) and name.startswith("blocks/") else "file"
    area = "workspace" if change.pk.startswith(WORKSPACE_PREFIX) else "assets"
    old_live = change.old is not None and not change.old.get("deleted")
    new_live = change.new is not None and not change.new.get("deleted")
    subject = {"path": name}
    if new_live:
        new = change.new or {}
        same = (change.old or {}).get("sha256") == new.get("sha256") and change.old_version == change.new_version
        if old_live and same:
            return []
        data = {"area": area, "sha256": new.get("sha256"), "bytes": new.get("bytes"), "tokens": new.get("tokens")}
        content = {"preview": new.get("preview")}
        return [make_event(change, owner, f"{family}.written", subject, data=data, content=content)]
    if old_live:
        return [make_event(change, owner, f"{family}.deleted", subject, data={"area": area})]
    return []


def block_index(item: Item) -> IndexEntry | None:
    """A live StoredAsset head's index document (a delete unindexed it)."""
    if not item.sk.startswith(HEAD) or item.data.get("deleted"):
        return None
    from mnemo.files.index import NAMESPACE, doc_id  # the block index's layout; loaded by who reads it only

    name = item.sk.removeprefix(HEAD)
    return IndexEntry(NAMESPACE, {"pk": item.pk, "name": name}, doc_id(item.pk, name))


def purge_blobs(where: ErasureScope, page: Sequence[Item]) -> Mapping[str, int]:
    """Purge the blob of every workspace file head in the page, with every version."""
    purged = 0
    for item in page:
        location = workspace_location_of(item.pk)
        if location is not None and item.sk.startswith(HEAD):
            where.blobs.purge(location.blob_key(item.sk.removeprefix(HEAD)))
            purged += 1
    return {"blobKeys": purged}


def unlist_pinner(where: ErasureScope, page: Sequence[Item]) -> Mapping[str, int]:
    """Take the pinner out of the pinner list of every file each pin set holds outside the user's own scopes
    (a project's blocks), before the set goes: those lists would still name the user. Each list is rewritten on
    its own, conditional on the version read; a rerun finds nothing left to do."""
    for pin_set in page:
        pinner = pin_set.pk.removeprefix(PINS_PREFIX)
        for pin in pin_set.data.get("pins", []):
            _unlist(where, pinner, pin["pk"], PINNERS + pin["name"])
    return {}


def _unlist(where: ErasureScope, pinner: str, pk: str, sk: str) -> None:
    for _ in range(3):  # a pin or write racing this one moves the list on: read it again
        listed = where.records.get(pk, sk)
        if listed is None or pinner not in listed.data.get("pinnedBy", []):
            return
        others = [each for each in listed.data["pinnedBy"] if each != pinner]
        put = Put(Item(listed.pk, listed.sk, {**listed.data, "pinnedBy": others}, listed.version + 1), listed.version)
        try:
            where.records.write([put])
            return
        except ConditionFailed:
            continue
    raise Conflict("A pinned file kept changing while the user was taken off its pinners; try again")


def workspace_blobs(where: ErasureScope) -> Iterator[ErasurePage]:
    """No records: the personal workspace's blobs no record named (a put whose head write failed)."""
    for key in where.blobs.list_keys(WORKSPACE_ROOT + blob_prefix(where.tenant, "user", where.user)):
        where.blobs.purge(key)
    yield from ()


def _count_heads(family: str) -> Callable[[str], str]:
    """Heads count as ``family``, the rest (history, versions, pinner lists) as other records."""

    def count_as(sk: str) -> str:
        return family if sk.startswith(HEAD) else "otherRecords"

    return count_as


BLOCKS_FAMILY = RecordFamily(
    name="blocks",
    partition=ASSET_PREFIX,
    package="mnemo.files",
    sort_keys=(HEAD, HISTORY, CONTENT, PINNERS),
    captures=captures,
    events=events,
    index=block_index,
    personal=True,
    erasure_order=50,
    count_as=_count_heads("blocks"),
    exported_as="blocks",
)
PINS_FAMILY = RecordFamily(
    name="pins",
    partition=PINS_PREFIX,
    package="mnemo.files",
    sort_keys=(PIN_SET,),
    personal=True,
    erasure_order=60,
    count_as=lambda sk: "pins",
    before_erase=unlist_pinner,
    exported_as="pins",
)
WORKSPACE_FAMILY = RecordFamily(
    name="files",
    partition=WORKSPACE_PREFIX,
    package="mnemo.files",
    sort_keys=(HEAD, HISTORY, CONTENT),
    captures=captures,
    events=events,
    personal=True,
    erasure_order=70,
    count_as=_count_heads("files"),
    before_erase=purge_blobs,
    steps=(ErasureStep("workspaceBlobs", 110, workspace_blobs),),
    exported_as="workspace",
)
