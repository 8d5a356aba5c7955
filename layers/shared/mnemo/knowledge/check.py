"""knowledge_check's engine: evaluate constraints against files and dependencies.

Pure functions, no I/O: the service picks the applicable items and calls ``evaluate``.

What is judged
  * dependencies: the request's (no location) plus those declared in manifests
    among the files (location: manifest and line; see ``manifests``);
  * imports: those found in source files (location: file and line; see ``imports``);
  * files: their paths; code and config: their lines. ``code`` reads source files
    and ``config`` reads configuration files (by extension, plus Dockerfile and
    Makefile); ``file`` reads every file.

``appliesTo`` globs, when given, restrict the files a constraint reads: for
``code`` and ``config`` any file matching a glob (not only source / config files),
for ``dependency`` the manifests (the request's dependencies always count). Globs
match the posix path without a leading ``./``: ``**`` crosses directories, ``*``
and ``?`` do not, ``{a,b}`` and ``[abc]`` as usual. They are compiled by RE2 like
the patterns: Python's backtracking ``re`` takes seconds on a glob like
``*a*a*a*b`` against a long path.

Matching (every pattern compiled by RE2, so linear in the input): a dependency or
import name must match the pattern whole, ignoring case (an import by its module
or its package, a POM dependency by ``groupId:artifactId`` or its artifactId); a
file path must contain a match; code and config are searched line by line.

Operators come in two polarities, whatever the target:
  * must_not_use / must_not_match / must_not_exist: one violation per offending
    dependency, import, file path or matching line;
  * must_use / must_match / must_exist: for dependencies, imports and file paths,
    one violation (no location) when nothing judged matches, but only when there is
    something of that kind to judge; for code and config, one violation per file
    read that has no matching line.
Identical violations (item, constraint, file, line) are reported once.

Only violations at or above ``min_severity`` are reported (constraints below it are
not evaluated at all); ``summary`` counts the reported ones; ``passed`` is False
exactly when one has severity ``block``. Violations are ordered by severity (block
first), item id, file and line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import accumulate
from typing import Any, Protocol, cast

from mnemo.knowledge.imports import FoundImport, imports_in, is_source, scans_imports
from mnemo.knowledge.manifests import FoundDependency, dependencies_in, is_manifest
from mnemo.knowledge.models import (
    SEVERITY_RANK,
    Constraint,
    ConstraintRef,
    Dependency,
    FileToCheck,
    KnowledgeCheckOutput,
    KnowledgeItem,
    Location,
    Severity,
    SeveritySummary,
    Violation,
)
from mnemo.knowledge.patterns import PatternError, compile_pattern

CONFIG_EXTENSIONS = (".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env", ".properties", ".xml")
CONFIG_NAMES = frozenset({"dockerfile", "makefile", "gnumakefile"})
POSITIVE_OPERATORS = frozenset({"must_use", "must_match", "must_exist"})

#: Patterns whose meaning changes when the whole text is searched with ``(?m)``:
#: ``\A`` / ``\z`` and a flag group turning flags off (``(?-m)``). Those are searched line by line.
_NEEDS_LINES = re.compile(r"\\[Az]|\(\?[A-Za-z]*-")
_SNIPPET = 60


# ------------------------------------------------------------------- paths ---
def posix_path(path: str) -> str:
    """The path globs and ``file`` patterns see: forward slashes, no leading ``./``."""
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def is_config(path: str) -> bool:
    """Whether ``path`` names a configuration file (what a ``config`` constraint reads by default)."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if base in CONFIG_NAMES or base.startswith(("dockerfile.", ".env.")) or base.endswith(".dockerfile"):
        return True
    return base.endswith(CONFIG_EXTENSIONS)


