"""The Go extractor: one file's package, declarations, imports and references, as the code writes them.

Symbols are named the way Go tools show them: the package (``inventory``), its types
(``inventory.Manager``), functions (``inventory.NewManager``), methods
(``inventory.(*Manager).Reserve`` for a pointer receiver, ``inventory.Base.Name`` for a
value receiver), struct fields and interface methods (``inventory.Manager.store``,
``inventory.Store.Get``), and package-level variables and constants. A file's module key is
its directory: the files of one directory share one package, which the resolver merges.

Go yields these relations:

- ``calls`` from a function or method body (func literals count for the function around them):
  ``Foo()``, ``fmt.Println()``, and ``m.store.Get()`` as ``store.Get`` via the receiver's type
  when ``m`` is a receiver, parameter or local whose type is written.
- ``references`` to package-level names used as values, types used in bodies (composite
  literals, conversions, ``var x T``), and the parameter and receiver types of a signature.
- ``type_of`` from a field, variable or constant to its written type, from a function or
  method to its result types, and from a defined type or alias to the type it is made of.
- ``extends`` from a struct to its embedded fields and from an interface to the interfaces
  it embeds.

``implements`` is never written in Go; the resolver works it out from method sets.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from mnemo.outline.extractor import OutlineRecorder, end_line_of, line_of, text
from mnemo.outline.languages import LanguageSpec
from mnemo.outline.structure import FileOutline, Import, Symbol

if TYPE_CHECKING:
    from tree_sitter import Node

GO_BUILTINS = frozenset(
    {
        # types
        *("bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int", "int8", "int16"),
        *("int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr"),
        *("any", "comparable"),
        # constants and the zero value
        *("true", "false", "iota", "nil"),
        # functions
        *("append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make", "max", "min"),
        *("new", "panic", "print", "println", "real", "recover"),
    }
)

#: The nodes a type can be written with; inside them identifiers are parameter names, not uses.
_TYPE_NODES = frozenset(
    {
        "type_identifier",
        "qualified_type",
        "generic_type",
        "pointer_type",
        "slice_type",
        "array_type",
        "implicit_length_array_type",
        "map_type",
        "channel_type",
        "function_type",
        "struct_type",
        "interface_type",
        "parenthesized_type",
        "negated_type",
    }
)
#: The statements and clauses that open a block scope of their own (the Go spec's implicit blocks).
_SCOPE_NODES = frozenset(
    {
        "block",
        "func_literal",
        "if_statement",
        "for_statement",
        "expression_switch_statement",
        "type_switch_statement",
        "select_statement",
        "expression_case",
        "default_case",
        "type_case",
        "communication_case",
    }
)
#: Composite literal types whose keys are values (map keys, array indexes) rather than struct field names.
_VALUE_KEYED_TYPES = frozenset({"map_type", "slice_type", "array_type", "implicit_length_array_type"})
#: A major-version suffix (``/v2``) or gopkg.in's ``.v3``: Go names the package after the path element before it.
_VERSION_SUFFIX = re.compile(r"^v\d+$")
_GOPKG_VERSION = re.compile(r"\.v\d+$")


# ----------------------------------------------------------------- spec hooks ---
def module_key(path: str, paths: frozenset[str]) -> str:
    """The file's directory: a Go package is a directory, and imports name it by its path."""
    return posixpath.dirname(path) or "."


def is_native_module(path: str) -> bool:
    """Standard library import paths have no dot in their first element (``fmt``, ``net/http``)."""
    return "." not in path.split("/", 1)[0]


def _language() -> object:
    import tree_sitter_go

    return tree_sitter_go.language()


# ----------------------------------------------------------------- type names ---
def type_names(node: Node | None, skip: frozenset[str] = frozenset()) -> list[str]:
    """The named types written in a type, in order: ``map[string]*store.Item`` gives string, store.Item.

    Names in ``skip`` (type parameters, local types) are left out.
    """
    found: list[str] = []
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if current.type == "type_identifier":
            name = text(current)
            if name not in skip and name != "_":
                found.append(name)
        elif current.type == "qualified_type":
            found.append(_qualified(current))
        else:
            stack.extend(reversed(current.named_children))
    return found


