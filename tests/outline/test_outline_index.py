"""The outline index on the embedded stack: built on demand, refreshed incrementally, limited in size,
and answering the docstring examples exactly."""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import ctx
from mnemo.entry.outline_events import workspace_file
from mnemo.errors import MnemoError
from mnemo.outline import index as outline_index
from mnemo.outline import lang_go
from mnemo.outline.index import outline_pk
from mnemo.outline.languages import get_language
from mnemo.outline.models import OutlineProjectInput
from mnemo.ports import Item, Put
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog
from outline_support import call, push_shop

PROJECT = ctx(project="shop", roles=("writer",))


@pytest.fixture
def shop(services: Services, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    monkeypatch.setenv("MNEMO_EXPERIMENTAL", "1")
    push_shop(services, PROJECT)
    yield services


def write(services: Services, path: str, content: str) -> None:
    load_catalog()["file_write"].invoke(services, PROJECT, {"path": path, "content": content})


def outline_items(services: Services, language: str) -> list[str]:
    pk = "OUTLINE|" + PROJECT.scope_key("project")
    return [item.sk for item in services.records.query(pk) if item.sk.startswith(f"F#{language}#")]


def test_every_outline_tools_docstring_examples_answer_exactly_what_they_show(shop: Services) -> None:
    outline_tools = [tool for tool in load_catalog(experimental=True).values() if tool.family == "outline"]
    assert outline_tools
    for tool in outline_tools:
        examples = dict(tool.examples())
        assert call(shop, PROJECT, tool.name, examples["Usage"]) == examples["Returns"], tool.name


def test_the_first_call_parses_every_file_and_later_ones_only_what_changed(shop: Services) -> None:
    first = call(shop, PROJECT, "outline_project", {"language": "python", "limit": 1})
    assert first["parsed"] == 5
    assert first["files"] == 5
    assert len(outline_items(shop, "python")) == 5
    assert outline_items(shop, "go") == []
    assert call(shop, PROJECT, "outline_project", {"language": "python", "limit": 1})["parsed"] == 0

    service = "shop/orders/service.py"
    content = load_catalog()["file_read"].invoke(shop, PROJECT, {"path": service})["content"]
    write(shop, service, content.replace("        logger.info(", "        self.audit(order)\n        logger.info("))
    write(shop, service, content.replace("        logger.info(", "        self.audit(order)\n        logger.info("))
    again = call(shop, PROJECT, "outline_symbol", {"symbol": "OrderService.place", "language": "python"})
    assert again["parsed"] == 1
    # the new call names no declared method: self.audit is not followed, nothing is invented
    assert "audit" not in again["text"]


def test_a_deleted_file_leaves_the_outline(shop: Services) -> None:
    call(shop, PROJECT, "outline_project", {"language": "python"})
    load_catalog()["file_delete"].invoke(shop, PROJECT, {"path": "shop/orders/repository.py"})
    answer = call(shop, PROJECT, "outline_symbol", {"symbol": "OrderService._repository", "language": "python"})
    # the import now names a module outside the project
    assert answer["files"] == 4
    assert answer["text"].endswith("type_of shop.orders.repository.Repository (external)\n")
    assert len(outline_items(shop, "python")) == 4
    with pytest.raises(MnemoError) as gone:
        call(shop, PROJECT, "outline_symbol", {"symbol": "MemoryRepository", "language": "python"})
    assert gone.value.envelope()["errorCode"] == "NOT_FOUND"


def test_a_new_package_marker_renames_the_modules_beneath_it(shop: Services) -> None:
    write(shop, "tools/report.py", "def render(text: str) -> str:\n    return text.upper()\n")
    before = call(shop, PROJECT, "outline_file", {"file": "tools/report.py", "language": "python", "format": "json"})
    assert [root["name"] for root in before["symbols"]] == ["report", "report.render"]
    write(shop, "tools/__init__.py", "")
    after = call(shop, PROJECT, "outline_file", {"file": "tools/report.py", "language": "python", "format": "json"})
    assert [root["name"] for root in after["symbols"]] == ["tools.report", "tools.report.render"]
    assert after["parsed"] == 2  # the new __init__.py and report.py, whose content did not change


def test_a_project_over_the_size_limit_is_refused_before_any_parse(
    shop: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outline_index, "MAX_PROJECT_FILES", 4)
    with pytest.raises(MnemoError) as refused:
        call(shop, PROJECT, "outline_project", {"language": "python"})
    envelope = refused.value.envelope()
    assert envelope["errorCode"] == "INVALID_INPUT"
    assert envelope["details"]["field"] == "language"
    assert envelope["details"]["files"] == 5
    assert envelope["details"]["limitFiles"] == 4
    assert "at most 4 files" in envelope["message"]
    assert outline_items(shop, "python") == []
    monkeypatch.setattr(outline_index, "MAX_PROJECT_FILES", 5_000)
    monkeypatch.setattr(outline_index, "MAX_PROJECT_BYTES", 100)
    with pytest.raises(MnemoError) as too_big:
        call(shop, PROJECT, "outline_symbol", {"symbol": "main", "language": "go"})
    assert too_big.value.envelope()["details"]["limitBytes"] == 100


def test_a_file_over_the_file_limit_is_listed_as_skipped(shop: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outline_index, "MAX_FILE_BYTES", 520)  # models.py 528 bytes, service.py 663
    answer = call(shop, PROJECT, "outline_project", {"language": "python", "relations": ["contains"]})
    skipped = {item["path"]: item["reason"] for item in answer["skipped"]}
    assert set(skipped) == {"shop/orders/models.py", "shop/orders/service.py"}
    assert "not outlined" in skipped["shop/orders/models.py"]
    with pytest.raises(MnemoError) as refused:
        call(shop, PROJECT, "outline_file", {"file": "shop/orders/models.py", "language": "python"})
    assert refused.value.envelope()["details"]["field"] == "file"
    assert "not outlined" in refused.value.envelope()["message"]


def test_callers_racing_on_a_fresh_index_agree(shop: Services) -> None:
    answers: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            answers.append(call(shop, PROJECT, "outline_project", {"language": "go", "format": "json"}))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len({json.dumps(answer["symbols"]) for answer in answers}) == 1
    assert len(outline_items(shop, "go")) == 3


def test_refresh_path_follows_one_file(shop: Services) -> None:
    where, path = workspace_file(f"workspace/{PROJECT.tenant}/project/shop/inventory/store.go") or (None, "")
    assert where is not None
    assert where.pk == "WS|" + PROJECT.scope_key("project")
    assert path == "inventory/store.go"
    index, go = shop.outline.index, get_language("go")
    assert index.refresh_path(where, go, path) == "parsed"
    assert index.refresh_path(where, go, path) == "current"
    load_catalog()["file_delete"].invoke(shop, PROJECT, {"path": path})
    assert index.refresh_path(where, go, path) == "removed"
    assert index.refresh_path(where, go, path) == "absent"
    assert outline_pk(where) == "OUTLINE|" + PROJECT.scope_key("project")


@pytest.mark.parametrize(
    "key",
    [
        "knowledge/local/adr.md",
        "workspace/local/project",
        "workspace/local/team/x/a.py",
        "workspace/bad%7Ctenant/project/x/a.py",
        "workspace/acme/project//a.py",
    ],
)
def test_keys_outside_a_workspace_name_no_file(key: str) -> None:
    assert workspace_file(key) is None


def test_quoted_key_parts_are_decoded() -> None:
    found = workspace_file("workspace/acme/user/alice%40example.com/src/My%20App/main.py")
    assert found is not None
    where, path = found
    assert where.pk == "WS|t=acme|user|u=alice@example.com"
    assert path == "src/My App/main.py"


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("deep/sum.py", "TOTAL = " + " + ".join(["a"] * 5000) + "\n"),
        ("deep/Sum.java", "class Sum { int total = " + " + ".join(["a"] * 5000) + "; }\n"),
        ("deep/sum.ts", "export const total = " + " + ".join(["a"] * 5000) + ";\n"),
        ("deep/nest.py", "VALUE = " + "(" * 2000 + "1" + ")" * 2000 + "\n"),
    ],
    ids=["python", "java", "typescript", "parentheses"],
)
def test_deeply_nested_code_is_outlined(shop: Services, path: str, source: str) -> None:
    write(shop, path, source)
    language = {"py": "python", "java": "java", "ts": "typescript"}[path.rsplit(".", 1)[1]]
    limit = sys.getrecursionlimit()
    answer = call(shop, PROJECT, "outline_file", {"file": path, "language": language, "format": "json", "depth": 1})
    assert len(answer["symbols"]) >= 2
    assert answer["skipped"] == []
    assert sys.getrecursionlimit() == limit