def glob_to_regex(glob: str) -> str:
    """An RE2 expression matching exactly the paths ``glob`` matches (anchoring is the caller's: fullmatch).

    ``**/`` becomes ``(?:|.*/)`` (zero or more directories) rather than a quantified
    group, so the expression has no nested quantifiers.
    """
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        if glob.startswith("**", i):
            while glob.startswith("**/**", i):  # **/**/ means what **/ means
                i += 3
            if glob.startswith("**/", i):
                out.append("(?:|.*/)")
                i += 3
            else:
                out.append(".*")
                i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (close := _class_end(glob, i)) > 0:
            out.append(_class(glob[i + 1 : close]))
            i = close
        elif char == "{" and (close := glob.find("}", i)) > 0 and "{" not in glob[i + 1 : close]:
            out.append("(?:" + "|".join(glob_to_regex(part) for part in glob[i + 1 : close].split(",")) + ")")
            i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _class_end(glob: str, start: int) -> int:
    """The index of the ``]`` closing the class opened at ``start``, or -1."""
    i = start + 1
    if i < len(glob) and glob[i] in "!^":
        i += 1
    if i < len(glob) and glob[i] == "]":
        i += 1  # a leading ] is a member
    close = glob.find("]", i)
    return close


def _class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    members = "".join("\\" + char if char in "\\[]^" else char for char in body)
    return "[" + ("^" if negate else "") + members + "]"


@lru_cache(maxsize=1024)
def _compiled_glob(glob: str) -> Any:
    """The compiled glob, or None when RE2 refuses it (such a glob then matches nothing)."""
    try:
        return compile_pattern(glob_to_regex(posix_path(glob)))
    except PatternError:
        return None


def glob_matches(globs: Sequence[str], path: str) -> bool:
    """Whether the posix ``path`` matches any of ``globs``."""
    for glob in globs:
        compiled = _compiled_glob(glob)
        if compiled is not None and compiled.fullmatch(path) is not None:
            return True
    return False


# ------------------------------------------------------------------- files ---
class _File:
    """One file, with everything the constraints read computed at most once."""

    def __init__(self, given: FileToCheck) -> None:
        self.path = given.path
        self.posix = posix_path(given.path)
        content = given.content
        if "\r" in content:  # lines end at \n, \r\n or \r alike
            content = content.replace("\r\n", "\n").replace("\r", "\n")
        self.content = content
        self.source = is_source(self.posix)
        self.config = is_config(self.posix)
        self.manifest = is_manifest(self.posix)
        self.scans_imports = scans_imports(self.posix)

    @cached_property
    def data(self) -> bytes:
        """UTF-8 bytes, encoded once: RE2 matches bytes, and a str would be re-encoded on every search."""
        return self.content.encode("utf-8", "replace")

    @cached_property
    def line_starts(self) -> list[int]:
        """The offset where each line starts (after a final newline: the offset of the empty rest)."""
        return [0, *accumulate(len(line) + 1 for line in self.data.split(b"\n")[:-1])]

    @cached_property
    def text_end(self) -> int:
        """Where the last line ends: a final newline ends a line, it does not open an empty one."""
        return len(self.data) - 1 if self.data.endswith(b"\n") else len(self.data)

    @cached_property
    def lines(self) -> list[bytes]:
        return self.data[: self.text_end].split(b"\n")

    def line(self, index: int) -> bytes:
        """The 0-based line ``index``, without its newline."""
        starts = self.line_starts
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(self.data)
        return self.data[starts[index] : end]

    @cached_property
    def dependencies(self) -> list[FoundDependency]:
        return dependencies_in(self.posix, self.content) if self.manifest else []

    @cached_property
    def imports(self) -> list[FoundImport]:
        return imports_in(self.posix, self.content) if self.scans_imports else []


@dataclass(frozen=True, slots=True)
class _Subject:
    """A dependency or import being judged: the names it answers to, and where it is (if anywhere)."""

    names: tuple[str, ...]
    file: str | None = None
    line: int | None = None


class _Files:
    """The files of a request, with the subsets constraints read memoised per ``appliesTo``."""

    def __init__(self, files: Sequence[FileToCheck]) -> None:
        self.all = [_File(given) for given in files]
        self.source = [file for file in self.all if file.source]
        self.config = [file for file in self.all if file.config]
        self._globbed: dict[tuple[str, ...], list[_File]] = {}

    def matching(self, globs: Sequence[str]) -> list[_File]:
        if not globs:
            return self.all
        key = tuple(globs)
        if key not in self._globbed:
            self._globbed[key] = [file for file in self.all if glob_matches(key, file.posix)]
        return self._globbed[key]

    def for_target(self, constraint: Constraint) -> list[_File]:
        globs = constraint.applies_to
        if constraint.target == "code":
            return self.matching(globs) if globs else self.source
        if constraint.target == "config":
            return self.matching(globs) if globs else self.config
        if constraint.target == "import":
            return [file for file in self.matching(globs) if file.scans_imports]
        if constraint.target == "dependency":
            return [file for file in self.matching(globs) if file.manifest]
        return self.matching(globs)