def named_type(node: Node | None, skip: frozenset[str] = frozenset()) -> str | None:
    """The named type a value of this type has methods from (``*Stack[T]`` gives Stack); None for slices, maps..."""
    while node is not None and node.type in {"pointer_type", "parenthesized_type"}:
        node = node.named_children[-1] if node.named_children else None
    if node is None:
        return None
    if node.type == "generic_type":
        return named_type(node.child_by_field_name("type"), skip)
    if node.type == "type_identifier":
        name = text(node)
        return None if name in skip else name
    if node.type == "qualified_type":
        return _qualified(node)
    if node.type == "selector_expression":  # new(pkg.T) parses its argument as an expression
        chain = selector_chain(node)
        return ".".join(chain) if chain and len(chain) == 2 else None
    return None


def _qualified(node: Node) -> str:
    return f"{text(node.child_by_field_name('package'))}.{text(node.child_by_field_name('name'))}"


def selector_chain(node: Node) -> list[str] | None:
    """``m.store.Get`` as [m, store, Get]; None unless it is identifiers and field accesses all the way."""
    parts: list[str] = []
    while node.type == "selector_expression":
        operand, member = node.child_by_field_name("operand"), node.child_by_field_name("field")
        if operand is None or member is None:
            return None
        parts.append(text(member))
        node = operand
    if node.type != "identifier":
        return None
    parts.append(text(node))
    parts.reverse()
    return parts


def type_parameter_names(node: Node | None) -> frozenset[str]:
    """The names a ``[K comparable, V any]`` list declares, or that a receiver's ``Stack[T]`` binds."""
    if node is None:
        return frozenset()
    if node.type == "type_parameter_list":
        return frozenset(
            text(name) for declaration in node.named_children for name in declaration.children_by_field_name("name")
        )
    return frozenset(type_names(node))


# ----------------------------------------------------------------- collection ---
class _Collector(OutlineRecorder):
    """Symbols and references in source order, each reference kept once per (source, kind, target, via_type).

    Every declaration is added as it is found (``add_symbol``), a file's several ``init`` functions included.
    """

    def refer_at(self, source: str, kind: str, target: str, line: int, via_type: str | None = None) -> None:
        if target != "_":  # the blank identifier names nothing
            super().refer_at(source, kind, target, line, via_type)

    def written_types(self, node: Node, type_parameters: frozenset[str]) -> list[tuple[str, Node]]:
        """``type_parameters`` holds every name to leave out: type parameters and types declared in the body."""
        return [(name, node) for name in type_names(node, type_parameters)]


class _Scope:
    """Names declared in a block: each maps to its type's name when the code states it, else None."""

    def __init__(self, parent: _Scope | None = None) -> None:
        self.parent = parent
        self.names: dict[str, str | None] = {}

    def declare(self, name: str, type_name: str | None = None) -> None:
        if name != "_":
            self.names[name] = type_name

    def lookup(self, name: str) -> tuple[bool, str | None]:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return True, scope.names[name]
            scope = scope.parent
        return False, None

    def hides(self, name: str) -> bool:
        return self.lookup(name)[0]


