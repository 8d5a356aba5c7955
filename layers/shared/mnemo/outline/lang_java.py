"""Java: the package, its types (classes, interfaces, enums, records, annotations), their members, and what code uses.

Names are the declared package plus the nesting of types: ``com.acme.billing.Invoice.Line``,
``com.acme.billing.Invoice.total``. A file's module is the package its source declares
(``default`` without a package clause); its module key is its directory, dotted, because
the key must follow from the path alone. Relations written here: extends and implements
(type heritage, generic arguments dropped), type_of (a field's declared type, a method's
return type: every named type in them, primitives included), calls (method invocations
and ``new``) and references (parameter, local and cast types, annotations, thrown types,
names read in code that are not locals). A call or field access through ``this``, a
field of the enclosing class, or a parameter or local whose type is written (``var x =
new Foo()`` too) carries that type as ``via_type``; one starting from a call result or a
local of unknown type yields nothing.
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
    from tree_sitter import Node

DEFAULT_PACKAGE = "default"
_TYPE_KINDS = {
    "class_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "record_declaration": "record",
    "annotation_type_declaration": "annotation",
}
_PRIMITIVE_TYPES = {"integral_type", "floating_point_type", "boolean_type", "void_type"}
_FIELD_DECLARATIONS = {"field_declaration", "constant_declaration"}
_METHOD_DECLARATIONS = {"method_declaration", "annotation_type_element_declaration"}
_CONSTRUCTOR_DECLARATIONS = {"constructor_declaration", "compact_constructor_declaration"}
_ANNOTATIONS = {"marker_annotation", "annotation"}
#: Types written in code (a cast, a generic argument...): referred to wherever they stand.
_TYPES_IN_BODIES = frozenset({*_PRIMITIVE_TYPES, "type_identifier", "scoped_type_identifier", "generic_type"})
#: Children under these fields name what is being declared (or an annotation's key), never something used.
_DECLARING_FIELDS = frozenset({"name", "key"})
_NATIVE_PREFIXES = ("java.", "javax.", "jdk.", "sun.")

#: java.lang's names and the primitive types: usable without an import.
_JAVA_LANG_AND_PRIMITIVES = (
    "String Object Integer Long Double Float Boolean Character Byte Short Number Math System Thread "
    "Runnable Exception RuntimeException Error Throwable IllegalArgumentException IllegalStateException "
    "NullPointerException UnsupportedOperationException IndexOutOfBoundsException Override Deprecated "
    "FunctionalInterface SuppressWarnings Iterable Comparable CharSequence StringBuilder Void Class Enum "
    "Record AutoCloseable int long double float boolean char byte short void var"
)
BUILTINS = frozenset(_JAVA_LANG_AND_PRIMITIVES.split())


def module_key(path: str, paths: frozenset[str]) -> str:
    """The file's directory, dotted: the path alone cannot tell where a source root ends (``src/main/java``)."""
    return posixpath.dirname(path).replace("/", ".")


def is_native_module(module: str) -> bool:
    return module == "java" or module.startswith(_NATIVE_PREFIXES)


# ------------------------------------------------------------------ types as written ---
def _scoped_name(node: Node) -> str:
    """``java.io.Serializable`` from the nested scoped_type_identifier nodes, generic arguments left out."""
    parts = []
    for child in node.named_children:
        if child.type == "scoped_type_identifier":
            parts.append(_scoped_name(child))
        elif child.type == "generic_type":
            parts.append(type_label(child) or "")
        elif child.type == "type_identifier":
            parts.append(text(child))
    return ".".join(part for part in parts if part)


def type_label(node: Node | None) -> str | None:
    """The type a declaration names, without generic arguments: ``List`` for ``List<Line>``; None for arrays."""
    if node is None:
        return None
    if node.type == "type_identifier":
        return text(node)
    if node.type == "scoped_type_identifier":
        return _scoped_name(node)
    if node.type == "generic_type":
        return type_label(node.named_children[0]) if node.named_children else None
    if node.type in _PRIMITIVE_TYPES:
        return text(node)
    return None


