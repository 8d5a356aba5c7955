"""The mnemo package imports one way: kernel <- adapters, domain <- wiring <- catalog <- doors, CLI, client.

Every import counts, a lazy one inside a function and one under ``TYPE_CHECKING`` too: a lazy import
still ties the two packages together, only later. docs/architecture.md draws the same picture.

The generator, ``mnemo_codegen`` (codegen/), stands beside the package, outside the shared Lambda layer:
it reads the catalog (and the kernel), and of mnemo only the CLI reaches it, inside the commands that
run it, so that nothing the layer ships needs it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "layers" / "shared"
PACKAGE = ROOT / "mnemo"
CODEGEN = Path(__file__).resolve().parents[2] / "codegen" / "mnemo_codegen"

#: Shared pieces every other part may stand on; they import only each other.
KERNEL = {
    "mnemo",
    "mnemo.blob_keys",
    "mnemo.budget",
    "mnemo.changes",
    "mnemo.clock",
    "mnemo.context",
    "mnemo.errors",
    "mnemo.expiry",
    "mnemo.families",
    "mnemo.family_index",
    "mnemo.identity_claims",
    "mnemo.models",
    "mnemo.outbox",
    "mnemo.paging",
    "mnemo.ports",
    "mnemo.schema_check",
    "mnemo.settings",
    "mnemo.telemetry",
    "mnemo.visible",
}
#: The services, one package per family, and the retrieval maths they share.
DOMAIN = {
    "mnemo.briefing",
    "mnemo.conversations",
    "mnemo.events",
    "mnemo.learning",
    "mnemo.files",
    "mnemo.graph",
    "mnemo.knowledge",
    "mnemo.memory",
    "mnemo.outline",
    "mnemo.portability",
    "mnemo.retrieval",
    "mnemo.sync",
    "mnemo.topics",
}
#: A package that declares a record family (its ``family.py``, ``mnemo.families``) is a domain package too, so
#: adding a family takes no edit here (tests/infra/test_new_family.py).
DOMAIN |= {
    f"mnemo.{found.parent.name}"
    for found in (Path(__file__).resolve().parents[2] / "layers" / "shared" / "mnemo").glob("*/family.py")
}
#: What is shared by both adapter sets (``mnemo.adapters.bm25_text``) is the package ``mnemo.adapters``.
ADAPTERS = {"mnemo.adapters", "mnemo.adapters.aws", "mnemo.adapters.local"}
WIRING = {"mnemo.runtime"}
CATALOG = {"mnemo.tools"}
DOORS = {"mnemo.console", "mnemo.entry", "mnemo.observability"}
CLI = {"mnemo.cli"}
CLIENT = {"mnemo.client"}
EVERY = KERNEL | DOMAIN | ADAPTERS | WIRING | CATALOG | DOORS | CLI | CLIENT


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path) -> Iterator[str]:
    """Every mnemo module the file imports, wherever the import statement stands."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == "mnemo")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "mnemo":
                continue
            # ``from mnemo import telemetry`` imports the module mnemo.telemetry, not the package.
            named = [f"{target}.{alias.name}" for alias in node.names if _exists(f"{target}.{alias.name}")]
            yield from named or [target]


def part_of(module: str) -> str:
    """The unit the rules speak of: a top-level module or package, and each adapter set on its own."""
    parts = module.split(".")
    if parts[:2] == ["mnemo", "adapters"] and len(parts) > 2 and parts[2] in ("aws", "local"):
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def _graph() -> dict[str, dict[str, set[str]]]:
    """part -> imported part -> the modules whose imports make the edge (for the failure message)."""
    edges: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _module_name(path)
        for target in _imports(path):
            if part_of(source) != part_of(target):
                edges[part_of(source)][part_of(target)].add(f"{source} -> {target}")
    return edges


GRAPH = _graph()


def test_every_part_is_classified() -> None:
    parts = {part_of(_module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert parts - EVERY == set(), "a new module or package: put it in one of the lists above"


def _cycles(edges: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """Strongly connected components of more than one part (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(set(edges) | {t for targets in edges.values() for t in targets}):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_among_packages() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b": set()}, "b": {"c": set()}, "c": {"a": set()}}) == [["a", "b", "c"]]


FORBIDDEN = [
    ("kernel", KERNEL, EVERY - KERNEL),
    ("domain", DOMAIN, ADAPTERS | WIRING | CATALOG | DOORS | CLI | CLIENT),
    ("adapters", ADAPTERS, DOMAIN | WIRING | CATALOG | DOORS | CLI | CLIENT),
    ("AWS adapters", {"mnemo.adapters.aws"}, {"mnemo.adapters.local"}),
    ("local adapters", {"mnemo.adapters.local"}, {"mnemo.adapters.aws"}),
    ("wiring", WIRING, CATALOG | DOORS | CLI | CLIENT),
    ("catalog", CATALOG, DOORS | CLI | CLIENT),
    ("client", CLIENT, EVERY - KERNEL - CLIENT),
]


@pytest.mark.parametrize(("name", "sources", "forbidden"), FORBIDDEN, ids=[rule[0] for rule in FORBIDDEN])
def test_imports_point_one_way(name: str, sources: set[str], forbidden: set[str]) -> None:
    offending = sorted(
        edge
        for source in sources
        for target, edges in GRAPH.get(source, {}).items()
        if target in forbidden
        for edge in edges
    )
    assert offending == [], f"{name} imports what stands above it"


# --------------------------------------------------------------- generator ---


def _absolute_imports(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """(statement, module) of every absolute import in the tree (``from x import y`` names x)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node, node.module or ""


def _codegen_imports(path: Path) -> Iterator[tuple[str, bool]]:
    """(module, whether the import stands inside a function) for every mnemo_codegen import of the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lazy = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(function)
    }
    for node, name in _absolute_imports(tree):
        if name.split(".")[0] == "mnemo_codegen":
            yield name, id(node) in lazy


def test_only_the_cli_reaches_the_generator_and_only_lazily() -> None:
    """The layer ships mnemo.cli but not mnemo_codegen: a top-level import would break ``import mnemo.cli.tools``
    where the generator is not installed, and any other part of mnemo importing it would need it in the layer."""
    offending = []
    reached = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _module_name(path)
        for target, lazy in _codegen_imports(path):
            if part_of(source) in CLI and lazy:
                reached.add(target)
            else:
                offending.append(f"{source} -> {target}{'' if lazy else ' (at import time)'}")
    assert offending == [], "only mnemo.cli may import mnemo_codegen, inside the command that runs it"
    assert "mnemo_codegen.generate" in reached  # `mnemo generate` still runs the generator


def test_the_generator_reads_only_the_catalog_and_the_kernel() -> None:
    assert CODEGEN.is_dir() and not (PACKAGE / "tools" / "template_gen.py").exists()
    offending = []
    for path in sorted(CODEGEN.rglob("*.py")):
        offending += [
            f"{path.name} -> {name}"
            for _, name in _absolute_imports(ast.parse(path.read_text(encoding="utf-8")))
            if name.split(".")[0] == "mnemo" and part_of(name) not in CATALOG | KERNEL
        ]
    assert offending == [], "the generator stands on the catalog: doors, services and adapters are not its business"
