"""Export and import between two embedded stores: what a selection holds, counts that add up, a second import
that changes nothing, a target that re-embeds with its own model, and files refused before anything is written."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from helpers import ctx, make_services
from mnemo.cli.progress import Progress
from mnemo.errors import InvalidInput, NotFound, ProviderError
from mnemo.portability.lines import line_schema
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.sync.models import SyncNowInput
from portability_support import (
    ALICE,
    BOB,
    answers,
    call,
    export_to,
    file_counts,
    import_from,
    lines,
    outcome,
    populate,
    records_by_key,
)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Services:
    built = make_services(tmp_path_factory.mktemp("source"))
    populate(built)
    return built


@pytest.fixture(scope="module")
def tenant_file(source: Services, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_to(source, tmp_path_factory.mktemp("export") / "acme.jsonl")


def target(path: Path, dimensions: int = 128) -> Services:
    """An empty embedded store whose embedder differs from the source's (256 dimensions)."""
    return Services(Settings(data_dir=path, embedder="hashing", hashing_dimensions=dimensions))  # type: ignore[call-arg]


def _records(services: Services, tenant: str = "acme") -> int:
    return sum(
        1
        for prefix in ("MEM", "CONV", "EXEC", "TOPIC", "ASSET", "PINS", "WS", "GRAPH")
        for _ in services.records.scan(f"{prefix}|t={tenant}|")
    )


def test_a_tenant_export_holds_every_family_and_nothing_of_another_tenant(tenant_file: Path) -> None:
    counts = file_counts(tenant_file)
    for family in ("memories", "conversations", "executions", "topics", "blocks", "pins", "workspace", "graph"):
        assert counts.get(family, 0) > 0, family
    assert counts["blob:knowledge"] == 13
    assert counts["blob:workspace"] > 0
    text = tenant_file.read_text()
    assert "globex" not in text
    assert "Globex secret plan" not in text
    header, *_, end = lines(tenant_file)
    assert header["mnemoExport"] == 2
    assert header["kind"] == "tenant"
    assert header["source"]["embedder"] == "hashing"
    assert set(end) == {"type", "records", "blobs"}
    assert end["type"] == "end"
    assert sum(end["records"].values()) + sum(end["blobs"].values()) == len(lines(tenant_file)) - 2


def test_every_line_is_valid_against_the_published_schema(tenant_file: Path) -> None:
    validator = jsonschema.Draft202012Validator(line_schema())
    for number, line in enumerate(lines(tenant_file), start=1):
        assert not list(validator.iter_errors(line)), number
    broken = {"type": "record", "family": "memories", "pk": "MEM|x", "sk": "MEM#1", "version": 1, "data": {}, "x": 1}
    assert list(validator.iter_errors(broken))


def test_an_import_adds_everything_and_the_counts_match_the_file(
    source: Services, tenant_file: Path, tmp_path: Path
) -> None:
    moved = target(tmp_path)
    summary = import_from(moved, tenant_file)
    assert outcome(summary, "added") == file_counts(tenant_file)
    assert outcome(summary, "unchanged") == {}
    assert outcome(summary, "kept") == {}
    assert summary["kept"] == []
    assert summary["indexPending"] == 0
    assert summary["indexed"] > 0
    assert summary["sync"]["result"]["failures"] == 0
    assert _records(moved) == len(records_by_key(tenant_file))
    # the records are the source's, exactly: an export of the target is the same file but for its header
    again = export_to(moved, tmp_path / "again.jsonl")
    source_records, moved_records = records_by_key(tenant_file), records_by_key(again)
    assert moved_records.keys() == source_records.keys()
    changed = {key for key in source_records if source_records[key] != moved_records[key]}
    # memories name the model their vector now comes from: the target's, which re-embedded them
    assert all(key[1].startswith("MEM#") for key in changed)
    for key in changed:
        assert moved_records[key]["data"]["embeddingModel"] == moved.embedder.name != source.embedder.name
    assert file_counts(again) == file_counts(tenant_file)


def test_the_target_answers_as_the_source_did_from_its_own_index(
    source: Services, tenant_file: Path, tmp_path: Path
) -> None:
    moved = target(tmp_path)
    import_from(moved, tenant_file)
    assert moved.embedder.dimensions != source.embedder.dimensions
    before, after = answers(source), answers(moved)
    assert after == before
    assert after["memory_search"][1] == "hybrid"
    assert after["search_memories"][1] == "hybrid"
    assert after["memory_search"][0] == ["Bob works from Lisbon"]


