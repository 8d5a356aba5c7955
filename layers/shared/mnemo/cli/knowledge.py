"""`mnemo knowledge validate|push DIR` and `mnemo sync`: the knowledge repository from a shell."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mnemo.cli.progress import FILES_BAR, Progress
from mnemo.knowledge.documents import DocumentError, is_knowledge_file, parse_document
from mnemo.knowledge.models import KnowledgeItem
from mnemo.knowledge.repository import KnowledgeRepository


@dataclass
class Validation:
    """What ``validate_tree`` found: the items that parsed, by relative path, and every error."""

    items: dict[str, KnowledgeItem] = field(default_factory=dict)
    errors: list[DocumentError] = field(default_factory=list)


def knowledge_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative posix path, file) of every knowledge file under ``root``, sorted."""
    for file in sorted(root.rglob("*.md")):
        relative = file.relative_to(root).as_posix()
        if file.is_file() and is_knowledge_file(relative):
            yield relative, file


def validate_tree(root: Path) -> Validation:
    """Parse every file; also refuse an id used twice in a layer and a dangling `supersedes`."""
    result = Validation()
    for relative, file in knowledge_files(root):
        try:
            result.items[relative] = parse_document(relative, file.read_bytes())
        except DocumentError as error:
            result.errors.append(error)
    owners: dict[tuple[str, str | None, str], str] = {}
    for relative, item in result.items.items():
        key = (item.layer, item.layer_id, item.id)
        if key in owners:
            result.errors.append(DocumentError(relative, "id", f"'{item.id}' is already used by {owners[key]}"))
        owners.setdefault(key, relative)
    known = {item.id for item in result.items.values()}
    for relative, item in result.items.items():
        if item.supersedes and item.supersedes not in known:
            result.errors.append(
                DocumentError(relative, "supersedes", f"no item '{item.supersedes}' in the repository")
            )
    return result


def push_files(
    repository: KnowledgeRepository,
    tenant: str,
    root: Path,
    *,
    author: str,
    message: str,
    progress: Callable[[int, str], None] | None = None,
) -> tuple[int, int]:
    """Store a new version of each changed knowledge file under ``root``; (stored, unchanged).
    ``progress`` is told the files done so far and the last one's path."""
    files = list(knowledge_files(root))
    stored = 0
    for position, (relative, file) in enumerate(files, start=1):
        if repository.push(tenant, relative, file.read_bytes(), author=author, message=message):
            stored += 1
        if progress is not None:
            progress(position, relative)
    return stored, len(files) - stored


def _context() -> object:
    from mnemo.entry.identity import context_from_environment

    return context_from_environment(os.environ)


def cmd_validate(args: argparse.Namespace) -> int:
    """`mnemo knowledge validate DIR`: print each invalid file's error and a count; 0 only when there are valid items
    and no errors, 2 when DIR is no folder."""
    root = Path(args.directory)
    if not root.is_dir():
        print(f"{root}: not a directory", file=sys.stderr)
        return 2
    result = validate_tree(root)
    for error in result.errors:
        print(f"{error.path}: {error.field}: {error.message}")
    constraints = sum(len(item.constraints) for item in result.items.values())
    print(f"{len(result.items)} valid items ({constraints} constraints), {len(result.errors)} errors")
    return 1 if result.errors or not result.items else 0


