"""The project's relation graph: every file's outline, with each written name resolved to a symbol.

A name is looked up the way the language would: in the enclosing declarations
(a function's nested definitions, a Java class's members), the module or package
(Go and Java packages span files), the file's imports, then the language's
built-ins. A dotted rest is followed member by member: into a module, through a
class and its bases, and through a field's or variable's declared type. A name
that leads outside the project becomes an external node (``boto3.client``) or,
from the standard library or the language itself, a native one
(``builtins.len``, ``fmt.Println``), which ``omit_native`` drops. What cannot be
followed (a call on a value whose type the code does not state) is left out
rather than guessed; a chain that stops part-way is kept as a reference to the
last symbol it reached.

Go writes no ``implements``: a type implements an interface when its method
set (embedded types included) has every method the interface asks for.
"""

from __future__ import annotations

import os
import posixpath
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mnemo.outline.languages import LanguageSpec
from mnemo.outline.structure import FileOutline, Import, Reference

TYPE_KINDS = frozenset({"class", "interface", "struct", "type", "enum", "record", "annotation"})
VALUE_KINDS = frozenset({"field", "variable", "constant"})
MODULE_KINDS = frozenset({"module", "package"})
#: How many owners one member lookup may look into (a class, its bases, a field's type...).
MAX_OWNERS = 64


@dataclass(frozen=True)
class Node:
    id: str
    name: str
    kind: str
    path: str | None = None
    line: int | None = None
    end_line: int | None = None
    #: Outside the project: 'native' (standard library, built-in) or 'external' (another package).
    origin: str = "project"

    @property
    def native(self) -> bool:
        return self.origin == "native"


@dataclass(frozen=True)
class Edge:
    kind: str
    target: str
    line: int


@dataclass
class Graph:
    language: str
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: dict[str, list[Edge]] = field(default_factory=lambda: defaultdict(list))
    #: Qualified name -> node ids (several files may declare the same name).
    by_name: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    #: Project symbols in file and line order (what outline_project lists).
    order: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    #: Module or package node -> the files it spans (one, except for Go and Java packages).
    module_files: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    _grouped: dict[str, dict[str, list[Edge]]] = field(default_factory=dict, repr=False)

    def relations(self, node_id: str) -> list[Edge]:
        return self.edges.get(node_id, [])

    def relations_by_kind(self, node_id: str) -> dict[str, list[Edge]]:
        """The node's edges grouped by kind, each group in line order: sorted once per graph, not per tree."""
        grouped = self._grouped.get(node_id)
        if grouped is None:
            grouped = defaultdict(list)
            for edge in sorted(self.relations(node_id), key=lambda edge: (edge.line, edge.target)):
                grouped[edge.kind].append(edge)
            self._grouped[node_id] = grouped
        return grouped

    def declared_in(self, path: str) -> list[str]:
        """The symbols declared in ``path``, its module or package first."""
        return [node_id for node_id in self.order if self.in_file(node_id, path)]

    def in_file(self, node_id: str, path: str) -> bool:
        return self.nodes[node_id].path == path or path in self.module_files.get(node_id, ())

    def find(self, name: str, path: str | None = None) -> list[str]:
        """Project symbols named ``name``: the qualified name, or else every symbol whose name ends with
        ``.name`` (``RegisterExtractor``, ``(*OutlineManager).RegisterExtractor``); in ``path`` if given."""
        exact = [node_id for node_id in self.by_name.get(name, []) if path is None or self.in_file(node_id, path)]
        if exact:
            return exact
        suffix = "." + name
        return [
            node_id
            for node_id in self.order
            if self.nodes[node_id].name.endswith(suffix) and (path is None or self.in_file(node_id, path))
        ]