def test_a_second_import_changes_nothing(tenant_file: Path, tmp_path: Path) -> None:
    moved = target(tmp_path)
    import_from(moved, tenant_file)
    blob_versions = {key: len(moved.blobs.versions(key)) for key in moved.blobs.list_keys("")}
    records = _stored(moved)
    summary = import_from(moved, tenant_file)
    assert outcome(summary, "unchanged") == file_counts(tenant_file)
    assert outcome(summary, "added") == {}
    assert summary["kept"] == []
    assert summary["indexed"] == 0
    assert summary["sync"]["result"]["unchanged"] == 13
    assert {key: len(moved.blobs.versions(key)) for key in moved.blobs.list_keys("")} == blob_versions
    assert _stored(moved) == records


def _stored(services: Services) -> dict[tuple[str, str], Any]:
    """Every record but the sync's run statistics (the import's sync ran once more, and found nothing to do)."""
    return {(i.pk, i.sk): (i.data, i.version) for i in services.records.scan("") if i.sk != "STATE"}


def test_a_record_the_target_changed_since_is_kept_not_overwritten(tenant_file: Path, tmp_path: Path) -> None:
    moved = target(tmp_path)
    import_from(moved, tenant_file)
    call(moved, ALICE, "file_write", {"path": "notes/plan.md", "content": "# Plan v4, written at the target\n"})
    summary = import_from(moved, tenant_file)
    assert summary["records"]["workspace"]["kept"] == 1
    assert summary["kept"] == [{"pk": "WS|" + ALICE.scope_key("project"), "sk": "F#notes/plan.md"}]
    assert call(moved, ALICE, "file_read", {"path": "notes/plan.md"})["content"].startswith("# Plan v4")


def test_a_user_export_holds_only_that_users_own_layers(source: Services, tmp_path: Path) -> None:
    path = export_to(source, tmp_path / "bob.jsonl", user="bob")
    header = lines(path)[0]
    assert header["kind"] == "user"
    assert header["selection"] == {"tenant": "acme", "user": "bob", "layers": []}
    scopes = {line["pk"].split("|", 1)[1] for line in lines(path) if line["type"] == "record"}
    assert scopes == {BOB.scope_key("user")}
    assert not [line for line in lines(path) if line["type"] == "blob"]
    moved = target(tmp_path / "moved")
    import_from(moved, path)
    assert call(moved, BOB, "memory_search", {"query": "Lisbon"})["results"][0]["content"] == "Bob works from Lisbon"
    assert call(moved, ALICE, "memory_search", {"query": "A fact kept in the agent layer"})["results"] == []


def test_a_layer_export_holds_only_that_layer(source: Services, tmp_path: Path) -> None:
    path = export_to(source, tmp_path / "project.jsonl", layers=("project",))
    scopes = {line["pk"].split("|", 1)[1] for line in lines(path) if line["type"] == "record"}
    assert scopes == {"t=acme|project|p=p1", "t=acme|project|p=checkout-api"}
    knowledge = {line["key"] for line in lines(path) if line["type"] == "blob" and line["family"] == "knowledge"}
    assert knowledge
    assert all(key.startswith("knowledge/acme/projects/") for key in knowledge)
    assert {line["family"] for line in lines(path) if line["type"] == "record"} >= {"memories", "topics", "workspace"}


# ------------------------------------------------------------------ refusals
def _rewritten(tenant_file: Path, path: Path, change: Any) -> Path:
    found = lines(tenant_file)
    change(found)
    path.write_text("".join(json.dumps(line) + "\n" for line in found))
    return path


def _first(found: list[dict[str, Any]], **fields: str) -> dict[str, Any]:
    return next(line for line in found if all(line.get(k) == v for k, v in fields.items()))


