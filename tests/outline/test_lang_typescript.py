"""The TypeScript/JavaScript extractor over the shop fixture's web sources (checked by hand against them)."""

from __future__ import annotations

from pathlib import Path

from mnemo.outline.lang_typescript import JAVASCRIPT, TYPESCRIPT, is_native_module, module_key, resolve_specifier
from mnemo.outline.languages import LanguageSpec, extract
from mnemo.outline.structure import FileOutline, Import, Reference

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "outline" / "shop"
PATHS = frozenset(str(path.relative_to(SHOP)) for path in SHOP.rglob("*") if path.is_file())
CART = "web/src/cart"
CATALOG = "web/src/catalog"


def outline_of(path: str) -> FileOutline:
    spec = JAVASCRIPT if JAVASCRIPT.claims(path) else TYPESCRIPT
    return extract(spec, path, (SHOP / path).read_bytes(), PATHS)


def outline_of_source(source: str, path: str = "web/src/sample.ts", spec: LanguageSpec = TYPESCRIPT) -> FileOutline:
    return extract(spec, path, source.encode(), frozenset({path}))


def references(outline: FileOutline, source: str, kind: str) -> list[tuple[str, str | None]]:
    return [(ref.target, ref.via_type) for ref in outline.references if ref.source == source and ref.kind == kind]


def test_module_is_the_path_without_its_extension() -> None:
    outline = outline_of("web/src/cart.ts")
    assert (outline.language, outline.module, outline.module_key, outline.errors) == ("typescript", CART, CART, 0)
    assert module_key("web/src/cart.ts", PATHS) == CART
    assert module_key("web/types.d.ts", PATHS) == "web/types"
    assert outline_of("web/src/app.js").language == "javascript"


def test_cart_symbols() -> None:
    outline = outline_of("web/src/cart.ts")
    assert [(s.name, s.kind, s.container, s.short) for s in outline.symbols] == [
        (CART, "module", None, "cart"),
        (f"{CART}.Store", "interface", CART, "Store"),
        (f"{CART}.Store.get", "method", f"{CART}.Store", "get"),
        (f"{CART}.Cart", "class", CART, "Cart"),
        (f"{CART}.Cart.items", "field", f"{CART}.Cart", "items"),
        (f"{CART}.Cart.constructor", "constructor", f"{CART}.Cart", "constructor"),
        (f"{CART}.Cart.tax", "field", f"{CART}.Cart", "tax"),
        (f"{CART}.Cart.add", "method", f"{CART}.Cart", "add"),
        (f"{CART}.Cart.get", "method", f"{CART}.Cart", "get"),
        (f"{CART}.Cart.total", "method", f"{CART}.Cart", "total"),
    ]
    lines = {s.name: (s.line, s.end_line) for s in outline.symbols}
    assert lines[CART] == (1, 28)
    assert lines[f"{CART}.Cart"] == (7, 26)
    assert lines[f"{CART}.Cart.add"] == (12, 17)


def test_cart_imports_and_default_export() -> None:
    outline = outline_of("web/src/cart.ts")
    assert outline.imports == [Import("Item", CATALOG, "Item", 1), Import("priceOf", CATALOG, "priceOf", 1)]
    assert outline.exports == {"default": "Cart"}


def test_cart_heritage_and_types() -> None:
    outline = outline_of("web/src/cart.ts")
    cart = f"{CART}.Cart"
    assert references(outline, cart, "implements") == [("Store", None)]
    assert references(outline, f"{cart}.items", "type_of") == [("Item", None)]
    assert references(outline, f"{cart}.tax", "type_of") == [("number", None)]  # a parameter property
    assert references(outline, f"{cart}.get", "type_of") == [("Item", None), ("undefined", None)]
    assert references(outline, f"{cart}.get", "references") == [("string", None)]
    assert references(outline, f"{CART}.Store.get", "type_of") == [("Item", None), ("undefined", None)]


