"""Imports found in source files, each with its 1-based line.

knowledge_check's ``import`` target judges what code pulls in (``import mysql2``)
even when no manifest was sent. This is a scanner, not a parser: fixed regular
expressions over lines (whole text for JavaScript, whose import clauses span
lines). It can report an import written inside a string or a comment, and it
never raises. Every pattern here is ours, anchored or led by a literal keyword,
with possessive or bounded quantifiers, so Python's backtracking ``re`` stays
linear in the size of the file even on hostile content.

Each import carries the module as written and its *package*, the name a
dependency rule would use: Python's top-level package (``os.path`` -> ``os``),
a JavaScript package (``@scope/name/sub`` -> ``@scope/name``, ``mysql2/promise``
-> ``mysql2``), and for Go and Java the full path (a wildcard Java import
``a.b.*`` has package ``a.b``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

PYTHON_EXTENSIONS = frozenset({".py", ".pyi", ".pyw"})
JS_EXTENSIONS = frozenset({".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".vue", ".svelte"})
GO_EXTENSIONS = frozenset({".go"})
JVM_EXTENSIONS = frozenset({".java", ".kt", ".kts"})
_OTHER_SOURCES = (
    ".rb .php .cs .fs .vb .rs .c .h .cc .cpp .cxx .hpp .hh .swift .m .mm .scala .groovy .dart .ex .exs .erl"
    " .clj .lua .pl .pm .r .sh .bash .zsh .ps1 .sql"
)
#: Source code of any language: what a ``code`` constraint reads by default. Imports
#: are only scanned in the languages above.
SOURCE_EXTENSIONS = (
    PYTHON_EXTENSIONS | JS_EXTENSIONS | GO_EXTENSIONS | JVM_EXTENSIONS | frozenset(_OTHER_SOURCES.split())
)

_SCANNED = PYTHON_EXTENSIONS | JS_EXTENSIONS | GO_EXTENSIONS | JVM_EXTENSIONS

_PY_IMPORT = re.compile(r"[ \t]*+import[ \t]++(.*)")
_PY_FROM = re.compile(r"[ \t]*+from[ \t]++(\.*+)((?:\w++(?:[ \t]*+\.[ \t]*+\w++)*+)?)[ \t]*+import\b")
_PY_NAME = re.compile(r"[ \t]*+(\w++(?:[ \t]*+\.[ \t]*+\w++)*+)(?:[ \t]++as[ \t]++\w++)?+[ \t]*+")
_JS = re.compile(
    r"""\b(?:from|import)\s*+(['"])([^'"\n]{1,512}+)\1"""
    r"""|\b(?:require|import)\s*+\(\s*+(['"])([^'"\n]{1,512}+)\3\s*+\)"""
)
_GO_IMPORT = re.compile(r"[ \t]*+import\b[ \t]*+(.*)")
_GO_SPEC = re.compile(r"""(?:[\w.]++[ \t]++)?+(["`])([^"`\n]{1,512}+)\1""")
_JVM_IMPORT = re.compile(r"[ \t]*+import[ \t]++(?:static[ \t]++)?+(\w++(?:\.\w++)*+)(\.\*)?+")


@dataclass(frozen=True, slots=True)
class FoundImport:
    """One import: the module as written, the package a dependency rule names, and where."""

    module: str
    package: str
    file: str
    line: int

    @property
    def names(self) -> tuple[str, ...]:
        return (self.module,) if self.package == self.module else (self.module, self.package)


def _extension(path: str) -> str:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return base[dot:].lower() if dot > 0 else ""


def is_source(path: str) -> bool:
    """Whether ``path`` is source code (of any language we know by extension)."""
    return _extension(path) in SOURCE_EXTENSIONS


def scans_imports(path: str) -> bool:
    """Whether ``imports_in`` reads this file's language (Python, JS/TS, Go, Java/Kotlin)."""
    extension = _extension(path)
    return extension in _SCANNED


def imports_in(path: str, content: str) -> list[FoundImport]:
    """The imports of ``content``, in order, by the language of ``path``; [] for other files."""
    extension = _extension(path)
    if extension in PYTHON_EXTENSIONS:
        found = _python(content)
    elif extension in JS_EXTENSIONS:
        found = _javascript(content)
    elif extension in GO_EXTENSIONS:
        found = _go(content)
    elif extension in JVM_EXTENSIONS:
        found = _jvm(content)
    else:
        return []
    return [FoundImport(module, package, path, line) for module, package, line in found]


_Found = Iterator[tuple[str, str, int]]


# ------------------------------------------------------------------ Python ---
def _python(content: str) -> _Found:
    lines = content.split("\n")
    index = 0
    while index < len(lines):
        number = index + 1
        statement = lines[index]
        index += 1
        if "import" not in statement:
            continue
        while statement.rstrip().endswith("\\") and index < len(lines):  # explicit continuation
            statement = statement.rstrip()[:-1] + " " + lines[index]
            index += 1
        statement = statement.split("#", 1)[0]
        for part in statement.split(";"):
            yield from _python_statement(part, number)


def _python_statement(statement: str, number: int) -> _Found:
    from_import = _PY_FROM.match(statement)
    if from_import is not None:
        module = _dotted(from_import.group(2))
        if not from_import.group(1) and module:  # relative imports name no package
            yield module, module.split(".", 1)[0], number
        return
    plain = _PY_IMPORT.fullmatch(statement.rstrip())
    if plain is None:
        return
    for name in plain.group(1).split(","):
        match = _PY_NAME.fullmatch(name)
        if match is not None:
            module = _dotted(match.group(1))
            yield module, module.split(".", 1)[0], number


def _dotted(text: str) -> str:
    return "".join(text.split())


# -------------------------------------------------------------- JavaScript ---
def _javascript(content: str) -> _Found:
    line, counted = 1, 0
    for match in _JS.finditer(content):
        specifier = match.group(2) or match.group(4)
        package = _js_package(specifier)
        if package is None:
            continue
        line += content.count("\n", counted, match.start())
        counted = match.start()
        yield specifier, package, line


def _js_package(specifier: str) -> str | None:
    """The npm package of an import specifier; None for relative and absolute paths."""
    if specifier.startswith((".", "/")) or not specifier.strip():
        return None
    if ":" in specifier:  # node:fs, https://..., npm:pkg: a scheme, not a package path
        return specifier
    parts = specifier.split("/")
    if specifier.startswith("@") and len(parts) >= 2:
        return "/".join(parts[:2])
    return parts[0]


# ---------------------------------------------------------------------- Go ---
def _go(content: str) -> _Found:
    in_block = False
    for number, raw in enumerate(content.split("\n"), start=1):
        line = raw.split("//", 1)[0]
        if not in_block:
            match = _GO_IMPORT.match(line)
            if match is None:
                continue
            line = match.group(1)
            if line.startswith("("):
                in_block, line = True, line[1:]
        if in_block and ")" in line:
            in_block, line = False, line[: line.index(")")]
        for spec in _GO_SPEC.finditer(line):
            yield spec.group(2), spec.group(2), number


# --------------------------------------------------------------- Java/Kotlin ---
def _jvm(content: str) -> _Found:
    for number, line in enumerate(content.split("\n"), start=1):
        if "import" not in line:
            continue
        match = _JVM_IMPORT.match(line)
        if match is None:
            continue
        path = match.group(1)
        if match.group(2):
            yield path + ".*", path, number
        else:
            yield path, path, number