@pytest.mark.parametrize(
    ("case", "field"),
    [
        ("cut off", "file"),
        ("other tenant", "pk"),
        ("wrong family", "pk"),
        ("bad digest", "sha256"),
        ("not base64", "content"),
        ("blob before record", "type"),
        ("forged id", "data.memoryId"),
        ("forged scope", "data.scope"),
        ("same key twice", "sk"),
        ("lone surrogate", "line"),
        ("kind disagrees", "kind"),
        ("not an object", "line"),
        ("record too large", "data"),
        ("unknown field", "surprise"),
        ("counts disagree", "records"),
        ("foreign workspace file", "key"),
        ("line after the end", "type"),
        ("non-ASCII metadata", "metadata"),
        ("key too long for S3", "key"),
        ("record too large once escaped", "data"),
        ("sort key too long in bytes", "sk"),
        ("a file name no store takes", "sk"),
        ("expiry out of range", "expiresAt"),
        ("one id in two scopes", "data.memoryId"),
    ],
)
def test_a_bad_file_is_refused_naming_the_line_and_field_and_nothing_is_written(
    tenant_file: Path, tmp_path: Path, case: str, field: str
) -> None:
    def change(found: list[dict[str, Any]]) -> None:
        record = _first(found, type="record", family="memories")
        blob = _first(found, type="blob")
        if case == "cut off":
            found.pop()
        elif case == "other tenant":
            record["pk"] = record["pk"].replace("t=acme", "t=globex")
        elif case == "wrong family":
            record["family"] = "graph"
        elif case == "bad digest":
            blob["sha256"] = "0" * 64
        elif case == "not base64":
            blob["content"] = "%%%"
        elif case == "blob before record":
            found.insert(1, found.pop(found.index(blob)))
        elif case == "forged id":
            memory_head = next(line for line in found if line.get("sk", "").startswith("MEM#"))
            memory_head["data"]["memoryId"] = "mem_of_someone_else"
        elif case == "forged scope":
            memory_head = next(line for line in found if line.get("sk", "").startswith("MEM#"))
            memory_head["data"]["scope"] = "t=globex|user|u=eve"
        elif case == "same key twice":
            found.insert(2, dict(record))
            found[-1]["records"]["memories"] += 1
        elif case == "lone surrogate":
            record["data"]["note"] = "\ud800"
        elif case == "kind disagrees":
            found[0]["kind"] = "user"
        elif case == "not an object":
            found.insert(1, [1, 2])  # type: ignore[arg-type]
        elif case == "record too large":
            record["data"]["note"] = "x" * 400_000
        elif case == "unknown field":
            record["surprise"] = 1
        elif case == "counts disagree":
            found[-1]["records"]["memories"] += 1
        elif case == "foreign workspace file":
            workspace = _first(found, type="blob", family="workspace")
            workspace["key"] = workspace["key"].replace("/project/p1/", "/project/elsewhere/")
        elif case == "line after the end":
            found.append(record)
        elif case == "non-ASCII metadata":
            knowledge = _first(found, type="blob", family="knowledge")
            knowledge["metadata"] = {**knowledge["metadata"], "author": "Zoë"}
        elif case == "key too long for S3":
            knowledge = _first(found, type="blob", family="knowledge")
            knowledge["key"] = knowledge["key"].removesuffix(".md") + "/".join(["é" * 100] * 6) + ".md"
        elif case == "record too large once escaped":  # 150,000 characters, 900,000 bytes as DynamoDB stores them
            record["data"]["note"] = "é" * 150_000
        elif case == "sort key too long in bytes":  # 600 characters, 1,200 bytes
            history = next(line for line in found if line.get("sk", "").startswith("HIST#"))
            history["sk"] += "é" * 600
        elif case == "a file name no store takes":
            deleted = next(line for line in found if line.get("sk") == "F#notes/gone.md")
            deleted["sk"], deleted["data"]["name"] = "F#notes//gone.md", "notes//gone.md"
        elif case == "expiry out of range":
            record["expiresAt"] = 10**20
        elif case == "one id in two scopes":
            heads = [line for line in found if line.get("sk", "").startswith("MEM#")]
            twin = next(line for line in heads if line["pk"] != heads[0]["pk"])
            twin["sk"], twin["data"]["memoryId"] = heads[0]["sk"], heads[0]["data"]["memoryId"]

    path = _rewritten(tenant_file, tmp_path / "bad.jsonl", change)
    moved = target(tmp_path / "target")
    with pytest.raises(InvalidInput) as refused:
        import_from(moved, path)
    assert refused.value.details["field"] == field
    if case != "cut off":
        assert isinstance(refused.value.details["line"], int)
        assert f"line {refused.value.details['line']}" in str(refused.value.message)
    assert list(moved.records.scan("")) == []
    assert moved.blobs.list_keys("") == []