# --------------------------------------------------------------------- bodies ---
class _BodyReader:
    """Reads the code of one declaration, attributing every call and mention to ``source``.

    Walks with an explicit stack (generated Go can nest expressions deeper than Python recurses);
    a declaration is entered into its scope only after its right-hand side is read, as Go scopes it.
    """

    def __init__(self, collector: _Collector, source: str, type_parameters: frozenset[str]) -> None:
        self.collector = collector
        self.source = source
        self.type_parameters = type_parameters

    def read(self, node: Node | None, scope: _Scope) -> None:
        if node is None:
            return
        stack: list[tuple[Node, _Scope, bool]] = [(node, scope, False)]
        while stack:
            current, current_scope, declare = stack.pop()
            if declare:
                self._declare(current, current_scope)
            else:
                stack.extend(reversed(self._visit(current, current_scope)))

    # Visitors return what is left to read rather than recursing, so the stack in read() stays the only one.
    def _visit(self, node: Node, scope: _Scope) -> list[tuple[Node, _Scope, bool]]:
        kind = node.type
        if kind in _SCOPE_NODES:
            scope = _Scope(scope)
            if kind == "func_literal":
                return self._func_literal(node, scope)
        if kind in _TYPE_NODES:
            self._type(node, scope)
            return []
        if kind == "identifier":
            self._identifier(node, scope)
            return []
        if kind == "call_expression":
            return self._call(node, scope)
        if kind == "type_conversion_expression":
            return self._conversion(node, scope)
        if kind == "selector_expression":
            return self._selector(node, scope)
        if kind == "composite_literal":
            return self._composite_literal(node, scope)
        if kind in {"short_var_declaration", "var_spec", "const_spec", "range_clause", "receive_statement"}:
            return self._assignment(node, scope)
        if kind == "type_switch_statement":
            return self._type_switch(node, scope)
        if kind == "literal_value":  # an element whose type is elided: a struct's, as a rule
            return [(element, scope, False) for element in self._literal_elements(node, field_keys=True)]
        if kind in {"type_spec", "type_alias"}:
            scope.declare(text(node.child_by_field_name("name")))
            written = node.child_by_field_name("type")
            return [(written, scope, False)] if written is not None else []
        return [(child, scope, False) for child in node.named_children]

    def _skip(self, scope: _Scope) -> frozenset[str]:
        """Type names that are not the package's: type parameters and types declared in the body."""
        local = set(self.type_parameters)
        current: _Scope | None = scope
        while current is not None:
            local.update(current.names)
            current = current.parent
        return frozenset(local)

    def _type(self, node: Node, scope: _Scope) -> None:
        self.collector.refer_types(self.source, "references", node, self._skip(scope))

    def _identifier(self, node: Node, scope: _Scope) -> None:
        name = text(node)
        if not scope.hides(name):
            self.collector.refer_at(self.source, "references", name, line_of(node))

    def _chain(self, kind: str, chain: list[str], line: int, scope: _Scope) -> None:
        """A dotted use: through its head's stated type when the head is local, else as written."""
        head, rest = chain[0], chain[1:]
        found, head_type = scope.lookup(head)
        if not found:
            self.collector.refer_at(self.source, kind, ".".join(chain), line)
        elif head_type is not None and rest:
            self.collector.refer_at(self.source, kind, ".".join(rest), line, via_type=head_type)
        # a local of unknown type: nothing the resolver could use

    def _call(self, node: Node, scope: _Scope) -> list[tuple[Node, _Scope, bool]]:
        function = node.child_by_field_name("function")
        rest = [child for child in node.named_children if child != function]
        chain = selector_chain(function) if function is not None else None
        if chain is None:
            return [(child, scope, False) for child in [function, *rest] if child is not None]
        self._chain("calls", chain, line_of(node), scope)
        return [(child, scope, False) for child in rest]

    def _conversion(self, node: Node, scope: _Scope) -> list[tuple[Node, _Scope, bool]]:
        # ``Map[int](xs)`` reads the same as a generic conversion: either way, a call of Map.
        written = node.child_by_field_name("type")
        if written is not None and written.type == "generic_type":
            name = named_type(written, self._skip(scope))
            if name is not None:
                self.collector.refer_at(self.source, "calls", name, line_of(node))
            self._type(written.child_by_field_name("type_arguments") or written, scope)
        elif written is not None:
            self._type(written, scope)
        operand = node.child_by_field_name("operand")
        return [(operand, scope, False)] if operand is not None else []

    def _selector(self, node: Node, scope: _Scope) -> list[tuple[Node, _Scope, bool]]:
        chain = selector_chain(node)
        if chain is None:
            operand = node.child_by_field_name("operand")
            return [(operand, scope, False)] if operand is not None else []
        self._chain("references", chain, line_of(node), scope)
        return []

    def _composite_literal(self, node: Node, scope: _Scope) -> list[tuple[Node, _Scope, bool]]:
        written = node.child_by_field_name("type")
        if written is not None:
            self._type(written, scope)
        body = node.child_by_field_name("body")
        if body is None:
            return []
        field_keys = written is None or written.type not in _VALUE_KEYED_TYPES
        return [(element, scope, False) for element in self._literal_elements(body, field_keys)]

    def _literal_elements(self, body: Node, field_keys: bool) -> Iterator[Node]:
        """The parts of ``{store: s, ...}`` to read: not struct field names, which only make sense with the type."""
        for element in body.named_children:
            if element.type != "keyed_element":
                yield element
                continue
            key, value = element.child_by_field_name("key"), element.child_by_field_name("value")
            bare_name = key is not None and len(key.named_children) == 1 and key.named_children[0].type == "identifier"
            if key is not None and not (field_keys and bare_name):
                yield key
            if value is not None:
                yield value

    def _assignment(self, node: Node, scope: _Scope) -> list[tuple[Node, _Scope, bool]]:
        """Read the right-hand side (and a written type) first, then declare the names (only for ``:=``/var)."""
        declares = node.type in {"var_spec", "const_spec"} or any(child.type == ":=" for child in node.children)
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right") or node.child_by_field_name("value")
        written = node.child_by_field_name("type")
        if written is not None:
            self._type(written, scope)
        pending = [(right, scope, False)] if right is not None else []
        if not declares:
            return [(left, scope, False), *pending] if left is not None else pending
        return [*pending, (node, scope, True)]

    def _declare(self, node: Node, scope: _Scope) -> None:
        """Enter the names a declaration binds, with the type it states or its value shows (``&Foo{}``)."""
        names = list(node.children_by_field_name("name"))
        left = node.child_by_field_name("left")
        if left is not None:
            names = left.named_children if left.type == "expression_list" else [left]
        written = named_type(node.child_by_field_name("type"), self._skip(scope))
        values = expressions(node.child_by_field_name("right") or node.child_by_field_name("value"))
        paired = node.type != "range_clause" and len(values) == len(names)
        for index, name in enumerate(names):
            if name.type == "identifier":
                value_type = self._value_type(values[index], scope) if paired else None
                scope.declare(text(name), written or value_type)

    def _value_type(self, value: Node, scope: _Scope) -> str | None:
        """The type a value visibly has: ``Foo{}``, ``&Foo{}``, ``new(Foo)``; None for anything else."""
        if value.type == "unary_expression" and text(value.child_by_field_name("operator")) == "&":
            value = value.child_by_field_name("operand") or value
        if value.type == "composite_literal":
            return named_type(value.child_by_field_name("type"), self._skip(scope))
        function = value.child_by_field_name("function") if value.type == "call_expression" else None
        arguments = value.child_by_field_name("arguments") if value.type == "call_expression" else None
        if function is not None and text(function) == "new" and not scope.hides("new") and arguments is not None:
            written = arguments.named_children
            return named_type(written[0], self._skip(scope)) if len(written) == 1 else None
        return None

    def _type_switch(self, node: Node, scope: _Scope) -> list[tuple[Node, _Scope, bool]]:
        alias, value = node.child_by_field_name("alias"), node.child_by_field_name("value")
        pending = [(value, scope, False)] if value is not None else []
        for name in alias.named_children if alias is not None else []:
            scope.declare(text(name))
        skipped = {alias, value}
        return pending + [(child, scope, False) for child in node.named_children if child not in skipped]

    def _func_literal(self, node: Node, scope: _Scope) -> list[tuple[Node, _Scope, bool]]:
        declare_parameters(self.collector, self.source, node.child_by_field_name("parameters"), scope, "references")
        declare_parameters(self.collector, self.source, node.child_by_field_name("result"), scope, "references")
        body = node.child_by_field_name("body")
        return [(body, scope, False)] if body is not None else []