class _Builder:
    def __init__(
        self, spec: LanguageSpec, outlines: Iterable[FileOutline], go_modules: Mapping[str, str] | None = None
    ) -> None:
        self.spec = spec
        #: Go module path -> the folder of its go.mod ('.' at the root), longest path first.
        self.go_modules = dict(sorted((go_modules or {}).items(), key=lambda item: -len(item[0])))
        self.outlines = sorted(outlines, key=lambda outline: outline.path)
        self.graph = Graph(language=spec.name, files=[outline.path for outline in self.outlines])
        #: (path, qualified name) -> node id; package symbols map every file of the package to one node.
        self.local: dict[tuple[str, str], str] = {}
        #: node id -> short name -> member ids.
        self.members: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        #: module key or module name -> module node ids.
        self.modules: dict[str, list[str]] = defaultdict(list)
        self.module_of: dict[str, str] = {}  # path -> its module node id
        self.exports: dict[str, dict[str, str]] = {}  # module node id -> exported name -> local name
        self.bases: dict[str, list[str]] = defaultdict(list)
        self.declared_type: dict[str, str] = {}  # value node id -> its type's node id
        self.container: dict[str, str] = {}  # node id -> the id of the declaration it is in
        self.seen: set[tuple[str, str, str]] = set()
        self._found: dict[str, list[str]] = {}  # find_module's answers: every module is known before a lookup

    # ------------------------------------------------------------ nodes
    def build(self) -> Graph:
        for outline in self.outlines:
            self.add_symbols(outline)
        # Bases first: member lookups through a class follow them, declared types next: chains follow them.
        for kinds in (("extends", "implements"), ("type_of",), ("calls", "references")):
            for outline in self.outlines:
                for reference in outline.references:
                    if reference.kind in kinds:
                        self.resolve_reference(outline, reference)
        for outline in self.outlines:
            for item in outline.imports:
                self.resolve_import(outline, item)
        if self.spec.name == "go":
            self.implied_implements()
        self.reverse_calls()
        return self.graph

    def add_node(self, node: Node) -> str:
        if node.id not in self.graph.nodes:
            self.graph.nodes[node.id] = node
            if node.origin == "project":
                self.graph.by_name[node.name].append(node.id)
                self.graph.order.append(node.id)
        return node.id

    def add_symbols(self, outline: FileOutline) -> None:
        for symbol in outline.symbols:
            merged = self.spec.package_scope and symbol.kind == "package"
            node_id = f"{symbol.name}@{outline.module_key}/" if merged else f"{symbol.name}@{outline.path}"
            node = Node(node_id, symbol.name, symbol.kind, outline.path, symbol.line, symbol.end_line)
            self.add_node(node)
            self.local[(outline.path, symbol.name)] = node_id
            if symbol.container is None:
                self.module_of[outline.path] = node_id
                self.graph.module_files[node_id].append(outline.path)
                # Java imports name a package by its declared name; the others by the key (a Go import path
                # ends with the directory, never with the package's name).
                for key in {outline.module_key, outline.module if self.spec.name == "java" else outline.module_key}:
                    if node_id not in self.modules[key]:
                        self.modules[key].append(node_id)
                self.exports.setdefault(node_id, {}).update(outline.exports)
                continue
            container = self.local.get((outline.path, symbol.container))
            if container is None:
                continue
            if symbol.kind != "constructor":  # ``Invoice`` inside Invoice names the class, not its constructor
                self.members[container][symbol.short].append(node_id)
            self.container.setdefault(node_id, container)
            self.edge(container, "contains", node_id, symbol.line)

    def external(self, name: str, native: bool) -> str:
        origin = "native" if native else "external"
        return self.add_node(Node(f"{origin}:{name}", name, origin, origin=origin))

    def edge(self, source: str, kind: str, target: str, line: int) -> None:
        if source == target or (source, kind, target) in self.seen:
            return
        self.seen.add((source, kind, target))
        self.graph.edges[source].append(Edge(kind, target, line))

    # ------------------------------------------------------------ lookups
    def find_module(self, module: str, importer: str | None = None) -> list[str]:
        """The project modules an import names, the likeliest first for a file at ``importer``."""
        if module not in self._found:
            self._found[module] = self._modules_named(module)
        found = self._found[module]
        return found if len(found) < 2 or importer is None else sorted(found, key=lambda m: self._rank(m, importer))

    def _modules_named(self, module: str) -> list[str]:
        if not module:
            return []
        if self.spec.name == "go":
            return self._go_package(module)
        candidates = [module, f"{module}/index"] if self.spec.separator == "/" else [module]
        for candidate in candidates:
            if candidate in self.modules:
                return list(self.modules[candidate])
        if self.spec.name != "python" or self.spec.is_native_module(module):
            return []
        # A module beneath a source root (``src/app/models.py`` imported as ``app.models`` when ``src`` is no
        # package): the trailing parts name it, and the leading parts must be the folders above it, so that
        # ``requests.utils`` never lands on the project's own ``utils.py``.
        parts = module.split(".")
        for start in range(1, len(parts)):
            found = [m for m in self.modules.get(".".join(parts[start:]), []) if self._below(m, parts[:start])]
            if found:
                return found
        return []

    def _below(self, module: str, folders: list[str]) -> bool:
        """Whether the folders holding ``module``'s top package end with ``folders``."""
        path = (self.graph.nodes[module].path or "").rsplit(".", 1)[0].removesuffix("/__init__")
        above = path.split("/")[: -len(self.graph.nodes[module].name.split("."))]
        return len(above) >= len(folders) and above[len(above) - len(folders) :] == folders

    def _go_package(self, path: str) -> list[str]:
        """A Go import path through the workspace's go.mod files: ``example.com/shop/inventory`` is the folder
        ``inventory`` beside the go.mod of module ``example.com/shop``. Anything else is outside the project
        (the standard library when the path has no dot in its first element)."""
        for module, folder in self.go_modules.items():
            if path == module or path.startswith(module + "/"):
                key = posixpath.normpath(posixpath.join(folder, path[len(module) :].lstrip("/")))
                return list(self.modules.get(key, []))
        return []

    def _rank(self, module: str, importer: str) -> tuple[int, int, int]:
        """Same language as the importer, then not a declaration file, then the longest shared directory."""
        path = self.graph.nodes[module].path or ""
        same_language = 0 if self.spec.claims(path) == self.spec.claims(importer) else 1
        declaration = 1 if path.endswith((".d.ts", ".d.mts", ".d.cts")) else 0
        shared = len(os.path.commonpath([os.path.dirname(path) or ".", os.path.dirname(importer) or "."]))
        return same_language, declaration, -shared

    def member(self, owner: str, name: str, seen: set[str] | None = None) -> str | None:
        """``name`` inside ``owner``: its members, its bases' (a class), its type's (a field or variable).
        Each owner is looked into once per lookup, so cyclic bases (legal in Go) cost nothing extra."""
        seen = set() if seen is None else seen
        if owner in seen or len(seen) > MAX_OWNERS:
            return None
        seen.add(owner)
        found = self.members.get(owner, {}).get(name)
        if found:
            return found[0]
        kind = self.graph.nodes[owner].kind
        if kind in MODULE_KINDS:
            exported = self.exports.get(owner, {}).get(name)
            if exported is not None and exported != name:
                return self.member(owner, exported, seen - {owner})
            if self.spec.name == "python":
                submodule = self.find_module(f"{self.graph.nodes[owner].name}.{name}")
                return submodule[0] if submodule else None
            return None
        if kind in TYPE_KINDS:
            for base in self.bases.get(owner, []):
                through = self.member(base, name, seen)
                if through is not None:
                    return through
            return None
        typed = self.declared_type.get(owner)
        return self.member(typed, name, seen) if typed is not None else None

    def in_scope(self, outline: FileOutline, source: str, name: str) -> str | None:
        """A bare name seen from ``source``: enclosing declarations outward, then the module or package."""
        current: str | None = self.local.get((outline.path, source))
        while current is not None:
            if self.graph.nodes[current].kind not in TYPE_KINDS:
                found = self.members.get(current, {}).get(name)
                if found:
                    return found[0]
            elif self.spec.bare_members:
                through = self.member(current, name)
                if through is not None:
                    return through
            current = self.container.get(current)
        return None

    # ------------------------------------------------------------ resolution
    def resolve_name(
        self, outline: FileOutline, source: str, written: str, through: list[str] | None = None
    ) -> tuple[str | None, bool]:
        """The node a dotted name reaches, and whether the whole name was followed."""
        parts = written.split(".")
        head = self.in_scope(outline, source, parts[0]) or self.through_imports(outline, parts[0])
        if head is not None:
            return self.follow(head, parts[1:], through)
        if parts[0] in self.spec.builtins:
            return self.external(f"{self.spec.builtin_module}.{written}", native=True), True
        return None, False

    def through_imports(self, outline: FileOutline, head: str) -> str | None:
        """What the file's imports bind ``head`` to: an import by that name, else a ``*`` import holding it."""
        for item in outline.imports:
            if item.alias == head:
                if item.member is None and item.module.startswith(head + "."):
                    # Python's ``import a.b`` binds ``a``; ``a.b`` is then followed as a submodule.
                    modules = self.find_module(head, outline.path)
                    return modules[0] if modules else self.external(head, self.spec.is_native_module(head))
                return self.import_target(item, outline.path)
        for item in outline.imports:
            if item.member == "*":
                for module in self.find_module(item.module, outline.path):
                    star = self.member(module, head)
                    if star is not None:
                        return star
        return None

    def import_target(self, item: Import, importer: str) -> str:
        """The module or member an import names: a project symbol, else an external or native node."""
        modules = self.find_module(item.module, importer)
        if item.member in (None, "*"):
            return modules[0] if modules else self.external(item.module, self.spec.is_native_module(item.module))
        if modules:
            found = self.member(modules[0], item.member)
            return found or self.external(f"{item.module}.{item.member}", native=False)
        if self.spec.separator == ".":
            # Java's ``import static com.acme.Money.round``: the module is a class in a package.
            package, _, owner = item.module.rpartition(".")
            for module in self.find_module(package):
                cls = self.member(module, owner)
                found = self.member(cls, item.member) if cls is not None else None
                if found is not None:
                    return found
        return self.external(f"{item.module}.{item.member}", self.spec.is_native_module(item.module))

    def follow(self, node_id: str, parts: list[str], through: list[str] | None = None) -> tuple[str, bool]:
        """Member by member from ``node_id``; the fields and variables passed on the way go to ``through``."""
        current = node_id
        for position, part in enumerate(parts):
            if through is not None and self.graph.nodes[current].kind in VALUE_KINDS:
                through.append(current)
            node = self.graph.nodes[current]
            if node.origin != "project":
                return self.external(".".join([node.name, *parts[position:]]), node.native), True
            found = self.member(current, part)
            if found is None:
                typed = self.declared_type.get(current)
                if typed is not None and self.graph.nodes[typed].origin != "project":
                    # A field typed ``list[Line]``: ``lines.append`` is the standard library's list.append.
                    outside = self.graph.nodes[typed]
                    return self.external(".".join([outside.name, *parts[position:]]), outside.native), True
                return current, False
            current = found
        return current, True

    def resolve_reference(self, outline: FileOutline, reference: Reference) -> None:
        source = self.local.get((outline.path, reference.source))
        if source is None:
            return
        through: list[str] = []
        if reference.via_type is not None:
            typed, whole = self.resolve_name(outline, reference.source, reference.via_type)
            if typed is None or not whole:
                return
            target, whole = self.follow(typed, reference.target.split("."), through)
        else:
            found, whole = self.resolve_name(outline, reference.source, reference.target, through)
            if found is None:
                return
            target = found
        for passed in through:  # ``self._orders.get`` uses the field _orders as well as calling dict.get
            self.edge(source, "references", passed, reference.line)
        if not whole and self.graph.nodes[target].kind in MODULE_KINDS | TYPE_KINDS and reference.via_type:
            return  # a member the type does not declare (a dynamic attribute): nothing to show
        self.edge(source, reference.kind if whole else "references", target, reference.line)
        if reference.kind in ("extends", "implements") and whole:
            self.bases[source].append(target)
        elif reference.kind == "type_of" and whole and source not in self.declared_type:
            self.declared_type[source] = target

    def resolve_import(self, outline: FileOutline, item: Import) -> None:
        module = self.module_of.get(outline.path)
        if module is None:
            return
        if item.member == "*" or (not item.alias and item.member is None):
            found = self.find_module(item.module, outline.path)
            target = found[0] if found else self.external(item.module, self.spec.is_native_module(item.module))
        else:
            target = self.import_target(item, outline.path)
        self.edge(module, "imports", target, item.line)

    # ------------------------------------------------------------ derived relations
    def implied_implements(self) -> None:
        """Go: a named type implements each interface whose methods its method set holds."""
        interfaces = {
            node_id: self.method_set(node_id)
            for node_id, node in self.graph.nodes.items()
            if node.kind == "interface" and node.origin == "project"
        }
        for node_id, node in list(self.graph.nodes.items()):
            if node.origin != "project" or node.kind not in ("struct", "type"):
                continue
            methods = self.method_set(node_id)
            for interface, wanted in interfaces.items():
                if wanted and wanted <= methods:
                    self.edge(node_id, "implements", interface, node.line or 0)

    def method_set(self, node_id: str) -> set[str]:
        """Method names of a type and of every type it embeds, each type visited once."""
        names: set[str] = set()
        stack, seen = [node_id], {node_id}
        while stack:
            current = stack.pop()
            names |= {
                short
                for short, ids in self.members.get(current, {}).items()
                if any(self.graph.nodes[member].kind == "method" for member in ids)
            }
            fresh = [base for base in self.bases.get(current, []) if base not in seen]
            seen.update(fresh)
            stack.extend(fresh)
        return names

    def reverse_calls(self) -> None:
        for source, edges in list(self.graph.edges.items()):
            for edge in list(edges):
                if edge.kind == "calls" and self.graph.nodes[edge.target].origin == "project":
                    self.edge(edge.target, "called_by", source, edge.line)


def build_graph(
    spec: LanguageSpec, outlines: Iterable[FileOutline], go_modules: Mapping[str, str] | None = None
) -> Graph:
    """The resolved graph of ``outlines``; ``go_modules`` maps each go.mod's module path to its folder."""
    return _Builder(spec, outlines, go_modules).build()
