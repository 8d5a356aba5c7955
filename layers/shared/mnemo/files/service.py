"""The file tools' rules: one set of operations, routed by the path's scheme (seed 004).

StoredAssets (``mnemo://``) and workspace files share ``FileStore``'s
versioned layout; topic notes go through the topic service and knowledge
items through the knowledge service, so every rule of theirs (roles, names,
sizes) holds here too. Pinning and the budget are ``mnemo.files.pinning``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from mnemo import clock
from mnemo.budget import RESERVE_BYTES, fit_head, wire_bytes
from mnemo.context import RequestContext
from mnemo.errors import Conflict, ConflictingRequest, InvalidInput, MnemoError, NotFound, invalid_field
from mnemo.files.index import BlockIndex
from mnemo.files.models import (
    MAX_CONTENT_CHARS,
    FileDeleteInput,
    FileDeleteOutput,
    FileEditInput,
    FileEntry,
    FileListInput,
    FileListOutput,
    FileMatch,
    FileReadInput,
    FileReadOutput,
    FileSearchInput,
    FileSearchOutput,
    FileWriteInput,
    FileWriteOutput,
    Reference,
)
from mnemo.files.paths import FilePath, parse_path
from mnemo.files.pinning import Pinning
from mnemo.files.references import mentions
from mnemo.files.scopes import (
    asset_location,
    display_uri,
    own_layer,
    workspace_location,
)
from mnemo.files.store import ASSET_PREFIX, HEAD, FileStore, Location, check_storable
from mnemo.files.tokens import count_tokens
from mnemo.outbox import IndexOutbox
from mnemo.paging import decode_after, encode_after
from mnemo.ports import ConditionFailed, Delete, Item, Put, RecordStore

if TYPE_CHECKING:
    from mnemo.knowledge.service import KnowledgeService
    from mnemo.topics.service import TopicService

#: How a topic's or knowledge item's errors name fields, and what the file tools call them.
_RENAMED = {"topic": "path", "id": "path", "newContent": "content", "content": "content"}


def _renamed(error: MnemoError) -> MnemoError:
    field = error.details.get("field")
    if isinstance(field, str) and field in _RENAMED:
        error.details["field"] = _RENAMED[field]
    return error


def _missing(path: FilePath) -> NotFound:
    return NotFound(f"No file at {path.uri}", {"field": "path", "path": path.uri})


def _stale(path: FilePath, current: int, expected: int) -> Conflict:
    where = "does not exist" if current == 0 else f"is at version {current}"
    return ConflictingRequest(
        f"{path.uri} {where}, not at version {expected}; read it again and retry",
        {"field": "expectedVersion", "currentVersion": current, "path": path.uri},
    )


def _raced(path: FilePath) -> Conflict:
    return Conflict(
        f"{path.uri} changed while it was being written; read it again and retry",
        {"field": "path", "path": path.uri},
    )


def _read_only(path: FilePath) -> InvalidInput:
    return invalid_field(
        "path",
        f"{path.uri} is read-only: knowledge changes through its repository (mnemo knowledge push), "
        "never through the file tools",
    )


@dataclass(frozen=True)
class FileText:
    """A file's whole text as read, whatever its store; ``pk`` is the partition of a record-store file."""

    content: str
    version: int | None
    last_updated: str | None
    pk: str | None = None


def _lines(content: str) -> list[str]:
    return content.splitlines(keepends=True)


