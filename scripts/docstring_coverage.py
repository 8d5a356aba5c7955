"""Docstring coverage of the mnemo package's public functions and methods, and the generator's.

    .venv/bin/python scripts/docstring_coverage.py [--fail-under 80] [--missing] [ROOT ...]

Counted: every function at a module's top level and every method of a class (a class nested in a class
too) whose name does not start with an underscore. Not counted: ``_private`` names (so dunder methods and
``__init__`` too), anything inside a ``_Private`` class, functions nested in functions, ``@overload``
stubs and property setters and deleters. Classes themselves are not counted: a pydantic model's docstring
is its JSON Schema ``description``, which the tool catalog publishes, so documenting one is a change to
the schemas, not a docstring. Module docstrings are not counted either.

The roots are the package (layers/shared/mnemo/) and the folder of the generator (codegen/, whose
``mnemo_codegen`` counts as one package) unless others are named.
Prints the figure per package (a top-level module is a package of its own), the total and the
least-covered modules; exits 1 when the total is below ``--fail-under``. tests/unit/test_docstring_coverage.py
runs it. interrogate and docstr-coverage were tried first: neither counts a class's methods without the
class itself.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "layers" / "shared" / "mnemo"
#: The generator's folder: its modules are named ``mnemo_codegen/...``, one package in the report.
CODEGEN = Path(__file__).resolve().parents[1] / "codegen"
#: The total below which the command (and the unit test) fails.
FAIL_UNDER = 80.0

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class Module:
    """One module's public functions and methods: how many, and the qualified names of those without a docstring."""

    name: str
    total: int = 0
    missing: list[str] = field(default_factory=list)

    @property
    def documented(self) -> int:
        """How many of the counted functions and methods have a docstring."""
        return self.total - len(self.missing)


@dataclass
class Figure:
    """Documented out of counted, for a package or the whole tree."""

    name: str
    documented: int = 0
    total: int = 0

    @property
    def percent(self) -> float:
        """The share documented, in percent; 100 when nothing is counted."""
        return 100.0 * self.documented / self.total if self.total else 100.0


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[str]:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name):
            yield target.id
        elif isinstance(target, ast.Attribute):
            yield target.attr


def _counted(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if node.name.startswith("_"):
        return False
    return not any(name in {"overload", "setter", "deleter"} for name in _decorator_names(node))


def _public_functions(body: Iterable[ast.stmt], prefix: str = "") -> Iterator[tuple[str, bool]]:
    """(qualified name, has a docstring) of each counted function in ``body``, methods of its classes included."""
    for node in body:
        if isinstance(node, _FUNCTIONS) and _counted(node):
            yield prefix + node.name, ast.get_docstring(node) is not None
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from _public_functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, ast.If | ast.Try):  # definitions under `if TYPE_CHECKING:` or a try/except import
            blocks = [node.body, node.orelse, *(h.body for h in getattr(node, "handlers", []))]
            for block in blocks:
                yield from _public_functions(block, prefix)


def measure_source(name: str, source: str) -> Module:
    """Count the public functions and methods of one module's source."""
    module = Module(name)
    for qualified, documented in _public_functions(ast.parse(source).body):
        module.total += 1
        if not documented:
            module.missing.append(qualified)
    return module


def measure(*roots: Path) -> list[Module]:
    """Every module under each root (``ROOT`` and ``CODEGEN`` when none is named), named by its path relative to
    its root, sorted."""
    return [
        measure_source(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8"))
        for root in roots or (ROOT, CODEGEN)
        for path in sorted(root.rglob("*.py"))
    ]


def package_of(module: str) -> str:
    """The package a module counts under: its first folder, or the module itself at the top level."""
    first = module.split("/", 1)[0]
    return first if "/" in module else first.removesuffix(".py")


def figures(modules: Iterable[Module]) -> tuple[list[Figure], Figure]:
    """Per package (least covered first) and the total."""
    packages: dict[str, Figure] = {}
    total = Figure("TOTAL")
    for module in modules:
        figure = packages.setdefault(package_of(module.name), Figure(package_of(module.name)))
        for target in (figure, total):
            target.documented += module.documented
            target.total += module.total
    return sorted(packages.values(), key=lambda f: (f.percent, f.name)), total


def least_covered(modules: Iterable[Module], count: int | None = 10) -> list[Module]:
    """The ``count`` modules (every one when None) with the most functions and methods lacking a docstring,
    most first."""
    lacking = [module for module in modules if module.missing]
    return sorted(lacking, key=lambda m: (-len(m.missing), m.name))[:count]


def report(modules: list[Module], *, count: int | None = 10, names: bool = False) -> str:
    """The table the command prints: packages, the total, then the ``count`` least-covered modules (every one
    lacking a docstring when None), with what each lacks when ``names``."""
    packages, total = figures(modules)
    lines = [f"{'package':<16} {'documented':>10} {'counted':>8} {'cover':>7}"]
    shown = [figure for figure in packages if figure.total] + [total]
    lines += [f"{f.name:<16} {f.documented:>10} {f.total:>8} {f.percent:>6.1f}%" for f in shown]
    lines.append("")
    lines.append("least covered modules (undocumented / counted):")
    for module in least_covered(modules, count):
        lacking = f": {', '.join(module.missing)}" if names else ""
        lines.append(f"  {module.name}: {len(module.missing)}/{module.total}{lacking}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the report; 1 when the total is below ``--fail-under``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("root", nargs="*", type=Path, help="the packages to measure (default: mnemo and the generator)")
    parser.add_argument("--fail-under", type=float, default=FAIL_UNDER, help="the least total coverage, in percent")
    parser.add_argument("--missing", action="store_true", help="list every module lacking docstrings, with the names")
    args = parser.parse_args(argv)
    modules = measure(*args.root)
    print(report(modules, count=None if args.missing else 10, names=args.missing))
    _, total = figures(modules)
    if total.percent < args.fail_under:
        print(f"\nFAILED: {total.percent:.1f}% is below {args.fail_under:.1f}%")
        return 1
    print(f"\npassed: {total.percent:.1f}% (at least {args.fail_under:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
