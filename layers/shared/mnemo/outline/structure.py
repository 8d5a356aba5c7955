"""What an extractor finds in one source file, before anything is resolved across the project.

An extractor (one per language, ``mnemo.outline.languages``) turns a parsed file
into a ``FileOutline``: the symbols the file declares, the names it imports and
the references its code makes, each reference as written ("self.write",
"fmt.Println", "RecordStore"). Resolving a written name to a symbol needs the
whole project, so it happens later (``mnemo.outline.graph``), over the stored
outlines of every file; this is what the outline index keeps per file.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: Every relation an outline can show, in the order answers list them (docs/outline.md).
RELATION_KINDS = ("contains", "calls", "called_by", "imports", "extends", "implements", "references", "type_of")
#: The relations an extractor writes down; contains comes from Symbol.container, called_by is calls reversed.
WRITTEN_KINDS = ("calls", "extends", "implements", "references", "type_of")


@dataclass(frozen=True)
class Symbol:
    """A declaration: a module or package, type, function, method, field, variable or constant."""

    #: The qualified name, as answers show it: ``mnemo.files.store.FileStore.write`` (Python),
    #: ``outline.(*OutlineManager).RegisterExtractor`` (Go), ``com.acme.Shop.order`` (Java).
    name: str
    #: module, package, class, interface, struct, type, enum, function, method, field, variable or constant.
    kind: str
    line: int
    end_line: int
    #: The qualified name of the enclosing declaration; None for the module or package itself.
    container: str | None
    #: The name as declared (``write``, ``RegisterExtractor``): what a bare reference matches.
    short: str


@dataclass(frozen=True)
class Import:
    """A name an import binds in the file: ``alias`` stands for ``member`` of ``module`` (or the module)."""

    #: The local name the import binds; '' when it binds none (Go's ``_`` or ``.``, a Java or Python ``*``).
    alias: str
    #: The module as the language names it: a dotted Python module (relative imports made absolute), a Go
    #: import path, a Java package, or for TypeScript/JavaScript a workspace path without its extension
    #: (relative specifiers resolved) or the bare package name.
    module: str
    #: The name imported from the module; None when ``alias`` is the module itself; '*' for all of it.
    member: str | None
    line: int


@dataclass(frozen=True)
class Reference:
    """A use of a name inside ``source``: a call, a base type, a type annotation or another mention."""

    source: str
    #: One of WRITTEN_KINDS.
    kind: str
    #: The name as written, dotted: ``write``, ``fmt.Println``, ``store.FileStore``, ``extractors.Register``.
    target: str
    line: int
    #: When the target starts from a value whose type the code states (``self``, ``this``, a Go receiver,
    #: a typed parameter): that type's name as written. ``target`` then starts with a member of the type.
    via_type: str | None = None


@dataclass
class FileOutline:
    path: str
    language: str
    #: The qualified name of the file's module (Python, TypeScript/JavaScript) or package (Go, Java).
    module: str
    #: How imports name that module: a dotted Python module, a Go directory, a Java package, or a
    #: TypeScript/JavaScript path without extension. Files with the same key share one package.
    module_key: str
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    #: Names the module exports under another name: ``{"default": "Cart"}`` for ``export default Cart``
    #: (TypeScript/JavaScript); an import of the exported name finds the local one.
    exports: dict[str, str] = field(default_factory=dict)
    #: Parse errors tree-sitter recovered from (the outline of the rest of the file still counts).
    errors: int = 0

    def to_json(self) -> dict[str, Any]:
        """A compact form for the index: lists of values, not objects with repeated keys."""
        return {
            "path": self.path,
            "language": self.language,
            "module": self.module,
            "moduleKey": self.module_key,
            "errors": self.errors,
            "exports": self.exports,
            "symbols": [list(asdict(symbol).values()) for symbol in self.symbols],
            "imports": [list(asdict(item).values()) for item in self.imports],
            "references": [list(asdict(reference).values()) for reference in self.references],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileOutline:
        return cls(
            path=data["path"],
            language=data["language"],
            module=data["module"],
            module_key=data["moduleKey"],
            errors=int(data.get("errors", 0)),
            exports=dict(data.get("exports", {})),
            symbols=[Symbol(*values) for values in data["symbols"]],
            imports=[Import(*values) for values in data["imports"]],
            references=[Reference(*values) for values in data["references"]],
        )