# ------------------------------------------------------------------ progress
def test_progress_draws_a_bar_on_a_terminal_and_lines_in_a_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mnemo.cli.progress.QUIET_SECONDS", 0.0)
    monkeypatch.setattr("mnemo.cli.progress.REDRAW_SECONDS", 0.0)
    monkeypatch.setattr("mnemo.cli.progress.LINE_SECONDS", 0.0)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, log = Terminal(), io.StringIO()
    for stream in (terminal, log):
        bar = Progress("imported", 200, stream)
        bar.update(50, "memories")
        bar.update(200, "graph")
        bar.close()
    assert "\r" in terminal.getvalue()
    assert "[#######" in terminal.getvalue()
    assert terminal.getvalue().endswith("\n")
    shown = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert " 25% 50/200 " in shown[0]
    assert "memories" in shown[0]
    assert "100% 200/200" in shown[-1]
    unknown = io.StringIO()
    counting = Progress("exported", None, unknown)
    counting.update(7)
    assert unknown.getvalue().startswith("exported 7 (")


def test_a_run_quicker_than_the_quiet_time_shows_no_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mnemo.cli.progress.QUIET_SECONDS", 1e9)
    quiet = io.StringIO()
    bar = Progress("imported", 10, quiet)
    bar.update(10)
    bar.close()
    assert quiet.getvalue() == ""


# ------------------------------------------------------------------ merging
def test_an_object_the_target_has_of_its_own_takes_nothing_from_the_file(tenant_file: Path, tmp_path: Path) -> None:
    moved = target(tmp_path)
    call(moved, ALICE, "file_write", {"path": "notes/plan.md", "content": "the target's own plan\n"})
    summary = import_from(moved, tenant_file)
    assert {"pk": "WS|" + ALICE.scope_key("project"), "sk": "F#notes/plan.md"} in summary["kept"]
    assert call(moved, ALICE, "file_read", {"path": "notes/plan.md"})["content"] == "the target's own plan\n"
    with pytest.raises(NotFound):  # the source's version 2 is not grafted onto the target's file
        call(moved, ALICE, "file_read", {"path": "notes/plan.md", "version": 2})
    assert call(moved, ALICE, "file_read", {"path": "notes/gone.md", "version": 1})["content"] == "temporary\n"


def test_a_backup_restored_into_its_own_store_changes_nothing_and_keeps_later_edits(tmp_path: Path) -> None:
    services = make_services(tmp_path / "store")
    populate(services)
    backup = export_to(services, tmp_path / "backup.jsonl")
    versions = {key: len(services.blobs.versions(key)) for key in services.blobs.list_keys("")}
    # edits after the backup: a knowledge file, a workspace file, a new memory
    policy = "knowledge/acme/company/policy-cryptography.md"
    edited = services.blobs.get(policy)
    assert edited is not None
    services.repository.push(
        "acme", "company/policy-cryptography.md", edited.content + b"\nEdited.\n", author="x", message="edit"
    )
    call(services, ALICE, "file_write", {"path": "notes/plan.md", "content": "# Plan v4\n"})
    later = call(services, BOB, "memory_add", {"content": "Bob moved to Porto"})
    services.sync.sync("acme", SyncNowInput())

    summary = import_from(services, backup)
    assert outcome(summary, "added") == {}
    assert summary["blobs"]["knowledge"] == {"added": 0, "unchanged": 13, "kept": 0}
    assert summary["sync"]["result"]["updated"] == 0
    current = services.blobs.get(policy)
    assert current is not None
    assert current.content.endswith(b"Edited.\n")
    assert {key: len(services.blobs.versions(key)) for key in services.blobs.list_keys("")} == {
        **versions,
        policy: versions[policy] + 1,
        next(key for key in versions if key.endswith("notes/plan.md")): versions[
            next(key for key in versions if key.endswith("notes/plan.md"))
        ]
        + 1,
    }
    assert call(services, ALICE, "file_read", {"path": "notes/plan.md"})["content"] == "# Plan v4\n"
    assert call(services, BOB, "memory_search", {"query": "Porto"})["results"][0]["memoryId"] == later["memoryId"]


def test_a_tenant_whose_id_is_quoted_in_blob_keys_moves_with_its_workspace(tmp_path: Path) -> None:
    source = make_services(tmp_path / "source")
    europe = ctx(tenant="acme:eu", project="p1", roles=("writer",))
    call(source, europe, "file_write", {"path": "docs/readme.md", "content": "hello from eu\n"})
    path = export_to(source, tmp_path / "eu.jsonl", tenant="acme:eu")
    moved = target(tmp_path / "target")
    summary = import_from(moved, path)
    assert summary["blobs"]["workspace"]["added"] == 1
    assert call(moved, europe, "file_read", {"path": "docs/readme.md"})["content"] == "hello from eu\n"


