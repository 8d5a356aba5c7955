"""Reading an export into a store: checked whole first, then written so that running it again changes nothing.

**Checked first.** Every line is validated (``mnemo.portability.lines``) before
anything is written: its shape and the limits of the stores (a record's size,
a blob's key and metadata); that each record's partition is of its family and
inside the header's selection, and that the ids and scope in its body agree
with its keys (an index document is keyed by them); that no key comes twice;
that each blob is a knowledge file of the selection, or a version an exported
workspace record names, and matches its sha256; and that the end line's counts
agree with the lines before it. A bad or cut-off file is refused, naming the
line and field, and nothing is written.

**Idempotent, and the target's own data wins.** Records are merged by object (a
memory with its history, a file with its versions and content, a fact with its
edges, a topic with its body): an object whose head the target holds in another
state is the target's own, and none of its records is written (``kept``; the
summary names the first few). Otherwise a record is written only where its key
is absent; one already there with the same body and version is ``unchanged``.
Each blob version is stored with the ``mnemo-origin`` it came from, and a version
the target already holds (by origin, or by the same id and content when a backup
goes back into its own store) is never stored twice; a knowledge file the target
changed since is left as it is. Workspace records are rewritten to name the
target's blob versions.

**Re-embedded.** Vectors never travel. Each new record the index mirrors is
written with its index outbox marker in the same write, and the import then
drains the outbox, so the target's families embed with the target's model. A
crash leaves markers: the next drain, or the same import again, completes it.
Knowledge files are followed by a sync of the tenant, which rebuilds the
knowledge catalog and its index from them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mnemo.blob_keys import check_blob_key
from mnemo.context import ScopeKey
from mnemo.conversations import store as conversations
from mnemo.errors import InvalidInput, MnemoError, from_validation_errors
from mnemo.families import Families
from mnemo.files import store as files
from mnemo.files.scopes import workspace_location_of
from mnemo.graph import store as graph
from mnemo.memory import records as memories
from mnemo.portability.indexing import GRAPH_FAMILY, MEMORY_FAMILY, index_marker
from mnemo.portability.lines import FORMAT_VERSION, LINE, BlobLine, End, Header, RecordLine
from mnemo.portability.selection import Selection, split_partition
from mnemo.portability.services import PortabilityServices as Services
from mnemo.portability.services import Progress
from mnemo.ports import MAX_WRITE_OPERATIONS, ConditionFailed, Item, Put
from mnemo.topics import records as topics

#: Blob metadata naming the source version a target version was imported from.
ORIGIN = "mnemo-origin"
#: What a workspace record names when the source had lost that version's content: no store gives out this
#: id (local versions count from 1; S3 refuses it), so a read answers "missing", as it did at the source.
MISSING_VERSION = "0"
#: Records checked and written together (one batched read, then as few writes as the limits allow).
RECORD_BATCH = 25
#: JSON bytes of one write at most (a DynamoDB transaction moves at most 4 MB).
WRITE_BYTES = 3_000_000
#: A record's keys and body at most (a DynamoDB item holds 400 KB).
MAX_RECORD_BYTES = 400_000
#: A record's partition and sort key at most, in UTF-8 (DynamoDB's limits).
MAX_PK_BYTES, MAX_SK_BYTES = 2048, 1024
#: A blob's metadata at most (S3 allows 2 KB of user metadata; the origin takes the rest).
MAX_METADATA_BYTES = 1_800
#: A blob key at most (S3's limit).
MAX_KEY_BYTES = 1024
#: How many kept records the summary names.
KEPT_SHOWN = 20
#: Body fields an import rewrites, left out when objects are compared.
REWRITTEN = ("blobVersion", "embeddingModel")


def origin(key: str, version: str, sha256: str) -> str:
    """The mark a blob version an import stores carries: a digest of its key, exported version and content, so importing
    the same file again finds it instead of storing it twice."""
    return hashlib.sha256(f"{key}\n{version}\n{sha256}".encode()).hexdigest()[:40]


def _kind_and_rest(sk: str) -> tuple[str, str]:
    """A sort key cut at its first ``#``, the kind named as the layout modules name it (``MEM#...``: ``MEM#``)."""
    kind, _, rest = sk.partition("#")
    return f"{kind}#", rest


