"""Loading knowledge repositories into a test stack."""

from __future__ import annotations

from pathlib import Path

from mnemo.cli.knowledge import knowledge_files, push_files
from mnemo.runtime import Services

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "knowledge"
EXAMPLE_COUNT = sum(1 for _ in knowledge_files(EXAMPLES))


def push_tree(services: Services, tenant: str, root: Path = EXAMPLES, author: str = "tester") -> int:
    """Push every knowledge file under ``root`` for ``tenant``; returns how many were stored."""
    stored, _ = push_files(services.repository, tenant, root, author=author, message="initial import")
    return stored


def doc(
    item_id: str, *, kind: str = "policy", title: str | None = None, summary: str = "A rule.", extra: str = ""
) -> bytes:
    """A minimal valid knowledge file."""
    return (
        f"---\nid: {item_id}\ntype: {kind}\ntitle: {title or item_id.replace('-', ' ').title()}\n"
        f"summary: {summary}\n{extra}---\n# {item_id}\n\nBody of {item_id}.\n"
    ).encode()