def expressions(node: Node | None) -> list[Node]:
    """The values of ``a, b := f(), g()`` one by one (a single value is not wrapped in a list)."""
    if node is None:
        return []
    return list(node.named_children) if node.type == "expression_list" else [node]


def declare_parameters(
    collector: _Collector,
    source: str,
    parameters: Node | None,
    scope: _Scope,
    kind: str,
    type_parameters: frozenset[str] = frozenset(),
) -> None:
    """Reference each parameter's type as ``kind`` and declare its names in ``scope`` with that type."""
    if parameters is None:
        return
    if parameters.type != "parameter_list":  # a single unnamed result: ``func f() *Manager``
        collector.refer_types(source, kind, parameters, type_parameters)
        return
    for declaration in parameters.named_children:
        written = declaration.child_by_field_name("type")
        collector.refer_types(source, kind, written, type_parameters)
        # a variadic parameter is a slice, which has no methods to call through
        stated = None if declaration.type == "variadic_parameter_declaration" else named_type(written, type_parameters)
        for name in declaration.children_by_field_name("name"):
            scope.declare(text(name), stated)


# --------------------------------------------------------------- declarations ---
class _FileReader:
    """Turns the top-level declarations of one file into symbols and references."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.collector = _Collector()

    def read(self, root: Node) -> None:
        for node in root.named_children:
            if node.type == "function_declaration":
                self._function(node)
            elif node.type == "method_declaration":
                self._method(node)
            elif node.type == "type_declaration":
                for spec in node.named_children:
                    self._type(spec)
            elif node.type in {"var_declaration", "const_declaration"}:
                self._values(node)

    # ----------------------------------------------------------- functions ---
    def _function(self, node: Node) -> None:
        name = text(node.child_by_field_name("name"))
        if not name:
            return
        qualified = f"{self.package}.{name}"
        self.collector.add_symbol(Symbol(qualified, "function", line_of(node), end_line_of(node), self.package, name))
        type_parameters = type_parameter_names(node.child_by_field_name("type_parameters"))
        self._constraints(qualified, node.child_by_field_name("type_parameters"), type_parameters)
        self._signature_and_body(qualified, node, _Scope(), type_parameters)

    def _method(self, node: Node) -> None:
        name = text(node.child_by_field_name("name"))
        receiver = self._receiver_type(node.child_by_field_name("receiver"))
        if not name or receiver is None:
            return
        written, type_name, pointer = receiver
        owner = f"{self.package}.{type_name}"
        qualified = f"{self.package}.(*{type_name}).{name}" if pointer else f"{owner}.{name}"
        self.collector.add_symbol(Symbol(qualified, "method", line_of(node), end_line_of(node), owner, name))
        type_parameters = type_parameter_names(self._receiver_arguments(written))
        scope = _Scope()
        declare_parameters(
            self.collector, qualified, node.child_by_field_name("receiver"), scope, "references", type_parameters
        )
        self._signature_and_body(qualified, node, scope, type_parameters)

    @staticmethod
    def _receiver_type(receiver: Node | None) -> tuple[Node, str, bool] | None:
        """The receiver's type node, its name without pointer or type arguments, and whether it is a pointer."""
        declarations = receiver.named_children if receiver is not None else []
        written = declarations[0].child_by_field_name("type") if declarations else None
        pointer = written is not None and written.type == "pointer_type"
        name = named_type(written)
        if written is None or name is None:
            return None
        return written, name, pointer

    @staticmethod
    def _receiver_arguments(written: Node) -> Node | None:
        while written.type == "pointer_type" and written.named_children:
            written = written.named_children[-1]
        return written.child_by_field_name("type_arguments") if written.type == "generic_type" else None

    def _signature_and_body(self, qualified: str, node: Node, scope: _Scope, type_parameters: frozenset[str]) -> None:
        collector = self.collector
        declare_parameters(
            collector, qualified, node.child_by_field_name("parameters"), scope, "references", type_parameters
        )
        declare_parameters(collector, qualified, node.child_by_field_name("result"), scope, "type_of", type_parameters)
        _BodyReader(collector, qualified, type_parameters).read(node.child_by_field_name("body"), scope)

    def _constraints(self, source: str, parameters: Node | None, type_parameters: frozenset[str]) -> None:
        for declaration in parameters.named_children if parameters is not None else []:
            self.collector.refer_types(source, "references", declaration.child_by_field_name("type"), type_parameters)

    # --------------------------------------------------------------- types ---
    def _type(self, spec: Node) -> None:
        if spec.type not in {"type_spec", "type_alias"}:
            return
        name = text(spec.child_by_field_name("name"))
        written = spec.child_by_field_name("type")
        if not name:
            return
        qualified = f"{self.package}.{name}"
        kind = {"struct_type": "struct", "interface_type": "interface"}.get(written.type if written else "", "type")
        self.collector.add_symbol(Symbol(qualified, kind, line_of(spec), end_line_of(spec), self.package, name))
        type_parameters = type_parameter_names(spec.child_by_field_name("type_parameters"))
        self._constraints(qualified, spec.child_by_field_name("type_parameters"), type_parameters)
        if written is not None and kind == "struct":
            self._struct_fields(qualified, written, type_parameters)
        elif written is not None and kind == "interface":
            self._interface_elements(qualified, written, type_parameters)
        else:
            self.collector.refer_types(qualified, "type_of", written, type_parameters)

    def _struct_fields(self, struct: str, written: Node, type_parameters: frozenset[str]) -> None:
        body = next((child for child in written.named_children if child.type == "field_declaration_list"), None)
        for declaration in body.named_children if body is not None else []:
            if declaration.type != "field_declaration":
                continue
            field_type = declaration.child_by_field_name("type")
            names = declaration.children_by_field_name("name")
            if not names:
                self._embedded(struct, field_type, type_parameters)
            for name in names:
                qualified = f"{struct}.{text(name)}"
                self.collector.add_symbol(
                    Symbol(qualified, "field", line_of(name), end_line_of(declaration), struct, text(name))
                )
                self.collector.refer_types(qualified, "type_of", field_type, type_parameters)

    def _embedded(self, owner: str, written: Node | None, type_parameters: frozenset[str]) -> None:
        """An embedded type is what the struct or interface extends; its type arguments are mere references."""
        base = named_type(written, type_parameters)
        if written is None or base is None:
            self.collector.refer_types(owner, "references", written, type_parameters)
            return
        self.collector.refer_at(owner, "extends", base, line_of(written))
        for argument in type_names(written, type_parameters)[1:]:
            self.collector.refer_at(owner, "references", argument, line_of(written))

    def _interface_elements(self, interface: str, written: Node, type_parameters: frozenset[str]) -> None:
        for element in written.named_children:
            if element.type == "method_elem":
                self._interface_method(interface, element, type_parameters)
            elif element.type == "type_elem" and len(element.named_children) == 1:
                self._embedded(interface, element.named_children[0], type_parameters)
            elif element.type == "type_elem":  # a union or ~T: a constraint, not an embedding
                self.collector.refer_types(interface, "references", element, type_parameters)

    def _interface_method(self, interface: str, element: Node, type_parameters: frozenset[str]) -> None:
        name = text(element.child_by_field_name("name"))
        qualified = f"{interface}.{name}"
        self.collector.add_symbol(Symbol(qualified, "method", line_of(element), end_line_of(element), interface, name))
        scope = _Scope()  # parameter names of an interface method bind nothing anyone reads
        parameters, result = element.child_by_field_name("parameters"), element.child_by_field_name("result")
        declare_parameters(self.collector, qualified, parameters, scope, "references", type_parameters)
        declare_parameters(self.collector, qualified, result, scope, "type_of", type_parameters)

    # ------------------------------------------------------ vars and consts ---
    def _values(self, node: Node) -> None:
        kind = "constant" if node.type == "const_declaration" else "variable"
        previous_type: Node | None = None
        for spec in _specs(node):
            written = spec.child_by_field_name("type")
            value = spec.child_by_field_name("value")
            # in a const group, a bare name repeats the type and value of the spec before it (iota enums)
            if kind == "constant" and written is None and value is None:
                written = previous_type
            previous_type = written
            self._value_spec(spec, kind, written, value)

    def _value_spec(self, spec: Node, kind: str, written: Node | None, value: Node | None) -> None:
        names = [name for name in spec.children_by_field_name("name") if text(name) != "_"]
        values = expressions(value)
        for index, name in enumerate(names):
            qualified = f"{self.package}.{text(name)}"
            self.collector.add_symbol(
                Symbol(qualified, kind, line_of(name), end_line_of(spec), self.package, text(name))
            )
            # The type is written elsewhere (once for several names, or on the spec before): the name's line.
            for type_name in type_names(written):
                self.collector.refer_at(qualified, "type_of", type_name, line_of(name))
            # ``var a, b = f(), g()`` pairs values with names; ``var a, b = f()`` gives both the one value
            own = [values[index]] if len(values) == len(names) else values
            for expression in own:
                _BodyReader(self.collector, qualified, frozenset()).read(expression, _Scope())


