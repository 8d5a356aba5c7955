"""Create or update the OpenSearch memory indexes from infra/opensearch/memory.json, idempotently.

    python infra/bootstrap_opensearch.py --endpoint https://xyz.us-east-1.aoss.amazonaws.com

First the index template ``<prefix>index-template`` (every ``<prefix>*`` index gets the
definition; it guards against a write racing a ``clear``) is created or replaced when it
differs. Then, for each namespace (default: the memory service's one), the index
``<prefix><namespace>`` is created when missing; when present, fields the definition has
and the index lacks are added with put_mapping, and fields whose definition changed in a
way OpenSearch cannot apply in place (type, vector dimension or space) are reported as
conflicts: recreate the index and run ``mnemo reindex``. Running it again changes
nothing. It prints one line per template and index, and exits 1 on any conflict.

The adapter creates a missing index by itself on the first write; this script exists to
create it ahead (so the first write is not slowed down) and to roll out new fields.
Settings (analysis, similarity) are only applied on creation: OpenSearch cannot change them
on an open index, and Serverless cannot close one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFINITION = Path(__file__).resolve().parent / "opensearch" / "memory.json"

#: What must match for an existing field to count as the defined one.
_FIXED_KEYS = ("type", "dimension", "analyzer")
_FIXED_METHOD_KEYS = ("engine", "space_type", "name")


@dataclass
class Outcome:
    index: str
    #: "created", "updated" (fields added), "unchanged" or "conflict".
    action: str
    added: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    def describe(self) -> str:
        text = f"{self.index}: {self.action}"
        if self.added:
            text += f" (added {', '.join(self.added)})"
        if self.conflicts:
            text += f"; cannot change {'; '.join(self.conflicts)} in place: recreate the index and run mnemo reindex"
        return text


def load_definition(dimension: int, *, serverless: bool, path: Path = DEFINITION) -> dict[str, Any]:
    """The index body from memory.json, at ``dimension``; Serverless gets no shard settings."""
    body: dict[str, Any] = json.loads(path.read_text())
    body["mappings"]["properties"]["vector"]["dimension"] = dimension
    if serverless:
        for setting in ("number_of_shards", "number_of_replicas"):
            body["settings"]["index"].pop(setting, None)
    return body


def _conflict(name: str, existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> str | None:
    for key in _FIXED_KEYS:
        if key in wanted and existing.get(key) != wanted[key]:
            return f"{name}.{key} ({existing.get(key)!r} -> {wanted[key]!r})"
    wanted_method, existing_method = wanted.get("method") or {}, existing.get("method") or {}
    for key in _FIXED_METHOD_KEYS:
        if key in wanted_method and existing_method.get(key) != wanted_method[key]:
            return f"{name}.method.{key} ({existing_method.get(key)!r} -> {wanted_method[key]!r})"
    return None


def _flat(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Settings as OpenSearch echoes them: dotted keys without "index.", scalar values as strings."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flat(value, f"{path}."))
        else:
            flat[path.removeprefix("index.")] = (
                [str(item) for item in value] if isinstance(value, list) else str(value).lower()
            )
    return flat


def _same_template(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    have, want = existing.get("template", {}), wanted["template"]
    return (
        list(existing.get("index_patterns", [])) == list(wanted["index_patterns"])
        and existing.get("priority") == wanted["priority"]
        and _flat(have.get("settings", {})) == _flat(want["settings"])
        and have.get("mappings") == want["mappings"]
    )


def ensure_template(client: Any, name: str, body: Mapping[str, Any]) -> Outcome:
    try:
        found = client.indices.get_index_template(name=name).get("index_templates", [])
    except Exception as error:
        if getattr(error, "status_code", None) != 404:
            raise
        found = []
    if found and _same_template(found[0]["index_template"], body):
        return Outcome(name, "unchanged")
    client.indices.put_index_template(name=name, body=body)
    return Outcome(name, "updated" if found else "created")


def bootstrap(client: Any, indexes: Sequence[str], definition: Mapping[str, Any]) -> list[Outcome]:
    """Bring each index in line with ``definition``; never refreshes, never deletes."""
    wanted: Mapping[str, Any] = definition["mappings"]["properties"]
    outcomes = []
    for index in indexes:
        if not client.indices.exists(index=index):
            try:
                client.indices.create(index=index, body=definition)
            except Exception as error:  # created by a writer in the meantime: check it below
                if getattr(error, "error", None) != "resource_already_exists_exception":
                    raise
            else:
                outcomes.append(Outcome(index, "created"))
                continue
        mapping = client.indices.get_mapping(index=index)
        body = mapping.get(index) or next(iter(mapping.values()))
        existing: Mapping[str, Any] = body["mappings"].get("properties", {})
        missing = {name: spec for name, spec in wanted.items() if name not in existing}
        conflicts = [
            problem
            for name, spec in wanted.items()
            if name in existing and (problem := _conflict(name, existing[name], spec)) is not None
        ]
        if missing:
            client.indices.put_mapping(index=index, body={"properties": missing})
        action = "conflict" if conflicts else "updated" if missing else "unchanged"
        outcomes.append(Outcome(index, action, sorted(missing), conflicts))
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    from mnemo.adapters.aws.opensearch.client import is_local_endpoint, make_client
    from mnemo.adapters.aws.opensearch.mapping import index_name, template_name
    from mnemo.memory.indexing import NAMESPACE

    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", default=env.get("MNEMO_OPENSEARCH_ENDPOINT"), help="domain or collection URL")
    parser.add_argument("--region", default=env.get("MNEMO_AWS_REGION") or env.get("AWS_REGION"))
    parser.add_argument(
        "--service",
        choices=["es", "aoss"],
        default=env.get("MNEMO_OPENSEARCH_SERVICE") or "aoss",
        help="SigV4 service: es (domain) or aoss (Serverless)",
    )
    parser.add_argument("--prefix", default=env.get("MNEMO_INDEX_PREFIX") or "mnemo-")
    parser.add_argument("--namespace", action="append", help=f"repeatable; default {NAMESPACE!r}")
    parser.add_argument(
        "--dimension",
        type=int,
        default=int(env.get("MNEMO_TITAN_DIMENSIONS") or 1024),
        help="vector size (the embedder's)",
    )
    args = parser.parse_args(argv)
    if not args.endpoint:
        parser.error("--endpoint (or MNEMO_OPENSEARCH_ENDPOINT) is required")

    client = make_client(args.endpoint, args.region, args.service, endpoint_is_local=is_local_endpoint(args.endpoint))
    definition = load_definition(args.dimension, serverless=args.service == "aoss")
    indexes = [index_name(args.prefix, namespace) for namespace in args.namespace or [NAMESPACE]]
    template = {"index_patterns": [f"{args.prefix}*"], "priority": 100, "template": definition}
    outcomes = [ensure_template(client, template_name(args.prefix), template)]
    outcomes += bootstrap(client, indexes, definition)
    for outcome in outcomes:
        print(outcome.describe())
    return 1 if any(outcome.conflicts for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
