"""Python: modules, classes, functions, methods, fields and module variables, with what their code uses.

Names are ``module.Class.method``, the module named the way Python imports it:
the file's path from the top of its package (the highest directory holding an
``__init__.py``), so ``layers/shared/mnemo/files/store.py`` is
``mnemo.files.store``. Relations written here: calls, extends (base classes;
Python has no ``implements``), references (decorators, parameter annotations,
names read in code) and type_of (annotated fields and variables, return
annotations). ``self`` and ``cls`` have their class as type, a parameter its
annotation, and a local assigned ``Name(...)`` the class it calls, so
``self._store.get()`` can be followed through the field's type.
"""

from __future__ import annotations

import builtins
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mnemo.outline.extractor import OutlineRecorder, line_of, text
from mnemo.outline.languages import LanguageSpec
from mnemo.outline.structure import FileOutline, Import

if TYPE_CHECKING:
    from tree_sitter import Node

_CONSTANT = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
_DOTTED_IN_STRING = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
#: Pattern nodes whose identifiers bind names (for targets, with/except aliases, comprehension variables).
_COMPREHENSIONS = {"list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression"}
_BINDING_PARENTS = {"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "list_splat_pattern"}


def module_key(path: str, paths: frozenset[str]) -> str:
    """The module Python imports ``path`` as: its package chain (directories with ``__init__.py``) and stem."""
    parts = path.removesuffix(".pyi").removesuffix(".py").split("/")
    names = [] if parts[-1] == "__init__" else [parts[-1]]
    directories = parts[:-1]
    while directories and "/".join([*directories, "__init__.py"]) in paths:
        names.insert(0, directories.pop())
    return ".".join(names) or parts[-1]


def _package_of(module: str, path: str) -> str:
    """The package relative imports start from: the module itself for an ``__init__``, else its parent."""
    if path.endswith(("/__init__.py", "/__init__.pyi")) or path in ("__init__.py", "__init__.pyi"):
        return module
    return module.rpartition(".")[0]


@dataclass
class _Scope:
    #: The symbol references found here are attributed to.
    source: str
    #: What a name declared here is prefixed with.
    qualifier: str
    #: module, class or function: what a name declared here becomes.
    where: str
    #: The qualified name of the class whose method this scope is in (``self.x = ...`` declares its fields).
    cls: str | None = None
    #: Local names with a known type (as written): ``self`` -> the class, ``store`` -> ``RecordStore``.
    types: dict[str, str] = field(default_factory=dict)
    #: Every local name: never a reference to anything outside.
    local: set[str] = field(default_factory=set)

    def inner(self, source: str, where: str, cls: str | None) -> _Scope:
        """A function's or class's scope: closures still see the enclosing function's typed names."""
        keep = where == "function" and self.where == "function"
        return _Scope(
            source=source,
            qualifier=source,
            where=where,
            cls=cls,
            types=dict(self.types) if keep else {},
            local=set(self.local) if keep else set(),
        )


class _Walker(OutlineRecorder):
    def __init__(self, path: str, module: str) -> None:
        super().__init__()
        self.path = path
        self.module = module

    # ------------------------------------------------------------ records
    def refer_chain(self, scope: _Scope, kind: str, chain: list[str], node: Node) -> None:
        """A dotted name used in code: through a typed local's type, never a plain local, else as written."""
        head = chain[0]
        if head in scope.types:
            if len(chain) > 1:
                self.refer(scope.source, kind, ".".join(chain[1:]), node, scope.types[head])
        elif head not in scope.local:
            self.refer(scope.source, kind, ".".join(chain), node)

    def written_types(self, node: Node, type_parameters: frozenset[str]) -> list[tuple[str, Node]]:
        """Each name its own node: a string annotation's names are on the string's line."""
        return _type_names(node)

    # ------------------------------------------------------------ walk
    def walk(self, root: Node) -> FileOutline:
        self.declare(self.module, "module", root, None, self.module.rpartition(".")[2])
        self.visit_block(root, _Scope(source=self.module, qualifier=self.module, where="module"))
        return self.file_outline(root, path=self.path, language="python", module=self.module, module_key=self.module)

    def visit_block(self, node: Node, scope: _Scope) -> None:
        for child in node.named_children:
            self.visit(child, scope)

    def visit(self, node: Node, scope: _Scope) -> None:
        kind = node.type
        if kind == "import_statement":
            self.read_import(node)
        elif kind == "import_from_statement":
            self.read_import_from(node)
        elif kind == "decorated_definition":
            definition = node.child_by_field_name("definition")
            if definition is not None:
                decorators = [child for child in node.named_children if child.type == "decorator"]
                self.definition(definition, scope, decorators)
        elif kind in ("class_definition", "function_definition"):
            self.definition(node, scope, [])
        elif kind == "assignment":
            self.assignment(node, scope)
        elif kind == "call":
            self.call(node, scope)
        elif kind in ("identifier", "attribute"):
            chain = _chain(node)
            if chain is not None:
                self.refer_chain(scope, "references", chain, node)
            else:
                self.visit_block(node, scope)
        elif kind in _COMPREHENSIONS:
            # The for clauses bind the names the comprehension's body uses before it.
            for clause in node.named_children:
                if clause.type == "for_in_clause":
                    self.bind(clause.child_by_field_name("left"), scope)
            self.visit_block(node, scope)
        elif kind in ("for_statement", "for_in_clause"):
            self.bind(node.child_by_field_name("left"), scope)
            for child in node.named_children:
                if child != node.child_by_field_name("left"):
                    self.visit(child, scope)
        elif kind in ("as_pattern_target", "named_expression"):
            target = node.child_by_field_name("name") if kind == "named_expression" else node
            self.bind(target, scope)
            value = node.child_by_field_name("value")
            if value is not None:
                self.visit(value, scope)
        elif kind == "lambda":
            self.bind(node.child_by_field_name("parameters"), scope)
            body = node.child_by_field_name("body")
            if body is not None:
                self.visit(body, scope)
        elif kind == "keyword_argument":
            value = node.child_by_field_name("value")
            if value is not None:
                self.visit(value, scope)
        elif kind in ("string", "comment", "global_statement", "nonlocal_statement", "type"):
            return
        else:
            self.visit_block(node, scope)

    def bind(self, target: Node | None, scope: _Scope) -> None:
        """Every identifier a binding target names becomes local (attributes and subscripts are uses)."""
        if target is None:
            return
        if target.type == "identifier":
            scope.local.add(text(target))
        elif target.type in _BINDING_PARENTS or target.type.endswith(("parameters", "parameter", "pattern")):
            for child in target.named_children:
                if child.type == "identifier" or child.type not in ("attribute", "subscript", "type"):
                    self.bind(child, scope)
        elif target.type == "as_pattern_target":
            for child in target.named_children:
                self.bind(child, scope)
        else:
            self.visit(target, scope)

    # ------------------------------------------------------------ imports
    def read_import(self, node: Node) -> None:
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                module = text(child.child_by_field_name("name"))
                alias = text(child.child_by_field_name("alias"))
            else:
                module = text(child)
                alias = module.split(".")[0]
                # ``import a.b`` binds ``a``, but the file uses it as ``a.b``: record the module imported.
                if module != alias:
                    self.imports.append(Import(alias, module, None, line_of(node)))
                    continue
            self.imports.append(Import(alias, module, None, line_of(node)))

    def read_import_from(self, node: Node) -> None:
        module = self.absolute(node.child_by_field_name("module_name"))
        if any(child.type == "wildcard_import" for child in node.named_children):
            self.imports.append(Import("", module, "*", line_of(node)))
            return
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                member, alias = text(child.child_by_field_name("name")), text(child.child_by_field_name("alias"))
            else:
                member = alias = text(child)
            self.imports.append(Import(alias, module, member, line_of(node)))

    def absolute(self, name: Node | None) -> str:
        if name is None:
            return ""
        if name.type != "relative_import":
            return text(name)
        prefix = next((child for child in name.named_children if child.type == "import_prefix"), None)
        rest = next((text(child) for child in name.named_children if child.type == "dotted_name"), "")
        package = _package_of(self.module, self.path)
        for _ in range(max(0, len(text(prefix)) - 1)):
            package = package.rpartition(".")[0]
        return ".".join(part for part in (package, rest) if part)

    # ------------------------------------------------------------ declarations
    def definition(self, node: Node, scope: _Scope, decorators: list[Node]) -> None:
        short = text(node.child_by_field_name("name"))
        name = f"{scope.qualifier}.{short}"
        container = scope.qualifier
        is_class = node.type == "class_definition"
        kind = "class" if is_class else "method" if scope.where == "class" else "function"
        if scope.where == "function":
            scope.local.add(short)
        self.declare(name, kind, node, container, short)
        inner = scope.inner(name, "class" if is_class else "function", name if is_class else scope.cls)
        for decorator in decorators:
            self.visit_block(decorator, inner)
        if is_class:
            self.bases(node, inner)
        else:
            self.signature(node, inner, scope, decorators)
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit_block(body, inner)

    def bases(self, node: Node, scope: _Scope) -> None:
        superclasses = node.child_by_field_name("superclasses")
        for child in superclasses.named_children if superclasses is not None else []:
            chain = _chain(child)
            if chain is not None:
                self.refer(scope.source, "extends", ".".join(chain), child)
            else:
                self.visit(child, scope)

    def signature(self, node: Node, inner: _Scope, outer: _Scope, decorators: list[Node]) -> None:
        parameters = node.child_by_field_name("parameters")
        is_static = any(text(decorator).lstrip("@").strip() == "staticmethod" for decorator in decorators)
        for position, parameter in enumerate(parameters.named_children if parameters is not None else []):
            name_node = parameter.child_by_field_name("name") or next(
                (child for child in parameter.named_children if child.type == "identifier"), None
            )
            if parameter.type == "identifier":
                name_node = parameter
            if name_node is None:
                continue
            name = text(name_node)
            inner.local.add(name)
            annotation = parameter.child_by_field_name("type")
            if position == 0 and outer.where == "class" and not is_static:
                inner.types[name] = self.relative(outer.source)
            elif annotation is not None:
                self.refer_types(inner.source, "references", annotation)
                written = _single_type(annotation)
                if written is not None:
                    inner.types[name] = written
            default = parameter.child_by_field_name("value")
            if default is not None:
                self.visit(default, inner)
        self.refer_types(inner.source, "type_of", node.child_by_field_name("return_type"))

    def assignment(self, node: Node, scope: _Scope) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        annotation = node.child_by_field_name("type")
        written = _single_type(annotation) if annotation is not None else None
        if written is None and right is not None:
            written = self.constructed_type(right, scope)
        source = scope.source
        if left is not None and left.type == "identifier" and scope.where in ("module", "class"):
            short = text(left)
            if not (short.startswith("__") and short.endswith("__")):
                kind = "field" if scope.where == "class" else "constant" if _CONSTANT.match(short) else "variable"
                source = f"{scope.qualifier}.{short}"
                self.declare(source, kind, node, scope.qualifier, short)
                self.refer_types(source, "type_of", annotation)
        elif left is not None and left.type == "attribute" and self.on_self(left, scope):
            short = text(left.child_by_field_name("attribute"))
            owner = scope.cls or scope.qualifier
            name = f"{owner}.{short}"
            if self.declare(name, "field", node, owner, short):
                if annotation is not None:
                    self.refer_types(name, "type_of", annotation)
                elif written is not None:
                    self.refer(name, "type_of", written, node)
        elif left is not None and scope.where == "function":
            self.bind(left, scope)
            if left.type == "identifier" and written is not None:
                scope.types[text(left)] = written
            if annotation is not None:
                self.refer_types(scope.source, "references", annotation)
        elif left is not None and left.type in ("attribute", "subscript"):
            self.visit(left, scope)
        elif left is not None:
            self.bind(left, scope)
        if right is not None:
            self.visit(right, _Scope(source, scope.qualifier, scope.where, scope.cls, scope.types, scope.local))

    def relative(self, name: str) -> str:
        """A name of this module as its own code writes it: ``Outer.Inner`` for ``module.Outer.Inner``."""
        return name.removeprefix(self.module + ".")

    def on_self(self, target: Node, scope: _Scope) -> bool:
        """``self.x`` inside a method (the object is the method's first parameter)."""
        owner = target.child_by_field_name("object")
        return (
            scope.where == "function"
            and scope.cls is not None
            and owner is not None
            and owner.type == "identifier"
            and scope.types.get(text(owner)) == self.relative(scope.cls)
        )

    def constructed_type(self, value: Node, scope: _Scope) -> str | None:
        """``Name(...)``: a value of class ``Name`` (a capitalised callee); a typed parameter's type when the
        value is that parameter."""
        if value.type == "identifier":
            return scope.types.get(text(value))
        if value.type != "call":
            return None
        chain = _chain(value.child_by_field_name("function"))
        if chain is None or not chain[-1][:1].isupper() or chain[0] in scope.local:
            return None
        return ".".join(chain)

    def call(self, node: Node, scope: _Scope) -> None:
        function = node.child_by_field_name("function")
        chain = _chain(function)
        if chain is not None and function is not None:
            self.refer_chain(scope, "calls", chain, function)
        elif function is not None:
            self.visit(function, scope)
        arguments = node.child_by_field_name("arguments")
        if arguments is not None:
            self.visit_block(arguments, scope)


def _chain(node: Node | None) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"] when made of names only (no call, subscript or literal in between)."""
    if node is None:
        return None
    if node.type == "identifier":
        return [text(node)]
    if node.type == "attribute":
        head = _chain(node.child_by_field_name("object"))
        member = node.child_by_field_name("attribute")
        return None if head is None or member is None else [*head, text(member)]
    return None


def _single_type(annotation: Node | None) -> str | None:
    """The one class an annotation names (``Store``, ``x.Store``, ``Store | None``, ``"Store"``), else None."""
    names = [name for name, _ in _type_names(annotation) if name not in ("None", "Optional")]
    return names[0] if len(names) == 1 else None


def _type_names(annotation: Node | None) -> list[tuple[str, Node]]:
    """Every dotted name in a type annotation, string annotations included."""
    if annotation is None:
        return []
    found: list[tuple[str, Node]] = []
    stack = [annotation]
    while stack:
        node = stack.pop()
        chain = _chain(node)
        if chain is not None:
            found.append((".".join(chain), node))
        elif node.type == "string":
            content = "".join(text(child) for child in node.named_children if child.type == "string_content")
            found.extend((match.group(0), node) for match in _DOTTED_IN_STRING.finditer(content))
        elif node.type != "none":
            stack.extend(reversed(node.named_children))
    return [(name, node) for name, node in found if name != "None"]


def _is_native_module(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


def _extract(root: Node, source: bytes, path: str, paths: frozenset[str]) -> FileOutline:
    return _Walker(path, module_key(path, paths)).walk(root)


def _grammar(extension: str) -> object:
    import tree_sitter_python

    return tree_sitter_python.language()


PYTHON = LanguageSpec(
    name="python",
    extensions=(".py", ".pyi"),
    grammar=_grammar,
    extract=_extract,
    module_key=module_key,
    separator=".",
    is_native_module=_is_native_module,
    builtins=frozenset(name for name in dir(builtins) if not name.startswith("_")),
    builtin_module="builtins",
)
