"""The three outline tools on the shop fixture (Python and Go), every relation checked by hand against
tests/fixtures/outline/shop; text and JSON formats, depth, relation filters, omit_native, paging."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import ctx
from mnemo.context import RequestContext
from mnemo.errors import MnemoError
from mnemo.runtime import Services
from outline_support import call, push_shop, relations

PROJECT = ctx(project="shop", roles=("writer",))


@pytest.fixture
def shop(services: Services, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    monkeypatch.setenv("MNEMO_EXPERIMENTAL", "1")
    push_shop(services, PROJECT)
    yield services


def tree(services: Services, symbol: str, language: str, **options: Any) -> dict[str, Any]:
    answer = call(
        services, PROJECT, "outline_symbol", {"symbol": symbol, "language": language, "format": "json", **options}
    )
    (root,) = answer["symbols"]
    return root


# ------------------------------------------------------------------ Python ---
def test_python_method_text_tree_lists_each_relation_by_kind_then_line(shop: Services) -> None:
    answer = call(shop, PROJECT, "outline_symbol", {"symbol": "OrderService.place", "language": "python", "depth": 1})
    assert answer["text"] == (
        "shop.orders.service.OrderService.place [method] shop/orders/service.py:15\n"
        "├── calls shop.orders.models.Order [class] shop/orders/models.py:14\n"
        "├── calls shop.orders.models.Line [class] shop/orders/models.py:9\n"
        "├── calls shop.orders.models.Order.add [method] shop/orders/models.py:21\n"
        "├── calls shop.orders.repository.Repository.save [method] shop/orders/repository.py:9\n"
        "├── references builtins.int (native)\n"
        "├── references builtins.str (native)\n"
        "├── references shop.orders.service.OrderService._repository [field] shop/orders/service.py:13\n"
        "├── references shop.orders.service.logger [variable] shop/orders/service.py:8\n"
        "└── type_of shop.orders.models.Order [class] shop/orders/models.py:14\n"
    )
    assert answer["roots"] == 1
    assert answer["nodes"] == 10
    assert answer["files"] == 5
    assert answer["parsed"] == 5


def test_python_relations_follow_self_fields_parameters_and_locals(shop: Services) -> None:
    # order = Order(number); order.add(...) -> Order.add; self._repository (typed by __init__'s parameter).save
    place = tree(shop, "shop.orders.service.OrderService.place", "python", depth=1)
    assert {
        ("calls", "shop.orders.models.Order.add"),
        ("calls", "shop.orders.repository.Repository.save"),
    } <= relations(place)
    # self._orders: dict[str, Order] -> dict.get, from the standard library
    get = tree(shop, "MemoryRepository.get", "python", depth=1)
    assert relations(get) == {
        ("calls", "builtins.dict.get"),
        ("references", "builtins.str"),
        ("references", "shop.orders.repository.MemoryRepository._orders"),
        ("type_of", "shop.orders.models.Order"),
    }
    assert {child["origin"] for child in get["children"] if child["name"].startswith("builtins.")} == {"native"}
    # self.lines: list[Line] -> list.append; MAX_LINES from the module; len and ValueError built in
    add = tree(shop, "Order.add", "python", depth=1)
    assert relations(add) == {
        ("calls", "builtins.len"),
        ("calls", "builtins.ValueError"),
        ("calls", "builtins.list.append"),
        ("called_by", "shop.orders.service.OrderService.place"),
        ("references", "shop.orders.models.Line"),
        ("references", "shop.orders.models.MAX_LINES"),
        ("references", "shop.orders.models.Order.lines"),
    }


def test_python_classes_extend_bases_and_fields_have_types(shop: Services) -> None:
    memory = tree(shop, "MemoryRepository", "python", depth=1, relations=["extends", "contains"])
    assert relations(memory) == {
        ("extends", "shop.orders.repository.Repository"),
        ("contains", "shop.orders.repository.MemoryRepository.__init__"),
        ("contains", "shop.orders.repository.MemoryRepository._orders"),
        ("contains", "shop.orders.repository.MemoryRepository.save"),
        ("contains", "shop.orders.repository.MemoryRepository.get"),
    }
    protocol = tree(shop, "shop.orders.repository.Repository", "python", depth=1, relations=["extends"])
    assert relations(protocol) == {("extends", "typing.Protocol")}
    field = tree(shop, "OrderService._repository", "python", depth=1)
    assert relations(field) == {("type_of", "shop.orders.repository.Repository")}


def test_python_module_imports_resolve_to_the_symbols_imported(shop: Services) -> None:
    module = tree(shop, "shop.orders.service", "python", depth=1, relations=["imports"])
    assert relations(module) == {
        ("imports", "logging"),
        ("imports", "shop.orders.models.Line"),
        ("imports", "shop.orders.models.Order"),
        ("imports", "shop.orders.repository.Repository"),
    }
    # a relative import (from .models import Order) lands on the same class
    assert relations(tree(shop, "shop.orders.repository", "python", depth=1, relations=["imports"])) == {
        ("imports", "typing.Protocol"),
        ("imports", "shop.orders.models.Order"),
    }


def test_omit_native_drops_standard_library_and_builtins(shop: Services) -> None:
    add = tree(shop, "Order.add", "python", depth=1, omit_native=True)
    assert all(child["origin"] == "project" for child in add["children"])
    assert ("called_by", "shop.orders.service.OrderService.place") in relations(add)


def test_depth_two_expands_children_and_marks_cycles(shop: Services) -> None:
    add = tree(shop, "Order.add", "python", depth=2, relations=["calls", "called_by"], omit_native=True)
    (caller,) = add["children"]
    assert caller["name"] == "shop.orders.service.OrderService.place"
    assert caller["relation"] == "called_by"
    back = next(child for child in caller["children"] if child["name"] == "shop.orders.models.Order.add")
    assert back["cycle"] is True
    assert back["children"] == []
    assert ("calls", "shop.orders.repository.Repository.save") in relations(caller)
    shallow = tree(shop, "Order.add", "python", depth=1, relations=["calls", "called_by"], omit_native=True)
    assert all(child["children"] == [] for child in shallow["children"])


# ---------------------------------------------------------------------- Go ---
def test_go_method_calls_through_the_receivers_field_type(shop: Services) -> None:
    answer = call(
        shop, PROJECT, "outline_symbol", {"symbol": "Reserve", "language": "go", "depth": 1, "relations": ["calls"]}
    )
    assert answer["text"] == (
        "inventory.(*Manager).Reserve [method] inventory/stock.go:28\n"
        "├── calls fmt.Errorf (native)\n"
        "├── calls inventory.Store.Get [method] inventory/store.go:13\n"
        "└── calls inventory.Store.Put [method] inventory/store.go:14\n"
    )
    reserve = tree(shop, "inventory.(*Manager).Reserve", "go", depth=1, omit_native=True)
    assert relations(reserve) == {
        ("calls", "inventory.Store.Get"),
        ("calls", "inventory.Store.Put"),
        ("references", "inventory.Manager"),
        ("references", "inventory.Manager.store"),
        ("references", "inventory.MaxReserve"),
    }


def test_go_types_implement_interfaces_by_method_set_and_embed_bases(shop: Services) -> None:
    memory = tree(shop, "inventory.MemoryStore", "go", depth=1)
    assert relations(memory) == {
        ("contains", "inventory.MemoryStore.items"),
        ("contains", "inventory.(*MemoryStore).Get"),
        ("contains", "inventory.(*MemoryStore).Put"),
        ("implements", "inventory.Store"),
    }
    manager = tree(shop, "inventory.Manager", "go", depth=1, relations=["extends", "implements"])
    assert relations(manager) == {("extends", "inventory.Base")}  # Reserve and Name: not a Store


def test_go_calls_across_packages_and_the_package_spans_files(shop: Services) -> None:
    main = tree(shop, "main.main", "go", depth=1)
    assert relations(main) == {
        ("calls", "fmt.Println"),
        ("calls", "inventory.NewManager"),
        ("calls", "inventory.NewMemoryStore"),
    }
    new_manager = tree(shop, "NewManager", "go", depth=1, relations=["called_by", "type_of"])
    assert relations(new_manager) == {("called_by", "main.main"), ("type_of", "inventory.Manager")}
    package = tree(shop, "inventory", "go", depth=1, relations=["contains"], file="inventory/store.go")
    assert {name for _, name in relations(package)} >= {"inventory.Store", "inventory.Manager", "inventory.MaxReserve"}
    imports = tree(shop, "main", "go", depth=1, relations=["imports"])
    assert relations(imports) == {("imports", "fmt"), ("imports", "inventory")}


def test_go_file_outline_lists_every_declaration_in_line_order(shop: Services) -> None:
    answer = call(
        shop, PROJECT, "outline_file", {"file": "inventory/store.go", "language": "go", "depth": 1, "format": "json"}
    )
    names = [root["name"] for root in answer["symbols"]]
    assert names == [
        "inventory",
        "inventory.Item",
        "inventory.Item.SKU",
        "inventory.Item.Count",
        "inventory.Store",
        "inventory.Store.Get",
        "inventory.Store.Put",
        "inventory.MemoryStore",
        "inventory.MemoryStore.items",
        "inventory.NewMemoryStore",
        "inventory.(*MemoryStore).Get",
        "inventory.(*MemoryStore).Put",
    ]
    text = call(shop, PROJECT, "outline_file", {"file": "inventory/store.go", "language": "go", "depth": 1})["text"]
    assert "inventory.Store.Get [method] inventory/store.go:13\n├── called_by inventory.(*Manager).Reserve" in text
    assert "inventory.MemoryStore [struct] inventory/store.go:18\n" in text


# --------------------------------------------------------------- the project ---
@pytest.mark.parametrize("language", ["python", "go"])
def test_project_pages_cover_every_symbol_once(shop: Services, language: str) -> None:
    whole = call(shop, PROJECT, "outline_project", {"language": language, "depth": 1, "limit": 5000, "format": "json"})
    assert not whole["hasMore"]
    expected = [root["name"] for root in whole["symbols"]]
    seen: list[str] = []
    cursor = None
    while True:
        body: dict[str, Any] = {"language": language, "depth": 1, "limit": 4, "format": "json"}
        if cursor:
            body["cursor"] = cursor
        page = call(shop, PROJECT, "outline_project", body)
        seen += [root["name"] for root in page["symbols"]]
        cursor = page["nextCursor"]
        if not page["hasMore"]:
            break
    assert seen == expected
    assert len(seen) == len(set(zip(seen, range(len(seen)), strict=True)))


def test_a_cursor_of_another_query_is_refused(shop: Services) -> None:
    first = call(shop, PROJECT, "outline_project", {"language": "python", "limit": 2})
    with pytest.raises(MnemoError) as refused:
        call(shop, PROJECT, "outline_project", {"language": "go", "limit": 2, "cursor": first["nextCursor"]})
    assert refused.value.envelope()["details"]["field"] == "cursor"


def test_the_budget_cuts_a_page_and_the_cursor_goes_on(shop: Services) -> None:
    small = PROJECT.model_copy(update={"response_budget": 2048})
    page = call(shop, small, "outline_project", {"language": "python", "depth": 2, "limit": 5000})
    # measured as it travels: JSON with the tree's box-drawing characters escaped (6 bytes each)
    assert page["hasMore"]
    assert 1 <= page["roots"] < 40
    assert len(json.dumps(page)) <= 2048
    following = call(
        shop, small, "outline_project", {"language": "python", "limit": 5000, "cursor": page["nextCursor"]}
    )
    assert following["text"]
    assert not following["text"].startswith(page["text"].split("\n")[0])


# -------------------------------------------------------------- bad input ---
@pytest.mark.parametrize(
    ("tool", "body", "field"),
    [
        ("outline_symbol", {"symbol": "x", "language": "cobol"}, "language"),
        ("outline_symbol", {"symbol": "x", "language": "python", "depth": 0}, "depth"),
        ("outline_symbol", {"symbol": "x", "language": "python", "depth": 7}, "depth"),
        ("outline_symbol", {"symbol": "x", "language": "python", "relations": ["owns"]}, "relations.0"),
        ("outline_symbol", {"symbol": "", "language": "python"}, "symbol"),
        ("outline_symbol", {"symbol": "x", "language": "python", "format": "xml"}, "format"),
        ("outline_file", {"file": "../etc/passwd.py", "language": "python"}, "file"),
        ("outline_file", {"file": "/shop/orders/models.py", "language": "python"}, "file"),
        ("outline_file", {"file": "knowledge://ADR-1", "language": "python"}, "file"),
        ("outline_file", {"file": "inventory/store.go", "language": "python"}, "file"),
        ("outline_project", {"language": "python", "cursor": "bm90LWEtY3Vyc29y"}, "cursor"),
        ("outline_project", {"language": "python", "omitNative": True}, "omitNative"),
    ],
)
def test_bad_input_names_the_field(shop: Services, tool: str, body: dict[str, Any], field: str) -> None:
    with pytest.raises(MnemoError) as refused:
        call(shop, PROJECT, tool, body)
    envelope = refused.value.envelope()
    assert envelope["errorCode"] == "INVALID_INPUT"
    assert envelope["details"]["field"] == field


def test_unknown_symbols_and_files_are_not_found_with_suggestions(shop: Services) -> None:
    with pytest.raises(MnemoError) as missing:
        call(shop, PROJECT, "outline_symbol", {"symbol": "OrderServce", "language": "python"})
    envelope = missing.value.envelope()
    assert envelope["errorCode"] == "NOT_FOUND"
    assert envelope["details"]["field"] == "symbol"
    assert "shop.orders.service.OrderService" in envelope["details"]["didYouMean"]
    with pytest.raises(MnemoError) as absent:
        call(shop, PROJECT, "outline_file", {"file": "shop/orders/missing.py", "language": "python"})
    assert absent.value.envelope()["errorCode"] == "NOT_FOUND"
    with pytest.raises(MnemoError) as elsewhere:
        call(shop, PROJECT, "outline_symbol", {"symbol": "Order.add", "language": "python", "file": "shop/__init__.py"})
    assert elsewhere.value.envelope()["errorCode"] == "NOT_FOUND"


@pytest.mark.parametrize(
    "other",
    [
        ctx(project="other", roles=("writer",)),  # another project of the same tenant
        ctx(tenant="globex", project="shop", roles=("writer",)),  # the same project id in another tenant
        ctx(user="alice"),  # no project: the user's own workspace
    ],
    ids=["project", "tenant", "personal"],
)
def test_the_identity_picks_the_workspace(shop: Services, other: RequestContext) -> None:
    empty = call(shop, other, "outline_project", {"language": "python"})
    assert empty["files"] == 0
    assert empty["roots"] == 0
    assert empty["text"] == ""
    with pytest.raises(MnemoError) as missing:
        call(shop, other, "outline_symbol", {"symbol": "OrderService", "language": "python"})
    assert missing.value.envelope()["errorCode"] == "NOT_FOUND"
    with pytest.raises(MnemoError) as absent:
        call(shop, other, "outline_file", {"file": "shop/orders/models.py", "language": "python"})
    assert absent.value.envelope()["errorCode"] == "NOT_FOUND"


# -------------------------------------------------------- Java, TypeScript ---
def test_java_heritage_constants_and_calls_through_fields(shop: Services) -> None:
    invoice = tree(shop, "com.acme.billing.Invoice", "java", depth=1, relations=["extends", "implements"])
    assert relations(invoice) == {
        ("extends", "com.acme.billing.BaseDocument"),
        ("implements", "com.acme.billing.Billable"),
    }
    due = tree(shop, "InvoiceService.due", "java", depth=1)
    assert relations(due) == {
        ("calls", "com.acme.billing.Billable.total"),
        ("calls", "java.lang.Math.max"),
        ("references", "com.acme.billing.InvoiceService.billable"),
        ("type_of", "java.lang.long"),
    }
    add = tree(shop, "Invoice.add", "java", depth=1, omit_native=True)
    assert relations(add) == {
        ("references", "com.acme.billing.Invoice.Line"),
        ("references", "com.acme.billing.Invoice.MAX_LINES"),
        ("references", "com.acme.billing.Invoice.lines"),
    }


def test_typescript_and_javascript_resolve_across_each_other(shop: Services) -> None:
    cart = tree(shop, "Cart", "typescript", depth=1, relations=["implements", "called_by"])
    assert relations(cart) == {("implements", "web/src/cart.Store"), ("called_by", "web/src/app.main")}
    main = tree(shop, "main", "javascript", depth=1)
    # import Cart from "./cart.js" is cart.ts's default export; const cart = new Cart(...) types the local
    assert relations(main) == {
        ("calls", "web/src/cart.Cart"),
        ("calls", "web/src/cart.Cart.add"),
        ("calls", "web/src/cart.Cart.total"),
        ("calls", "globalThis.console.log"),
        ("references", "node:fs.readFileSync"),
    }
    project = call(shop, PROJECT, "outline_project", {"language": "javascript", "format": "json"})
    assert project["files"] == 1
    assert [root["name"] for root in project["symbols"]] == [
        "web/src/app",
        "web/src/app.main",
    ]


def test_trees_stop_growing_at_the_node_cap(shop: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemo.outline import service as outline_service

    monkeypatch.setattr(outline_service, "MAX_ANSWER_NODES", 12)
    with pytest.raises(MnemoError) as refused:
        call(shop, PROJECT, "outline_symbol", {"symbol": "shop.orders.models", "language": "python", "depth": 6})
    envelope = refused.value.envelope()
    assert envelope["errorCode"] == "INVALID_INPUT"
    assert envelope["details"]["field"] == "depth"
    page = call(shop, PROJECT, "outline_project", {"language": "python", "depth": 1, "limit": 5000})
    assert page["hasMore"]
    assert 1 <= page["nodes"] <= 12


def test_symbol_matches_come_in_pages_too(shop: Services) -> None:
    every = call(shop, PROJECT, "outline_symbol", {"symbol": "get", "language": "python", "format": "json"})
    names = [root["name"] for root in every["symbols"]]
    assert names == ["shop.orders.repository.Repository.get", "shop.orders.repository.MemoryRepository.get"]
    first = call(shop, PROJECT, "outline_symbol", {"symbol": "get", "language": "python", "format": "json", "limit": 1})
    assert first["hasMore"]
    assert [root["name"] for root in first["symbols"]] == names[:1]
    body = {"symbol": "get", "language": "python", "format": "json", "limit": 1, "cursor": first["nextCursor"]}
    second = call(shop, PROJECT, "outline_symbol", body)
    assert not second["hasMore"]
    assert [root["name"] for root in second["symbols"]] == names[1:]


def test_a_cursor_from_before_a_change_is_refused(shop: Services) -> None:
    first = call(shop, PROJECT, "outline_project", {"language": "go", "limit": 2})
    call(
        shop, PROJECT, "file_write", {"path": "inventory/extra.go", "content": "package inventory\n\nconst Extra = 1\n"}
    )
    with pytest.raises(MnemoError) as refused:
        call(shop, PROJECT, "outline_project", {"language": "go", "limit": 2, "cursor": first["nextCursor"]})
    assert refused.value.envelope()["details"]["field"] == "cursor"