class FileService:
    def __init__(
        self,
        records: RecordStore,
        store: FileStore,
        blocks: BlockIndex,
        pinning: Pinning,
        outbox: IndexOutbox,
        topics: Callable[[], TopicService],
        knowledge: Callable[[], KnowledgeService],
    ) -> None:
        self._records = records
        self._store = store
        self._blocks = blocks
        self._pinning = pinning
        self._outbox = outbox
        self._topics = topics
        self._knowledge = knowledge

    # ------------------------------------------------------------- where
    def _location(self, context: RequestContext, path: FilePath, *, write: bool = False) -> Location:
        if path.store == "asset":
            return asset_location(context, path, write=write)
        return workspace_location(context, write=write)

    # -------------------------------------------------------------- read
    def read_text(self, context: RequestContext, path: FilePath, version: int | None = None) -> FileText:
        """A file's whole text with its version, kind and date: what reads and expansions start from."""
        if path.store == "topic":
            if version is not None:
                raise invalid_field("version", "topic notes keep no earlier versions to read")
            from mnemo.topics.models import RecallMemoryInput

            unbounded = context.model_copy(update={"response_budget": None})
            try:
                topic = self._topics().recall(unbounded, RecallMemoryInput(topic=path.name))
            except MnemoError as error:
                raise _renamed(error) from None
            return FileText(topic.content, topic.version, clock.iso(topic.last_updated))
        if path.store == "knowledge":
            if version is not None:
                raise invalid_field("version", "read a knowledge item's history with knowledge_show")
            from mnemo.knowledge.models import KnowledgeShowInput

            try:
                shown = self._knowledge().show(context, KnowledgeShowInput(id=path.name, include_constraints=False))
            except MnemoError as error:
                raise _renamed(error) from None
            assert shown.item is not None
            return FileText(shown.item.content, None, shown.item.updated_at or None)
        where = self._location(context, path)
        # An earlier version stays readable after a delete: the history outlives the file.
        head = self._store.head(where, path.name) if version is None else self._store.raw_head(where, path.name)
        if head is None or (version is not None and version >= head.version and head.data.get("deleted")):
            raise _missing(path)
        content, entry = self._store.content(where, head, version)
        return FileText(content, version or head.version, entry.get("lastUpdated") or entry.get("at"), where.pk)

    def read(self, context: RequestContext, request: FileReadInput) -> FileReadOutput:
        path = parse_path(request.path)
        found = self.read_text(context, path, request.version)
        content = found.content
        lines = _lines(content)
        if request.offset > len(lines):
            raise invalid_field("offset", f"the file has {len(lines)} lines", totalLines=len(lines))
        page = lines[request.offset : request.offset + request.limit]
        pinned = None
        if path.store == "asset":
            pinned = self._pinning.is_pinned(context, str(found.pk), path.name)
        output = FileReadOutput(
            path=path.uri,
            kind=path.kind,
            content="".join(page),
            version=found.version,
            total_lines=len(lines),
            offset=request.offset,
            returned_lines=len(page),
            tokens=count_tokens(content),
            last_updated=found.last_updated,
            pinned=pinned,
            references=self._references(context, content),
        )
        following = request.offset + len(page)
        if following < len(lines):
            output.has_more, output.next_offset = True, following
        budget = context.response_budget
        if budget is not None and wire_bytes(output) > budget:
            # A line costs its escaped text inside the content string: its own JSON less the two quotes,
            # and fit_head counts a comma per item besides.
            kept = fit_head(output, page, budget - RESERVE_BYTES, weight=lambda line: wire_bytes(line) - 3)
            if not kept:
                raise invalid_field("limit", f"line {request.offset} alone does not fit the transport's {budget} bytes")
            output.content, output.returned_lines = "".join(kept), len(kept)
            output.has_more, output.next_offset = True, request.offset + len(kept)
        return output

    def _references(self, context: RequestContext, content: str) -> list[Reference]:
        """The paths ``content`` mentions, and whether each names a file the caller can read.

        Files of the record stores are looked up in one batched read; a topic or knowledge item
        through its own service, so that its visibility rules decide.
        """
        paths: list[FilePath] = []
        for mention in mentions(content):
            try:
                paths.append(parse_path(mention))
            except InvalidInput:
                continue
        keys: dict[int, tuple[str, str]] = {}
        for n, path in enumerate(paths):
            if path.store in ("asset", "workspace"):
                try:
                    keys[n] = (self._location(context, path).pk, HEAD + path.name)
                except MnemoError:  # a scope the caller has no ids for: nothing there to read
                    continue
        live = {
            (item.pk, item.sk) for item in self._records.batch_get(list(keys.values())) if not item.data.get("deleted")
        }
        return [
            Reference(
                path=path.uri,
                kind=path.kind,
                exists=keys.get(n) in live if path.store in ("asset", "workspace") else self._readable(context, path),
            )
            for n, path in enumerate(paths)
        ]

    def _readable(self, context: RequestContext, path: FilePath) -> bool:
        try:
            self.read_text(context, path)
        except MnemoError:
            return False
        return True

    # ------------------------------------------------------------- write
    def write(self, context: RequestContext, request: FileWriteInput) -> FileWriteOutput:
        path = parse_path(request.path)
        if path.store == "knowledge":
            raise _read_only(path)
        if path.store == "topic":
            return self._write_topic(context, path, request.content, request.expected_version)
        where = self._location(context, path, write=True)
        current = self._store.raw_head(where, path.name)
        live = current if current is not None and not current.data.get("deleted") else None
        now = live.version if live else 0
        if request.expected_version is not None and request.expected_version != now:
            raise _stale(path, now, request.expected_version)
        return self._commit(context, path, where, current, request.content)

    def edit(self, context: RequestContext, request: FileEditInput) -> FileWriteOutput:
        path = parse_path(request.path)
        if path.store == "knowledge":
            raise _read_only(path)
        where, head = None, None
        if path.store == "topic":
            found = self.read_text(context, path)
            content, version = found.content, int(found.version or 0)
        else:
            where = self._location(context, path, write=True)  # a reader learns it may not write, first
            head = self._store.head(where, path.name)
            if head is None:
                raise _missing(path)
            content, version = self._store.content(where, head)[0], head.version
        if request.expected_version is not None and request.expected_version != version:
            raise _stale(path, version, request.expected_version)
        count = content.count(request.old)
        if count == 0:
            raise NotFound(
                f"`old` does not occur in {path.uri}; read the file and copy the text exactly",
                {"field": "old", "occurrences": 0, "path": path.uri},
            )
        if count > 1 and not request.replace_all:
            raise ConflictingRequest(
                f"`old` occurs {count} times in {path.uri}; give more surrounding text to pick one, or set replaceAll",
                {"field": "old", "occurrences": count, "path": path.uri},
            )
        changed = (
            content.replace(request.old, request.new)
            if request.replace_all
            else content.replace(request.old, request.new, 1)
        )
        if len(changed) > MAX_CONTENT_CHARS:
            raise invalid_field(
                "new", f"the edited file would have {len(changed)} characters, at most {MAX_CONTENT_CHARS}"
            )
        if where is None:
            output = self._write_topic(context, path, changed, version)
        else:  # the write expects the head read above: a change made since is a CONFLICT
            output = self._commit(context, path, where, head, changed, field="new")
        output.replacements = count if request.replace_all else 1
        output.message = (
            f"{path.uri} edited ({output.replacements} replacement{'s' if output.replacements > 1 else ''})"
        )
        return output

    def _commit(
        self,
        context: RequestContext,
        path: FilePath,
        where: Location,
        current: Item | None,
        content: str,
        *,
        field: str = "content",
    ) -> FileWriteOutput:
        """Write ``content`` as the next version after ``current`` (the head as read), all or nothing."""
        tokens = count_tokens(content)
        live = current is not None and not current.data.get("deleted")
        pin_ops: list[Put | Delete] = []
        mine = None
        if path.store == "asset":
            check_storable(content, field)
            old_tokens = int(current.data.get("tokens", 0)) if current is not None and live else 0
            pin_ops, mine = self._pinning.for_write(context, where, path, old_tokens, tokens, field=field)
        operations, head = self._store.write_ops(where, path.name, current, content, tokens=tokens, by=context.user)
        self._apply(
            path,
            where,
            [*operations, *pin_ops],
            partial(self._blocks.write_document, where.pk, path.name, content, head.version),
        )
        created = not live
        return FileWriteOutput(
            message=f"{path.uri} {'created' if created else 'written'} (version {head.version})",
            path=path.uri,
            kind=path.kind,
            version=head.version,
            created=created,
            tokens=tokens,
            bytes=head.data["bytes"],
            pinned=mine.pinned if mine else None,
            pinned_tokens=mine.total if mine else None,
            budget_tokens=self._pinning.limit if path.store == "asset" else None,
        )

    def _apply(self, path: FilePath, where: Location, operations: list[Put | Delete], first: Callable[[], str]) -> None:
        """Write all or nothing; a StoredAsset's write carries its index outbox marker, and ``first`` indexes it."""
        marker = self._outbox.marker(self._blocks.family, self._blocks.reference(where.pk, path.name))
        asset = path.store == "asset"
        try:
            self._store.write([*operations, marker] if asset else operations)
        except ConditionFailed:
            raise _raced(path) from None
        if asset:
            self._outbox.settle(marker, self._blocks, first=first)

    def _write_topic(
        self, context: RequestContext, path: FilePath, content: str, expected: int | None
    ) -> FileWriteOutput:
        """A topic note written as a file: refined when it exists, else memorized with a summary from its
        first line."""
        from pydantic import ValidationError

        from mnemo.topics.models import MemorizeNewTopicInput, RecallMemoryInput, RefineMemoryInput

        topics = self._topics()
        unbounded = context.model_copy(update={"response_budget": None})
        try:
            try:
                existing = topics.recall(unbounded, RecallMemoryInput(topic=path.name))
            except NotFound:
                existing = None
            now = existing.version if existing else 0
            if expected is not None and expected != now:
                raise _stale(path, now, expected)
            if existing is not None:
                request = RefineMemoryInput.model_validate(
                    {"topic": path.name, "newContent": content, "expectedVersion": existing.version}
                )
                written = topics.refine(context, request)
            else:
                first = next((line.strip(" #\t") for line in content.splitlines() if line.strip(" #\t")), "")
                created = MemorizeNewTopicInput.model_validate(
                    {"topic": path.name, "tags": [], "summary": first[:200] or path.name, "content": content}
                )
                written = topics.memorize(context, created)
        except ValidationError as error:
            problem = error.errors(include_url=False)[0]
            raise invalid_field("content", str(problem.get("msg", "invalid"))) from None
        except MnemoError as error:
            raise _renamed(error) from None
        return FileWriteOutput(
            message=f"{path.uri} {'written' if existing else 'created'} (version {written.version})",
            path=path.uri,
            kind="topic",
            version=written.version,
            created=existing is None,
            tokens=count_tokens(content),
            bytes=len(content.encode()),
        )

    # ------------------------------------------------------------ delete
    def delete(self, context: RequestContext, request: FileDeleteInput) -> FileDeleteOutput:
        path = parse_path(request.path)
        if path.store == "knowledge":
            raise _read_only(path)
        if path.store == "topic":
            return self._delete_topic(context, path, request.expected_version)
        where = self._location(context, path, write=True)
        head = self._store.head(where, path.name)
        if head is None:
            raise _missing(path)
        if request.expected_version is not None and request.expected_version != head.version:
            raise _stale(path, head.version, request.expected_version)
        operations, tombstone = self._store.delete_ops(where, head, by=context.user)
        unpinned = 0
        if path.store == "asset":
            pin_ops, unpinned = self._pinning.for_delete(where, path.name)
            operations += pin_ops
        self._apply(path, where, operations, partial(self._blocks.delete_document, where.pk, path.name))
        self._store.after_delete(where, path.name)
        return FileDeleteOutput(
            message=f"{path.uri} deleted" + (f" and unpinned from {unpinned} context(s)" if unpinned else ""),
            path=path.uri,
            kind=path.kind,
            version=tombstone.version,
            unpinned_for=unpinned,
        )

    def _delete_topic(self, context: RequestContext, path: FilePath, expected: int | None) -> FileDeleteOutput:
        from mnemo.topics.models import ForgetMemoryInput

        try:
            now = int(self.read_text(context, path).version or 0)
            if expected is not None and now != expected:
                raise _stale(path, now, expected)
            self._topics().forget(context, ForgetMemoryInput(topic=path.name))
        except MnemoError as error:
            raise _renamed(error) from None
        # A forgotten topic keeps no tombstone: the answer names the version that was forgotten.
        return FileDeleteOutput(message=f"{path.uri} deleted", path=path.uri, kind="topic", version=now)

    # -------------------------------------------------------------- list
    def list_files(self, context: RequestContext, request: FileListInput) -> FileListOutput:
        path = parse_path(request.path, folder=True)
        fingerprint = path.uri
        after = decode_after(request.cursor, fingerprint)
        if path.store in ("topic", "knowledge"):
            names = self._names(context, path)
            start = 0 if after is None else next((n + 1 for n, name in enumerate(names) if name == after), len(names))
            page = names[start : start + request.limit]
            entries = [FileEntry(path=f"{path.store}://{name}", kind=path.store) for name in page]
            more = start + len(page) < len(names)
        else:
            where = self._location(context, path)
            prefix = path.name if path.name == "" or path.name.endswith("/") else path.name + "/"
            items, more = self._store.heads(where, prefix, after, request.limit, consistent=False)  # a listing
            pinned = self._pinning.pinned_names(context, where.pk) if path.store == "asset" else set()
            entries = [self._entry(context, path, where, item, pinned) for item in items]
            page = [item.data["name"] for item in items]
        output = FileListOutput(path=path.uri, entries=entries, count=len(entries))
        kept = fit_head(output, entries, context.response_budget, weight=lambda entry: wire_bytes(entry) + 1)
        if len(kept) < len(entries):
            output.entries, output.count, more = kept, len(kept), True
            page = page[: len(kept)]
        if more and page:
            output.has_more, output.next_cursor = True, encode_after(page[-1], fingerprint)
        return output

    def _names(self, context: RequestContext, path: FilePath) -> list[str]:
        try:
            if path.store == "topic":
                from mnemo.topics.models import ListMemoriesInput

                unbounded = context.model_copy(update={"response_budget": None})
                return self._topics().list_topics(unbounded, ListMemoriesInput()).topics
            return self._knowledge().ids(context)
        except MnemoError as error:
            raise _renamed(error) from None

    @staticmethod
    def _entry(context: RequestContext, path: FilePath, where: Location, item: Item, pinned: set[str]) -> FileEntry:
        name = item.data["name"]
        if path.store == "asset":
            shown = display_uri(context, where.pk, name) if path.owner == "" else f"mnemo://{path.owner}/{name}"
            kind = "skill" if name.startswith("skills/") else "block"
        else:
            shown, kind = name, "workspace"
        return FileEntry(
            path=shown,
            kind=kind,
            version=item.version,
            tokens=item.data["tokens"],
            bytes=item.data["bytes"],
            last_updated=item.data["lastUpdated"],
            pinned=(name in pinned) if path.store == "asset" else None,
            sha256=item.data.get("sha256"),
        )

    # ------------------------------------------------------------ search
    def search(self, context: RequestContext, request: FileSearchInput) -> FileSearchOutput:
        scopes: dict[str, None] = {}
        for layer in (own_layer(context), "user", "project"):
            if context.can_read(layer):
                scopes.setdefault(context.scope_key(layer), None)
        ranked, dense = self._blocks.search(list(scopes), request.query)
        ranked = [(hit, score) for hit, score in ranked if score >= request.threshold]
        keys = []
        for hit, _ in ranked:
            name = (hit.keywords.get("name") or [""])[0]
            scope = (hit.keywords.get("scope") or [""])[0]
            keys.append((ASSET_PREFIX + scope, HEAD + name))
        read_back = self._records.batch_get(keys, consistent=False)  # a search read-back
        heads = {(item.pk, item.sk): item for item in read_back if not item.data.get("deleted")}
        pinned = self._pinning.pinned_keys(context)
        matches = []
        for (_, score), key in zip(ranked, keys, strict=True):
            head = heads.get(key)
            if head is None:
                continue
            name = head.data["name"]
            matches.append(
                FileMatch(
                    path=display_uri(context, head.pk, name),
                    kind="skill" if name.startswith("skills/") else "block",
                    score=score,
                    snippet=head.data.get("preview", ""),
                    version=head.version,
                    tokens=head.data["tokens"],
                    pinned=(head.pk, name) in pinned,
                )
            )
        page = matches[: request.limit]
        output = FileSearchOutput(
            results=page,
            total_count=len(matches),
            retrieval="hybrid" if dense else "lexical",
            message=f"Found {len(matches)} file{'' if len(matches) == 1 else 's'}" if matches else "No files found",
        )
        kept = fit_head(output, page, context.response_budget, weight=lambda match: wire_bytes(match) + 1)
        if len(kept) < len(page):
            output.results = kept
            output.message += f"; {len(page) - len(kept)} more left out to fit the response size limit"
        return output