def cmd_push(args: argparse.Namespace) -> int:
    """`mnemo knowledge push DIR`: validate the tree, then store each changed file as a new version for the caller's
    tenant (``--prune`` also removes stored files missing from DIR). While a file is invalid nothing is pushed and the
    status is 1, unless ``--allow-invalid``; 2 when DIR is no folder."""
    from mnemo.context import RequestContext
    from mnemo.runtime import get_services

    root = Path(args.directory)
    if not root.is_dir():
        print(f"{root}: not a directory", file=sys.stderr)
        return 2
    result = validate_tree(root)
    if result.errors and not args.allow_invalid:
        for error in result.errors:
            print(f"{error.path}: {error.field}: {error.message}", file=sys.stderr)
        print("nothing pushed: fix the files above, or pass --allow-invalid", file=sys.stderr)
        return 1
    context = _context()
    assert isinstance(context, RequestContext)
    repository = get_services().repository
    author = args.author or os.environ.get("USER") or "mnemo-cli"
    message = args.message or f"mnemo knowledge push {root.name}"
    progress = Progress("", sum(1 for _ in knowledge_files(root)), sys.stderr, FILES_BAR)
    stored, unchanged = push_files(
        repository, context.tenant, root, author=author, message=message, progress=progress.update
    )
    progress.close()
    removed = 0
    if args.prune:
        present = {relative for relative, _ in knowledge_files(root)}
        for relative in repository.paths(context.tenant):
            if relative not in present:
                repository.remove(context.tenant, relative)
                removed += 1
    print(f"pushed {stored} files, {unchanged} unchanged, {removed} removed (tenant {context.tenant})")
    return 0


def load_knowledge(root: Path, tenant: str) -> str:
    """Push a repository for ``tenant`` and sync it (``mnemo serve --knowledge``); a one-line report."""
    from mnemo.runtime import get_services
    from mnemo.sync.models import SyncNowInput

    services = get_services()
    stored, _ = push_files(services.repository, tenant, root, author="mnemo serve", message=f"load {root}")
    output = services.sync.sync(tenant, SyncNowInput(), actor="mnemo serve")
    counts = output.result
    return (
        f"knowledge from {root} (tenant {tenant}): {stored} files stored; synced {counts.added} added, "
        f"{counts.updated} updated, {counts.deleted} deleted, {counts.unchanged} unchanged, {counts.failures} failed"
    )


def cmd_sync(args: argparse.Namespace) -> int:
    """`mnemo sync`: sync the caller's tenant's knowledge into memory now and print the sync_now answer; 1 on an error
    envelope or when any item failed."""
    from mnemo.context import RequestContext
    from mnemo.errors import MnemoError
    from mnemo.runtime import get_services
    from mnemo.sync.models import SyncNowInput

    context = _context()
    assert isinstance(context, RequestContext)
    try:
        request = SyncNowInput(force=args.force, types=args.type or None, layers=args.layer or None)
        output = get_services().sync.sync(context.tenant, request, actor=context.user or "mnemo-cli")
    except MnemoError as error:
        print(json.dumps(error.envelope(), indent=2))
        return 1
    print(json.dumps(output.model_dump(mode="json", by_alias=True), indent=2))
    return 0 if output.result.failures == 0 else 1


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the `knowledge validate|push` and `sync` parsers."""
    knowledge = commands.add_parser("knowledge", help="the organisational knowledge repository (markdown files)")
    actions = knowledge.add_subparsers(dest="action", required=True)

    validate = actions.add_parser("validate", help="check every file's front matter, ids and patterns")
    validate.add_argument("directory")
    validate.set_defaults(run=cmd_validate)

    push = actions.add_parser("push", help="upload a repository to the knowledge store (S3 or local), as new versions")
    push.add_argument("directory")
    push.add_argument("--data-dir", type=Path)
    push.add_argument("--author", help="recorded in each new version's history (default: $USER)")
    push.add_argument("--message", help="recorded in each new version's history")
    push.add_argument("--prune", action="store_true", help="remove stored files that are not in the directory")
    push.add_argument("--allow-invalid", action="store_true", help="push even if some files do not validate")
    push.set_defaults(run=cmd_push)

    sync = commands.add_parser("sync", help="sync knowledge into memory now (the tenant from MNEMO_TENANT)")
    sync.add_argument("--data-dir", type=Path)
    sync.add_argument("--force", action="store_true", help="re-apply every item, ignoring delta detection")
    sync.add_argument("--type", action="append", choices=["adr", "policy", "pattern", "spec"])
    sync.add_argument("--layer", action="append", choices=["company", "org", "team", "project"])
    sync.set_defaults(run=cmd_sync)
