"""TypeScript and JavaScript (one extractor): modules, classes, interfaces, functions and what their code uses.

A file is a module named by its workspace path without the extension
(``web/src/cart.ts`` is ``web/src/cart``); its declarations are
``web/src/cart.Cart``, ``web/src/cart.Cart.add``, ``web/src/cart.total``. Imports
(``import``, ``import x = require()``, ``require()`` bound to a name, re-exports
``export ... from``) name the module resolved against the importing file when
the specifier is relative, else as written. ``export default X`` and ``export
{ a as b }`` fill ``FileOutline.exports``. Relations written here: extends and
implements (class and interface heritage), type_of (property, variable and
parameter-property annotations, a property or module variable initialised with
``new Foo()``, return annotations, a type alias's definition), calls (calls and
``new``) and references (parameter annotations, types in bodies, decorators,
JSX components, names read in code that are not locals). ``this``, a parameter
or local with a written type (``cart: Cart``, ``const c = new Cart()``) lend
their type to a call or access through them as ``via_type``; a chain starting
from a call result or an untyped local yields nothing. JavaScript has no types,
so only ``new`` gives a local one.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from mnemo.outline.extractor import CodeWalker, Handler, line_of, text, top_level
from mnemo.outline.languages import LanguageSpec
from mnemo.outline.structure import FileOutline, Import

if TYPE_CHECKING:
    from collections.abc import Callable

    from tree_sitter import Node

TYPESCRIPT_EXTENSIONS = (".ts", ".tsx", ".mts", ".cts")
JAVASCRIPT_EXTENSIONS = (".js", ".jsx", ".mjs", ".cjs")
#: What an import specifier may end with that the module key does not.
_SPECIFIER_EXTENSIONS = (".js", ".ts", ".tsx", ".mjs", ".cjs", ".jsx", ".mts", ".cts")
_NODE_CORE = (
    "fs path http https crypto os url util events stream child_process buffer assert zlib net readline "
    "worker_threads timers querystring dns tls process perf_hooks"
)
_NODE_CORE_MODULES = frozenset(_NODE_CORE.split())

_GLOBALS = (
    "console Math JSON Promise Array Object String Number Boolean Map Set WeakMap WeakSet Symbol Error TypeError "
    "RangeError Date RegExp BigInt parseInt parseFloat isNaN setTimeout clearTimeout setInterval clearInterval "
    "fetch globalThis undefined NaN Infinity structuredClone queueMicrotask require module exports process Buffer"
)
_TYPESCRIPT_TYPES = (
    "string number boolean void any unknown never object null undefined bigint symbol Record Partial Required "
    "Readonly Pick Omit ReturnType Awaited Exclude Extract NonNullable Parameters InstanceType Iterable AsyncIterable"
)
BUILTINS = frozenset(_GLOBALS.split()) | frozenset(_TYPESCRIPT_TYPES.split())

_CLASS_DECLARATIONS = {"class_declaration", "abstract_class_declaration", "class"}
_FUNCTION_DECLARATIONS = {"function_declaration", "generator_function_declaration", "function_signature"}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}
_VARIABLE_DECLARATIONS = {"lexical_declaration", "variable_declaration"}
_PARAMETERS = {"required_parameter", "optional_parameter"}
_METHOD_SIGNATURES = {"method_signature", "abstract_method_signature"}
#: What makes a constructor parameter a property as well.
_PROPERTY_MODIFIERS = {"accessibility_modifier", "readonly", "override_modifier"}
_FIELD_DEFINITIONS = {"public_field_definition", "field_definition"}
#: Type nodes that name a type; everything else in a type is structure around them.
_NAMED_TYPES = {"type_identifier", "nested_type_identifier", "predefined_type"}
_TYPES_IN_BODIES = frozenset({"type_annotation", "type_arguments", "generic_type", *_NAMED_TYPES})
#: Children under these fields name what is being declared, never something used.
_DECLARING_FIELDS = frozenset({"name", "label", "key", "property"})


# ------------------------------------------------------------------ modules ---
def module_key(path: str, paths: frozenset[str]) -> str:
    """The path without its extension: what a resolved import specifier names."""
    for extension in (*TYPESCRIPT_EXTENSIONS, *JAVASCRIPT_EXTENSIONS):
        if path.endswith(extension):
            return path.removesuffix(extension).removesuffix(".d")  # types.d.ts is imported as ./types
    return path


def resolve_specifier(specifier: str, path: str) -> str:
    """A relative specifier joined to the importing file's directory, extension dropped; any other as written."""
    if not specifier.startswith(("./", "../")) and specifier not in (".", ".."):
        return specifier
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), specifier))
    if joined == ".." or joined.startswith("../"):
        return specifier  # outside the workspace: nothing here can match it
    for extension in _SPECIFIER_EXTENSIONS:
        if joined.endswith(extension):
            return joined.removesuffix(extension)
    return joined