def type_names(node: Node, type_parameters: frozenset[str]) -> list[str]:
    """Every named type in a written type, outermost first (``List<Line>`` -> List, Line); type variables left out."""
    if node.type == "type_identifier":
        name = text(node)
        return [] if name in type_parameters or name == "var" else [name]
    if node.type == "scoped_type_identifier":
        return [_scoped_name(node)]
    if node.type in _PRIMITIVE_TYPES:
        return [text(node)]
    if node.type in _ANNOTATIONS:
        return []
    names: list[str] = []
    for child in node.named_children:
        if child.type == "scoped_type_identifier" and node.type == "generic_type":
            names.append(_scoped_name(child))
        else:
            names.extend(type_names(child, type_parameters))
    return names


def _declared_type_parameters(node: Node) -> set[str]:
    found = node.child_by_field_name("type_parameters")
    if found is None:
        return set()
    return {text(child.named_children[0]) for child in found.named_children if child.named_children}


def _dotted_path(node: Node) -> list[str] | None:
    """``this.lines`` -> ["this", "lines"]; None when the expression does not start from a name."""
    if node.type in ("identifier", "this", "super"):
        return [text(node)]
    if node.type == "field_access":
        head = node.child_by_field_name("object")
        name = node.child_by_field_name("field")
        inner = _dotted_path(head) if head is not None else None
        return None if inner is None or name is None else [*inner, text(name)]
    return None


# ------------------------------------------------------------------ the walk ---
@dataclass
class _Scope:
    """What code in a body sees: whose references these are, the enclosing class, and the locals."""

    #: The symbol references found here are attributed to.
    source: str
    #: The enclosing class's short name: the type of ``this``.
    owner: str
    #: The enclosing class's superclass as written: the type of ``super``.
    superclass: str | None
    #: The enclosing class's fields: ``lines.add()`` goes through the field's type.
    fields: frozenset[str]
    type_parameters: frozenset[str]
    #: Parameters and locals with their type as written (None when it is not).
    locals: dict[str, str | None] = field(default_factory=dict)

    def inner(self, source: str, type_parameters: set[str]) -> _Scope:
        return _Scope(source, self.owner, self.superclass, self.fields, self.type_parameters | type_parameters)