def _specs(node: Node) -> Iterable[Node]:
    """The specs of a declaration, grouped in parentheses or not."""
    for child in node.named_children:
        if child.type in {"var_spec", "const_spec"}:
            yield child
        elif child.type == "var_spec_list":
            yield from (spec for spec in child.named_children if spec.type == "var_spec")


# -------------------------------------------------------------------- imports ---
def read_imports(root: Node) -> list[Import]:
    imports: list[Import] = []
    for declaration in root.named_children:
        if declaration.type != "import_declaration":
            continue
        for spec in _import_specs(declaration):
            path = text(spec.child_by_field_name("path")).strip('"`')
            if not path:
                continue
            imports.append(_import(spec, path))
    return imports


def _import_specs(declaration: Node) -> Iterator[Node]:
    for child in declaration.named_children:
        if child.type == "import_spec":
            yield child
        elif child.type == "import_spec_list":
            yield from (spec for spec in child.named_children if spec.type == "import_spec")


def _import(spec: Node, path: str) -> Import:
    name = spec.child_by_field_name("name")
    if name is None:
        return Import(default_package_name(path), path, None, line_of(spec))
    if name.type == "dot":
        return Import("", path, "*", line_of(spec))
    if name.type == "blank_identifier":
        return Import("", path, None, line_of(spec))
    return Import(text(name), path, None, line_of(spec))