def test_cart_calls_go_through_this_and_typed_parameters() -> None:
    outline = outline_of("web/src/cart.ts")
    cart = f"{CART}.Cart"
    assert references(outline, f"{cart}.add", "calls") == [("get", "Cart"), ("items.push", "Cart")]
    assert references(outline, f"{cart}.add", "references") == [("Item", None), ("sku", "Item")]
    # (i) => i.sku: an untyped parameter, so nothing through it
    assert references(outline, f"{cart}.get", "calls") == [("items.find", "Cart")]
    assert references(outline, f"{cart}.total", "calls") == [("items.reduce", "Cart"), ("priceOf", None)]
    assert references(outline, f"{cart}.total", "references") == [("tax", "Cart")]


def test_catalog() -> None:
    outline = outline_of("web/src/catalog.ts")
    assert [(s.name, s.kind, s.container) for s in outline.symbols] == [
        (CATALOG, "module", None),
        (f"{CATALOG}.Item", "interface", CATALOG),
        (f"{CATALOG}.Item.sku", "field", f"{CATALOG}.Item"),
        (f"{CATALOG}.Item.cents", "field", f"{CATALOG}.Item"),
        (f"{CATALOG}.TAX", "constant", CATALOG),
        (f"{CATALOG}.priceOf", "function", CATALOG),
    ]
    assert outline.imports == []
    assert outline.exports == {}
    assert references(outline, f"{CATALOG}.Item.cents", "type_of") == [("number", None)]
    assert references(outline, f"{CATALOG}.priceOf", "type_of") == [("number", None)]
    assert references(outline, f"{CATALOG}.priceOf", "references") == [("Item", None), ("cents", "Item")]


def test_javascript_app() -> None:
    outline = outline_of("web/src/app.js")
    assert [(s.name, s.kind) for s in outline.symbols] == [("web/src/app", "module"), ("web/src/app.main", "function")]
    assert outline.imports == [
        Import("Cart", CART, "default", 1),  # "./cart.js" names the module web/src/cart
        Import("readFileSync", "node:fs", "readFileSync", 2),
    ]
    main = "web/src/app.main"
    assert references(outline, main, "calls") == [
        ("Cart", None),
        ("add", "Cart"),  # const cart = new Cart(...)
        ("console.log", None),
        ("total", "Cart"),
    ]
    assert references(outline, main, "references") == [("readFileSync", None)]


def test_import_and_export_forms() -> None:
    outline = outline_of_source(
        """import X, { A, B as C } from "./lib/x";
import * as ns from "../y.js";
import "./side";
import fs = require("fs");
const { h, j: k } = require("./h");
const whole = require("lodash");
export { a as b, c };
export { d as e } from "./z";
export * from "./w";
const a = 1, c = 2;
"""
    )
    assert outline.imports == [
        Import("X", "web/src/lib/x", "default", 1),
        Import("A", "web/src/lib/x", "A", 1),
        Import("C", "web/src/lib/x", "B", 1),
        Import("ns", "web/y", None, 2),
        Import("", "web/src/side", None, 3),
        Import("fs", "fs", None, 4),
        Import("h", "web/src/h", "h", 5),
        Import("k", "web/src/h", "j", 5),
        Import("whole", "lodash", None, 6),
        Import("e", "web/src/z", "d", 8),  # a re-export binds its name for importers of this module
        Import("", "web/src/w", "*", 9),
    ]
    assert outline.exports == {"b": "a"}
    assert [s.short for s in outline.symbols] == ["sample", "a", "c"]


def test_specifiers_resolve_against_the_importing_file() -> None:
    assert resolve_specifier("./cart.js", "web/src/app.ts") == "web/src/cart"
    assert resolve_specifier("../lib/util", "web/src/app.ts") == "web/lib/util"
    assert resolve_specifier("./components/View.tsx", "web/src/app.ts") == "web/src/components/View"
    assert resolve_specifier("../../../outside", "web/src/app.ts") == "../../../outside"
    assert resolve_specifier("@scope/pkg/sub", "web/src/app.ts") == "@scope/pkg/sub"
    assert resolve_specifier("react", "web/src/app.ts") == "react"