def is_native_module(module: str) -> bool:
    if module.startswith("node:"):
        return True
    return module.split("/", 1)[0] in _NODE_CORE_MODULES


# ------------------------------------------------------------------ types as written ---
def type_names(node: Node, type_parameters: frozenset[str]) -> list[str]:
    """Every named type in a written type, outermost first (``Promise<Item[]>`` -> Promise, Item)."""
    if node.type == "type_identifier":
        return [] if text(node) in type_parameters else [text(node)]
    if node.type in ("nested_type_identifier", "predefined_type"):
        return [text(node)]
    if node.type == "literal_type":
        value = node.named_children[0] if node.named_children else None
        return [text(value)] if value is not None and value.type in ("undefined", "null") else []
    if node.type == "type_query":  # typeof x: a value, not a type
        return []
    names: list[str] = []
    for child in node.named_children:
        names.extend(type_names(child, type_parameters))
    return names


def type_label(node: Node | None) -> str | None:
    """The one type a value has, as written: ``Cart`` for ``Cart``, ``Cart<T>`` or ``Cart | undefined``."""
    if node is None:
        return None
    if node.type in ("type_identifier", "nested_type_identifier", "predefined_type"):
        return text(node)
    if node.type == "generic_type":
        return type_label(node.child_by_field_name("name"))
    if node.type in ("type_annotation", "parenthesized_type"):
        return type_label(node.named_children[0]) if node.named_children else None
    if node.type == "union_type":
        labels = [type_label(child) for child in node.named_children if not _is_nullish(child)]
        return labels[0] if len(labels) == 1 else None
    return None


def _is_nullish(node: Node) -> bool:
    return node.type == "literal_type" and text(node) in ("undefined", "null")


def _created_type(value: Node | None) -> str | None:
    """``Cart`` for ``new Cart(...)``: the type a variable initialised so has."""
    if value is None or value.type != "new_expression":
        return None
    path = _dotted_path(value.child_by_field_name("constructor"))
    return ".".join(path) if path else None


def _declared_type_parameters(node: Node) -> set[str]:
    found = node.child_by_field_name("type_parameters")
    if found is None:
        return set()
    return {text(child.child_by_field_name("name")) for child in found.named_children}


def _dotted_path(node: Node | None) -> list[str] | None:
    """``this.items.push`` -> ["this", "items", "push"]; None when the expression does not start from a name."""
    if node is None:
        return None
    if node.type in ("identifier", "this", "super", "shorthand_property_identifier"):
        return [text(node)]
    if node.type == "non_null_expression":
        return _dotted_path(node.named_children[0]) if node.named_children else None
    if node.type == "member_expression":
        inner = _dotted_path(node.child_by_field_name("object"))
        name = node.child_by_field_name("property")
        return None if inner is None or name is None else [*inner, text(name)]
    return None


def _bound_names(pattern: Node | None) -> list[str]:
    """The names a declaration pattern binds: ``x``, ``{ a, b: c }`` -> a, c, ``[x, ...rest]`` -> x, rest."""
    if pattern is None:
        return []
    if pattern.type in ("identifier", "shorthand_property_identifier_pattern"):
        return [text(pattern)]
    if pattern.type == "pair_pattern":
        return _bound_names(pattern.child_by_field_name("value"))
    if pattern.type == "assignment_pattern":
        return _bound_names(pattern.child_by_field_name("left"))
    if pattern.type in ("object_pattern", "array_pattern", "rest_pattern", "object_assignment_pattern"):
        return [name for child in pattern.named_children for name in _bound_names(child)]
    return []


