"""The shop fixture (tests/fixtures/outline/shop: Python, Go, Java, TypeScript) pushed into a workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mnemo.context import RequestContext
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "outline" / "shop"


def shop_files() -> dict[str, str]:
    return {
        str(path.relative_to(SHOP)): path.read_text()
        for path in sorted(SHOP.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def push_shop(services: Services, context: RequestContext) -> int:
    write = load_catalog()["file_write"]
    files = shop_files()
    for path, content in files.items():
        write.invoke(services, context, {"path": path, "content": content})
    return len(files)


def call(services: Services, context: RequestContext, tool: str, body: dict[str, Any]) -> dict[str, Any]:
    return load_catalog(experimental=True)[tool].invoke(services, context, body)


def relations(node: dict[str, Any]) -> set[tuple[str, str]]:
    """(relation, name) of a JSON tree node's children."""
    return {(child["relation"], child["name"]) for child in node["children"]}