class _JavaOutline(CodeWalker[_Scope]):
    declaring_fields = _DECLARING_FIELDS
    types_in_bodies = _TYPES_IN_BODIES

    def written_types(self, node: Node, type_parameters: frozenset[str]) -> list[tuple[str, Node]]:
        """Every name in the written type, at the line where the type starts."""
        return [(name, node) for name in type_names(node, type_parameters)]

    # -------------------------------------------------------------- file level
    def read_import(self, node: Node) -> None:
        names = [child for child in node.named_children if child.type in ("scoped_identifier", "identifier")]
        if not names:
            return
        written = text(names[0])
        if any(child.type == "asterisk" for child in node.children):
            self.imports.append(Import("", written, "*", line_of(node)))
            return
        # ``import static a.B.m`` binds ``m`` just as ``import a.B`` binds ``B``: the module is what precedes it.
        module, _, member = written.rpartition(".")
        self.imports.append(Import(member, module, member, line_of(node)))

    # -------------------------------------------------------------- declarations
    def read_type(self, node: Node, container: str, outer: frozenset[str]) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        short = text(name_node)
        name = f"{container}.{short}"
        self.declare(name, _TYPE_KINDS[node.type], node, container, short)
        type_parameters = outer | _declared_type_parameters(node)
        self.read_annotations(node, name, type_parameters)
        superclass = self.read_heritage(node, name, type_parameters)
        body = node.child_by_field_name("body")
        members = _members(body) if body is not None else []
        components = node.child_by_field_name("parameters")  # a record's components are its fields
        record_fields = components.named_children if components is not None else []
        fields = frozenset(_field_names(members) | {text(c.child_by_field_name("name")) for c in record_fields})
        scope = _Scope(name, short, superclass, fields, type_parameters)
        for component in record_fields:
            self.read_component(component, scope)
        for member in members:
            self.read_member(member, scope)

    def read_heritage(self, node: Node, name: str, type_parameters: frozenset[str]) -> str | None:
        """Writes extends/implements; returns the superclass as written (the type ``super`` has)."""
        superclass: str | None = None
        for child in node.named_children:
            if child.type == "superclass":
                for written in child.named_children:
                    superclass = superclass or type_label(written)
                    self.refer_heritage(name, "extends", written, type_parameters)
            elif child.type in ("super_interfaces", "extends_interfaces"):
                kind = "extends" if child.type == "extends_interfaces" else "implements"
                for type_list in child.named_children:
                    for written in type_list.named_children:
                        self.refer_heritage(name, kind, written, type_parameters)
        return superclass

    def refer_heritage(self, name: str, kind: str, written: Node, type_parameters: frozenset[str]) -> None:
        label = type_label(written)
        if label is not None:
            self.refer(name, kind, label, written)
        arguments = next((c for c in written.named_children if c.type == "type_arguments"), None)
        self.refer_types(name, "references", arguments, type_parameters)

    def read_annotations(self, node: Node, source: str, type_parameters: frozenset[str]) -> None:
        modifiers = next((child for child in node.children if child.type == "modifiers"), None)
        if modifiers is not None:
            scope = _Scope(source, "", None, frozenset(), type_parameters)
            for annotation in modifiers.named_children:
                if annotation.type in _ANNOTATIONS:
                    self.walk(annotation, scope)

    def read_component(self, component: Node, scope: _Scope) -> None:
        name_node = component.child_by_field_name("name")
        if name_node is None:
            return
        short = text(name_node)
        name = f"{scope.source}.{short}"
        self.declare(name, "field", component, scope.source, short)
        self.refer_types(name, "type_of", component.child_by_field_name("type"), scope.type_parameters)

    def read_member(self, node: Node, scope: _Scope) -> None:
        if node.type in _TYPE_KINDS:
            self.read_type(node, scope.source, scope.type_parameters)
        elif node.type in _FIELD_DECLARATIONS:
            self.read_field(node, scope)
        elif node.type in _METHOD_DECLARATIONS or node.type in _CONSTRUCTOR_DECLARATIONS:
            self.read_method(node, scope)
        elif node.type == "enum_constant":
            self.read_enum_constant(node, scope)
        elif node.type in ("static_initializer", "block"):
            self.walk(node, scope.inner(scope.source, set()))

    def read_field(self, node: Node, scope: _Scope) -> None:
        declared_type = node.child_by_field_name("type")
        for declarator in node.children_by_field_name("declarator"):
            name_node = declarator.child_by_field_name("name")
            if name_node is None:
                continue
            short = text(name_node)
            name = f"{scope.source}.{short}"
            self.declare(name, "field", declarator, scope.source, short)
            self.refer_types(name, "type_of", declared_type, scope.type_parameters)
            self.read_annotations(node, name, scope.type_parameters)
            value = declarator.child_by_field_name("value")
            if value is not None:
                self.walk(value, scope.inner(name, set()))

    def read_enum_constant(self, node: Node, scope: _Scope) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        short = text(name_node)
        name = f"{scope.source}.{short}"
        self.declare(name, "constant", node, scope.source, short)
        inner = scope.inner(name, set())
        for part in ("arguments", "body"):
            found = node.child_by_field_name(part)
            if found is not None:
                self.walk(found, inner)

    def read_method(self, node: Node, scope: _Scope) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        short = text(name_node)
        name = f"{scope.source}.{short}"
        kind = "constructor" if node.type in _CONSTRUCTOR_DECLARATIONS else "method"
        if not self.declare(name, kind, node, scope.source, short):
            return
        inner = scope.inner(name, _declared_type_parameters(node))
        self.read_annotations(node, name, inner.type_parameters)
        self.refer_types(name, "type_of", node.child_by_field_name("type"), inner.type_parameters)
        for child in node.named_children:
            if child.type == "throws":
                self.refer_types(name, "references", child, inner.type_parameters)
        for part in ("parameters", "body", "value"):
            found = node.child_by_field_name(part)
            if found is not None:
                self.walk(found, inner)

    # -------------------------------------------------------------- bodies
    def through_scope(self, parts: list[str], scope: _Scope) -> tuple[str, str | None] | None:
        head, rest = parts[0], parts[1:]
        if head == "this":
            return (".".join(rest), scope.owner) if rest and scope.owner else None
        if head == "super":
            return (".".join(rest), scope.superclass or "Object") if rest else None
        if head in scope.locals:
            declared = scope.locals[head]
            return (".".join(rest), declared) if rest and declared else None
        if head in scope.fields and rest:
            return ".".join(parts), scope.owner
        return ".".join(parts), None

    def bind(self, name_node: Node | None, type_node: Node | None, scope: _Scope, value: Node | None = None) -> None:
        if name_node is None:
            return
        label = type_label(type_node)
        if label == "var" and value is not None and value.type == "object_creation_expression":
            label = type_label(value.child_by_field_name("type"))
        elif label == "var":
            label = None
        scope.locals[text(name_node)] = label

    def on_call(self, node: Node, scope: _Scope) -> None:
        name_node = node.child_by_field_name("name")
        receiver = node.child_by_field_name("object")
        path = [] if receiver is None else _dotted_path(receiver)
        if path is None and receiver is not None:
            self.walk(receiver, scope)  # a chain from a call result: only the calls inside it count
        elif name_node is not None and path is not None:
            self.refer_path([*path, text(name_node)], "calls", node, scope)
        for part in ("type_arguments", "arguments"):
            found = node.child_by_field_name(part)
            if found is not None:
                self.walk(found, scope)

    def on_new(self, node: Node, scope: _Scope) -> None:
        created = node.child_by_field_name("type")
        label = type_label(created)
        if label is not None:
            self.refer(scope.source, "calls", label, node)
        if created is not None and created.type == "generic_type":
            self.refer_types(scope.source, "references", created.named_children[-1], scope.type_parameters)
        for index, child in enumerate(node.children):
            if child.is_named and node.field_name_for_child(index) != "type":
                self.walk(child, scope)

    def on_field_access(self, node: Node, scope: _Scope) -> None:
        path = _dotted_path(node)
        if path is None:
            self.walk_children(node, scope)
        else:
            self.refer_path(path, "references", node, scope)

    def on_method_reference(self, node: Node, scope: _Scope) -> None:
        head, last = node.named_children[0], node.named_children[-1]
        path = _dotted_path(head) or type_names(head, scope.type_parameters)[:1]
        if not path:
            self.walk(head, scope)
        elif last == head or last.type != "identifier":  # Foo::new
            self.refer_path(path, "references", node, scope)
        else:
            self.refer_path([*path, text(last)], "references", node, scope)

    def on_local_declaration(self, node: Node, scope: _Scope) -> None:
        declared_type = node.child_by_field_name("type")
        self.refer_types(scope.source, "references", declared_type, scope.type_parameters)
        for declarator in node.children_by_field_name("declarator"):
            value = declarator.child_by_field_name("value")
            self.bind(declarator.child_by_field_name("name"), declared_type, scope, value)
            if value is not None:
                self.walk(value, scope)

    def on_parameter(self, node: Node, scope: _Scope) -> None:
        """A formal, catch or enhanced-for variable: a typed local whose type the source refers to."""
        declared_type = node.child_by_field_name("type")
        if declared_type is None:  # catch_formal_parameter keeps its types in a catch_type child
            declared_type = next((c for c in node.named_children if c.type == "catch_type"), None)
        self.refer_types(scope.source, "references", declared_type, scope.type_parameters)
        for child in node.named_children:
            if child.type == "modifiers":
                self.walk(child, scope)
        if declared_type is not None and declared_type.type == "catch_type":
            declared_type = declared_type.named_children[0]  # a multi-catch variable: its first type
        self.bind(node.child_by_field_name("name"), declared_type, scope)
        for part in ("value", "body"):
            found = node.child_by_field_name(part)
            if found is not None:
                self.walk(found, scope)

    def on_lambda(self, node: Node, scope: _Scope) -> None:
        parameters = node.child_by_field_name("parameters")
        if parameters is not None and parameters.type == "identifier":
            scope.locals[text(parameters)] = None
        elif parameters is not None and parameters.type == "inferred_parameters":
            scope.locals.update((text(child), None) for child in parameters.named_children)
        elif parameters is not None:
            self.walk(parameters, scope)
        body = node.child_by_field_name("body")
        if body is not None:
            self.walk(body, scope)

    def on_instanceof(self, node: Node, scope: _Scope) -> None:
        self.walk_children(node, scope)
        self.bind(node.child_by_field_name("name"), node.child_by_field_name("right"), scope)

    def on_annotation(self, node: Node, scope: _Scope) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is not None:
            self.refer(scope.source, "references", text(name_node), node)
        arguments = node.child_by_field_name("arguments")
        if arguments is not None:
            self.walk(arguments, scope)

    def on_labeled(self, node: Node, scope: _Scope) -> None:
        for child in node.named_children[1:]:  # the first is the label
            self.walk(child, scope)

    body_handlers: ClassVar[Mapping[str, Handler]] = {
        "identifier": CodeWalker.on_name,
        "method_invocation": on_call,
        "object_creation_expression": on_new,
        "field_access": on_field_access,
        "method_reference": on_method_reference,
        "local_variable_declaration": on_local_declaration,
        "formal_parameter": on_parameter,
        "spread_parameter": on_parameter,
        "catch_formal_parameter": on_parameter,
        "enhanced_for_statement": on_parameter,
        "lambda_expression": on_lambda,
        "instanceof_expression": on_instanceof,
        "marker_annotation": on_annotation,
        "annotation": on_annotation,
        "labeled_statement": on_labeled,
        # Labels after break and continue name no declaration.
        "break_statement": CodeWalker.skip,
        "continue_statement": CodeWalker.skip,
    }


