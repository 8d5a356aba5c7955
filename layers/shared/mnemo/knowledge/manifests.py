"""Dependencies declared in manifest files, each with the line that declares it.

knowledge_check judges the dependencies an agent sends *and* those it can read in
the manifests among the files sent, so a violation can point at the exact line
(``package.json`` line 12) instead of only naming the package. Only the standard
library is used: ``json``, ``tomllib`` and ``expat`` (which also gives XML line
numbers, so POM lines need no text search).

Content comes from an agent and may be broken or hostile: nothing here raises on
bad input. An unreadable JSON or TOML manifest yields nothing; line-oriented
formats (requirements, go.mod) skip the lines they cannot read; a POM yields the
dependencies read before the point where it stops parsing.
"""

from __future__ import annotations

import contextlib
import json
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

PACKAGE_JSON_SECTIONS = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")

#: A PEP 508 requirement: name, optional extras, then specifiers / URL / markers.
_REQUIREMENT = re.compile(r"[ \t]*+([A-Za-z0-9][A-Za-z0-9._-]*+)[ \t]*+(?:\[[^\]\n]*+\])?+(.*)")
_PINNED = re.compile(r"===?[ \t]*+([^\s,;*]++)[ \t]*+")
_GO_REQUIRE = re.compile(r"[ \t]*+require(?:[ \t]++|(?=\())(.*)")
#: The JSON tokens the key scanner needs: strings, structure, newlines (numbers and literals are skipped).
_JSON_TOKEN = re.compile(r'"(?:[^"\\\n]++|\\.)*+"|[{}\[\]:,\n]')
_GO_SPEC = re.compile(r"""[ \t]*+"?([^\s"]++)"?[ \t]++([^\s]++)""")


@dataclass(frozen=True, slots=True)
class FoundDependency:
    """One declared dependency.

    ``also_known_as`` holds other names the dependency answers to: a POM dependency
    is named ``groupId:artifactId`` but authors write patterns for the bare artifactId.
    """

    name: str
    version: str | None
    file: str
    line: int
    also_known_as: tuple[str, ...] = field(default=())

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.also_known_as)


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _is_requirements(path: str) -> bool:
    """``requirements*.txt`` anywhere, and ``*.txt`` inside a ``requirements/`` folder (a common layout)."""
    normalized = path.replace("\\", "/").lower()
    base = normalized.rsplit("/", 1)[-1]
    if base.startswith("requirements") and base.endswith(".txt"):
        return True
    parts = normalized.split("/")
    return len(parts) >= 2 and parts[-2] == "requirements" and base.endswith(".txt")


def is_manifest(path: str) -> bool:
    """Whether ``path`` names a manifest format this module reads."""
    base = _basename(path).lower()
    return base in ("package.json", "pyproject.toml", "go.mod", "pom.xml") or _is_requirements(path)


def dependencies_in(path: str, content: str) -> list[FoundDependency]:
    """The dependencies ``content`` declares if ``path`` is a manifest; [] otherwise or when unreadable."""
    base = _basename(path).lower()
    try:
        if base == "package.json":
            return _package_json(path, content)
        if base == "pyproject.toml":
            return _pyproject(path, content)
        if base == "go.mod":
            return _go_mod(path, content)
        if base == "pom.xml":
            return _pom(path, content)
        if _is_requirements(path):
            return _requirements(path, content)
    except (ValueError, TypeError, RecursionError):  # a defensive net: parsers below already avoid raising
        return []
    return []


def _line_at(content: str, offset: int) -> int:
    return content.count("\n", 0, offset) + 1


# -------------------------------------------------------------- package.json ---
def _package_json(path: str, content: str) -> list[FoundDependency]:
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    lines = _json_key_lines(content)
    found: list[FoundDependency] = []
    for section in PACKAGE_JSON_SECTIONS:
        entries = data.get(section)
        if not isinstance(entries, dict):
            continue
        for name, version in entries.items():
            line = lines.get((section, name), 1)
            found.append(FoundDependency(name, version if isinstance(version, str) else None, path, line))
    return found


def _json_key_lines(content: str) -> dict[tuple[str, str], int]:
    """The line of every key of every top-level object member: ``(section, key) -> line``.

    One pass over the tokens of already-valid JSON (json.loads succeeded first), so it
    can stay simple: it tracks the container depth and the last string read. A
    repeated key keeps its last line, as json.loads keeps its last value.
    """
    lines: dict[tuple[str, str], int] = {}
    stack: list[str] = []
    top_key: str | None = None
    last_string: tuple[str, int] | None = None
    line = 1
    for token in _JSON_TOKEN.finditer(content):
        text = token.group()
        if text == "\n":
            line += 1
            continue
        if text[0] == '"':
            last_string = (json.loads(text), line)
            continue
        if text == ":" and last_string is not None:
            key, key_line = last_string
            if len(stack) == 1:
                top_key = key
            elif len(stack) == 2 and stack[1] == "{" and top_key is not None:
                lines[(top_key, key)] = key_line
        elif text in "{[":
            stack.append(text)
        elif text in "}]" and stack:
            stack.pop()
        last_string = None
    return lines


