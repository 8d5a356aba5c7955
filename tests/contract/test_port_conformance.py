"""Every adapter implements its port exactly, and every caller stays inside the ports.

The ports (``mnemo.ports``) are Protocols, and every member they name is required. For each port and each
adapter class implementing it (``ADAPTERS``):

- every member of the port exists on the adapter; a method with a compatible signature (the same
  parameters, names, kinds and defaults; extra parameters only with defaults), a data attribute with a
  value of the declared type. The parameter and return types themselves are mypy's to check: the wiring
  (``mnemo.runtime.Services``) returns each adapter as its port, so mypy compares them structurally.
- every public method or property of the adapter is named in its port, so a caller holding the port
  cannot reach anything else; ``NOT_PORT`` lists, with reasons, the few that are not.

Callers are walked with ``ast`` over the domain packages, ``outbox.py`` and ``runtime.py``: wherever an
object is typed as a port (a parameter annotated with it, ``self`` attributes assigned from such a
parameter or annotated with it in the class body, properties returning it), every attribute read on it
must be a member of that port, and nobody probes it with ``getattr``/``hasattr``. Objects reached
another way (a local variable, an attribute of another service) are not followed.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import mnemo
import mnemo.adapters
from mnemo import ports
from mnemo.adapters.aws.bedrock_extractor import BedrockExtractor
from mnemo.adapters.aws.dynamodb_records import DynamoDbRecordStore
from mnemo.adapters.aws.eventbridge import EventBridgePublisher
from mnemo.adapters.aws.opensearch.adapter import OpenSearchVectorIndex
from mnemo.adapters.aws.s3_blobs import S3BlobStore
from mnemo.adapters.aws.s3vectors.adapter import S3VectorsIndex
from mnemo.adapters.aws.sqs_extraction_queue import SqsExtractionQueue
from mnemo.adapters.aws.titan import TitanEmbedder
from mnemo.adapters.local.blobs import LocalBlobStore
from mnemo.adapters.local.change_log import SqliteChangeLog
from mnemo.adapters.local.embedders import BgeSmallEmbedder, HashingEmbedder
from mnemo.adapters.local.events import LocalEventBus
from mnemo.adapters.local.extraction_queue import LocalExtractionQueue
from mnemo.adapters.local.openai_extractor import OpenAICompatibleExtractor
from mnemo.adapters.local.sqlite_records import SqliteRecordStore
from mnemo.adapters.local.vector_index import LocalVectorIndex


def _no_client() -> Any:
    raise AssertionError("checking an adapter's shape must not make a client")


#: Builds an adapter cheaply, with no client or server, in a temporary directory.
Factory = Callable[[Path], object]

#: port -> every adapter class implementing it, with a factory. A new backend is added here.
ADAPTERS: dict[type, dict[type, Factory]] = {
    ports.RecordStore: {
        SqliteRecordStore: lambda tmp: SqliteRecordStore(tmp / "records.sqlite3"),
        DynamoDbRecordStore: lambda tmp: DynamoDbRecordStore("records", _no_client),
    },
    ports.VectorIndex: {
        LocalVectorIndex: lambda tmp: LocalVectorIndex(tmp / "index.sqlite3"),
        OpenSearchVectorIndex: lambda tmp: OpenSearchVectorIndex(_no_client),
        S3VectorsIndex: lambda tmp: S3VectorsIndex(_no_client, "bucket"),
    },
    ports.Embedder: {
        BgeSmallEmbedder: lambda tmp: BgeSmallEmbedder(),  # the model loads on the first embed only
        HashingEmbedder: lambda tmp: HashingEmbedder(),
        TitanEmbedder: lambda tmp: TitanEmbedder(_no_client),
    },
    ports.BlobStore: {
        LocalBlobStore: lambda tmp: LocalBlobStore(tmp / "blobs"),
        S3BlobStore: lambda tmp: S3BlobStore("bucket", _no_client),
    },
    ports.EventPublisher: {
        LocalEventBus: lambda tmp: LocalEventBus(),
        EventBridgePublisher: lambda tmp: EventBridgePublisher("bus", _no_client),
    },
    ports.Extractor: {
        BedrockExtractor: lambda tmp: BedrockExtractor(_no_client, "model"),
        OpenAICompatibleExtractor: lambda tmp: OpenAICompatibleExtractor("http://127.0.0.1:9", "model"),
    },
    ports.ExtractionQueue: {
        LocalExtractionQueue: lambda tmp: LocalExtractionQueue(),
        SqsExtractionQueue: lambda tmp: SqsExtractionQueue("queue.fifo", "wake", _no_client),
    },
    # Local only: on AWS the records table's stream is the change log (mnemo.entry.change_events).
    ports.ChangeLog: {
        SqliteChangeLog: lambda tmp: SqliteChangeLog(tmp / "records.sqlite3"),
    },
}

#: Public methods and properties of adapters that no port names, as "DefiningClass.member": each is
#: reached only by the wiring or by tests, never through a port, and the caller walk below checks that
#: no service reaches it.
NOT_PORT: dict[str, str] = {
    # The wiring's constructor: runtime.Services.index builds the adapter from the settings.
    "OpenSearchVectorIndex.from_settings": "constructor used by mnemo.runtime",
    "S3VectorsIndex.from_settings": "constructor used by mnemo.runtime",
    "S3VectorsIndex.client": "the s3vectors client, for tests and benchmarks",
    "S3VectorsIndex.index_name": "the index of a namespace, for the adapter's own request tests",
    # The SDK client, made on first use: tests stub it and benchmarks meter its calls (bench/deploy_cost.py).
    "LazyClient.client": "the boto3 client, for tests and benchmarks",
    "OpenSearchVectorIndex.client": "the OpenSearch client, for tests and benchmarks",
    # Where a namespace lives: the OpenSearch contract tests check the requests sent against it.
    "OpenSearchVectorIndex.index_name": "the index of a namespace, for the adapter's own request tests",
    # The consumer's side of the in-process bus; on AWS consumers are EventBridge rules, not code.
    "LocalEventBus.subscribe": "registers an in-process consumer",
    # The consumer's side of the in-process extraction queue (mnemo.entry.extraction_events.LocalWorker); on AWS
    # the consumer is the SQS event source mapping, not code.
    "LocalExtractionQueue.take": "the worker takes the next notice due",
    "LocalExtractionQueue.close": "the worker's shutdown",
}


# ------------------------------------------------------------------ ports ---
#: Optional capabilities of a port (``ports.CAPABILITIES``): not ports of their own, but what they name counts as
#: named by their port for an adapter's public methods and a caller's uses.
CAPABILITY_PROTOCOLS = {capability for capabilities in ports.CAPABILITIES.values() for capability in capabilities}


def _ports() -> list[type]:
    return [
        value
        for value in vars(ports).values()
        if inspect.isclass(value)
        and value.__module__ == ports.__name__
        and typing.Protocol in value.__bases__
        and value not in CAPABILITY_PROTOCOLS
    ]


def port_members(port: type) -> dict[str, Any]:
    """Every member a port names: its methods and properties, and its annotated data attributes (as None)."""
    members: dict[str, Any] = {name: value for name, value in vars(port).items() if not name.startswith("_")}
    for name in vars(port).get("__annotations__", {}):
        members.setdefault(name, None)
    return members


def named_members(port: type) -> dict[str, Any]:
    """What a port names, with the members of its optional capabilities."""
    members = port_members(port)
    for capability in ports.CAPABILITIES.get(port, ()):
        members = {**port_members(capability), **members}
    return members


PORT_NAMES = {port.__name__: port for port in _ports()}
CASES = [(port, adapter) for port, adapters in ADAPTERS.items() for adapter in adapters]


def test_every_port_lists_its_adapters() -> None:
    assert set(PORT_NAMES.values()) == set(ADAPTERS)
    assert all(ADAPTERS[port] for port in ADAPTERS)


def test_every_adapter_class_is_listed() -> None:
    """A class under mnemo.adapters that defines methods of a port is an adapter of it, and must be listed."""
    listed = {adapter for adapters in ADAPTERS.values() for adapter in adapters}
    unlisted = []
    for module in _adapter_modules():
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__ or cls.__name__.startswith("_"):
                continue
            public = {name for name in vars(cls) if not name.startswith("_")}
            for port in ADAPTERS:
                methods = {name for name, value in port_members(port).items() if inspect.isfunction(value)}
                if len(public & methods) >= min(2, len(methods)) and cls not in listed:
                    unlisted.append(f"{cls.__module__}.{cls.__qualname__} looks like a {port.__name__}")
    assert not unlisted, "add them to ADAPTERS:\n" + "\n".join(unlisted)


def _adapter_modules() -> Iterator[Any]:
    for info in pkgutil.walk_packages(mnemo.adapters.__path__, mnemo.adapters.__name__ + "."):
        yield importlib.import_module(info.name)


# -------------------------------------------------------- adapter = port ---
@pytest.mark.parametrize(("port", "adapter"), CASES, ids=[f"{p.__name__}-{a.__name__}" for p, a in CASES])
def test_the_adapter_has_every_member_of_its_port(port: type, adapter: type, tmp_path: Path) -> None:
    instance = ADAPTERS[port][adapter](tmp_path)
    problems: list[str] = []
    for name, declared in port_members(port).items():
        if not hasattr(instance, name):
            problems.append(f"{name}: missing")
        elif inspect.isfunction(declared):
            problems += [f"{name}: {problem}" for problem in _incompatible(declared, getattr(instance, name))]
        else:
            problems += [f"{name}: {problem}" for problem in _wrong_value(port, name, declared, instance)]
    assert not problems, f"{adapter.__name__} does not implement {port.__name__}:\n" + "\n".join(problems)


@pytest.mark.parametrize(("port", "adapter"), CASES, ids=[f"{p.__name__}-{a.__name__}" for p, a in CASES])
def test_an_adapter_that_offers_a_capability_offers_all_of_it(port: type, adapter: type, tmp_path: Path) -> None:
    """A capability is all or nothing: an adapter with one of its members has every one, with its signature."""
    instance = ADAPTERS[port][adapter](tmp_path)
    problems: list[str] = []
    for capability in ports.CAPABILITIES.get(port, ()):
        members = port_members(capability)
        offered = [name for name in members if hasattr(instance, name)]
        if not offered:
            continue
        for name, declared in members.items():
            if not hasattr(instance, name):
                problems.append(f"{capability.__name__}.{name}: missing")
            else:
                problems += [
                    f"{capability.__name__}.{name}: {p}" for p in _incompatible(declared, getattr(instance, name))
                ]
        if not isinstance(instance, capability):
            problems.append(f"not an instance of {capability.__name__}")
    assert not problems, f"{adapter.__name__}:\n" + "\n".join(problems)


def _incompatible(declared: Callable[..., Any], implemented: Any) -> list[str]:
    """How a bound method's signature fails the port's (which still has ``self``): callers of the port must
    be able to call it with every argument the port lets them pass, positionally or by name as it allows."""
    if not callable(implemented):
        return ["not a method"]
    wanted = list(inspect.signature(declared).parameters.values())[1:]
    given = inspect.signature(implemented).parameters
    problems = []
    positional = [p for p in given.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for index, parameter in enumerate(wanted):
        have = given.get(parameter.name)
        if have is None:
            problems.append(f"no parameter {parameter.name!r}")
            continue
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD and (
            have.kind is not have.POSITIONAL_OR_KEYWORD or index >= len(positional) or positional[index] is not have
        ):
            problems.append(f"{parameter.name!r} must be positional or keyword, at position {index}")
        if parameter.kind is parameter.KEYWORD_ONLY and have.kind not in (
            have.KEYWORD_ONLY,
            have.POSITIONAL_OR_KEYWORD,
        ):
            problems.append(f"{parameter.name!r} must be accepted by name")
        if parameter.default is not parameter.empty and have.default != parameter.default:
            problems.append(f"{parameter.name!r} defaults to {have.default!r}, the port says {parameter.default!r}")
    names = {parameter.name for parameter in wanted}
    for parameter in given.values():
        variadic = parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        if parameter.name not in names and not variadic and parameter.default is parameter.empty:
            problems.append(f"extra parameter {parameter.name!r} without a default")
    return problems


_VALUE_TYPES: dict[str, type | tuple[type, ...]] = {"str": str, "int": int, "float": (int, float)}


def _wrong_value(port: type, name: str, declared: Any, instance: object) -> list[str]:
    """A data attribute or property of the port: present as a value of the declared type."""
    if isinstance(declared, property):
        annotation = inspect.signature(declared.fget).return_annotation if declared.fget else None
    else:
        annotation = vars(port)["__annotations__"][name]
    value = getattr(instance, name)
    expected = _VALUE_TYPES.get(str(annotation))
    if callable(value) or (expected is not None and not isinstance(value, expected)):
        return [f"{value!r} is not a {annotation}"]
    return []


@pytest.mark.parametrize(("port", "adapter"), CASES, ids=[f"{p.__name__}-{a.__name__}" for p, a in CASES])
def test_the_adapter_has_no_public_method_outside_its_port(port: type, adapter: type) -> None:
    members = named_members(port)
    outside = [
        qualified
        for name, qualified in _public_methods(adapter).items()
        if name not in members and qualified not in NOT_PORT
    ]
    assert not outside, (
        f"{adapter.__name__} has public methods {port.__name__} does not name: make them private, "
        f"add them to the port, or (wiring and test hooks only) to NOT_PORT: {outside}"
    )


def test_every_exception_is_still_needed() -> None:
    found = {
        qualified
        for adapter in {a for adapters in ADAPTERS.values() for a in adapters}
        for qualified in _public_methods(adapter).values()
    }
    assert set(NOT_PORT) <= found, f"stale NOT_PORT entries: {sorted(set(NOT_PORT) - found)}"


def _public_methods(adapter: type) -> dict[str, str]:
    """name -> "DefiningClass.name" of each public method, classmethod, staticmethod or property (data
    attributes such as a model's ``name`` are not behaviour a caller could reach past the port)."""
    found = {}
    for name in dir(adapter):
        if name.startswith("_"):
            continue
        value = inspect.getattr_static(adapter, name)
        if inspect.isfunction(value) or isinstance(value, classmethod | staticmethod | property):
            owner = next(cls for cls in adapter.__mro__ if name in vars(cls))
            found[name] = f"{owner.__name__}.{name}"
    return found


# ---------------------------------------------------------------- callers ---
PACKAGE = Path(mnemo.__file__).parent
#: The domain packages (docs/architecture.md), the index outbox and the wiring: every caller of the ports.
CALLERS = [
    *(
        PACKAGE / name
        for name in (
            "memory",
            "knowledge",
            "sync",
            "conversations",
            "topics",
            "files",
            "graph",
            "outline",
            "portability",
            "retrieval",
        )
    ),
    PACKAGE / "outbox.py",
    PACKAGE / "runtime.py",
]


@dataclass(frozen=True)
class Use:
    """One attribute read on an object typed as a port."""

    where: str
    port: str
    member: str


def _port_of(annotation: ast.expr | None) -> str | None:
    """The port an annotation names: ``VectorIndex``, ``VectorIndex | None``, ``"VectorIndex"``, ``ports.X``."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [
            side
            for side in (annotation.left, annotation.right)
            if not (isinstance(side, ast.Constant) and side.value is None)
        ]
        return _port_of(sides[0]) if len(sides) == 1 else None
    if isinstance(annotation, ast.Name) and annotation.id in PORT_NAMES:
        return annotation.id
    if isinstance(annotation, ast.Attribute) and annotation.attr in PORT_NAMES:
        return annotation.attr
    return None


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _parameters(function: Function) -> dict[str, str]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return {argument.arg: port for argument in every if (port := _port_of(argument.annotation))}


def _self_attributes(cls: ast.ClassDef) -> dict[str, str]:
    """``self.<name>`` typed as a port in this class: annotated in its body, assigned from a port-typed
    parameter or with a port annotation, or a property returning a port."""
    typed = {
        node.target.id: port
        for node in cls.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and (port := _port_of(node.annotation))
    }
    for function in (node for node in cls.body if isinstance(node, Function)):
        if function.decorator_list and (port := _port_of(function.returns)):
            typed[function.name] = port  # a property or cached_property
        parameters = _parameters(function)
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in parameters:
                for target in node.targets:
                    if name := _self_attribute(target):
                        typed[name] = parameters[node.value.id]
            if isinstance(node, ast.AnnAssign):
                name, port = _self_attribute(node.target), _port_of(node.annotation)
                if name and port:
                    typed[name] = port
    return typed


def _self_attribute(node: ast.expr) -> str | None:
    """``name`` when the node is ``self.name``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _uses(path: Path, root: Path = PACKAGE) -> Iterator[Use]:
    """Every attribute read on, and every getattr/hasattr probe of, an object typed as a port in one file."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(root.parent)
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    owner = {id(function): cls for cls in classes for function in cls.body if isinstance(function, Function)}
    for function in (node for node in ast.walk(tree) if isinstance(node, Function)):
        cls = owner.get(id(function))
        attributes = _self_attributes(cls) if cls is not None else {}
        local = _parameters(function)

        def port_typed(
            node: ast.expr, local: dict[str, str] = local, attributes: dict[str, str] = attributes
        ) -> str | None:
            if isinstance(node, ast.Name):
                return local.get(node.id)
            name = _self_attribute(node)
            return attributes.get(name) if name else None

        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and (port := port_typed(node.value)):
                yield Use(f"{where}:{node.lineno}", port, node.attr)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and node.args
                and (port := port_typed(node.args[0]))
            ):
                yield Use(f"{where}:{node.lineno}", port, f"<{node.func.id} probe>")


def _caller_files() -> list[Path]:
    return [file for place in CALLERS for file in ([place] if place.is_file() else sorted(place.rglob("*.py")))]


def test_callers_use_only_what_the_ports_name() -> None:
    uses = [use for path in _caller_files() for use in _uses(path)]
    outside = [use for use in uses if use.member not in named_members(PORT_NAMES[use.port])]
    assert not outside, "\n".join(f"{use.where}: {use.port}.{use.member} is not in the port" for use in outside)
    # The walk must see the ports in use, or it proves nothing: the outbox's recheck among them.
    seen = {(use.port, use.member) for use in uses}
    assert len(uses) > 100 and {("VectorIndex", "prune"), ("VectorIndex", "refresh_window")} <= seen, len(uses)


def test_the_walk_finds_a_use_outside_a_port(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "class Service:\n"
        "    def __init__(self, index: 'VectorIndex | None', records: RecordStore) -> None:\n"
        "        self._index = index\n"
        "    def run(self, records: RecordStore) -> None:\n"
        "        self._index.index_name('ns')\n"
        "        getattr(records, 'scan')\n"
        "        self._index.knn('ns', [], {}, 1)\n"
    )
    found = {(use.port, use.member) for use in _uses(sample, root=tmp_path)}
    assert found == {("VectorIndex", "index_name"), ("RecordStore", "<getattr probe>"), ("VectorIndex", "knn")}