def test_declarations_of_every_kind() -> None:
    outline = outline_of_source(
        """export default function main(): void {}
type Id<T> = Wrapper<T> | string;
enum Status { Open, Closed = "closed" }
abstract class Base { abstract run(): Promise<Item[]>; store = new Store(); }
let counter = 0;
const twice = (n: number) => n * 2;
class Shop extends Base implements Runnable {
  run() { return Status.Open as Item; }
}
"""
    )
    kinds = [(s.name.removeprefix("web/src/sample."), s.kind) for s in outline.symbols]
    assert kinds == [
        ("web/src/sample", "module"),
        ("main", "function"),
        ("Id", "type"),
        ("Status", "enum"),
        ("Status.Open", "constant"),
        ("Status.Closed", "constant"),
        ("Base", "class"),
        ("Base.run", "method"),
        ("Base.store", "field"),
        ("counter", "variable"),
        ("twice", "function"),
        ("Shop", "class"),
        ("Shop.run", "method"),
    ]
    sample = "web/src/sample"
    assert outline.exports == {"default": "main"}
    assert references(outline, f"{sample}.Id", "type_of") == [("Wrapper", None), ("string", None)]  # T left out
    assert references(outline, f"{sample}.Base.run", "type_of") == [("Promise", None), ("Item", None)]
    assert references(outline, f"{sample}.Base.store", "type_of") == [("Store", None)]
    assert references(outline, f"{sample}.Shop", "extends") == [("Base", None)]
    assert references(outline, f"{sample}.Shop", "implements") == [("Runnable", None)]
    assert references(outline, f"{sample}.Shop.run", "references") == [("Status.Open", None), ("Item", None)]
    assert references(outline, f"{sample}.twice", "references") == [("number", None)]


def test_chains_from_call_results_and_untyped_locals_yield_nothing() -> None:
    outline = outline_of_source(
        """function f(cart: Cart, raw) {
  const made = make();
  made.go();
  raw.go();
  make().then();
  (await cart).x();
  ns.fn();
  cart.total();
}
"""
    )
    assert references(outline, "web/src/sample.f", "calls") == [
        ("make", None),
        ("ns.fn", None),
        ("total", "Cart"),
    ]


def test_jsx_components_are_references() -> None:
    outline = outline_of_source(
        "export const App = ({ cart }: Props) =>\n"
        "  <Layout.Main><CartView cart={cart} /><div>{TAX}</div></Layout.Main>;\n",
        path="web/src/App.tsx",
    )
    assert references(outline, "web/src/App.App", "references") == [
        ("Props", None),
        ("Layout.Main", None),
        ("CartView", None),
        ("TAX", None),
    ]


def test_native_modules_and_builtins() -> None:
    for module in ("node:fs", "fs", "fs/promises", "path", "child_process"):
        assert is_native_module(module)
    for module in ("react", "@scope/pkg", "web/src/cart", "fsevents"):
        assert not is_native_module(module)
    assert {"console", "Promise", "string", "Record"} <= TYPESCRIPT.builtins


def test_a_syntax_error_keeps_what_precedes_it() -> None:
    outline = outline_of_source(
        'import { A } from "./a";\nexport function ok(): A { return make(); }\nclass Broken { m( {\n'
    )
    assert outline.errors > 0
    assert [s.name for s in outline.symbols][:2] == ["web/src/sample", "web/src/sample.ok"]
    assert outline.imports == [Import("A", "web/src/a", "A", 1)]
    assert Reference("web/src/sample.ok", "calls", "make", 2) in outline.references


def test_json_round_trip() -> None:
    for path in ("web/src/cart.ts", "web/src/app.js"):
        outline = outline_of(path)
        assert FileOutline.from_json(outline.to_json()) == outline
