"""No module outside a record family's own package spells that family's keys.

Each family declares its partition prefix and sort key prefixes (``mnemo.families.RecordFamily``) in its own
package; every other part reads them from the registry (``mnemo.runtime.record_families``) or imports them by
name. This test walks every module of the package with ``ast`` and finds each string a module holds as a
literal (docstrings aside): a plain string, or the literal parts of an f-string. A string that is one of a
family's keys, or starts with a prefix key (one ending with ``|`` or ``#``), must be in a package of a family
that declares that key.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from mnemo.runtime import record_families

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "shared" / "mnemo"


def _owners() -> dict[str, set[str]]:
    """Each key -> the packages of the families that declare it."""
    owners: dict[str, set[str]] = defaultdict(set)
    for family in record_families():
        for key in (family.partition, *family.sort_keys):
            owners[key].add(family.package)
    return owners


OWNERS = _owners()


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the nodes that are docstrings (a module's, a class's or a function's first statement)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def literals(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal of a module's source, docstrings aside."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            yield node.lineno, node.value


def keys_in(text: str) -> list[str]:
    """The family keys a literal spells: equal to one, or starting with a prefix key."""
    return [key for key in OWNERS if text == key or (key[-1] in "|#" and text.startswith(key))]


def package_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:2]) if len(parts) > 2 else ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def offences(path: Path, source: str) -> list[str]:
    package = package_of(path)
    return [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r} spells {key!r} ({', '.join(sorted(OWNERS[key]))}'s)"
        for line, text in literals(source)
        for key in keys_in(text)
        if package not in OWNERS[key]
    ]


def test_no_module_spells_another_familys_keys() -> None:
    found = [problem for path in sorted(PACKAGE.rglob("*.py")) for problem in offences(path, path.read_text())]
    assert found == []


def test_the_check_finds_a_key_spelled_elsewhere() -> None:
    spelled = 'PREFIX = "MEM|"\nsk = f"FACT#{fact_id}"\n"""A docstring may say MEM| freely."""\n'
    found = offences(PACKAGE / "events" / "mappers.py", spelled)
    assert [problem.split(": ", 1)[1].split(" (")[0] for problem in found] == [
        "'MEM|' spells 'MEM|'",
        "'FACT#' spells 'FACT#'",
    ]
    assert offences(PACKAGE / "memory" / "records.py", 'PARTITION = "MEM|"\n') == []


def test_every_family_declares_a_package_that_exists() -> None:
    for family in record_families():
        assert (PACKAGE.parent / family.package.replace(".", "/")).is_dir(), family.name


def test_the_architecture_docs_describe_the_registry_truly() -> None:
    """docs/architecture.md's registry table: each row names a registered family, its partition and the module
    that declares it. (A family added since, such as tests/infra/test_new_family.py's, may lack its row.)"""
    docs = (PACKAGE.parents[2] / "docs" / "architecture.md").read_text()
    rows = {
        cells[0].strip("|` "): (cells[1].strip("` ").replace("\\|", "|"), cells[2].strip("` "))
        for line in docs.splitlines()
        if line.startswith("| `") and (cells := line.split(" | ")) and cells[2].endswith("family.py`")
    }
    registered = {
        family.name: (family.partition, f"{family.package.removeprefix('mnemo.')}/family.py")
        for family in record_families()
    }
    assert len(rows) >= 14 and {name: registered.get(name) for name in rows} == rows