def head_of(family: str, sk: str, data: dict[str, Any]) -> str | None:
    """The sort key of the head of the object a record belongs to (its own for a head); None if it stands alone.

    The graph's pointer records belong to what they point at: a name to its entity, the open-fact and
    exclusivity records of a triple to their fact."""
    if family == "memories":
        return memories.head_of(sk)
    if family in ("conversations", "executions"):
        return conversations.head_of(sk)
    if family == "topics":
        return topics.head_of(sk)
    if family in ("blocks", "workspace"):
        return files.head_of(sk)
    if family == "graph":
        return graph.head_of(sk, data)
    return None


def indexed_id(family: str, sk: str) -> tuple[str, str, str] | None:
    """(index namespace, document id, body field) of a record whose index document is keyed by its bare id."""
    kind, rest = _kind_and_rest(sk)
    if family == "memories" and kind == memories.RECORD:
        return MEMORY_FAMILY, rest, "data.memoryId"
    if family == "graph" and kind in (graph.ENTITY, graph.FACT):
        return GRAPH_FAMILY, rest, "data.entityId" if kind == graph.ENTITY else "data.factId"
    return None


def identity(data: dict[str, Any], version: int) -> str:
    """What makes two heads the same object in the same state (the fields an import rewrites left out)."""
    kept = {key: value for key, value in data.items() if key not in REWRITTEN}
    return hashlib.sha256(json.dumps([version, kept], sort_keys=True).encode()).hexdigest()


def disagreement(family: str, scope: ScopeKey, scope_key: str, sk: str, data: dict[str, Any]) -> str | None:
    """The body field that disagrees with the record's keys, if any: index documents are keyed by these ids and
    filtered by this scope, so a body naming another record or scope could reach into another's index."""
    kind, rest = _kind_and_rest(sk)
    own = rest.split("#", 1)[0]
    checks: dict[str, Any] = {}
    if family == "memories" and kind in (memories.RECORD, memories.HISTORY):
        checks = {"memoryId": own}
        if kind == memories.RECORD:
            checks |= {"scope": scope_key, "layer": scope.layer}
    elif family in ("conversations", "executions") and kind in (conversations.RECORD, conversations.TIME):
        checks = {"message_id": rest if kind == conversations.RECORD else rest.split("#", 1)[-1]}
        if kind == conversations.RECORD:
            checks["scope"] = scope_key
    elif family == "graph" and kind in (graph.ENTITY, graph.FACT):
        checks = {"entityId" if kind == graph.ENTITY else "factId": rest, "scope": scope_key}
    elif family == "graph" and kind == graph.EDGE:
        checks = {"factId": rest.rsplit("#", 1)[-1]}
    elif family in ("blocks", "workspace") and kind == files.HEAD:
        checks = {"name": rest}
    for name, expected in checks.items():
        if data.get(name, expected if name == "scope" and family == "graph" else None) != expected:
            return f"data.{name}"
    return None


def record_bytes(line: RecordLine) -> int:
    """A record's size as the DynamoDB adapter stores it: compact JSON with non-ASCII escaped, the keys in
    UTF-8, and room for the attribute names and numbers."""
    body = len(json.dumps(line.data, separators=(",", ":")))
    return body + len(line.pk.encode()) + len(line.sk.encode()) + 100


def _at(line: int, error: MnemoError) -> MnemoError:
    return type(error)(f"line {line}: {error.message}", {**error.details, "line": line})


def _invalid(line: int, field_name: str, message: str) -> InvalidInput:
    return InvalidInput(f"line {line}: {field_name}: {message}", {"field": field_name, "line": line})


