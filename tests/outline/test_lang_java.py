"""The Java extractor over the shop fixture's billing package (checked by hand against the sources)."""

from __future__ import annotations

from pathlib import Path

from mnemo.outline.lang_java import JAVA, is_native_module, module_key
from mnemo.outline.languages import extract
from mnemo.outline.structure import FileOutline, Import, Reference

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "outline" / "shop"
PATHS = frozenset(str(path.relative_to(SHOP)) for path in SHOP.rglob("*") if path.is_file())
BILLING = "billing/src/main/java/com/acme/billing"
PACKAGE = "com.acme.billing"


def outline_of(name: str) -> FileOutline:
    path = f"{BILLING}/{name}"
    return extract(JAVA, path, (SHOP / path).read_bytes(), PATHS)


def outline_of_source(source: str, path: str = "src/p/A.java") -> FileOutline:
    return extract(JAVA, path, source.encode(), frozenset({path}))


def references(outline: FileOutline, source: str, kind: str) -> list[tuple[str, str | None]]:
    return [(ref.target, ref.via_type) for ref in outline.references if ref.source == source and ref.kind == kind]


def test_module_is_the_declared_package_and_the_key_the_dotted_directory() -> None:
    outline = outline_of("Invoice.java")
    assert outline.language == "java"
    assert outline.module == PACKAGE
    assert outline.module_key == "billing.src.main.java.com.acme.billing"
    assert outline.module_key == module_key(outline.path, PATHS)
    assert outline.errors == 0
    assert outline.exports == {}


def test_invoice_symbols_nest_types_members_and_the_package() -> None:
    outline = outline_of("Invoice.java")
    invoice = f"{PACKAGE}.Invoice"
    assert [(s.name, s.kind, s.container, s.short) for s in outline.symbols] == [
        (PACKAGE, "package", None, "billing"),
        (invoice, "class", PACKAGE, "Invoice"),
        (f"{invoice}.MAX_LINES", "field", invoice, "MAX_LINES"),
        (f"{invoice}.Line", "class", invoice, "Line"),
        (f"{invoice}.Line.sku", "field", f"{invoice}.Line", "sku"),
        (f"{invoice}.Line.cents", "field", f"{invoice}.Line", "cents"),
        (f"{invoice}.lines", "field", invoice, "lines"),
        (f"{invoice}.Invoice", "constructor", invoice, "Invoice"),
        (f"{invoice}.add", "method", invoice, "add"),
        (f"{invoice}.total", "method", invoice, "total"),
        (f"{invoice}.cents", "method", invoice, "cents"),
    ]
    lines = {s.name: (s.line, s.end_line) for s in outline.symbols}
    assert lines[PACKAGE] == (1, 41)
    assert lines[invoice] == (7, 41)
    assert lines[f"{invoice}.Line"] == (11, 14)
    assert lines[f"{invoice}.add"] == (22, 27)


def test_imports_name_the_package_and_the_member() -> None:
    assert outline_of("Invoice.java").imports == [
        Import("ArrayList", "java.util", "ArrayList", 3),
        Import("List", "java.util", "List", 4),
    ]
    assert outline_of("InvoiceService.java").imports == []


def test_heritage_and_declared_types() -> None:
    outline = outline_of("Invoice.java")
    invoice = f"{PACKAGE}.Invoice"
    assert references(outline, invoice, "extends") == [("BaseDocument", None)]
    assert references(outline, invoice, "implements") == [("Billable", None)]
    assert references(outline, f"{invoice}.lines", "type_of") == [("List", None), ("Line", None)]
    assert references(outline, f"{invoice}.MAX_LINES", "type_of") == [("long", None)]
    assert references(outline, f"{invoice}.Line.sku", "type_of") == [("String", None)]
    assert references(outline, f"{invoice}.total", "type_of") == [("long", None)]
    assert references(outline, f"{invoice}.add", "type_of") == [("void", None)]


def test_method_bodies_calls_and_references() -> None:
    outline = outline_of("Invoice.java")
    invoice = f"{PACKAGE}.Invoice"
    assert references(outline, f"{invoice}.Invoice", "calls") == [("ArrayList", None)]
    assert references(outline, f"{invoice}.Invoice", "references") == [("lines", "Invoice")]
    # lines is a field: its calls go through the class; the parameter's type and the constant are references
    assert references(outline, f"{invoice}.add", "calls") == [
        ("lines.size", "Invoice"),
        ("IllegalStateException", None),
        ("lines.add", "Invoice"),
    ]
    assert references(outline, f"{invoice}.add", "references") == [("Line", None), ("MAX_LINES", None)]
    assert references(outline, f"{invoice}.total", "calls") == [("cents", None)]
    assert references(outline, f"{invoice}.total", "references") == [
        ("Override", None),
        ("long", None),
        ("Line", None),
        ("lines", None),
    ]
    # l is a parameter of type Line: its field is reached through that type
    assert references(outline, f"{invoice}.cents", "references") == [("Line", None), ("cents", "Line")]


