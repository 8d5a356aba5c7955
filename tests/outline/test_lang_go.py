"""The Go extractor over the shop fixture (tests/fixtures/outline/shop), every expectation checked by hand."""

from __future__ import annotations

from pathlib import Path

from mnemo.outline.lang_go import GO
from mnemo.outline.languages import extract, get_language
from mnemo.outline.structure import FileOutline, Import

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "outline" / "shop"
PATHS = frozenset(path.relative_to(SHOP).as_posix() for path in SHOP.rglob("*") if path.is_file())


def outline_of(relative: str) -> FileOutline:
    return extract(GO, relative, (SHOP / relative).read_bytes(), PATHS)


def outline_of_source(source: str, path: str = "pkg/x.go") -> FileOutline:
    return extract(GO, path, source.encode(), frozenset({path}))


def symbols(outline: FileOutline) -> list[tuple[str, str, str | None]]:
    return [(symbol.name, symbol.kind, symbol.container) for symbol in outline.symbols]


def references(outline: FileOutline) -> set[tuple[str, str, str, str | None]]:
    return {(ref.source, ref.kind, ref.target, ref.via_type) for ref in outline.references}


def references_from(outline: FileOutline, source: str) -> list[tuple[str, str, str | None]]:
    return [(ref.kind, ref.target, ref.via_type) for ref in outline.references if ref.source == source]


def test_store_file_declares_the_package_its_types_fields_and_methods() -> None:
    outline = outline_of("inventory/store.go")

    assert (outline.module, outline.module_key, outline.language, outline.errors) == ("inventory", "inventory", "go", 0)
    assert symbols(outline) == [
        ("inventory", "package", None),
        ("inventory.Item", "struct", "inventory"),
        ("inventory.Item.SKU", "field", "inventory.Item"),
        ("inventory.Item.Count", "field", "inventory.Item"),
        ("inventory.Store", "interface", "inventory"),
        ("inventory.Store.Get", "method", "inventory.Store"),
        ("inventory.Store.Put", "method", "inventory.Store"),
        ("inventory.MemoryStore", "struct", "inventory"),
        ("inventory.MemoryStore.items", "field", "inventory.MemoryStore"),
        ("inventory.NewMemoryStore", "function", "inventory"),
        ("inventory.(*MemoryStore).Get", "method", "inventory.MemoryStore"),
        ("inventory.(*MemoryStore).Put", "method", "inventory.MemoryStore"),
    ]
    package = outline.symbols[0]
    assert (package.line, package.end_line, package.short) == (1, 37, "inventory")
    get = next(symbol for symbol in outline.symbols if symbol.name == "inventory.(*MemoryStore).Get")
    assert (get.line, get.end_line, get.short) == (26, 32, "Get")
    assert outline.imports == [Import("fmt", "fmt", None, 3)]


def test_store_file_references_types_of_fields_signatures_and_uses() -> None:
    outline = outline_of("inventory/store.go")

    assert references_from(outline, "inventory.Store.Get") == [
        ("references", "string", None),
        ("type_of", "Item", None),
        ("type_of", "error", None),
    ]
    assert references_from(outline, "inventory.MemoryStore.items") == [
        ("type_of", "string", None),
        ("type_of", "Item", None),
    ]
    assert references_from(outline, "inventory.(*MemoryStore).Put") == [
        ("references", "MemoryStore", None),
        ("references", "Item", None),
        ("type_of", "error", None),
        ("references", "items", "MemoryStore"),  # s.items: s is the receiver
        ("references", "SKU", "Item"),  # item.SKU: item is a parameter of type Item
    ]
    assert {
        ("inventory.NewMemoryStore", "type_of", "MemoryStore", None),
        ("inventory.NewMemoryStore", "references", "MemoryStore", None),  # &MemoryStore{...}
        ("inventory.(*MemoryStore).Get", "calls", "fmt.Errorf", None),
        ("inventory.(*MemoryStore).Get", "references", "Item", None),  # Item{}
    } <= references(outline)


