"""Pinning StoredAssets into an agent's context, within its token budget (block_pin, block_unpin,
pinned_context), and the budget check every write of a pinned file passes first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mnemo.budget import RESERVE_BYTES, longest_prefix, wire_bytes
from mnemo.context import RequestContext
from mnemo.errors import Conflict, NotFound, invalid_field
from mnemo.files.models import (
    BlockPinInput,
    BlockPinOutput,
    BlockUnpinInput,
    PinnedBlock,
    PinnedContextInput,
    PinnedContextOutput,
)
from mnemo.files.paths import FilePath, parse_path
from mnemo.files.pins import MAX_PINNERS, MAX_PINS, PinSet, budget_exceeded, read_pin_sets, total_of
from mnemo.files.scopes import asset_location, display_uri, pinner_key
from mnemo.files.store import ASSET_PREFIX, HEAD, PINNERS, FileStore, Location
from mnemo.ports import ConditionFailed, Delete, Item, Put, RecordStore


@dataclass(frozen=True)
class Mine:
    """The caller's pinned state after a write: whether the file is pinned, and the pinned total."""

    pinned: bool
    total: int


def _block_tag(path: str, tokens: int, version: int) -> str:
    return f'<block path="{path}" tokens="{tokens}" version="{version}">\n'


def block_text(block: PinnedBlock, content: str) -> str:
    """A pinned file as the pinned context writes it: its content in a <block> tag naming it."""
    return _block_tag(block.path, block.tokens, block.version) + content.rstrip("\n") + "\n</block>"