# --------------------------------------------------------------- reporting ---
class _Report:
    """Violations collected once each."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self._seen: set[tuple[object, ...]] = set()

    def add(
        self,
        item: KnowledgeItem,
        constraint: Constraint,
        message: str,
        file: str | None = None,
        line: int | None = None,
        subject: str | None = None,
    ) -> None:
        # Without a location, the offending name tells violations apart (two forbidden request dependencies).
        key = (
            item.id,
            constraint.operator,
            constraint.target,
            constraint.pattern,
            constraint.severity,
            tuple(constraint.applies_to),
            constraint.message,
            file,
            line,
            None if file else subject,
        )
        if key in self._seen:
            return
        self._seen.add(key)
        self.violations.append(
            Violation(
                knowledge_item_id=item.id,
                knowledge_item_title=item.title,
                constraint=ConstraintRef(
                    operator=constraint.operator, target=constraint.target, pattern=constraint.pattern
                ),
                severity=constraint.severity,
                message=constraint.message or message,
                location=Location(file=file, line=line) if file is not None else None,
            )
        )


def _describe(item: KnowledgeItem, constraint: Constraint, what: str) -> str:
    """The generated message of a constraint that has none."""
    return f"{item.title}: {what} ({constraint.operator} /{constraint.pattern}/)"


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…"


# -------------------------------------------------------------- evaluation ---
def evaluate(
    items: Sequence[KnowledgeItem],
    files: Sequence[FileToCheck],
    dependencies: Sequence[Dependency],
    min_severity: Severity,
) -> KnowledgeCheckOutput:
    """Judge every constraint of ``items`` at or above ``min_severity`` against ``files`` and ``dependencies``."""
    floor = SEVERITY_RANK[min_severity]
    context = _Files(files)
    requested = [_Subject((dependency.name,)) for dependency in dependencies]
    report = _Report()
    for item in items:
        for constraint in item.constraints:
            if SEVERITY_RANK[constraint.severity] >= floor:
                _evaluate_constraint(item, constraint, context, requested, report)

    violations = sorted(
        report.violations,
        key=lambda v: (
            -SEVERITY_RANK[v.severity],
            v.knowledge_item_id,
            v.location.file if v.location else "",
            (v.location.line or 0) if v.location else 0,
        ),
    )
    counts = {severity: 0 for severity in SEVERITY_RANK}
    for violation in violations:
        counts[violation.severity] += 1
    return KnowledgeCheckOutput(
        passed=counts["block"] == 0,
        violations=violations,
        summary=SeveritySummary(info=counts["info"], warn=counts["warn"], block=counts["block"]),
        checked_items=sorted({item.id for item in items}),
    )


def _evaluate_constraint(
    item: KnowledgeItem, constraint: Constraint, context: _Files, requested: list[_Subject], report: _Report
) -> None:
    files = context.for_target(constraint)
    try:
        if constraint.target == "dependency":
            declared = (_Subject(found.names, file.path, found.line) for file in files for found in file.dependencies)
            subjects = [*requested, *declared]
            _judge_names(item, constraint, subjects, bool(subjects), report)
        elif constraint.target == "import":
            imported = (_Subject(found.names, file.path, found.line) for file in files for found in file.imports)
            _judge_names(item, constraint, list(imported), bool(files), report)
        elif constraint.target == "file":
            _judge_paths(item, constraint, files, report)
        else:
            _judge_contents(item, constraint, files, report)
    except PatternError:
        return  # rejected when the item was synced; a check never fails on it


def _judge_names(
    item: KnowledgeItem, constraint: Constraint, subjects: list[_Subject], judged: bool, report: _Report
) -> None:
    """``judged``: whether there is anything to judge (a must_use over nothing is not violated)."""
    matched = _name_matcher(constraint.pattern)
    if constraint.operator in POSITIVE_OPERATORS:
        if judged and not any(matched(subject.names) for subject in subjects):
            report.add(
                item, constraint, _describe(item, constraint, f"no {constraint.target} matches, one is required")
            )
        return
    for subject in subjects:
        name = matched(subject.names)
        if name is not None:
            what = f"{constraint.target} '{subject.names[0]}' is not allowed"
            report.add(item, constraint, _describe(item, constraint, what), subject.file, subject.line, name)


def _name_matcher(pattern: str) -> Callable[[tuple[str, ...]], str | None]:
    """The first of the names ``pattern`` matches whole (ignoring case), memoised per name."""
    compiled = compile_pattern(pattern, ignore_case=True)
    memo: dict[str, bool] = {}

    def first_match(names: tuple[str, ...]) -> str | None:
        for name in names:
            hit = memo.get(name)
            if hit is None:
                hit = memo[name] = compiled.fullmatch(name) is not None
            if hit:
                return name
        return None

    return first_match


def _judge_paths(item: KnowledgeItem, constraint: Constraint, files: list[_File], report: _Report) -> None:
    compiled = compile_pattern(constraint.pattern)
    hits = [file for file in files if compiled.search(file.posix) is not None]
    if constraint.operator in POSITIVE_OPERATORS:
        if files and not hits:
            report.add(item, constraint, _describe(item, constraint, "no file matches, one is required"))
        return
    for file in hits:
        report.add(item, constraint, _describe(item, constraint, f"file '{file.posix}' is not allowed"), file.path)


def _judge_contents(item: KnowledgeItem, constraint: Constraint, files: list[_File], report: _Report) -> None:
    searcher = _LineSearcher(constraint.pattern)
    positive = constraint.operator in POSITIVE_OPERATORS
    for file in files:
        lines = searcher.matching_lines(file)
        if positive:
            if next(lines, None) is None:
                what = f"'{file.posix}' has no {constraint.target} line matching, one is required"
                report.add(item, constraint, _describe(item, constraint, what), file.path)
            continue
        for number in lines:
            snippet = searcher.snippet(file, number)
            what = f"{constraint.target} '{snippet}' is not allowed" if snippet else f"{constraint.target} line matches"
            report.add(item, constraint, _describe(item, constraint, what), file.path, number)


class _LineSearcher:
    """Finds the lines of a file that contain a match, searching the whole text first.

    RE2 searches a whole file far faster than Python can loop over its lines, so the
    text is searched with ``(?m)`` (``^``/``$`` at line boundaries) and only the
    lines holding a match are looked at. A match inside one line proves that line
    matches; a match spanning a newline (``\\s``, ``[^x]``) proves nothing, so from
    that line on the file is searched line by line (resuming the whole-text search
    after each such match would be quadratic). Either way no line is missed: a line
    that matches alone also holds a match in the whole text.
    """

    def __init__(self, pattern: str) -> None:
        self.line_pattern = _bytes_pattern(compile_pattern(pattern))
        self.per_line = _NEEDS_LINES.search(pattern) is not None
        self.text_pattern = None if self.per_line else _bytes_pattern(compile_pattern("(?m)" + pattern))

    def matching_lines(self, file: _File) -> Iterator[int]:
        """The 1-based numbers of the lines of ``file`` that contain a match, in order."""
        if self.text_pattern is None:
            for number, line in enumerate(file.lines, start=1):
                if self.line_pattern.search(line) is not None:
                    yield number
            return
        data, end, position = file.data, file.text_end, 0
        while position <= end:
            match = self.text_pattern.search(data, position)
            if match is None or match.start() > end:
                return
            index = bisect_right(file.line_starts, match.start()) - 1
            line = file.line(index)
            line_end = file.line_starts[index] + len(line)
            if match.end() > line_end:
                # A match spanning lines proves nothing, and searching the whole rest again from the next
                # line could rescan it once per line (quadratic in a hostile file): go on line by line.
                for number in range(index, len(file.line_starts)):
                    if self.line_pattern.search(file.line(number)) is not None:
                        yield number + 1
                return
            yield index + 1
            position = line_end + 1

    def snippet(self, file: _File, number: int) -> str:
        match = self.line_pattern.search(file.line(number - 1))
        return _quote(match.group().decode("utf-8", "replace")) if match is not None else ""


class _BytesPattern(Protocol):
    """The part of an RE2 pattern object used on bytes (the shared protocol is typed for str)."""

    def search(self, text: bytes, pos: int = 0) -> Any: ...


def _bytes_pattern(compiled: object) -> _BytesPattern:
    return cast(_BytesPattern, compiled)