def _require_of(value: Node | None) -> str | None:
    """The specifier of ``require("x")``; None for any other value."""
    if value is None or value.type != "call_expression":
        return None
    function = value.child_by_field_name("function")
    arguments = value.child_by_field_name("arguments")
    if function is None or text(function) != "require" or arguments is None:
        return None
    strings = [child for child in arguments.named_children if child.type == "string"]
    return _string_value(strings[0]) if len(strings) == 1 == len(arguments.named_children) else None


def _string_value(node: Node | None) -> str:
    return "".join(text(child) for child in node.named_children) if node is not None else ""


# ------------------------------------------------------------------ the walk ---
@dataclass
class _Scope:
    """What code sees: whose references these are, the class ``this`` is, the locals and their written types."""

    source: str
    owner: str | None = None
    superclass: str | None = None
    type_parameters: frozenset[str] = frozenset()
    locals: dict[str, str | None] = field(default_factory=dict)

    def inner(self, source: str | None = None, type_parameters: set[str] | None = None) -> _Scope:
        """A nested function's scope: it still sees the enclosing locals, but its own do not leak out."""
        return _Scope(
            source or self.source,
            self.owner,
            self.superclass,
            self.type_parameters | (type_parameters or set()),
            dict(self.locals),
        )


class _ScriptOutline(CodeWalker[_Scope]):
    declaring_fields = _DECLARING_FIELDS
    types_in_bodies = _TYPES_IN_BODIES

    def __init__(self, path: str, module: str, typed: bool) -> None:
        super().__init__()
        self.path = path
        self.module = module
        self.language = "typescript" if typed else "javascript"

    def declare_member(self, short: str, kind: str, node: Node, container: str) -> str | None:
        """The new symbol's name, or None when the name is taken (an overload: the first one stands for all)."""
        name = f"{container}.{short}"
        if not short or not self.declare(name, kind, node, container, short):
            return None
        return name

    def written_types(self, node: Node, type_parameters: frozenset[str]) -> list[tuple[str, Node]]:
        """Every name in the written type, at the line where the type starts."""
        return [(name, node) for name in type_names(node, type_parameters)]

    def module_scope(self) -> _Scope:
        return _Scope(self.module)

    # -------------------------------------------------------------- imports and exports
    def read_import(self, node: Node) -> list[str]:
        """Reads an import statement; it declares no symbol (hence [])."""
        line = line_of(node)
        clause = next((c for c in node.named_children if c.type in ("import_clause", "import_require_clause")), None)
        written = (
            clause if clause is not None and clause.type == "import_require_clause" else node
        ).child_by_field_name("source")
        module = resolve_specifier(_string_value(written), self.path)
        if clause is None:
            self.imports.append(Import("", module, None, line))
        elif clause.type == "import_require_clause":  # import fs = require("fs")
            self.imports.append(Import(text(clause.named_children[0]), module, None, line))
        else:
            self.read_import_clause(clause, module, line)
        return []

    def read_import_clause(self, clause: Node, module: str, line: int) -> None:
        for part in clause.named_children:
            if part.type == "identifier":
                self.imports.append(Import(text(part), module, "default", line))
            elif part.type == "namespace_import":
                self.imports.append(Import(text(part.named_children[-1]), module, None, line))
            elif part.type == "named_imports":
                for specifier in part.named_children:
                    name = text(specifier.child_by_field_name("name"))
                    alias = specifier.child_by_field_name("alias")
                    self.imports.append(Import(text(alias) if alias else name, module, name, line))

    def read_require(self, pattern: Node | None, specifier: str, line: int) -> None:
        """``const x = require("./y")`` binds the module; ``const { a, b: c } = require(...)`` its members."""
        module = resolve_specifier(specifier, self.path)
        if pattern is not None and pattern.type == "identifier":
            self.imports.append(Import(text(pattern), module, None, line))
            return
        for child in pattern.named_children if pattern is not None else []:
            if child.type == "shorthand_property_identifier_pattern":
                self.imports.append(Import(text(child), module, text(child), line))
            elif child.type == "pair_pattern":
                for alias in _bound_names(child.child_by_field_name("value")):
                    self.imports.append(Import(alias, module, text(child.child_by_field_name("key")), line))

    def read_export(self, node: Node) -> list[str]:
        """Reads an export statement; returns the names of the symbols it declares."""
        is_default = any(child.type == "default" for child in node.children)
        declaration = node.child_by_field_name("declaration")
        value = node.child_by_field_name("value")
        source = node.child_by_field_name("source")
        if declaration is not None:
            names = self.read_statement(declaration)
            if is_default and names:
                self.exports["default"] = names[0].rpartition(".")[2]
            return names
        if value is not None and value.type == "identifier" and is_default:
            self.exports["default"] = text(value)
        elif value is not None:
            self.walk(value, self.module_scope())
        elif source is not None:
            self.read_reexport(node, resolve_specifier(_string_value(source), self.path))
        else:
            self.read_export_clause(node)
        return []

    def read_export_clause(self, node: Node) -> None:
        for clause in node.named_children:
            for specifier in clause.named_children if clause.type == "export_clause" else []:
                alias = specifier.child_by_field_name("alias")
                if alias is not None:
                    self.exports[text(alias)] = text(specifier.child_by_field_name("name"))

    def read_reexport(self, node: Node, module: str) -> None:
        """``export { a as b } from "./x"`` binds ``b`` to x's ``a`` for whoever imports this module."""
        line = line_of(node)
        clause = next((c for c in node.named_children if c.type in ("export_clause", "namespace_export")), None)
        if clause is None:
            self.imports.append(Import("", module, "*", line))
        elif clause.type == "namespace_export":
            self.imports.append(Import(text(clause.named_children[-1]), module, None, line))
        else:
            for specifier in clause.named_children:
                name = text(specifier.child_by_field_name("name"))
                alias = specifier.child_by_field_name("alias")
                self.imports.append(Import(text(alias) if alias else name, module, name, line))

    # -------------------------------------------------------------- declarations
    def read_statement(self, node: Node) -> list[str]:
        """Reads one top-level statement; returns the names of the symbols it declares."""
        reader = _STATEMENT_READERS.get(node.type)
        if reader is not None:
            return reader(self, node)
        self.walk(node, self.module_scope())
        return []

    def read_ambient(self, node: Node) -> list[str]:
        return [name for child in node.named_children for name in self.read_statement(child)]

    def read_class(self, node: Node, container: str | None = None) -> list[str]:
        name_node = node.child_by_field_name("name")
        container = container or self.module
        name = self.declare_member(text(name_node), "class", node, container) if name_node is not None else None
        if name is None:
            self.walk(node, self.module_scope())  # an anonymous class (export default class {})
            return []
        scope = _Scope(name, text(name_node), None, frozenset(_declared_type_parameters(node)))
        scope.superclass = self.read_class_heritage(node, scope)
        for child in node.named_children:
            if child.type == "decorator":
                self.walk(child, scope)
        body = node.child_by_field_name("body")
        decorators: list[Node] = []  # a member's decorators come before it, as siblings
        for member in body.named_children if body is not None else []:
            if member.type == "decorator":
                decorators.append(member)
                continue
            member_scope = _Scope(self.read_class_member(member, scope), scope.owner, None, scope.type_parameters)
            for decorator in decorators:
                self.walk(decorator, member_scope)
            decorators.clear()
        return [name]

    def read_class_heritage(self, node: Node, scope: _Scope) -> str | None:
        """Writes extends/implements; returns the superclass as written (the type ``super`` has)."""
        heritage = next((child for child in node.named_children if child.type == "class_heritage"), None)
        if heritage is None:
            return None
        clauses = [c for c in heritage.named_children if c.type in ("extends_clause", "implements_clause")]
        superclass = None
        if not clauses:  # JavaScript: class_heritage holds the extended expression itself
            return self.refer_extended(heritage.named_children[0], scope) if heritage.named_children else None
        for clause in clauses:
            if clause.type == "extends_clause":
                superclass = self.refer_extended(clause.child_by_field_name("value"), scope)
                self.refer_types(
                    scope.source, "references", clause.child_by_field_name("type_arguments"), scope.type_parameters
                )
            else:
                for written in clause.named_children:
                    self.refer_heritage(scope.source, "implements", written, scope.type_parameters)
        return superclass

    def refer_extended(self, value: Node | None, scope: _Scope) -> str | None:
        if value is None:
            return None
        path = _dotted_path(value)
        if path is None:
            self.walk(value, scope)  # a mixin call: extends Mixin(Base)
            return None
        self.refer(scope.source, "extends", ".".join(path), value)
        return ".".join(path)

    def refer_heritage(self, source: str, kind: str, written: Node, type_parameters: frozenset[str]) -> None:
        label = type_label(written)
        if label is not None:
            self.refer(source, kind, label, written)
        self.refer_types(source, "references", written.child_by_field_name("type_arguments"), type_parameters)

    def read_class_member(self, member: Node, scope: _Scope) -> str:
        """Reads a method, property or static block; returns the symbol its references come from."""
        if member.type == "method_definition" or member.type in _METHOD_SIGNATURES:
            return self.read_method(member, scope)
        if member.type in _FIELD_DEFINITIONS:
            return self.read_property(member, scope)
        if member.type == "class_static_block":
            self.walk(member, scope.inner())
        return scope.source

    def read_method(self, node: Node, scope: _Scope) -> str:
        name_node = node.child_by_field_name("name")
        computed = name_node is None or name_node.type == "computed_property_name"
        short = "" if computed else text(name_node)
        kind = "constructor" if short == "constructor" and scope.owner else "method"
        self.declare_member(short, kind, node, scope.source)
        # An overload or a getter's setter shares the first one's symbol; a computed name has none of its own.
        source = f"{scope.source}.{short}" if short else scope.source
        inner = _Scope(source, scope.owner, scope.superclass, scope.type_parameters | _declared_type_parameters(node))
        for child in node.named_children:
            if child.type == "decorator":
                self.walk(child, inner)
        if kind == "constructor":
            self.read_parameter_properties(node, scope)
        self.read_callable(node, inner, "type_of")
        return source

    def read_parameter_properties(self, constructor: Node, scope: _Scope) -> None:
        """``constructor(private store: Store)`` declares the field ``store`` too."""
        parameters = constructor.child_by_field_name("parameters")
        for parameter in parameters.named_children if parameters is not None else []:
            is_property = any(child.type in _PROPERTY_MODIFIERS for child in parameter.children)
            pattern = parameter.child_by_field_name("pattern")
            if parameter.type in _PARAMETERS and is_property and pattern is not None and pattern.type == "identifier":
                name = self.declare_member(text(pattern), "field", parameter, scope.source)
                if name is not None:
                    self.refer_types(name, "type_of", parameter.child_by_field_name("type"), scope.type_parameters)

    def read_callable(self, node: Node, scope: _Scope, return_kind: str) -> None:
        """Parameters, return type and body of a function, method or signature, seen from ``scope``."""
        parameters = node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
        if parameters is not None:
            self.bind_parameters(parameters, scope)
        self.refer_types(scope.source, return_kind, node.child_by_field_name("return_type"), scope.type_parameters)
        body = node.child_by_field_name("body")
        if body is not None:
            self.walk(body, scope)

    def read_property(self, node: Node, scope: _Scope) -> str:
        name_node = node.child_by_field_name("name") or node.child_by_field_name("property")
        if name_node is None or name_node.type == "computed_property_name":
            return scope.source
        self.declare_member(text(name_node), "field", node, scope.source)
        name = f"{scope.source}.{text(name_node)}"
        inner = _Scope(name, scope.owner, scope.superclass, scope.type_parameters)
        for child in node.named_children:
            if child.type == "decorator":
                self.walk(child, inner)
        self.read_typed_value(name, node, inner)
        return name

    def read_typed_value(self, name: str, node: Node, scope: _Scope) -> None:
        """A property's or variable's annotation (or ``new Foo()``) as its type, and what its value uses."""
        annotation = node.child_by_field_name("type")
        value = node.child_by_field_name("value")
        self.refer_types(name, "type_of", annotation, scope.type_parameters)
        created = _created_type(value) if annotation is None else None
        if created is not None:
            self.refer(name, "type_of", created, value or node)
        if value is not None and value.type in _FUNCTION_VALUES:
            self.read_callable(value, scope.inner(type_parameters=_declared_type_parameters(value)), "type_of")
        elif value is not None:
            self.walk(value, scope)

    def read_function(self, node: Node) -> list[str]:
        name_node = node.child_by_field_name("name")
        name = self.declare_member(text(name_node), "function", node, self.module) if name_node is not None else None
        source = name or (f"{self.module}.{text(name_node)}" if name_node is not None else self.module)
        scope = _Scope(source, type_parameters=frozenset(_declared_type_parameters(node)))
        self.read_callable(node, scope, "type_of")
        return [name] if name else []

    def read_variables(self, node: Node) -> list[str]:
        keyword = text(node.child_by_field_name("kind")) or text(node.children[0])
        kind = "constant" if keyword == "const" else "variable"
        names: list[str] = []
        for declarator in node.named_children:
            if declarator.type == "variable_declarator":
                names.extend(self.read_module_variable(declarator, kind))
        return names

    def read_module_variable(self, declarator: Node, kind: str) -> list[str]:
        pattern = declarator.child_by_field_name("name")
        value = declarator.child_by_field_name("value")
        specifier = _require_of(value)
        if specifier is not None:
            self.read_require(pattern, specifier, line_of(declarator))
            return []
        if pattern is None or pattern.type != "identifier":
            declared = [self.declare_member(name, kind, declarator, self.module) for name in _bound_names(pattern)]
            if value is not None:
                self.walk(value, self.module_scope())
            return [name for name in declared if name]
        is_function = value is not None and value.type in _FUNCTION_VALUES
        name = self.declare_member(text(pattern), "function" if is_function else kind, declarator, self.module)
        source = name or f"{self.module}.{text(pattern)}"
        self.read_typed_value(source, declarator, _Scope(source))
        return [name] if name else []

    def read_interface(self, node: Node) -> list[str]:
        name = self.declare_member(text(node.child_by_field_name("name")), "interface", node, self.module)
        if name is None:
            return []
        type_parameters = frozenset(_declared_type_parameters(node))
        for clause in node.named_children:
            if clause.type == "extends_type_clause":
                for written in clause.named_children:
                    self.refer_heritage(name, "extends", written, type_parameters)
        body = node.child_by_field_name("body")
        for member in body.named_children if body is not None else []:
            self.read_interface_member(member, _Scope(name, type_parameters=type_parameters))
        return [name]

    def read_interface_member(self, member: Node, scope: _Scope) -> None:
        name_node = member.child_by_field_name("name")
        if name_node is None or name_node.type == "computed_property_name":
            return
        if member.type == "property_signature":
            name = self.declare_member(text(name_node), "field", member, scope.source)
            if name is not None:
                self.refer_types(name, "type_of", member.child_by_field_name("type"), scope.type_parameters)
        elif member.type in _METHOD_SIGNATURES:
            self.read_method(member, scope)

    def read_type_alias(self, node: Node) -> list[str]:
        name = self.declare_member(text(node.child_by_field_name("name")), "type", node, self.module)
        if name is not None:
            type_parameters = frozenset(_declared_type_parameters(node))
            self.refer_types(name, "type_of", node.child_by_field_name("value"), type_parameters)
        return [name] if name else []

    def read_enum(self, node: Node) -> list[str]:
        name = self.declare_member(text(node.child_by_field_name("name")), "enum", node, self.module)
        body = node.child_by_field_name("body")
        if name is None or body is None:
            return [name] if name else []
        for member in body.named_children:
            member_name = member.child_by_field_name("name") if member.type == "enum_assignment" else member
            if member_name is not None and member_name.type == "property_identifier":
                self.declare_member(text(member_name), "constant", member, name)
            value = member.child_by_field_name("value")
            if value is not None:
                self.walk(value, _Scope(name))
        return [name]

    # -------------------------------------------------------------- bodies
    def through_scope(self, parts: list[str], scope: _Scope) -> tuple[str, str | None] | None:
        head, rest = parts[0], parts[1:]
        if head in ("this", "super"):
            via_type = scope.owner if head == "this" else scope.superclass
            return (".".join(rest), via_type) if rest and via_type else None
        if head in scope.locals:
            declared = scope.locals[head]
            return (".".join(rest), declared) if rest and declared else None
        return ".".join(parts), None

    def on_member(self, node: Node, scope: _Scope) -> None:
        path = _dotted_path(node)
        if path is None:
            self.walk(node.child_by_field_name("object") or node.named_children[0], scope)
        else:
            self.refer_path(path, "references", node, scope)

    def on_call(self, node: Node, scope: _Scope) -> None:
        function = node.child_by_field_name("function")
        path = _dotted_path(function)
        if function is not None and function.type == "import":
            pass  # import("./x"): loaded at run time, not an import the file declares
        elif path is None and function is not None:
            self.walk(function, scope)  # a chain from a call result: only the calls inside it count
        elif path is not None and path != ["require"]:
            self.refer_path(path, "calls", node, scope)
        for part in ("type_arguments", "arguments"):
            found = node.child_by_field_name(part)
            if found is not None:
                self.walk(found, scope)

    def on_new(self, node: Node, scope: _Scope) -> None:
        created = node.child_by_field_name("constructor")
        path = _dotted_path(created)
        if path is not None:
            self.refer_path(path, "calls", node, scope)
        elif created is not None:
            self.walk(created, scope)
        for part in ("type_arguments", "arguments"):
            found = node.child_by_field_name(part)
            if found is not None:
                self.walk(found, scope)

    def on_declarator(self, node: Node, scope: _Scope) -> None:
        pattern = node.child_by_field_name("name")
        annotation = node.child_by_field_name("type")
        value = node.child_by_field_name("value")
        specifier = _require_of(value)
        if specifier is not None:
            self.read_require(pattern, specifier, line_of(node))
            return
        self.refer_types(scope.source, "references", annotation, scope.type_parameters)
        written_type = type_label(annotation) if annotation is not None else _created_type(value)
        self.bind(pattern, written_type, scope)
        if value is not None:
            self.walk(value, scope)

    def bind(self, pattern: Node | None, written_type: str | None, scope: _Scope) -> None:
        names = _bound_names(pattern)
        for name in names:
            scope.locals[name] = written_type if pattern is not None and pattern.type == "identifier" else None
        if pattern is not None and pattern.type != "identifier":
            self.walk_defaults(pattern, scope)

    def walk_defaults(self, pattern: Node, scope: _Scope) -> None:
        """Default values inside a pattern (``{ a = DEFAULT }``) are code; the names around them are bindings."""
        for child in pattern.named_children:
            if child.type in ("assignment_pattern", "object_assignment_pattern"):
                found = child.child_by_field_name("right")
                if found is not None:
                    self.walk(found, scope)
            elif child.type in ("pair_pattern", "object_pattern", "array_pattern"):
                self.walk_defaults(child, scope)
            elif child.type == "computed_property_name":
                self.walk(child, scope)

    def bind_parameters(self, parameters: Node, scope: _Scope) -> None:
        if parameters.type != "formal_parameters":  # an arrow function's lone parameter: x => ...
            self.bind(parameters, None, scope)
            return
        for parameter in parameters.named_children:
            if parameter.type in _PARAMETERS:
                annotation = parameter.child_by_field_name("type")
                self.refer_types(scope.source, "references", annotation, scope.type_parameters)
                self.bind(parameter.child_by_field_name("pattern"), type_label(annotation), scope)
                for child in parameter.named_children:
                    if child.type == "decorator":
                        self.walk(child, scope)
                default = parameter.child_by_field_name("value")
                if default is not None:
                    self.walk(default, scope)
            elif parameter.type == "assignment_pattern":
                self.bind(parameter.child_by_field_name("left"), None, scope)
                self.walk(parameter.child_by_field_name("right") or parameter, scope)
            else:
                self.bind(parameter, None, scope)

    def on_function(self, node: Node, scope: _Scope) -> None:
        """A function inside code: its name is a local of the enclosing scope, its parameters of its own."""
        name_node = node.child_by_field_name("name")
        if name_node is not None and node.type.endswith("declaration"):
            scope.locals[text(name_node)] = None
        inner = scope.inner(type_parameters=_declared_type_parameters(node))
        if name_node is not None and node.type in _FUNCTION_VALUES:  # a named function expression sees itself
            inner.locals[text(name_node)] = None
        self.read_callable(node, inner, "references")

    def on_catch(self, node: Node, scope: _Scope) -> None:
        inner = scope.inner()
        self.bind(node.child_by_field_name("parameter"), None, inner)
        body = node.child_by_field_name("body")
        if body is not None:
            self.walk(body, inner)

    def on_for_in(self, node: Node, scope: _Scope) -> None:
        left = node.child_by_field_name("left")
        if node.child_by_field_name("kind") is not None:
            self.bind(left, None, scope)
        elif left is not None:
            self.walk(left, scope)
        for part in ("right", "body"):
            found = node.child_by_field_name(part)
            if found is not None:
                self.walk(found, scope)

    def on_jsx_element(self, node: Node, scope: _Scope) -> None:
        """``<CartView cart={c} />`` uses the component CartView; lower-case tags are HTML elements."""
        name = node.child_by_field_name("name")
        path = _dotted_path(name)
        if path is not None and (len(path) > 1 or path[0][:1].isupper()):
            self.refer_path(path, "references", node, scope)
        for index, child in enumerate(node.children):
            if child.is_named and node.field_name_for_child(index) != "name":
                self.walk(child, scope)

    def on_jsx_attribute(self, node: Node, scope: _Scope) -> None:
        for child in node.named_children[1:]:  # the first is the attribute's name
            self.walk(child, scope)

    body_handlers: ClassVar[Mapping[str, Handler]] = {
        "identifier": CodeWalker.on_name,
        "shorthand_property_identifier": CodeWalker.on_name,
        "member_expression": on_member,
        "call_expression": on_call,
        "new_expression": on_new,
        "variable_declarator": on_declarator,
        "arrow_function": on_function,
        "function_expression": on_function,
        "function": on_function,
        "generator_function": on_function,
        "function_declaration": on_function,
        "generator_function_declaration": on_function,
        "method_definition": on_function,
        "catch_clause": on_catch,
        "for_in_statement": on_for_in,
        "jsx_opening_element": on_jsx_element,
        "jsx_self_closing_element": on_jsx_element,
        "jsx_attribute": on_jsx_attribute,
        # Closing tags repeat the opening one; nested imports and labels name nothing used.
        "jsx_closing_element": CodeWalker.skip,
        "import_statement": CodeWalker.skip,
    }