def test_a_version_the_source_had_lost_reads_as_missing_on_the_target(tenant_file: Path, tmp_path: Path) -> None:
    found = lines(tenant_file)
    lost = next(
        line
        for line in found
        if line["type"] == "blob" and line["key"].endswith("notes/plan.md") and line["version"] == "2"
    )
    found.remove(lost)
    found[-1]["blobs"]["workspace"] -= 1
    path = tmp_path / "lost.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in found))
    moved = target(tmp_path / "target")
    summary = import_from(moved, path)
    assert summary["missingBlobs"] == 1
    assert call(moved, ALICE, "file_read", {"path": "notes/plan.md", "version": 3})["content"] == "# Plan v3\n"
    with pytest.raises(NotFound):
        call(moved, ALICE, "file_read", {"path": "notes/plan.md", "version": 2})


def test_a_memory_deleted_since_the_backup_is_not_brought_back(tmp_path: Path) -> None:
    services = make_services(tmp_path / "store")
    kept = call(services, BOB, "memory_add", {"content": "Bob drinks green tea"})
    gone = call(services, BOB, "memory_add", {"content": "Bob parks on level 3"})
    backup = export_to(services, tmp_path / "backup.jsonl")
    call(services, BOB, "memory_delete", {"memoryId": gone["memoryId"]})

    summary = import_from(services, backup)
    assert outcome(summary, "added") == {}
    assert any(entry["sk"] == f"MEM#{gone['memoryId']}" for entry in summary["kept"])
    found = [hit["memoryId"] for hit in call(services, BOB, "memory_search", {"query": "Bob"})["results"]]
    assert found == [kept["memoryId"]]
    # into an empty store the same backup brings both
    fresh = target(tmp_path / "fresh")
    assert import_from(fresh, backup)["records"]["memories"]["kept"] == 0
    assert len(call(fresh, BOB, "memory_search", {"query": "Bob"})["results"]) == 2


def test_a_fact_invalidated_since_the_backup_stays_ended(tmp_path: Path) -> None:
    services = make_services(tmp_path / "store")
    link = {"subject": "Bob", "predicate": "lives_in", "object": "Lisbon", "text": "Bob lives in Lisbon."}
    fact = call(services, BOB, "add_memory_link", link)
    backup = export_to(services, tmp_path / "backup.jsonl")
    call(services, BOB, "invalidate_memory_link", {"factId": fact["factId"], "reason": "moved"})

    summary = import_from(services, backup)
    assert outcome(summary, "added") == {}
    assert summary["records"]["graph"]["kept"] >= 2  # the fact and the pointer that named it open
    assert call(services, BOB, "graph_search", {"query": "Lisbon", "kind": "facts"})["facts"] == []
    again = call(services, BOB, "add_memory_link", link)
    assert again["created"] is True
    assert again["factId"] != fact["factId"]


def _family_moved(path: Path, found: list[dict[str, Any]], family: str, tenant: str) -> Path:
    """A file of only the ``family`` records of ``found``, moved into ``tenant`` (as a copy made by renaming
    would be)."""
    kept = [line for line in found if line["type"] == "record" and line["family"] == family]
    for line in kept:
        line["pk"] = line["pk"].replace("|t=acme|", f"|t={tenant}|")
        if "scope" in line["data"]:
            line["data"]["scope"] = line["data"]["scope"].replace("t=acme|", f"t={tenant}|")
    header = {**found[0], "selection": {**found[0]["selection"], "tenant": tenant}}
    end = {"type": "end", "records": {family: len(kept)}, "blobs": {}}
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *kept, end]))
    return path