def test_a_file_the_extractor_fails_on_is_skipped_not_fatal(shop: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    real = lang_go.GO.extract

    def failing(root: Any, source: bytes, path: str, paths: frozenset[str]) -> Any:
        if path == "inventory/store.go":
            raise ValueError("an extractor bug")
        return real(root, source, path, paths)

    monkeypatch.setattr(lang_go, "GO", dataclasses.replace(lang_go.GO, extract=failing))
    answer = call(shop, PROJECT, "outline_project", {"language": "go", "relations": ["contains"]})
    assert answer["skipped"] == [
        {"path": "inventory/store.go", "reason": "the outline could not read this file (logged)"}
    ]
    assert "inventory.(*Manager).Reserve" in answer["text"]
    assert "MemoryStore" not in answer["text"]


def test_the_sync_job_names_a_python_module_from_its_package_markers(shop: Services) -> None:
    where, path = workspace_file(f"workspace/{PROJECT.tenant}/project/shop/shop/orders/models.py") or (None, "")
    assert where is not None
    assert shop.outline.index.refresh_path(where, get_language("python"), path) == "parsed"
    stored = shop.records.get(outline_pk(where), f"F#python#{path}")
    assert stored is not None
    assert stored.data["moduleKey"] == "shop.orders.models"
    # the tool agrees on its name: it parses the four other Python files, not this one
    assert call(shop, PROJECT, "outline_file", {"file": path, "language": "python"})["parsed"] == 4


def test_an_outline_stored_in_another_layout_is_made_again(shop: Services) -> None:
    call(shop, PROJECT, "outline_project", {"language": "go", "limit": 1})
    pk = "OUTLINE|" + PROJECT.scope_key("project")
    old = shop.records.get(pk, "F#go#inventory/store.go")
    assert old is not None
    shop.records.write([Put(Item(pk, old.sk, {**old.data, "format": 0, "outline": "{not the current layout"}))])
    fresh = shop.outline.__class__(shop.records, shop.file_store)  # a new process: no graph kept
    answer = fresh.project(PROJECT, OutlineProjectInput(language="go", limit=1))
    assert answer.parsed == 1
