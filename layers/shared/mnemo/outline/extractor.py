"""What the language extractors share: reading tree-sitter nodes, recording one file's outline, walking code.

``OutlineRecorder`` keeps what an extractor finds in one file and makes its
``FileOutline``: each symbol once by name (an overload or a second declaration:
the first one stands for all), each reference once per (source, kind, target,
via_type), at the line it is first written. A language says only how it reads
the types written in a node (``written_types``).

``CodeWalker`` adds the walk over code that the Java and TypeScript/JavaScript
extractors share: a handler per node type, the types code writes referred to,
every other named child walked, and a dotted name resolved from where it starts
(``this``, a typed local...) by the language's ``through_scope``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from mnemo.outline.structure import FileOutline, Import, Reference, Symbol

if TYPE_CHECKING:
    from tree_sitter import Node

#: What makes two references the same: the first one written is kept.
ReferenceKey = tuple[str, str, str, str | None]


# ---------------------------------------------------------------- nodes ---
def text(node: Node | None) -> str:
    """A node's source text (tree-sitter keeps the bytes it parsed)."""
    if node is None or node.text is None:
        return ""
    return node.text.decode(errors="replace")


def line_of(node: Node) -> int:
    return node.start_point[0] + 1


def end_line_of(node: Node) -> int:
    return node.end_point[0] + 1


def count_errors(root: Node) -> int:
    """How many ERROR or MISSING nodes the parser recovered with (0 for a file that parses cleanly)."""
    if not root.has_error:
        return 0
    found, stack = 0, [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            found += 1
            continue
        stack.extend(child for child in node.children if child.has_error or child.is_missing)
    return found


def top_level(root: Node) -> list[Node]:
    """The file's top-level nodes, including those tree-sitter kept inside an ERROR node it recovered from."""
    found = []
    for child in root.named_children:
        found.extend(top_level(child) if child.type == "ERROR" else [child])
    return found


# ------------------------------------------------------------- recording ---
class OutlineRecorder:
    """The symbols, imports, exports and references one extractor finds in one file."""

    def __init__(self) -> None:
        self.symbols: list[Symbol] = []
        self.imports: list[Import] = []
        #: Names the module exports under another name (TypeScript/JavaScript; see FileOutline.exports).
        self.exports: dict[str, str] = {}
        self._declared: set[str] = set()
        self._references: dict[ReferenceKey, Reference] = {}

    def add_symbol(self, symbol: Symbol) -> None:
        """Adds a symbol whatever its name (Go keeps every declaration, ``init`` functions included)."""
        self.symbols.append(symbol)

    def declare(self, name: str, kind: str, node: Node, container: str | None, short: str) -> bool:
        """Adds a symbol unless the name is taken (an overload: the first one stands for all)."""
        if name in self._declared:
            return False
        self._declared.add(name)
        self.symbols.append(Symbol(name, kind, line_of(node), end_line_of(node), container, short))
        return True

    def declare_file(self, name: str, kind: str, source: bytes, short: str) -> None:
        """The module or package itself, from the file's first line to its last."""
        self._declared.add(name)
        self.symbols.append(Symbol(name, kind, 1, max(1, len(source.splitlines())), None, short))

    def refer(self, source: str, kind: str, target: str, node: Node, via_type: str | None = None) -> None:
        self.refer_at(source, kind, target, line_of(node), via_type)

    def refer_at(self, source: str, kind: str, target: str, line: int, via_type: str | None = None) -> None:
        key = (source, kind, target, via_type)
        if target and key not in self._references:
            self._references[key] = Reference(source, kind, target, line, via_type)

    def refer_types(
        self, source: str, kind: str, node: Node | None, type_parameters: frozenset[str] = frozenset()
    ) -> None:
        """A reference of ``kind`` to every named type written in ``node`` (type parameters left out)."""
        if node is not None:
            for name, written in self.written_types(node, type_parameters):
                self.refer(source, kind, name, written)

    def written_types(self, node: Node, type_parameters: frozenset[str]) -> Iterable[tuple[str, Node]]:
        """Every named type written in ``node``, each with the node its reference's line comes from."""
        raise NotImplementedError

    def file_outline(self, root: Node, *, path: str, language: str, module: str, module_key: str) -> FileOutline:
        return FileOutline(
            path=path,
            language=language,
            module=module,
            module_key=module_key,
            symbols=self.symbols,
            imports=self.imports,
            references=list(self._references.values()),
            exports=self.exports,
            errors=count_errors(root),
        )


# --------------------------------------------------------------- walking ---
class BodyScope(Protocol):
    """What the walk needs of a language's scope: whose references these are, and the type variables."""

    #: The symbol references found here are attributed to.
    source: str
    type_parameters: frozenset[str]


#: A node type's handler: the walker, the node, the scope it is read in.
Handler = Callable[[Any, "Node", Any], None]


class CodeWalker[ScopeT: BodyScope](OutlineRecorder):
    """Walks the code of a body: a handler per node type, else types referred to, else the named children."""

    #: Node type -> what reads it; each language lists its own.
    body_handlers: ClassVar[Mapping[str, Handler]] = {}
    #: Node types that write a type: a mention in code refers to the types they name.
    types_in_bodies: ClassVar[frozenset[str]] = frozenset()
    #: Children under these fields name what is being declared, never something used.
    declaring_fields: ClassVar[frozenset[str]] = frozenset()

    def walk(self, node: Node, scope: ScopeT) -> None:
        handler = self.body_handlers.get(node.type)
        if handler is not None:
            handler(self, node, scope)
        elif node.type in self.types_in_bodies:
            self.refer_types(scope.source, "references", node, scope.type_parameters)
        else:
            self.walk_children(node, scope)

    def walk_children(self, node: Node, scope: ScopeT) -> None:
        for index, child in enumerate(node.children):
            if child.is_named and node.field_name_for_child(index) not in self.declaring_fields:
                self.walk(child, scope)

    def refer_path(self, parts: list[str], kind: str, node: Node, scope: ScopeT) -> None:
        resolved = self.through_scope(parts, scope)
        if resolved is not None:
            self.refer(scope.source, kind, resolved[0], node, resolved[1])

    def through_scope(self, parts: list[str], scope: ScopeT) -> tuple[str, str | None] | None:
        """The target and via_type a dotted name gets from where it starts; None when its start is unknown."""
        raise NotImplementedError

    def on_name(self, node: Node, scope: ScopeT) -> None:
        self.refer_path([text(node)], "references", node, scope)

    def skip(self, node: Node, scope: ScopeT) -> None:
        """A node that names nothing used (each language's handlers say which and why)."""
