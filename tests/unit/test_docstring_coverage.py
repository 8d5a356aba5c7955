"""Docstring coverage of the public functions and methods of mnemo and its generator stays at 80% or more
(scripts/docstring_coverage.py says what is counted); below it, the failure names the least-covered modules and
what they lack."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "docstring_coverage.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docstring_coverage", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


coverage = _script()


def test_the_package_is_documented_at_the_threshold() -> None:
    modules = coverage.measure()
    _, total = coverage.figures(modules)
    assert total.total > 500, "the measurement found too few functions: is ROOT the package?"
    assert total.percent >= coverage.FAIL_UNDER, (
        f"docstring coverage {total.percent:.1f}% is below {coverage.FAIL_UNDER:.0f}%:\n"
        + coverage.report(modules, names=True)
    )


def test_what_is_counted() -> None:
    source = '''
from typing import overload

def documented():
    """Yes."""

def bare(): ...

def _private(): ...

@overload
def stub(x: int) -> int: ...

class Public:
    def __init__(self): ...
    def __eq__(self, other): ...
    def method(self): ...

    @property
    def value(self):
        """Counted, documented."""

    @value.setter
    def value(self, new): ...

    class Inner:
        def deep(self):
            """Counted."""

    def outer(self):
        """Counted; what it defines inside is not."""
        def helper(): ...

class _Hidden:
    def method(self): ...
'''
    module = coverage.measure_source("example.py", source)
    assert module.total == 6
    assert module.missing == ["bare", "Public.method"]


def test_packages_and_the_least_covered() -> None:
    modules = [
        coverage.Module("graph/store.py", 4, ["a", "b", "c"]),
        coverage.Module("graph/names.py", 2, []),
        coverage.Module("errors.py", 2, ["d"]),
    ]
    packages, total = coverage.figures(modules)
    assert [(f.name, f.documented, f.total) for f in packages] == [("errors", 1, 2), ("graph", 3, 6)]
    assert (total.documented, total.total) == (4, 8)
    assert [m.name for m in coverage.least_covered(modules)] == ["graph/store.py", "errors.py"]
