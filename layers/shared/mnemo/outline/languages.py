"""The languages the outline reads, each a tree-sitter grammar from PyPI plus an extractor.

A language is a ``LanguageSpec``: the file extensions it claims, its grammar
(imported on first use: nothing is downloaded, the grammar packages ship
compiled), the extractor that turns a parse tree into a ``FileOutline``, and
what the resolver needs to know about it (how module names nest, which modules
and names are the standard library or built in).
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mnemo.errors import invalid_field

if TYPE_CHECKING:
    from tree_sitter import Node

    from mnemo.outline.structure import FileOutline

#: extract(root, source, path, workspace paths) -> the file's outline.
Extractor = Callable[["Node", bytes, str, frozenset[str]], "FileOutline"]


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    extensions: tuple[str, ...]
    #: Returns the grammar's language pointer, e.g. ``tree_sitter_python.language()``; per extension when
    #: one package holds several grammars (TypeScript and TSX).
    grammar: Callable[[str], Any]
    extract: Extractor
    #: The module key a file at ``path`` gets in a workspace holding ``paths`` (see FileOutline.module_key).
    #: Stored outlines whose key differs (a Python package gained an ``__init__.py``) are extracted again.
    module_key: Callable[[str, frozenset[str]], str]
    #: What separates the parts of a module key: '.' (Python, Java) or '/' (Go, TypeScript/JavaScript).
    separator: str
    #: Whether an imported module belongs to the standard library.
    is_native_module: Callable[[str], bool]
    #: Names usable without an import that the language itself provides (len, string, console, String...).
    builtins: frozenset[str]
    #: The module that native names are shown under: builtins, builtin (Go), java.lang, globalThis.
    builtin_module: str
    #: Whether a class's members are in scope, unqualified, inside the class (Java: yes; Python, TS: no).
    bare_members: bool = False
    #: Whether files with one module key share their top-level names (Go and Java packages).
    package_scope: bool = False
    #: Languages whose files import this one's and the other way round (TypeScript and JavaScript): the graph
    #: resolves across them all, while the answer's roots stay in this language's files.
    companions: tuple[str, ...] = ()

    def claims(self, path: str) -> bool:
        return path.endswith(self.extensions)


_MODULES = {
    "python": "mnemo.outline.lang_python",
    "go": "mnemo.outline.lang_go",
    "java": "mnemo.outline.lang_java",
    "typescript": "mnemo.outline.lang_typescript",
    "javascript": "mnemo.outline.lang_typescript",
}
LANGUAGES = tuple(_MODULES)


def get_language(name: str) -> LanguageSpec:
    """The spec of a language by its name; INVALID_INPUT naming ``language`` for any other."""
    module = _MODULES.get(name)
    if module is None:
        raise invalid_field("language", f"'{name}' is not an outline language; use one of {', '.join(LANGUAGES)}")
    spec: LanguageSpec = getattr(importlib.import_module(module), f"{name.upper()}")
    return spec


def language_of(path: str) -> LanguageSpec | None:
    for name in LANGUAGES:
        spec = get_language(name)
        if spec.claims(path):
            return spec
    return None


_parsers = threading.local()  # a tree-sitter Parser is not to be shared between threads


def parse(spec: LanguageSpec, path: str, source: bytes) -> Node:
    """The root node of ``source`` parsed with the grammar for ``path``'s extension."""
    from tree_sitter import Language, Parser

    extension = next(ext for ext in spec.extensions if path.endswith(ext))
    cache: dict[tuple[str, str], Parser] = getattr(_parsers, "cache", None) or {}
    _parsers.cache = cache
    parser = cache.get((spec.name, extension))
    if parser is None:
        parser = cache[(spec.name, extension)] = Parser(Language(spec.grammar(extension)))
    return parser.parse(source).root_node


#: A walk nested deeper than Python's default stack allows (a 600-term ``a + b + ...`` is 600 levels of
#: binary expressions) runs again in a thread with this much stack and recursion.
DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 200_000


def extract(spec: LanguageSpec, path: str, source: bytes, paths: frozenset[str]) -> FileOutline:
    """The file's outline; RecursionError only for code nested past DEEP_RECURSION_LIMIT."""
    try:
        return spec.extract(parse(spec, path, source), source, path, paths)
    except RecursionError:
        return _on_a_deep_stack(lambda: spec.extract(parse(spec, path, source), source, path, paths))


def _on_a_deep_stack(work: Callable[[], FileOutline]) -> FileOutline:
    result: list[FileOutline] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as error:  # handed to the caller's thread
            failure.append(error)

    # The recursion limit is the interpreter's: raised only while the deep walk runs, one walk at a time.
    with _deep_lock:
        limit = sys.getrecursionlimit()
        previous = threading.stack_size(DEEP_STACK_BYTES)
        try:
            sys.setrecursionlimit(max(limit, DEEP_RECURSION_LIMIT))
            thread = threading.Thread(target=run, name="outline-deep-walk")
            thread.start()
            thread.join()
        finally:
            threading.stack_size(previous)
            sys.setrecursionlimit(limit)
    if failure:
        raise failure[0]
    return result[0]


_deep_lock = threading.Lock()