def _check_storable_key(line: int, field_name: str, key: str) -> None:
    """A blob key every blob store takes (S3 too): a key that fails later would stop the import half-way."""
    try:
        check_blob_key(key)
    except InvalidInput as error:
        raise _invalid(line, field_name, error.message.removeprefix("key: ")) from None
    if len(key.encode()) > MAX_KEY_BYTES:
        raise _invalid(line, field_name, f"at most {MAX_KEY_BYTES:,} bytes (an S3 key)")


def _numbered(handle: Iterable[str]) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(handle, start=1):
        if raw.strip():
            yield number, raw


def _parsed(number: int, raw: str) -> dict[str, Any]:
    try:
        payload = json.loads(raw)
    except ValueError:
        raise _invalid(number, "line", "not valid JSON") from None
    if not isinstance(payload, dict):
        raise _invalid(number, "line", "each line is a JSON object")
    try:
        json.dumps(payload, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise _invalid(number, "line", "holds text that is not valid Unicode (a lone surrogate)") from None
    return payload


def is_full_export(first_line: str) -> bool:
    """Whether a file's first line is a whole export's header, of this format version or a later one (which
    ``check`` refuses by name); else the file is memory_add lines (format 1)."""
    try:
        payload = json.loads(first_line)
    except ValueError:
        return False
    version = payload.get("mnemoExport") if isinstance(payload, dict) else None
    return isinstance(version, int) and version >= FORMAT_VERSION


@dataclass
class Plan:
    """What a checked file holds."""

    header: Header
    selection: Selection
    lines: int = 0
    records: dict[str, int] = field(default_factory=dict)
    blobs: dict[str, int] = field(default_factory=dict)
    #: (pk, head sk) -> identity of that head in the file.
    heads: dict[tuple[str, str], str] = field(default_factory=dict)
    #: (blob key, source version) -> (pk, head sk) of the workspace file that names it.
    named: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    #: (blob key, source version) of every blob line.
    present: set[tuple[str, str]] = field(default_factory=set)
    #: (index namespace, document id) -> (line, field, scope) of the records indexed by their bare id.
    indexed: dict[tuple[str, str], tuple[int, str, str]] = field(default_factory=dict)


class _Checker:
    def __init__(self, families: Families) -> None:
        self.families = families
        self.plan: Plan | None = None
        self.stage = 0  # 0 header, 1 records, 2 blobs, 3 after the end line
        self.keys: set[bytes] = set()

    def header(self, number: int, payload: dict[str, Any]) -> None:
        if payload.get("mnemoExport") != FORMAT_VERSION:
            raise _invalid(
                number,
                "mnemoExport",
                f"format version {payload.get('mnemoExport')!r} is not one this Mnemo reads "
                f"({FORMAT_VERSION}): import it with the Mnemo that wrote it, or a later one",
            )
        header = Header.model_validate(payload)
        try:
            chosen = header.selection
            selection = Selection(chosen.tenant, chosen.user, tuple(chosen.layers))
        except ValueError as error:
            raise _invalid(number, "selection", str(error)) from None
        if selection.kind != header.kind:
            raise _invalid(number, "kind", f"the selection is a {selection.kind}'s, not a {header.kind}'s")
        self.plan = Plan(header, selection)
        self.stage = 1

    def line(self, number: int, payload: dict[str, Any]) -> None:
        assert self.plan is not None
        line = LINE.validate_python(payload)
        self.plan.lines += 1
        if self.stage == 3:
            raise _invalid(number, "type", "nothing may follow the end line")
        if isinstance(line, RecordLine):
            if self.stage != 1:
                raise _invalid(number, "type", "record lines come before the blob lines")
            self.record(number, line)
        elif isinstance(line, BlobLine):
            self.stage = 2
            self.blob(number, line)
        else:
            self.end(number, line)
            self.stage = 3

    def _once(self, number: int, field_name: str, *key: str) -> None:
        digest = hashlib.sha256("\n".join(key).encode()).digest()[:16]
        if digest in self.keys:
            raise _invalid(number, field_name, "the same key came earlier in the file")
        self.keys.add(digest)

    def record(self, number: int, line: RecordLine) -> None:
        assert self.plan is not None
        found = split_partition(line.pk, self.families)
        if found is None or found[0] != line.family:
            raise _invalid(number, "pk", f"not a partition of the {line.family} family")
        family, scope = found
        if not self.plan.selection.holds(scope):
            raise _invalid(number, "pk", "outside the selection the header names")
        scope_key = line.pk.split("|", 1)[1]
        wrong = disagreement(family, scope, scope_key, line.sk, line.data)
        if wrong:
            raise _invalid(number, wrong, "disagrees with the record's keys")
        keyed = indexed_id(family, line.sk)
        if keyed is not None:
            namespace, doc_id, field_name = keyed
            earlier = self.plan.indexed.setdefault((namespace, doc_id), (number, field_name, scope_key))
            if earlier[2] != scope_key:
                raise _invalid(number, field_name, f"line {earlier[0]} has the same id in another scope")
        for field_name, key, limit in (("pk", line.pk, MAX_PK_BYTES), ("sk", line.sk, MAX_SK_BYTES)):
            if len(key.encode()) > limit:
                raise _invalid(number, field_name, f"at most {limit:,} bytes (a DynamoDB key)")
        if record_bytes(line) > MAX_RECORD_BYTES:
            raise _invalid(number, "data", f"a record holds at most {MAX_RECORD_BYTES:,} bytes")
        self._once(number, "sk", "record", line.pk, line.sk)
        head = head_of(family, line.sk, line.data)
        if head == line.sk:
            self.plan.heads[(line.pk, line.sk)] = identity(line.data, line.version)
        where = workspace_location_of(line.pk)
        if where is not None and head is not None:
            blob_key = where.blob_key(head.removeprefix(files.HEAD))
            _check_storable_key(number, "sk", blob_key)
            if "blobVersion" in line.data:
                self.plan.named[(blob_key, str(line.data["blobVersion"]))] = (line.pk, head)
        self.plan.records[family] = self.plan.records.get(family, 0) + 1

    def blob(self, number: int, line: BlobLine) -> None:
        assert self.plan is not None
        try:
            content = base64.b64decode(line.content, validate=True)
        except (binascii.Error, ValueError):
            raise _invalid(number, "content", "not base64") from None
        if hashlib.sha256(content).hexdigest() != line.sha256:
            raise _invalid(number, "sha256", "does not match the content")
        _check_storable_key(number, "key", line.key)
        metadata = json.dumps(line.metadata, ensure_ascii=False)
        if len(metadata.encode()) > MAX_METADATA_BYTES or not metadata.isascii():
            raise _invalid(number, "metadata", f"ASCII, at most {MAX_METADATA_BYTES:,} bytes (S3's user metadata)")
        if line.family == "knowledge" and not self.plan.selection.holds_knowledge(line.key):
            raise _invalid(number, "key", "not a knowledge file of the selection")
        if line.family == "workspace" and (line.key, line.version) not in self.plan.named:
            raise _invalid(number, "key", "a workspace file version that no workspace record of the file names")
        self._once(number, "version", "blob", line.key, line.version)
        self.plan.present.add((line.key, line.version))
        self.plan.blobs[line.family] = self.plan.blobs.get(line.family, 0) + 1

    def end(self, number: int, line: End) -> None:
        assert self.plan is not None
        plan = self.plan
        for what, stated, found in (("records", line.records, plan.records), ("blobs", line.blobs, plan.blobs)):
            if {k: v for k, v in stated.items() if v} != found:
                raise _invalid(number, what, f"the end line counts {stated} but the file holds {found}")


def check(handle: Iterable[str], families: Families) -> Plan:
    """Validate a whole file against the registered record ``families``; the first bad line raises INVALID_INPUT
    naming it and its field."""
    checker = _Checker(families)
    for number, raw in _numbered(handle):
        payload = _parsed(number, raw)
        try:
            if checker.plan is None:
                checker.header(number, payload)
            else:
                checker.line(number, payload)
        except ValidationError as error:
            # A line's errors are located under its type (the union's tag): the field is what matters.
            tag = payload.get("type") if checker.plan is not None else None
            errors = from_validation_errors(
                error.errors(include_url=False), drop_prefix=tag if isinstance(tag, str) else None
            )
            raise _at(number, errors) from None
    if checker.plan is None:
        raise InvalidInput("file: empty; an export starts with its header line", {"field": "file"})
    if checker.stage != 3:
        raise InvalidInput(
            "file: the end line is missing: the file was cut off, and nothing was imported", {"field": "file"}
        )
    return checker.plan


# ------------------------------------------------------------------ writing
@dataclass
class ImportSummary:
    records: dict[str, dict[str, int]] = field(default_factory=dict)
    blobs: dict[str, dict[str, int]] = field(default_factory=dict)
    kept: list[dict[str, str]] = field(default_factory=list)
    missing_blobs: int = 0
    indexed: int = 0
    index_pending: int = 0
    sync: dict[str, Any] | None = None

    @staticmethod
    def count(table: dict[str, dict[str, int]], family: str, outcome: str, many: int = 1) -> None:
        """Add ``many`` to a family's ``outcome`` (added, unchanged or kept) in ``table``."""
        row = table.setdefault(family, {"added": 0, "unchanged": 0, "kept": 0})
        row[outcome] = row.get(outcome, 0) + many

    def as_json(self) -> dict[str, Any]:
        """The summary as the command prints it (camelCase)."""
        return {
            "records": self.records,
            "blobs": self.blobs,
            "kept": self.kept,
            "missingBlobs": self.missing_blobs,
            "indexed": self.indexed,
            "indexPending": self.index_pending,
            "sync": self.sync,
        }


class Importer:
    def __init__(self, services: Services, plan: Plan, progress: Progress | None = None) -> None:
        self._services = services
        self._plan = plan
        self._progress = progress
        self._done = 0
        self.summary = ImportSummary()
        #: (blob key, source version) -> the target's version id.
        self._versions: dict[tuple[str, str], str] = {}
        self._pending: list[tuple[RecordLine, Item]] = []
        self._deleted_files: list[str] = []
        self._queued: set[tuple[str, str]] = set()
        #: The history items of the file's memories, seen before their heads (HIST# sorts before MEM#), and
        #: the memories some of whose history the target already holds.
        self._history: dict[tuple[str, str], set[str]] = {}
        self._shared: set[tuple[str, str]] = set()
        self._embedder_name = services.embedder.name

    def run(self, path: Path) -> ImportSummary:
        """Write a file ``check`` accepted: its blobs first (the records name their versions), then its records."""
        self._check_index_owners()
        with path.open(encoding="utf-8") as handle:
            self._blob_pass(handle)
        with path.open(encoding="utf-8") as handle:
            self._record_pass(handle)
        for key in self._deleted_files:
            if self._services.blobs.get(key) is not None:
                self._services.blobs.delete(key)
        self._drain()
        if self._plan.blobs.get("knowledge"):
            self._sync()
        return self.summary

    def _check_index_owners(self) -> None:
        """Refuse, before anything is written, a memory or graph id that the target's index holds for another
        scope: their documents are keyed by the bare id, so the import would replace another's document (a
        tenant copied by renaming its ids' scope, or a crafted file)."""
        wanted: dict[str, list[str]] = {}
        for namespace, doc_id in self._plan.indexed:
            wanted.setdefault(namespace, []).append(doc_id)
        for namespace, ids in wanted.items():
            for doc_id, keywords in self._services.index.keywords_of(namespace, ids).items():
                number, field_name, scope_key = self._plan.indexed[(namespace, doc_id)]
                if keywords.get("scope", [scope_key]) != [scope_key]:
                    raise _invalid(
                        number, field_name, "the target holds this id in another scope; nothing was imported"
                    )

    @staticmethod
    def _lines(handle: Iterable[str], kind: str) -> Iterator[Any]:
        """The lines of one type (``check`` accepted them all)."""
        for _, raw in _numbered(handle):
            payload = json.loads(raw)
            if payload.get("type") == kind:
                yield LINE.validate_python(payload)

    def _step(self, family: str, many: int = 1) -> None:
        self._done += many
        if self._progress is not None:
            self._progress(self._done, family)

    # ------------------------------------------------------------ blobs
    def _blob_pass(self, handle: Iterable[str]) -> None:
        group: list[BlobLine] = []
        for line in self._lines(handle, "blob"):
            if group and (line.key != group[0].key or line.family != group[0].family):
                self._blob_group(group)
                group = []
            group.append(line)
        if group:
            self._blob_group(group)

    def _blob_group(self, group: list[BlobLine]) -> None:
        """Every exported version of one file: mapped to what the target holds, the rest stored in order."""
        blobs, key, family = self._services.blobs, group[0].key, group[0].family
        stored = blobs.versions(key)  # newest first
        by_origin = {v.metadata[ORIGIN]: v.version for v in stored if not v.deleted and ORIGIN in v.metadata}
        live = {v.version for v in stored if not v.deleted}
        held: list[str | None] = []
        own: dict[str, str] | None = None
        for line in group:
            found = by_origin.get(origin(key, line.version, line.sha256))
            if found is None and line.version in live:  # a backup going back into its own store
                same = blobs.get(key, line.version)
                found = line.version if same and hashlib.sha256(same.content).hexdigest() == line.sha256 else None
            if found is None and ORIGIN in line.metadata:  # back from a store this one's versions went to
                own = self._own_origins(key, live) if own is None else own
                found = own.get(line.metadata[ORIGIN])
            held.append(found)
        start = 0
        if family == "workspace" and self._workspace_file_kept(group[0]):
            start = len(group)  # the target's own file: what it holds is mapped, nothing is added to it
        elif family == "knowledge" and stored:
            current = stored[0]
            if current.deleted or current.version not in held:
                # The target changed or removed this file since: its own state wins over the export's.
                kept = sum(found is None for found in held)
                self.summary.count(self.summary.blobs, family, "kept", kept)
                self.summary.count(self.summary.blobs, family, "unchanged", len(group) - kept)
                self._step(family, len(group))
                return
            start = held.index(current.version) + 1
        for position, (line, found) in enumerate(zip(group, held, strict=True)):
            if found is None and position >= start:
                mark = origin(key, line.version, line.sha256)
                found = blobs.put(key, base64.b64decode(line.content), {**line.metadata, ORIGIN: mark})
                self.summary.count(self.summary.blobs, family, "added")
            else:
                self.summary.count(self.summary.blobs, family, "unchanged" if found is not None else "kept")
            if found is not None:
                self._versions[(key, line.version)] = found
            self._step(family)

    def _own_origins(self, key: str, live: set[str]) -> dict[str, str]:
        """The origin each of the target's live versions of ``key`` gives the copies made of it elsewhere."""
        found: dict[str, str] = {}
        for version in live:
            blob = self._services.blobs.get(key, version)
            if blob is not None:
                found[origin(key, version, hashlib.sha256(blob.content).hexdigest())] = version
        return found

    def _workspace_file_kept(self, line: BlobLine) -> bool:
        pk, head = self._plan.named[(line.key, line.version)]
        return self._kept_object(pk, head, self._services.records.get(pk, head))

    def _kept_object(self, pk: str, head: str, there: Item | None) -> bool:
        """Whether the target holds this object's head in a state other than the file's: the object is its own."""
        wanted = self._plan.heads.get((pk, head))
        return wanted is not None and there is not None and identity(there.data, there.version) != wanted

    # ---------------------------------------------------------- records
    def _record_pass(self, handle: Iterable[str]) -> None:
        for line in self._lines(handle, "record"):
            self._pending.append((line, self._rewritten(line)))
            if len(self._pending) >= RECORD_BATCH:
                self._flush()
        self._flush()

    def _rewritten(self, line: RecordLine) -> Item:
        data = line.data
        where = workspace_location_of(line.pk)
        if where is not None and line.sk.startswith((files.HEAD, files.HISTORY)) and "blobVersion" in data:
            name = line.sk[2:].rsplit("#", 1)[0] if line.sk.startswith(files.HISTORY) else line.sk[2:]
            mapped = self._versions.get((where.blob_key(name), str(data["blobVersion"])))
            if mapped is None and (where.blob_key(name), str(data["blobVersion"])) not in self._plan.present:
                self.summary.missing_blobs += 1
            data = {**data, "blobVersion": mapped or MISSING_VERSION}
        if line.family == "memories" and memories.is_record(line.sk) and "embeddingModel" in data:
            # The target embeds it again, with its own model; the record names the model its vector is from.
            data = {**data, "embeddingModel": self._embedder_name}
        return Item(line.pk, line.sk, data, line.version, line.expires_at)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if not pending:
            return
        heads = {(item.pk, head) for line, item in pending if (head := head_of(line.family, item.sk, item.data))}
        keys = [(item.pk, item.sk) for _, item in pending] + sorted(heads)
        stored = {(item.pk, item.sk): item for item in self._services.records.batch_get(keys)}
        units: list[tuple[RecordLine, Item, list[Put]]] = []
        now = time.time()
        for line, item in pending:
            if item.expires_at is not None and item.expires_at <= now:
                # Gone by now (an idempotency record past its day): the store would hide it, so it is not written.
                self.summary.count(self.summary.records, line.family, "expired")
                self._step(line.family)
                continue
            head = head_of(line.family, item.sk, item.data)
            there = stored.get((item.pk, item.sk))
            marker = self._marker(line, item)
            if line.family == "memories" and head is not None and head != item.sk:
                self._history.setdefault((item.pk, head), set()).add(item.sk)
                if there is not None:
                    self._shared.add((item.pk, head))
            if head == item.sk and there is None and self._deleted_since(item.pk, head, item):
                self._kept(line, item, head_record=True)
                continue
            if head is not None and self._kept_object(item.pk, head, stored.get((item.pk, head))):
                # The target's own object: nothing of the file's is written into it.
                if there is not None and (there.data, there.version) == (item.data, item.version):
                    self.summary.count(self.summary.records, line.family, "unchanged")
                    self._step(line.family)
                else:
                    self._kept(line, item, head_record=head == item.sk)
                continue
            if there is None:
                units.append((line, item, [Put(item, expect="absent"), *([marker] if marker is not None else [])]))
            else:
                self._settled(line, item, there)
        group: list[tuple[RecordLine, Item, list[Put]]] = []
        operations = size = 0
        for unit in units:
            unit_size = sum(len(json.dumps(op.item.data)) for op in unit[2])
            if group and (operations + len(unit[2]) > MAX_WRITE_OPERATIONS or size + unit_size > WRITE_BYTES):
                self._write(group)
                group, operations, size = [], 0, 0
            group.append(unit)
            operations += len(unit[2])
            size += unit_size
        self._write(group)

    def _deleted_since(self, pk: str, head: str, record: Item | None = None) -> bool:
        """Whether a memory whose record the target lacks was deleted there since the export: the target's
        history of it holds items the file does not (a DELETE), which a resumed import never leaves.

        A record's folded ADD entry (``mnemo.memory.records``) counts as a history item of the file; a
        delete in the target wrote it out under the same key."""
        seen = self._history.pop((pk, head), set())
        shared = (pk, head) in self._shared
        self._shared.discard((pk, head))
        entry = memories.folded(record) if record is not None and memories.is_record(head) else None
        if not shared and entry is None:  # none of its history is there: a new memory (the common case)
            return False
        memory_id = memories.memory_id_of(head)
        theirs = {item.sk for item in self._services.records.query(pk, memories.history_prefix(memory_id), limit=1000)}
        if entry is not None:
            seen.add(entry.sk)
            shared = shared or entry.sk in theirs
        return shared and bool(theirs - seen)

    def _marker(self, line: RecordLine, item: Item) -> Put | None:
        """The index outbox marker written with a new record, if the index mirrors it. Every record's reference
        is remembered, added or not: a marker an earlier run left queued for it is this import's pending work."""
        marker = index_marker(self._services.outbox, self._services.families, item)
        if marker is not None:
            data = marker.item.data
            self._queued.add((data["family"], json.dumps(data["ref"], sort_keys=True)))
        return marker

    def _write(self, group: list[tuple[RecordLine, Item, list[Put]]]) -> None:
        if not group:
            return
        try:
            self._services.records.write([op for _, _, ops in group for op in ops])
        except ConditionFailed:  # someone wrote one of these keys meanwhile: one by one, to know which
            for unit in group:
                self._write_one(*unit)
            return
        for line, _, _ in group:
            self._added(line)

    def _write_one(self, line: RecordLine, item: Item, operations: list[Put]) -> None:
        try:
            self._services.records.write(operations)
        except ConditionFailed:
            there = self._services.records.get(item.pk, item.sk)
            if there is None:  # gone again: a race on the same key, not a lost record; the next run settles it
                raise
            self._settled(line, item, there)
            return
        self._added(line)

    def _added(self, line: RecordLine) -> None:
        self.summary.count(self.summary.records, line.family, "added")
        self._step(line.family)
        if line.family == "workspace" and line.sk.startswith(files.HEAD) and line.data.get("deleted"):
            where = workspace_location_of(line.pk)
            if where is not None:
                self._deleted_files.append(where.blob_key(line.sk[2:]))

    def _settled(self, line: RecordLine, item: Item, there: Item) -> None:
        if there.data == item.data and there.version == item.version:
            self.summary.count(self.summary.records, line.family, "unchanged")
            self._step(line.family)
            return
        self._kept(line, item, head_record=True)

    def _kept(self, line: RecordLine, item: Item, *, head_record: bool) -> None:
        self.summary.count(self.summary.records, line.family, "kept")
        self._step(line.family)
        if head_record and len(self.summary.kept) < KEPT_SHOWN:
            self.summary.kept.append({"pk": item.pk, "sk": item.sk})

    # ------------------------------------------------------- index, sync
    def _drain(self) -> None:
        outbox = self._services.outbox
        while True:
            report = outbox.drain()
            self.summary.indexed += report.indexed
            if self._progress is not None:
                self._progress(self._done, f"indexed {self.summary.indexed:,}")
            if report.indexed == 0:
                break
        if self._queued:  # this import's markers that are still queued or were dead-lettered
            waiting = [*outbox.pending(limit=1_000_000), *outbox.dead_letters(limit=1_000_000)]
            ours = {(m["family"], json.dumps(m["ref"], sort_keys=True)) for m in waiting} & self._queued
            self.summary.index_pending = len(ours)

    def _sync(self) -> None:
        from mnemo.sync.models import SyncNowInput

        try:
            result = self._services.sync.sync(self._plan.selection.tenant, SyncNowInput())
        except MnemoError as error:
            self.summary.sync = error.envelope()
            return
        self.summary.sync = result.model_dump(by_alias=True, mode="json")