def test_stock_file_manager_embeds_base_and_reserve_calls_through_its_fields() -> None:
    outline = outline_of("inventory/stock.go")

    assert symbols(outline) == [
        ("inventory", "package", None),
        ("inventory.MaxReserve", "constant", "inventory"),
        ("inventory.Base", "struct", "inventory"),
        ("inventory.Base.name", "field", "inventory.Base"),
        ("inventory.Base.Name", "method", "inventory.Base"),
        ("inventory.Manager", "struct", "inventory"),
        ("inventory.Manager.store", "field", "inventory.Manager"),  # the embedded Base is no field
        ("inventory.NewManager", "function", "inventory"),
        ("inventory.(*Manager).Reserve", "method", "inventory.Manager"),
    ]
    assert references_from(outline, "inventory.Manager") == [("extends", "Base", None)]
    assert references_from(outline, "inventory.Manager.store") == [("type_of", "Store", None)]
    assert references_from(outline, "inventory.NewManager") == [
        ("references", "Store", None),
        ("type_of", "Manager", None),
        ("references", "Manager", None),  # &Manager{store: s}: the key store is a field, s a parameter
    ]
    assert references_from(outline, "inventory.(*Manager).Reserve") == [
        ("references", "Manager", None),
        ("references", "string", None),
        ("references", "int", None),
        ("type_of", "error", None),
        ("references", "MaxReserve", None),
        ("calls", "fmt.Errorf", None),  # twice in the code, once here
        ("calls", "store.Get", "Manager"),
        ("calls", "store.Put", "Manager"),
    ]
    reserve = next(ref for ref in outline.references if ref.target == "store.Get")
    assert reserve.line == 32


def test_main_imports_the_workspace_package_and_calls_into_it() -> None:
    outline = outline_of("cmd/shopd/main.go")

    assert (outline.module, outline.module_key) == ("main", "cmd/shopd")
    assert symbols(outline) == [("main", "package", None), ("main.main", "function", "main")]
    assert outline.imports == [
        Import("fmt", "fmt", None, 4),
        Import("inventory", "example.com/shop/inventory", None, 6),
    ]
    # m.Reserve: m comes from a call, so its type is unknown here and nothing is written down for it
    assert references_from(outline, "main.main") == [
        ("calls", "inventory.NewManager", None),
        ("calls", "inventory.NewMemoryStore", None),
        ("calls", "fmt.Println", None),
    ]


def test_import_forms_bind_their_aliases() -> None:
    outline = outline_of_source(
        'package x\n\nimport (\n\t"net/http"\n\tinv "example.com/shop/inventory"\n\t. "example.com/dot"\n'
        '\t_ "example.com/blank"\n\t"github.com/acme/kit/v2"\n\t"gopkg.in/yaml.v3"\n)\n'
    )

    assert outline.imports == [
        Import("http", "net/http", None, 4),
        Import("inv", "example.com/shop/inventory", None, 5),
        Import("", "example.com/dot", "*", 6),
        Import("", "example.com/blank", None, 7),
        Import("kit", "github.com/acme/kit/v2", None, 8),
        Import("yaml", "gopkg.in/yaml.v3", None, 9),
    ]


def test_calls_go_through_the_types_the_code_states_and_skip_unknown_locals() -> None:
    source = """package x

func Run(e Extractor, s *store.Stock, opts ...Option) {
	a := &Foo{}
	b := Bar{}
	var c Baz
	d := new(Qux)
	u := Make()
	a.Go(); b.Go(); c.Go(); d.Go(); u.Go()
	e.Extract()
	s.Items.Count()
	store.Default.Flush()
	Helper()
	go func(w Writer) { w.Write(DefaultDepth); w.Write(DefaultDepth) }(nil)
	_ = store.ErrMissing
	_ = string(opts)
}
"""
    found = references_from(outline_of_source(source), "x.Run")

    assert found == [
        ("references", "Extractor", None),
        ("references", "store.Stock", None),
        ("references", "Option", None),
        ("references", "Foo", None),
        ("references", "Bar", None),
        ("references", "Baz", None),
        ("calls", "new", None),
        ("references", "Qux", None),
        ("calls", "Make", None),
        ("calls", "Go", "Foo"),
        ("calls", "Go", "Bar"),
        ("calls", "Go", "Baz"),
        ("calls", "Go", "Qux"),
        ("calls", "Extract", "Extractor"),
        ("calls", "Items.Count", "store.Stock"),
        ("calls", "store.Default.Flush", None),
        ("calls", "Helper", None),
        ("references", "Writer", None),
        ("calls", "Write", "Writer"),
        ("references", "DefaultDepth", None),
        ("references", "store.ErrMissing", None),
        ("calls", "string", None),
    ]