def test_calls_through_a_field_and_a_class() -> None:
    outline = outline_of("InvoiceService.java")
    service = f"{PACKAGE}.InvoiceService"
    assert references(outline, f"{service}.billable", "type_of") == [("Billable", None)]
    assert references(outline, f"{service}.due", "calls") == [("Math.max", None), ("billable.total", "InvoiceService")]
    # the parameter billable shadows the field: only this.billable refers to the field
    assert references(outline, f"{service}.InvoiceService", "references") == [
        ("Billable", None),
        ("billable", "InvoiceService"),
    ]


def test_interface_and_abstract_class() -> None:
    billable = outline_of("Billable.java")
    assert [(s.name, s.kind, s.container) for s in billable.symbols] == [
        (PACKAGE, "package", None),
        (f"{PACKAGE}.Billable", "interface", PACKAGE),
        (f"{PACKAGE}.Billable.total", "method", f"{PACKAGE}.Billable"),
    ]
    base = outline_of("BaseDocument.java")
    assert [(s.name, s.kind) for s in base.symbols] == [
        (PACKAGE, "package"),
        (f"{PACKAGE}.BaseDocument", "class"),
        (f"{PACKAGE}.BaseDocument.id", "method"),
    ]
    assert references(base, f"{PACKAGE}.BaseDocument.id", "type_of") == [("String", None)]
    assert references(base, f"{PACKAGE}.BaseDocument.id", "calls") == [("hashCode", None)]


def test_static_and_wildcard_imports() -> None:
    outline = outline_of_source(
        "package p;\nimport com.acme.inventory.*;\nimport static com.acme.util.Money.round;\n"
        "import static com.acme.util.Money.*;\nclass A {}\n"
    )
    assert outline.imports == [
        Import("", "com.acme.inventory", "*", 2),
        Import("round", "com.acme.util.Money", "round", 3),
        Import("", "com.acme.util.Money", "*", 4),
    ]


def test_enums_records_overloads_and_typed_locals() -> None:
    outline = outline_of_source(
        """package p;
enum Status { OPEN, CLOSED }
record Point(int x, java.util.List<String> tags) implements Shape<Point> {}
interface Shape<T> extends Comparable<T> {}
class A<T> extends com.x.Base<String> {
  void m(Object o) {
    var s = new Foo<T>();
    s.bar(Status.OPEN, this::m);
    Map.Entry<String, Long> e = null;
    e.getKey().trim();
    unknown.call();
    super.m2();
    this.m(o);
  }
  void m(int overload) {}
}
"""
    )
    assert [(s.name, s.kind) for s in outline.symbols] == [
        ("p", "package"),
        ("p.Status", "enum"),
        ("p.Status.OPEN", "constant"),
        ("p.Status.CLOSED", "constant"),
        ("p.Point", "record"),
        ("p.Point.x", "field"),
        ("p.Point.tags", "field"),
        ("p.Shape", "interface"),
        ("p.A", "class"),
        ("p.A.m", "method"),
    ]
    assert references(outline, "p.Point", "implements") == [("Shape", None)]
    assert references(outline, "p.Point.tags", "type_of") == [("java.util.List", None), ("String", None)]
    assert references(outline, "p.Shape", "extends") == [("Comparable", None)]  # T is a type variable
    assert references(outline, "p.A", "extends") == [("com.x.Base", None)]
    assert references(outline, "p.A.m", "calls") == [
        ("Foo", None),
        ("bar", "Foo"),
        ("getKey", "Map.Entry"),
        ("unknown.call", None),
        ("m2", "com.x.Base"),
        ("m", "A"),
    ]
    assert ("Status.OPEN", None) in references(outline, "p.A.m", "references")
    assert ("m", "A") in references(outline, "p.A.m", "references")  # this::m


def test_default_package_and_native_modules() -> None:
    outline = outline_of_source("class Top { }\n", path="Top.java")
    assert outline.module == "default"
    assert outline.module_key == ""
    assert outline.symbols[1].name == "default.Top"
    assert is_native_module("java.util")
    assert is_native_module("javax.annotation")
    assert is_native_module("java")
    assert not is_native_module("javafx.scene")
    assert not is_native_module("com.acme.billing")
    assert {"String", "Override", "int", "var"} <= JAVA.builtins


def test_a_syntax_error_keeps_what_precedes_it() -> None:
    outline = outline_of_source(
        "package p;\nimport java.util.List;\nclass Ok { void a() { b(); } }\nclass Broken { void c( {\n"
    )
    assert outline.errors > 0
    assert [s.name for s in outline.symbols][:3] == ["p", "p.Ok", "p.Ok.a"]
    assert outline.imports == [Import("List", "java.util", "List", 2)]
    assert Reference("p.Ok.a", "calls", "b", 3) in outline.references


def test_json_round_trip() -> None:
    outline = outline_of("Invoice.java")
    assert FileOutline.from_json(outline.to_json()) == outline