class Pinning:
    def __init__(self, records: RecordStore, store: FileStore, limit: int) -> None:
        self._records = records
        self._store = store
        self.limit = limit

    # ------------------------------------------------------------- state
    def _mine(self, context: RequestContext) -> PinSet:
        me = pinner_key(context)
        return read_pin_sets(self._records, [me])[me]

    def is_pinned(self, context: RequestContext, pk: str, name: str) -> bool:
        return self._mine(context).position(pk, name) is not None

    def pinned_names(self, context: RequestContext, pk: str) -> set[str]:
        return {pin["name"] for pin in self._mine(context).pins if pin["pk"] == pk}

    def pinned_keys(self, context: RequestContext) -> set[tuple[str, str]]:
        return {(pin["pk"], pin["name"]) for pin in self._mine(context).pins}

    def _pinners(self, where: Location, name: str) -> Item | None:
        return self._records.get(where.pk, PINNERS + name)

    @staticmethod
    def _pinners_put(where: Location, name: str, listed: Item | None, pinners: list[str]) -> Put:
        """The file's pinner list at its next version, on condition that it is still the one read."""
        version = listed.version if listed else 0
        return Put(Item(where.pk, PINNERS + name, {"pinnedBy": pinners}, version + 1), expect=version or "absent")

    # -------------------------------------------------- writes and deletes
    def for_write(
        self,
        context: RequestContext,
        where: Location,
        path: FilePath,
        old_tokens: int,
        new_tokens: int,
        *,
        field: str = "content",
    ) -> tuple[list[Put | Delete], Mine]:
        """What a write of a StoredAsset adds to its transaction, or the budget error of a pinner.

        The file's pinner list is rewritten at its next version even when unchanged, so that a pin
        racing this write loses its condition (and gets CONFLICT) instead of recording stale tokens.
        A write that does not grow the file always passes: compacting must be possible over budget.
        """
        listed = self._pinners(where, path.name)
        pinners: list[str] = list(listed.data["pinnedBy"]) if listed else []
        operations: list[Put | Delete] = [self._pinners_put(where, path.name, listed, pinners)]
        me = pinner_key(context)
        mine = Mine(False, 0)
        for pinner, pins in read_pin_sets(self._records, [*pinners, me]).items():
            position = pins.position(where.pk, path.name)
            if position is None:
                if pinner == me:
                    mine = Mine(False, pins.total)
                continue
            total = pins.total - old_tokens + new_tokens
            if new_tokens > old_tokens and total > self.limit:
                raise budget_exceeded(
                    field=field,
                    path=path.uri,
                    current=pins.total,
                    limit=self.limit,
                    size=new_tokens,
                    would_be=total,
                    yours=pinner == me,
                )
            changed = list(pins.pins)
            changed[position] = {**changed[position], "tokens": new_tokens}
            operations.append(pins.put(changed))
            if pinner == me:
                mine = Mine(True, total)
        return operations, mine

    def for_delete(self, where: Location, name: str) -> tuple[list[Put | Delete], int]:
        """What a delete adds to its transaction: the file leaves every pinned context holding it."""
        listed = self._pinners(where, name)
        if listed is None:
            return [], 0
        operations: list[Put | Delete] = [Delete(where.pk, PINNERS + name, expect=listed.version)]
        count = 0
        for pins in read_pin_sets(self._records, list(listed.data["pinnedBy"])).values():
            position = pins.position(where.pk, name)
            if position is not None:
                operations.append(pins.put([pin for n, pin in enumerate(pins.pins) if n != position]))
                count += 1
        return operations, count

    # ------------------------------------------------------- pin, unpin
    def _asset(self, context: RequestContext, raw: str) -> tuple[FilePath, Location]:
        path = parse_path(raw)
        if path.store != "asset":
            raise invalid_field("path", "only StoredAssets (mnemo:///blocks/..., mnemo:///skills/...) are pinned")
        return path, asset_location(context, path)

    def pin(self, context: RequestContext, request: BlockPinInput) -> BlockPinOutput:
        path, where = self._asset(context, request.path)
        # The pinner list first, then the head: a write between the two bumps the list, so this pin's
        # condition on it fails rather than recording the file's old size.
        listed = self._pinners(where, path.name)
        head = self._store.head(where, path.name)
        if head is None:
            raise NotFound(f"No file at {path.uri}", {"field": "path", "path": path.uri})
        mine = self._mine(context)
        tokens = int(head.data["tokens"])
        shown = display_uri(context, where.pk, path.name)
        position = mine.position(where.pk, path.name)
        if position is not None:
            if request.position is None or request.position == position:
                return self._answer(f"{shown} was already pinned", shown, mine.pins, position, tokens, changed=False)
            pins = [pin for n, pin in enumerate(mine.pins) if n != position]
            pins.insert(min(request.position, len(pins)), mine.pins[position])
            self._apply([mine.put(pins)], path)
            return self._answer(f"{shown} moved", shown, pins, pins.index(mine.pins[position]), tokens)
        if len(mine.pins) >= MAX_PINS:
            raise invalid_field("path", f"at most {MAX_PINS} files are pinned at once; unpin one first")
        pinners = list(listed.data["pinnedBy"]) if listed else []
        if len(pinners) >= MAX_PINNERS:
            raise invalid_field("path", f"this file is pinned by {MAX_PINNERS} contexts already, the most it may be")
        if mine.total + tokens > self.limit:
            raise budget_exceeded(
                field="path",
                path=shown,
                current=mine.total,
                limit=self.limit,
                size=tokens,
                would_be=mine.total + tokens,
                yours=True,
            )
        entry = {"pk": where.pk, "name": path.name, "tokens": tokens}
        pins = list(mine.pins)
        at = len(pins) if request.position is None else min(request.position, len(pins))
        pins.insert(at, entry)
        self._apply([mine.put(pins), self._pinners_put(where, path.name, listed, [*pinners, mine.pinner])], path)
        return self._answer(f"{shown} pinned", shown, pins, at, tokens)

    def unpin(self, context: RequestContext, request: BlockUnpinInput) -> BlockPinOutput:
        path, where = self._asset(context, request.path)
        listed = self._pinners(where, path.name)
        mine = self._mine(context)
        shown = display_uri(context, where.pk, path.name)
        position = mine.position(where.pk, path.name)
        if position is None:
            head = self._store.head(where, path.name)
            tokens = int(head.data["tokens"]) if head else 0
            return self._answer(f"{shown} was not pinned", shown, mine.pins, None, tokens, changed=False)
        tokens = int(mine.pins[position]["tokens"])
        pins = [pin for n, pin in enumerate(mine.pins) if n != position]
        operations: list[Put | Delete] = [mine.put(pins)]
        if listed is not None:
            others = [pinner for pinner in listed.data["pinnedBy"] if pinner != mine.pinner]
            operations.append(self._pinners_put(where, path.name, listed, others))
        self._apply(operations, path)
        return self._answer(f"{shown} unpinned", shown, pins, None, tokens)

    def _apply(self, operations: list[Put | Delete], path: FilePath) -> None:
        try:
            self._records.write(operations)
        except ConditionFailed:
            raise Conflict(
                f"{path.uri} or your pins changed meanwhile; retry", {"field": "path", "path": path.uri}
            ) from None

    def _answer(
        self,
        message: str,
        shown: str,
        pins: list[dict[str, Any]],
        position: int | None,
        tokens: int,
        *,
        changed: bool = True,
    ) -> BlockPinOutput:
        """The answer of a pin (``position``: where the file now is) or an unpin (``position`` None)."""
        return BlockPinOutput(
            message=message,
            path=shown,
            pinned=position is not None,
            changed=changed,
            position=position,
            tokens=tokens,
            pinned_tokens=total_of(pins),
            budget_tokens=self.limit,
            pinned_count=len(pins),
        )

    # ---------------------------------------------------- pinned context
    def pinned(self, context: RequestContext) -> tuple[list[tuple[PinnedBlock, str]], int]:
        """The pinned files this request shows, in pin order, each with its content; and how many pins are
        inactive (another project's files)."""
        mine = self._mine(context)
        # A pin of a project's file shows only while the request is in that project: a pinned context never
        # carries one project's files into another's work.
        readable = {
            ASSET_PREFIX + context.scope_key(layer) for layer in ("agent", "user", "project") if context.can_read(layer)
        }
        shown_pins = [pin for pin in mine.pins if pin["pk"] in readable]
        # The pin set is read consistently (a pin just made shows); the files' heads and content, which
        # make most of the read units, eventually: a file written within the last second may show its
        # previous version, or be left out until the next call.
        heads = {
            (item.pk, item.sk.removeprefix(HEAD)): item
            for item in self._records.batch_get(
                [(pin["pk"], HEAD + pin["name"]) for pin in shown_pins], consistent=False
            )
            if not item.data.get("deleted")
        }
        texts = self._store.chunked_contents(
            [(head.pk, name, head.version, int(head.data["chunks"])) for (_, name), head in heads.items()],
            consistent=False,
        )
        found: list[tuple[PinnedBlock, str]] = []
        for position, pin in enumerate(mine.pins):
            if pin["pk"] not in readable:
                continue
            head = heads.get((pin["pk"], pin["name"]))
            content = texts.get((pin["pk"], pin["name"]))
            if head is None or content is None:  # deleted, or rewritten between the two reads: the next call has it
                continue
            shown = display_uri(context, pin["pk"], pin["name"])
            kind = "skill" if pin["name"].startswith("skills/") else "block"
            block = PinnedBlock(
                path=shown, kind=kind, position=position, tokens=int(head.data["tokens"]), version=head.version
            )
            found.append((block, content))
        return found, len(mine.pins) - len(shown_pins)

    def context(self, context: RequestContext, request: PinnedContextInput) -> PinnedContextOutput:
        """The pinned files, in order, each wrapped in a <block> tag: ready for a system prompt."""
        found, inactive = self.pinned(context)
        parts = [block_text(block, content) for block, content in found]
        blocks = [block for block, _ in found]
        whole = "\n\n".join(parts)
        if request.offset > len(whole):
            raise invalid_field("offset", f"the pinned context has {len(whole)} characters", totalChars=len(whole))
        piece = whole[request.offset :]
        output = PinnedContextOutput(
            context=piece,
            blocks=blocks,
            count=len(blocks),
            total_tokens=sum(block.tokens for block in blocks),
            budget_tokens=self.limit,
            inactive=inactive,
            total_chars=len(whole),
        )
        budget = context.response_budget
        if budget is not None and wire_bytes(output) > budget:
            # A part lists only the files it shows some of, so that many pins never crowd the text out.
            spans, start = [], 0
            for part in parts:
                spans.append((start, start + len(part)))
                start += len(part) + 2

            def part_of(prefix: str) -> PinnedContextOutput:
                end = request.offset + len(prefix)
                shown = [block for block, (a, b) in zip(blocks, spans, strict=True) if a < end and b > request.offset]
                return output.model_copy(update={"context": prefix, "blocks": shown})

            limit = budget - RESERVE_BYTES
            kept = longest_prefix(piece, lambda prefix: wire_bytes(part_of(prefix)) <= limit)
            if not kept:
                raise invalid_field("offset", f"no part of the pinned context fits the transport's {budget} bytes")
            output.context, output.blocks = piece[:kept], part_of(piece[:kept]).blocks
            if kept < len(piece):
                output.has_more, output.next_offset = True, request.offset + kept
        return output