def default_package_name(path: str) -> str:
    """The name an unaliased import binds: its last path element, skipping a ``/v2`` or ``.v3`` version."""
    elements = path.split("/")
    last = elements[-1]
    if _VERSION_SUFFIX.match(last) and len(elements) > 1:
        last = elements[-2]
    return _GOPKG_VERSION.sub("", last)


# ---------------------------------------------------------------------- entry ---
def package_name(root: Node, key: str) -> str:
    """The package clause's name; for a file too broken to have one, its directory's name."""
    clause = next((child for child in root.named_children if child.type == "package_clause"), None)
    identifier = clause.named_children[0] if clause is not None and clause.named_children else None
    if identifier is not None and text(identifier):
        return text(identifier)
    return posixpath.basename(key) if key != "." else "main"


def last_line(root: Node) -> int:
    """The file's last line: a trailing newline ends that line, it does not start another."""
    row, column = root.end_point
    return max(1, row if column == 0 else row + 1)


def extract_go(root: Node, source: bytes, path: str, paths: frozenset[str]) -> FileOutline:
    key = module_key(path, paths)
    package = package_name(root, key)
    reader = _FileReader(package)
    reader.collector.add_symbol(Symbol(package, "package", 1, last_line(root), None, package))
    reader.read(root)
    reader.collector.imports.extend(read_imports(root))
    return reader.collector.file_outline(root, path=path, language="go", module=package, module_key=key)


GO = LanguageSpec(
    name="go",
    extensions=(".go",),
    grammar=lambda extension: _language(),
    extract=extract_go,
    module_key=module_key,
    separator="/",
    is_native_module=is_native_module,
    builtins=GO_BUILTINS,
    builtin_module="builtin",
    bare_members=False,
    package_scope=True,
)