# ----------------------------------------------------------- requirements ---
def parse_requirement(text: str) -> tuple[str, str | None] | None:
    """``(name, version)`` of one PEP 508 requirement string, or None if it is not one.

    ``==1.2`` and ``===1.2`` give the bare version; other specifiers are kept as
    written (``>=1.0,<2``); a direct reference (``name @ url``) has no version.
    """
    match = _REQUIREMENT.fullmatch(text)
    if match is None:
        return None
    name, rest = match.group(1), match.group(2).split(";", 1)[0].strip()
    if name[-1] in "._-":
        return None  # PEP 508 names end with a letter or digit
    if rest.startswith("@"):
        return name, None
    if rest.startswith("(") and rest.endswith(")"):  # the old `name (>=1.0)` form
        rest = rest[1:-1].strip()
    if rest and rest[0] not in "=<>!~":
        return None  # e.g. a path or a URL with no name
    pinned = _PINNED.fullmatch(rest)
    if pinned is not None:
        return name, pinned.group(1)
    return name, (rest.replace(" ", "") or None)


def _requirements(path: str, content: str) -> list[FoundDependency]:
    found: list[FoundDependency] = []
    for number, logical in _logical_lines(content):
        text = logical.strip()
        if not text or text.startswith("-"):
            continue  # options (-r, -c, -e, --index-url ...) name no package we can judge
        parsed = parse_requirement(text)
        if parsed is not None:
            found.append(FoundDependency(parsed[0], parsed[1], path, number))
    return found


def _logical_lines(content: str) -> Iterator[tuple[int, str]]:
    """Requirement lines with comments removed and ``\\`` continuations joined, with their first line."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(content.split("\n"), start=1):
        line = raw.rstrip("\r")
        if line.lstrip().startswith("#"):
            line = ""
        else:
            comment = re.search(r"\s#", line)  # '#' only starts a comment after whitespace (URLs carry #egg=)
            if comment is not None:
                line = line[: comment.start()]
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield start, " ".join(pending)
        pending = []
    if pending:
        yield start, " ".join(pending)


# --------------------------------------------------------------- pyproject ---
def _pyproject(path: str, content: str) -> list[FoundDependency]:
    try:
        data = tomllib.loads(content)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return []
    found: list[FoundDependency] = []
    project = _table(data.get("project"))
    found += _requirement_list(path, content, project.get("dependencies"), _header(content, "project"))
    for group, requirements in _table(project.get("optional-dependencies")).items():
        start = _header(content, "project", "optional-dependencies")
        found += _requirement_list(path, content, requirements, start, group)
    for group, requirements in _table(data.get("dependency-groups")).items():  # PEP 735
        found += _requirement_list(path, content, requirements, _header(content, "dependency-groups"), group)
    poetry = _table(_table(data.get("tool")).get("poetry"))
    found += _poetry_table(path, content, poetry.get("dependencies"), ("tool", "poetry", "dependencies"))
    found += _poetry_table(path, content, poetry.get("dev-dependencies"), ("tool", "poetry", "dev-dependencies"))
    for group, body in _table(poetry.get("group")).items():
        where = ("tool", "poetry", "group", group, "dependencies")
        found += _poetry_table(path, content, _table(body).get("dependencies"), where)
    return found


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _header(content: str, *keys: str) -> int:
    """The offset of the ``[a.b.c]`` table header (keys may be quoted), or 0 when it is not written so."""
    parts = [rf"""(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')""" for key in keys]
    header = re.search(r"^[ \t]*\[[ \t]*" + r"[ \t]*\.[ \t]*".join(parts) + r"[ \t]*\]", content, re.MULTILINE)
    return header.start() if header is not None else 0


def _requirement_list(
    path: str, content: str, requirements: object, start: int, after_key: str | None = None
) -> list[FoundDependency]:
    """PEP 508 strings, each placed on the line where its quoted text first appears after ``start``."""
    if not isinstance(requirements, list):
        return []
    if after_key is not None:  # an optional-dependencies group: search from its key
        at = _key_pattern(after_key).search(content, start)
        start = at.start() if at is not None else start
    found: list[FoundDependency] = []
    cursor = start
    for requirement in requirements:
        if not isinstance(requirement, str):
            continue  # e.g. a PEP 735 {include-group = ...}
        parsed = parse_requirement(requirement)
        if parsed is None:
            continue
        offset = _find_quoted(content, requirement, cursor)
        if offset < 0:
            offset = _find_quoted(content, requirement, 0)
        if offset >= 0:
            cursor = offset + 1
        found.append(FoundDependency(parsed[0], parsed[1], path, _line_at(content, max(offset, start))))
    return found


def _key_pattern(key: str) -> re.Pattern[str]:
    """A TOML ``key =`` at the start of a line, the key bare or quoted."""
    quoted = re.escape(key)
    return re.compile(rf"""^[ \t]*+(?:{quoted}|"{quoted}"|'{quoted}')[ \t]*+=""", re.MULTILINE)


def _find_quoted(content: str, text: str, start: int) -> int:
    offsets = [at for quote in ('"', "'") if (at := content.find(quote + text + quote, start)) >= 0]
    return min(offsets) if offsets else -1


def _poetry_table(path: str, content: str, table: object, where: tuple[str, ...]) -> list[FoundDependency]:
    if not isinstance(table, dict):
        return []
    start = _header(content, *where)
    found: list[FoundDependency] = []
    for name, spec in table.items():
        if name.lower() == "python":
            continue  # the interpreter constraint, not a package
        key = _key_pattern(name)
        at = key.search(content, start) or key.search(content)
        line = _line_at(content, at.start()) if at is not None else _line_at(content, start)
        found.append(FoundDependency(name, _poetry_version(spec), path, line))
    return found


def _poetry_version(spec: object) -> str | None:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict) and isinstance(spec.get("version"), str):
        return str(spec["version"])
    return None


