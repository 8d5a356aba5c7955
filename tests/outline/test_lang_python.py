"""The Python extractor on its own: module names, declarations and references as written."""

from __future__ import annotations

from mnemo.outline.lang_python import PYTHON, module_key
from mnemo.outline.languages import extract
from mnemo.outline.structure import FileOutline, Import


def outline(path: str, source: str, *others: str) -> FileOutline:
    return extract(PYTHON, path, source.encode(), frozenset({path, *others}))


def test_a_module_is_named_from_the_top_of_its_package() -> None:
    paths = frozenset({"src/shop/__init__.py", "src/shop/orders/__init__.py", "src/shop/orders/models.py"})
    assert module_key("src/shop/orders/models.py", paths) == "shop.orders.models"
    assert module_key("src/shop/orders/__init__.py", paths) == "shop.orders"
    assert module_key("scripts/tool.py", paths) == "tool"
    assert module_key("stubs/api.pyi", frozenset({"stubs/api.pyi"})) == "api"


def test_relative_imports_are_made_absolute() -> None:
    found = outline(
        "pkg/sub/mod.py",
        "from . import sibling\nfrom .. import top as t\nfrom ..other import thing\nimport os.path\nfrom x import *\n",
        "pkg/__init__.py",
        "pkg/sub/__init__.py",
    )
    assert found.module == "pkg.sub.mod"
    assert found.imports == [
        Import("sibling", "pkg.sub", "sibling", 1),
        Import("t", "pkg", "top", 2),
        Import("thing", "pkg.other", "thing", 3),
        Import("os", "os.path", None, 4),
        Import("", "x", "*", 5),
    ]


def test_declarations_get_their_kinds_and_containers() -> None:
    found = outline(
        "m.py",
        "LIMIT = 3\ncache = {}\n\nclass A:\n    size: int = 0\n\n    def __init__(self, n: int) -> None:\n"
        "        self.n = n\n\n    @staticmethod\n    def make(x: 'A') -> 'A':\n        def inner(): pass\n"
        "        return x\n\nasync def run(): pass\n",
    )
    assert [(s.name, s.kind, s.container) for s in found.symbols] == [
        ("m", "module", None),
        ("m.LIMIT", "constant", "m"),
        ("m.cache", "variable", "m"),
        ("m.A", "class", "m"),
        ("m.A.size", "field", "m.A"),
        ("m.A.__init__", "method", "m.A"),
        ("m.A.n", "field", "m.A"),
        ("m.A.make", "method", "m.A"),
        ("m.A.make.inner", "function", "m.A.make"),
        ("m.run", "function", "m"),
    ]
    references = {(r.source, r.kind, r.target, r.via_type) for r in found.references}
    # self.n = n types the field from the parameter; a static method's first parameter is no instance
    assert ("m.A.n", "type_of", "int", None) in references
    assert ("m.A.make", "references", "A", None) in references  # a string annotation is read
    assert ("m.A.make", "type_of", "A", None) in references
    assert not any(r.via_type == "A" for r in found.references if r.source == "m.A.make")


def test_locals_are_not_references_and_typed_values_carry_their_type() -> None:
    found = outline(
        "m.py",
        "def f(store: 'Store', items):\n    total = 0\n    for item in items:\n        total += item\n"
        "    names = [n.upper() for n in items]\n    report = Report()\n    report.send(total)\n"
        "    store.save(names)\n    return helper(total)\n",
    )
    references = {(r.kind, r.target, r.via_type) for r in found.references if r.source == "m.f"}
    assert references == {
        ("references", "Store", None),
        ("calls", "Report", None),
        ("calls", "send", "Report"),
        ("calls", "save", "Store"),
        ("calls", "helper", None),
    }


def test_a_file_with_a_syntax_error_keeps_what_parses() -> None:
    found = outline("m.py", "def ok():\n    pass\n\ndef broken(:\n")
    assert "m.ok" in [s.name for s in found.symbols]
    assert found.errors > 0
    assert FileOutline.from_json(found.to_json()) == found
