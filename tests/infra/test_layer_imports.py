"""The layer's code imports only what the layer and the Lambda runtime provide.

Every module of layers/shared/mnemo that can run on AWS is read (imports inside
functions included, since the Lambda paths import lazily) and each top-level name it
imports must be the standard library, mnemo itself, the runtime's boto3/botocore (the
python3.12 runtime ships them, with their dependencies), or a distribution of
layers/shared/requirements.txt or one of their dependencies (their closure, read with
importlib.metadata from the development environment, which installs the same pins).

Left out, because nothing deployed loads them (the deployment rehearsal,
tests/infra/test_rehearsal.py, runs the built functions to prove the rest):
- ``mnemo.adapters.local``: the embedded adapters (SQLite, numpy index, ONNX embedder,
  OpenAI-compatible extractor); the template selects dynamodb, opensearch, titan, s3,
  eventbridge and bedrock for every function;
- ``mnemo.cli*``, ``mnemo.entry.local_server`` and the modules only it loads (``http_app``,
  ``http_protocol``, ``http_body``, ``http_guard``, ``mcp_asgi``, ``identity.local``): the `mnemo`
  command and the local server (uvicorn and Starlette);
- ``mnemo.client``: the client package callers install (its LangChain and Strands
  adapters need their own extras); no function imports it;
- ``mnemo.portability``: export and import, run by the `mnemo` command only.
A module of those that an AWS module imports is checked all the same, except where
mnemo.runtime picks the embedded adapter a setting names (the template sets the AWS ones) (as
``mnemo.adapters.local.lexical`` was, imported by the OpenSearch adapter, with numpy).
Imports under ``if TYPE_CHECKING:`` never run, and an import guarded by
``except ImportError`` is optional by construction; both are skipped.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "shared" / "mnemo"
REQUIREMENTS = ROOT / "layers" / "shared" / "requirements.txt"
#: What the python3.12 Lambda runtime provides besides the standard library.
RUNTIME = ("boto3", "botocore")
NOT_ON_AWS = (
    "mnemo.adapters.local",
    "mnemo.cli",
    "mnemo.entry.local_server",
    "mnemo.entry.http_app",
    "mnemo.entry.http_protocol",
    "mnemo.entry.http_body",
    "mnemo.entry.http_guard",
    "mnemo.entry.mcp_asgi",
    "mnemo.entry.identity.local",
    "mnemo.client",
    "mnemo.portability",
)
#: Environment markers as on Lambda's python3.12 (Amazon Linux 2023).
MARKERS = {"python_version": "3.12", "python_full_version": "3.12.0", "sys_platform": "linux",
           "platform_system": "Linux", "os_name": "posix", "implementation_name": "cpython",
           "platform_python_implementation": "CPython", "extra": ""}  # fmt: skip


def _closure(roots: list[str]) -> set[str]:
    """The distributions ``roots`` install: themselves and their dependencies (no extras)."""
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        name = re.sub(r"[-_.]+", "-", pending.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        for raw in metadata.requires(name) or []:
            requirement = Requirement(raw)
            if requirement.marker is None or requirement.marker.evaluate(MARKERS):
                pending.append(requirement.name)
    return seen


@cache
def provided() -> dict[str, str]:
    """Top-level import name -> what provides it (a distribution of the layer or the runtime)."""
    roots = [
        Requirement(line.split("#", 1)[0].strip()).name
        for line in REQUIREMENTS.read_text().splitlines()
        if line.split("#", 1)[0].strip()
    ]
    layer, runtime = _closure(roots), _closure(list(RUNTIME))
    names: dict[str, str] = {}
    for top, distributions in metadata.packages_distributions().items():
        for distribution in distributions:
            key = re.sub(r"[-_.]+", "-", distribution).lower()
            if key in runtime:
                names[top] = f"runtime ({distribution})"
            elif key in layer:
                names.setdefault(top, f"layer ({distribution})")
    return names


def _skipped(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Under ``if TYPE_CHECKING:`` or in a ``try`` that handles ImportError."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.If) and child in parent.body and "TYPE_CHECKING" in ast.unparse(parent.test):
            return True
        if isinstance(parent, ast.Try) and child in parent.body:
            handled = " ".join(ast.unparse(h.type) for h in parent.handlers if h.type is not None)
            if "ImportError" in handled or "ModuleNotFoundError" in handled:
                return True
        child, parent = parent, parents.get(parent)
    return False


def imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import that can run: at module level or inside functions."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        if not _skipped(node, parents):
            found += [(node.lineno, name) for name in names]
    return sorted(found)


def unprovided_imports(source: str) -> list[str]:
    """Top-level names ``source`` imports that neither the stdlib, mnemo, the layer nor the runtime provide."""
    missing = []
    for line, name in imports(source):
        top = name.split(".", 1)[0]
        if top in sys.stdlib_module_names or top in ("mnemo", "__future__") or top in provided():
            continue
        if f"line {line}: import {name.rsplit('.', 1)[0]}" not in missing:
            missing.append(f"line {line}: import {name}")
    return missing


def aws_modules() -> list[tuple[str, Path]]:
    """The modules that can run on AWS: all but NOT_ON_AWS, plus any of those an AWS module imports."""
    every = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        every[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def on_aws(module: str) -> bool:
        return not any(module == s or module.startswith(f"{s}.") or module.startswith(f"{s}_") for s in NOT_ON_AWS)

    reached = {module for module in every if on_aws(module)}
    pending = list(reached)
    while pending:
        importer = pending.pop()
        for _, name in imports(every[importer].read_text()):
            if importer == "mnemo.runtime" and not on_aws(name):
                continue  # the adapter the settings select: the template selects the AWS ones
            if name in every and name not in reached:
                reached.add(name)
                pending.append(name)
    return sorted((module, every[module]) for module in reached)


def test_the_layer_imports_only_what_the_layer_and_runtime_provide() -> None:
    modules = aws_modules()
    assert len(modules) > 50
    assert any(name == "mnemo.adapters.aws.opensearch.adapter" for name, _ in modules)
    problems = {name: missing for name, path in modules if (missing := unprovided_imports(path.read_text()))}
    assert not problems, f"imports no layer requirement provides: {problems}"


def test_the_runtime_and_requirements_are_what_they_provide() -> None:
    names = provided()
    assert names["boto3"].startswith("runtime")
    assert names["botocore"].startswith("runtime")
    # OpenSearch is reached with urllib3, which botocore brings with the runtime (mnemo.adapters.aws.opensearch.http).
    assert names["urllib3"].startswith("runtime")
    assert "opensearchpy" not in names
    assert names["pydantic_core"].startswith("layer")
    assert "numpy" not in names


def test_a_lazy_numpy_import_is_caught() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import faiss\n"
        "try:\n    import ujson\nexcept ImportError:\n    ujson = None\n"
        "def score(values):\n    import numpy as np\n    return np.asarray(values)\n"
    )
    assert unprovided_imports(source) == ["line 9: import numpy"]


def test_a_module_an_aws_module_imports_is_checked() -> None:
    """The S3 adapter checks keys with mnemo.blob_keys, shared with the local blob store: the shared module
    runs on AWS and is checked, the local store is not reached."""
    reached = dict(aws_modules())
    assert "mnemo.blob_keys" in reached
    assert "mnemo.adapters.local.blobs" not in reached
    assert "mnemo.adapters.local.vector_index" not in reached
    assert "mnemo.cli" not in reached