def _members(body: Node) -> list[Node]:
    """A type body's declarations; an enum's come after its constants, in enum_body_declarations."""
    found = []
    for child in body.named_children:
        if child.type == "enum_body_declarations":
            found.extend(child.named_children)
        else:
            found.append(child)
    return found


def _field_names(members: list[Node]) -> set[str]:
    names = set()
    for member in members:
        if member.type in _FIELD_DECLARATIONS:
            for declarator in member.children_by_field_name("declarator"):
                names.add(text(declarator.child_by_field_name("name")))
    return names


def _package_of(root: Node) -> str:
    for child in root.named_children:
        if child.type == "package_declaration":
            name = next((c for c in child.named_children if c.type in ("scoped_identifier", "identifier")), None)
            return text(name) or DEFAULT_PACKAGE
    return DEFAULT_PACKAGE


def extract(root: Node, source: bytes, path: str, paths: frozenset[str]) -> FileOutline:
    package = _package_of(root)
    outline = _JavaOutline()
    outline.declare_file(package, "package", source, package.rpartition(".")[2])
    for node in top_level(root):
        if node.type == "import_declaration":
            outline.read_import(node)
        elif node.type in _TYPE_KINDS:
            outline.read_type(node, package, frozenset())
    return outline.file_outline(root, path=path, language="java", module=package, module_key=module_key(path, paths))


def _grammar(extension: str) -> object:
    import tree_sitter_java

    return tree_sitter_java.language()


JAVA = LanguageSpec(
    name="java",
    extensions=(".java",),
    grammar=_grammar,
    extract=extract,
    module_key=module_key,
    separator=".",
    is_native_module=is_native_module,
    builtins=BUILTINS,
    builtin_module="java.lang",
    bare_members=True,
    package_scope=True,
)