_STATEMENT_READERS: dict[str, Callable[[_ScriptOutline, Node], list[str]]] = {
    "import_statement": _ScriptOutline.read_import,
    "export_statement": _ScriptOutline.read_export,
    "ambient_declaration": _ScriptOutline.read_ambient,
    "class_declaration": _ScriptOutline.read_class,
    "abstract_class_declaration": _ScriptOutline.read_class,
    "class": _ScriptOutline.read_class,
    "function_declaration": _ScriptOutline.read_function,
    "generator_function_declaration": _ScriptOutline.read_function,
    "function_signature": _ScriptOutline.read_function,
    "lexical_declaration": _ScriptOutline.read_variables,
    "variable_declaration": _ScriptOutline.read_variables,
    "interface_declaration": _ScriptOutline.read_interface,
    "type_alias_declaration": _ScriptOutline.read_type_alias,
    "enum_declaration": _ScriptOutline.read_enum,
}


def extract(root: Node, source: bytes, path: str, paths: frozenset[str]) -> FileOutline:
    module = module_key(path, paths)
    outline = _ScriptOutline(path, module, typed=path.endswith(TYPESCRIPT_EXTENSIONS))
    outline.declare_file(module, "module", source, posixpath.basename(module))
    for node in top_level(root):
        outline.read_statement(node)
    return outline.file_outline(root, path=path, language=outline.language, module=module, module_key=module)


def _typescript_grammar(extension: str) -> object:
    import tree_sitter_typescript

    return (
        tree_sitter_typescript.language_tsx() if extension == ".tsx" else tree_sitter_typescript.language_typescript()
    )


def _javascript_grammar(extension: str) -> object:
    import tree_sitter_javascript

    return tree_sitter_javascript.language()


TYPESCRIPT = LanguageSpec(
    name="typescript",
    extensions=TYPESCRIPT_EXTENSIONS,
    grammar=_typescript_grammar,
    extract=extract,
    module_key=module_key,
    separator="/",
    is_native_module=is_native_module,
    builtins=BUILTINS,
    builtin_module="globalThis",
    bare_members=False,
    package_scope=False,
    companions=("javascript",),
)
JAVASCRIPT = LanguageSpec(
    name="javascript",
    extensions=JAVASCRIPT_EXTENSIONS,
    grammar=_javascript_grammar,
    extract=extract,
    module_key=module_key,
    separator="/",
    is_native_module=is_native_module,
    builtins=BUILTINS,
    builtin_module="globalThis",
    bare_members=False,
    package_scope=False,
    companions=("typescript",),
)