# ------------------------------------------------------------------ go.mod ---
def _go_mod(path: str, content: str) -> list[FoundDependency]:
    found: list[FoundDependency] = []
    in_block = False
    for number, raw in enumerate(content.split("\n"), start=1):
        line = raw.split("//", 1)[0].strip()
        if in_block:
            if line.startswith(")"):
                in_block = False
                continue
            spec = line
        else:
            require = _GO_REQUIRE.fullmatch(line)
            if require is None:
                continue
            spec = require.group(1).strip()
            if spec.startswith("("):
                in_block = True
                spec = spec[1:].strip()
                if spec.endswith(")"):  # `require ( x v1 )` on one line
                    in_block, spec = False, spec[:-1].strip()
        match = _GO_SPEC.match(spec)
        if match is not None:
            found.append(FoundDependency(match.group(1), match.group(2), path, number))
    return found


# ----------------------------------------------------------------- pom.xml ---
def _pom(path: str, content: str) -> list[FoundDependency]:
    if "<!ENTITY" in content:
        return []  # Maven never needs entities; refusing them rules out expansion attacks
    reader = _PomReader()
    parser = expat.ParserCreate(namespace_separator="}")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.text
    reader.parser = parser
    with contextlib.suppress(expat.ExpatError, ValueError):  # keep the dependencies read before the error
        parser.Parse(content, True)
    return [dependency.resolved(path, reader.properties) for dependency in reader.dependencies]


@dataclass
class _PomDependency:
    fields: dict[str, str] = field(default_factory=dict)
    line: int = 1

    def resolved(self, path: str, properties: dict[str, str]) -> FoundDependency:
        group, artifact = self.fields.get("groupId", ""), self.fields.get("artifactId", "")
        version = self.fields.get("version") or None
        if version is not None and version.startswith("${") and version.endswith("}"):
            version = properties.get(version[2:-1], version)
        if group:
            return FoundDependency(f"{group}:{artifact}", version, path, self.line, (artifact,))
        return FoundDependency(artifact, version, path, self.line)


class _PomReader:
    """Expat callbacks collecting ``<dependency>`` elements (children of ``<dependencies>``) and ``<properties>``."""

    def __init__(self) -> None:
        self.parser: Any = None
        self.stack: list[str] = []
        self.dependencies: list[_PomDependency] = []
        self.properties: dict[str, str] = {}
        self.current: _PomDependency | None = None
        self.buffer: list[str] = []

    def start(self, name: str, _attributes: dict[str, str]) -> None:
        local = name.rsplit("}", 1)[-1].rsplit(":", 1)[-1]
        parent = self.stack[-1] if self.stack else ""
        self.stack.append(local)
        self.buffer = []
        if local == "dependency" and parent == "dependencies":
            self.current = _PomDependency(line=self.parser.CurrentLineNumber)
        elif self.current is not None and local == "artifactId" and parent == "dependency":
            self.current.line = self.parser.CurrentLineNumber

    def end(self, _name: str) -> None:
        local = self.stack.pop() if self.stack else ""
        parent = self.stack[-1] if self.stack else ""
        value = "".join(self.buffer).strip()
        self.buffer = []
        if self.current is not None:
            if local == "dependency" and parent == "dependencies":
                if self.current.fields.get("artifactId"):
                    self.dependencies.append(self.current)
                self.current = None
            elif parent == "dependency" and local in ("groupId", "artifactId", "version"):
                self.current.fields[local] = value
        elif self.stack[-2:] == ["project", "properties"]:
            self.properties[local] = value

    def text(self, data: str) -> None:
        self.buffer.append(data)