def test_an_id_the_target_indexes_for_another_tenant_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """Memory and graph documents are keyed by their ids: a file reusing one (a tenant copied by renaming, or a
    crafted file) would replace another tenant's document, so the import refuses it."""
    services = make_services(tmp_path / "store")
    secret = call(services, BOB, "memory_add", {"content": "Bob keeps the launch codes in the blue folder"})
    link = {"subject": "Bob", "predicate": "lives_in", "object": "Lisbon", "text": "Bob lives in Lisbon."}
    call(services, BOB, "add_memory_link", link)
    found = lines(export_to(services, tmp_path / "acme.jsonl"))
    for family, fields in (("memories", {"data.memoryId"}), ("graph", {"data.entityId", "data.factId"})):
        copy = _family_moved(tmp_path / f"{family}.jsonl", json.loads(json.dumps(found)), family, "acme2")
        with pytest.raises(InvalidInput) as refused:
            import_from(services, copy)
        assert refused.value.details["field"] in fields
        assert isinstance(refused.value.details["line"], int)
        assert list(services.records.scan("MEM|t=acme2|")) == list(services.records.scan("GRAPH|t=acme2|")) == []
        # into a store that does not hold them, the same ids are the copy's own
        assert import_from(target(tmp_path / f"elsewhere-{family}"), copy)["records"][family]["added"] > 0
    assert (
        call(services, BOB, "memory_search", {"query": "launch codes"})["results"][0]["memoryId"] == secret["memoryId"]
    )
    assert call(services, BOB, "graph_search", {"query": "Lisbon", "kind": "facts"})["facts"][0]["text"] == link["text"]


def test_records_expired_by_the_time_of_the_import_are_not_written(tmp_path: Path) -> None:
    services = make_services(tmp_path / "store")
    call(services, BOB, "memory_add", {"content": "Bob likes tea"})
    # A keyed add answered as a near-duplicate keeps its answer in an idempotency record, which lives a day
    # (a keyed add that stores its memory writes none: mnemo.memory.keys).
    call(services, BOB, "memory_add", {"content": "Bob likes tea", "idempotencyKey": "tea-1"})
    found = lines(export_to(services, tmp_path / "acme.jsonl"))
    expiring = [line for line in found if line["type"] == "record" and line.get("expiresAt")]
    assert expiring  # the idempotency record lives a day
    for line in expiring:
        line["expiresAt"] = 1_700_000_000  # what the file holds once it is older than that day
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in found))
    moved = target(tmp_path / "target")
    first, second = import_from(moved, path), import_from(moved, path)
    assert first["records"]["memories"]["expired"] == len(expiring) == second["records"]["memories"]["expired"]
    assert second["records"]["memories"]["added"] == 0


def test_an_import_cut_off_midway_is_completed_by_running_it_again(
    tenant_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store fails on the import's fifth write: what was written stays, and the same import again adds the
    rest, indexes what the first run left queued, and ends where an import that never failed ends."""
    moved = target(tmp_path / "cut")
    write, writes = moved.records.write, []

    def failing(operations: Any) -> None:
        writes.append(len(operations))
        if len(writes) == 5:
            raise ProviderError("the store went away")
        write(operations)

    monkeypatch.setattr(moved.records, "write", failing)
    with pytest.raises(ProviderError):
        import_from(moved, tenant_file)
    assert len(writes) == 5
    monkeypatch.setattr(moved.records, "write", write)

    summary = import_from(moved, tenant_file)
    added, unchanged = outcome(summary, "added"), outcome(summary, "unchanged")
    assert added
    assert unchanged
    assert summary["kept"] == []
    assert summary["indexPending"] == 0
    assert {family: added.get(family, 0) + unchanged.get(family, 0) for family in file_counts(tenant_file)} == (
        file_counts(tenant_file)
    )
    whole = target(tmp_path / "whole")
    import_from(whole, tenant_file)

    def exported(services: Services) -> dict[tuple[str, str], Any]:  # the sync's own records carry its times
        return {key: value for key, value in _stored(services).items() if not key[0].startswith(("KNOW|", "SYNC|"))}

    assert exported(moved) == exported(whole)
    assert answers(moved) == answers(whole)


def test_a_knowledge_file_removed_since_the_backup_stays_removed(tmp_path: Path) -> None:
    services = make_services(tmp_path / "store")
    populate(services)
    backup = export_to(services, tmp_path / "backup.jsonl")
    services.repository.remove("acme", "company/policy-cryptography.md")
    services.sync.sync("acme", SyncNowInput())

    summary = import_from(services, backup)
    assert summary["blobs"]["knowledge"]["added"] == 0  # its one version is the target's, deleted there since
    assert services.repository.read("acme", "company/policy-cryptography.md") is None
    assert "policy-cryptography" not in {
        item["id"] for item in call(services, ALICE, "knowledge_query", {"limit": 50})["items"]
    }
