"""Adding a record family takes its own files and one line of registration: a throwaway family, in a copy.

In a temporary copy of the repository, a new record family (``notes``: short personal notes, partition
``NOTE|{scope}``, one record ``NOTE#{id}`` each) is written as a contributor would: its package, its family
declaration (its keys, its change events, the document the generic indexer embeds, erased with its user,
exported), its registration in ``mnemo.runtime.record_families``, and its test. Four files. Nothing else is
edited: the copy's own test of the family then shows that its records

- raise change events (the local change log captures them, the registry maps them);
- are indexed (an outbox marker written with the record, drained by the generic indexer);
- expire (the sweeper removes an expired note and its index document);
- are erased with their user (the receipt names the family's step and counts its records and documents);
- are exported, and imported into another Mnemo, whose index then holds them;

and the copy's suites that loop over the families (import rules, key literals, change events, erasure,
portability, expiry) still pass with the family among them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_copy import copy_repository, run_in, snapshot

PACKAGE = '''"""Notes: short personal notes, a record family of their own (``mnemo.notes.family``)."""
'''

FAMILY = '''"""The notes family (``NOTE|{scope}``): one record ``NOTE#{noteId}`` ``{text}`` per note.

Events: note.added when a note is stored, note.removed when it goes (``data.expired`` when the store
removed it). The generic indexer embeds its text; erased with its user; exported as ``notes``.
"""

from __future__ import annotations

from mnemo.changes import ChangeEvent, Owner, RecordChange, make_event
from mnemo.families import IndexDocument, IndexEntry, RecordFamily
from mnemo.family_index import document_entry
from mnemo.ports import Item

PARTITION = "NOTE|"
NOTE = "NOTE#"


def events(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    subject = {"noteId": change.sk.removeprefix(NOTE)}
    if change.inserted:
        return [make_event(change, owner, "note.added", subject)]
    if change.removed:
        return [make_event(change, owner, "note.removed", subject, data={"expired": change.by_service})]
    return []


def document(item: Item) -> IndexDocument | None:
    if not item.sk.startswith(NOTE):
        return None
    return IndexDocument(str(item.data["text"]), {"scope": [item.pk.removeprefix(PARTITION)]})


def index(item: Item) -> IndexEntry | None:
    return document_entry("notes", item) if item.sk.startswith(NOTE) else None


FAMILY = RecordFamily(
    name="notes",
    partition=PARTITION,
    package="mnemo.notes",
    sort_keys=(NOTE,),
    captures=lambda sk: sk.startswith(NOTE),
    events=events,
    index=index,
    document=document,
    personal=True,
    erasure_order=95,
    exported_as="notes",
)
'''

REGISTRATION = (
    (
        "    from mnemo.memory.family import FAMILY as MEMORY_FAMILY\n",
        "    from mnemo.memory.family import FAMILY as MEMORY_FAMILY\n"
        "    from mnemo.notes.family import FAMILY as NOTES_FAMILY\n",
    ),
    ("            RECEIPT_FAMILY,\n", "            RECEIPT_FAMILY,\n            NOTES_FAMILY,\n"),
)

TEST = '''"""The notes family: events, index, expiry, erasure, export and import, through the registry alone."""

from __future__ import annotations

import io
import time
from pathlib import Path

from mnemo.adapters.local.change_log import SqliteChangeLog
from mnemo.adapters.local.sqlite_records import SqliteRecordStore
from mnemo.changes import RecordChange
from mnemo.cli.reindex import sweep_expired
from mnemo.events import events_of
from mnemo.family_index import document_id
from mnemo.notes.family import NOTE, PARTITION
from mnemo.portability.exporter import export
from mnemo.portability.importer import Importer, check
from mnemo.portability.selection import Selection
from mnemo.ports import Item, Put
from mnemo.runtime import Services
from mnemo.settings import Settings

SCOPE = "t=acme|user|u=alice"
PK = f"{PARTITION}{SCOPE}"


def services_in(folder: Path) -> Services:
    return Services(Settings(data_dir=folder, embedder="hashing"))


def write_note(services: Services, note_id: str, text: str, expires_at: int | None = None) -> Item:
    item = Item(PK, f"{NOTE}{note_id}", {"text": text}, expires_at=expires_at)
    marker = services.outbox.marker("notes", {"pk": item.pk, "sk": item.sk})
    services.records.write([Put(item, expect="absent"), marker])
    services.outbox.drain()
    return item


def indexed(services: Services, item: Item) -> bool:
    (vector,) = services.embedder.embed([item.data["text"]])
    hits = services.index.knn("notes", vector, {"scope": [SCOPE]}, 10)
    return document_id(item.pk, item.sk) in {hit.id for hit in hits}


def test_a_note_raises_change_events(tmp_path: Path) -> None:
    services = services_in(tmp_path)
    store = SqliteRecordStore(tmp_path / "log.sqlite3", capture=services.families.captured)
    store.write([Put(Item(PK, f"{NOTE}n1", {"text": "Buy milk"}))])
    logged: list[RecordChange] = SqliteChangeLog(tmp_path / "log.sqlite3").lease_changes("w", 10, 60)
    (event,) = [event for change in logged for event in events_of(change, services.families)]
    assert (event.kind, event.tenant, event.user, event.ids["noteId"]) == ("note.added", "acme", "alice", "n1")


def test_a_note_is_indexed_from_its_marker(tmp_path: Path) -> None:
    services = services_in(tmp_path)
    note = write_note(services, "n1", "The standup moved to ten")
    assert indexed(services, note)


def test_an_expired_note_goes_with_its_document(tmp_path: Path) -> None:
    services = services_in(tmp_path)
    note = write_note(services, "n1", "Renew the certificate", expires_at=int(time.time()) + 1)
    assert indexed(services, note)
    time.sleep(1.1)
    assert sweep_expired(services)["other"] == 1
    assert list(services.records.expired(PARTITION)) == [] and not indexed(services, note)


def test_a_note_is_erased_with_its_user(tmp_path: Path) -> None:
    services = services_in(tmp_path)
    note = write_note(services, "n1", "Alice's locker code")
    receipt = services.erasure.erase("acme", "alice")
    assert receipt.status == "completed"
    assert services.records.get(PK, note.sk) is None and not indexed(services, note)
    counts = receipt.counts.model_dump(by_alias=True)
    assert (counts["otherRecords"], counts["indexDocuments"]) == (1, 1)


def test_a_note_is_exported_and_imported(tmp_path: Path) -> None:
    source = services_in(tmp_path / "source")
    note = write_note(source, "n1", "The wifi password is on the fridge")
    out = io.StringIO()
    counts = export(source, Selection("acme"), out)
    assert counts.records == {"notes": 1}
    path = tmp_path / "acme.jsonl"
    path.write_text(out.getvalue())
    target = services_in(tmp_path / "target")
    with path.open() as handle:
        plan = check(handle, target.families)
    Importer(target, plan).run(path)
    assert target.records.get(PK, note.sk) is not None and indexed(target, note)
'''

WRITTEN = (
    "layers/shared/mnemo/notes/__init__.py",
    "layers/shared/mnemo/notes/family.py",
    "layers/shared/mnemo/runtime.py",
    "tests/service/test_notes_family.py",
)


@pytest.fixture(scope="module")
def added(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """The copy with the family added: (copy, the files written)."""
    copy = tmp_path_factory.mktemp("new-family")
    copy_repository(copy)
    before = snapshot(copy)
    (copy / WRITTEN[0]).parent.mkdir(parents=True)
    (copy / WRITTEN[0]).write_text(PACKAGE)
    (copy / WRITTEN[1]).write_text(FAMILY)
    runtime = (copy / WRITTEN[2]).read_text()
    for old, new in REGISTRATION:
        assert runtime.count(old) == 1, old
        runtime = runtime.replace(old, new)
    (copy / WRITTEN[2]).write_text(runtime)
    (copy / WRITTEN[3]).write_text(TEST)
    after = snapshot(copy)
    found = run_in(copy, "-c", "import mnemo, sys; print(mnemo.__file__)")
    assert found.stdout.strip().startswith(str(copy)), found.stdout + found.stderr  # the copy's package, not ours
    return copy, {name for name in after if before.get(name) != after[name]}


def test_a_new_family_is_at_most_four_written_files(added: tuple[Path, set[str]]) -> None:
    _, written = added
    assert written == set(WRITTEN)
    assert len(written) <= 4


def test_the_familys_own_test_passes_in_the_copy(added: tuple[Path, set[str]]) -> None:
    copy, _ = added
    ran = run_in(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", WRITTEN[3])
    assert ran.returncode == 0 and "5 passed" in ran.stdout, ran.stdout[-6000:] + ran.stderr[-2000:]


def test_the_suites_over_every_family_pass_in_the_copy(added: tuple[Path, set[str]]) -> None:
    copy, _ = added
    suites = [
        "tests/unit/test_import_rules.py",
        "tests/unit/test_key_literals.py",
        "tests/unit/test_change_events.py",
        "tests/isolation/test_erasure_isolation.py",
        "tests/service/test_portability.py",
        "tests/service/test_memory_expiry.py",
    ]
    ran = run_in(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *suites, timeout=1500)
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-2000:]
    assert " passed" in ran.stdout
