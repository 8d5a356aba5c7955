"""The catalog as the adapters read it: mnemo/client/catalog.json, generated from the service's catalog."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from mnemo.client.errors import MnemoClientError


def catalog() -> list[dict[str, Any]]:
    """Each tool's name, family, description and input JSON Schema."""
    loaded: list[dict[str, Any]] = json.loads(resources.files("mnemo.client").joinpath("catalog.json").read_text())
    return loaded


def selected(names: Any) -> list[dict[str, Any]]:
    """The catalog's entries for ``names`` (an iterable of tool names, or None for all), in catalog order,
    each input schema without its ``$schema`` marker (which tool frameworks do not take)."""
    wanted = set(names) if names is not None else None
    return [
        {**entry, "inputSchema": {k: v for k, v in entry["inputSchema"].items() if k != "$schema"}}
        for entry in catalog()
        if wanted is None or entry["name"] in wanted
    ]


def envelope(error: MnemoClientError) -> dict[str, Any]:
    """The error envelope as the service sent it, for a framework to hand back to the model."""
    return {
        "success": False,
        "errorCode": error.code,
        "message": error.message,
        "details": error.details,
        "retryable": error.retryable,
    }