def test_generic_receiver_names_the_type_without_its_parameters() -> None:
    source = """package coll

type Stack[T any] struct {
	items []T
}

func (s *Stack[T]) Push(v T) {
	s.items = append(s.items, v)
}
"""
    outline = outline_of_source(source, "coll/stack.go")

    assert symbols(outline) == [
        ("coll", "package", None),
        ("coll.Stack", "struct", "coll"),
        ("coll.Stack.items", "field", "coll.Stack"),
        ("coll.(*Stack).Push", "method", "coll.Stack"),
    ]
    # T is a type parameter: never a reference
    assert references_from(outline, "coll.Stack.items") == []
    assert references_from(outline, "coll.(*Stack).Push") == [
        ("references", "Stack", None),
        ("references", "items", "Stack"),
        ("calls", "append", None),
    ]


def test_interfaces_types_vars_and_consts() -> None:
    source = """package x

type Reader interface {
	io.Closer
	Read(p []byte) (int, error)
}

type Celsius float64

type Handlers = map[string]Handler

var Default, Backup *Config

const (
	KindA Kind = iota
	KindB
)
"""
    outline = outline_of_source(source)

    assert symbols(outline)[1:] == [
        ("x.Reader", "interface", "x"),
        ("x.Reader.Read", "method", "x.Reader"),
        ("x.Celsius", "type", "x"),
        ("x.Handlers", "type", "x"),
        ("x.Default", "variable", "x"),
        ("x.Backup", "variable", "x"),
        ("x.KindA", "constant", "x"),
        ("x.KindB", "constant", "x"),
    ]
    # iota, nil, true and false are their own nodes in the grammar, not names: never referenced
    assert references(outline) == {
        ("x.Reader", "extends", "io.Closer", None),
        ("x.Reader.Read", "references", "byte", None),
        ("x.Reader.Read", "type_of", "int", None),
        ("x.Reader.Read", "type_of", "error", None),
        ("x.Celsius", "type_of", "float64", None),
        ("x.Handlers", "type_of", "string", None),
        ("x.Handlers", "type_of", "Handler", None),
        ("x.Default", "type_of", "Config", None),
        ("x.Backup", "type_of", "Config", None),
        ("x.KindA", "type_of", "Kind", None),
        ("x.KindB", "type_of", "Kind", None),  # a bare name in a const group repeats the type before it
    }


def test_a_broken_file_keeps_the_declarations_before_the_error() -> None:
    source = "package broken\n\ntype Good struct {\n\tName string\n}\n\nfunc Fine() int { return 1 }\n\nfunc Bad( {\n"
    outline = outline_of_source(source, "broken/bad.go")

    assert outline.errors > 0
    names = [symbol.name for symbol in outline.symbols]
    assert names[:4] == ["broken", "broken.Good", "broken.Good.Name", "broken.Fine"]


def test_the_outline_survives_its_json_form() -> None:
    outline = outline_of("inventory/stock.go")

    assert FileOutline.from_json(outline.to_json()) == outline


def test_spec_hooks() -> None:
    assert get_language("go") is GO
    assert GO.claims("inventory/stock.go")
    assert GO.module_key("inventory/stock.go", PATHS) == "inventory"
    assert GO.module_key("main.go", PATHS) == "."
    assert [GO.is_native_module(path) for path in ("fmt", "net/http", "encoding/json", "example.com/shop")] == [
        True,
        True,
        True,
        False,
    ]
    assert {"string", "error", "any", "nil", "iota", "append", "clear", "min"} <= GO.builtins
    assert "fmt" not in GO.builtins
    assert (GO.separator, GO.builtin_module, GO.bare_members, GO.package_scope) == ("/", "builtin", False, True)
