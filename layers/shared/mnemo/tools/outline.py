"""Code outline tools (seed 002, experimental): relation trees over the code in the project workspace.

Served only when the experimental setting is on (``MNEMO_EXPERIMENTAL=1``,
``mnemo serve --experimental``, the template's ``ExperimentalTools`` parameter);
otherwise these tools are absent from the catalog and from every front door.
The workspace is the one the file tools write (``mnemo workspace push DIR``
fills it); the outline index is kept up to date by the sync job and before each
call. Relation kinds and what each language yields: docs/outline.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.context import RequestContext
from mnemo.outline.models import OutlineFileInput, OutlineOutput, OutlineProjectInput, OutlineSymbolInput
from mnemo.tools.registry import tool
from mnemo.tools.rights import WORKSPACE_READ, Rights, Runtime

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = "Relation trees over the code in the project workspace"


# Each call first refreshes the outline index (reads changed workspace files, puts and deletes
# OUTLINE| items), hence read-write and repeatable; parsing is CPU-bound: 1,769 MB is one vCPU.
@tool(
    "outline",
    rights=Rights(records="read-write", bucket=WORKSPACE_READ),
    runtime=Runtime(timeout=60, memory=1769),
    repeatable=True,
)
def outline_symbol(services: Services, context: RequestContext, request: OutlineSymbolInput) -> OutlineOutput:
    """[SPECIFICATION] Returns the relation tree for a named symbol, showing its connections across the codebase.

    Tool exposure: `outline_symbol` (experimental)

    Looks the symbol up in the project workspace's code: by its qualified name
    (`shop.orders.service.OrderService.place`, `inventory.(*Manager).Reserve`)
    or by its trailing part (`OrderService.place`, `Reserve`), which may match
    several symbols: each is a root. The tree shows what the symbol contains,
    calls, is called by, imports, extends, implements, references and its
    type, `depth` levels out; `relations` keeps only some kinds and
    `omit_native` drops standard-library and built-in symbols.

    **When to use:** before changing a function or type, to see what it uses
    and who depends on it; to find where something is declared.

    **Usage:**
    ```json
    {"symbol": "OrderService.place", "language": "python", "depth": 1, "relations": ["calls", "type_of"], "omit_native": true}
    ```

    **Returns:**
    ```json
    {"success": true, "language": "python", "format": "text", "text": "shop.orders.service.OrderService.place [method] shop/orders/service.py:15\\n├── calls shop.orders.models.Order [class] shop/orders/models.py:14\\n├── calls shop.orders.models.Line [class] shop/orders/models.py:9\\n├── calls shop.orders.models.Order.add [method] shop/orders/models.py:21\\n├── calls shop.orders.repository.Repository.save [method] shop/orders/repository.py:9\\n└── type_of shop.orders.models.Order [class] shop/orders/models.py:14\\n", "symbols": null, "roots": 1, "nodes": 6, "files": 5, "parsed": 5, "skipped": [], "hasMore": false, "nextCursor": null}
    ```

    **Errors:**
    - INVALID_INPUT: an unknown language or relation, depth outside 1-6, a
      `file` that is not a relative workspace path of that language, a cursor
      of another query or of files since changed; a workspace whose files of
      the language exceed the outline's size limit (`language`; details give
      `limitFiles`, `limitBytes`, `files` and `bytes`); a tree too large for
      one answer (`depth`, with `tooLarge`). Details name the field.
    - NOT_FOUND: no such symbol (`details.didYouMean` lists close names), or
      `file` is not in the workspace.

    @see mnemo.outline.service.OutlineService.symbol
    """
    return services.outline.symbol(context, request)


@tool(
    "outline",
    rights=Rights(records="read-write", bucket=WORKSPACE_READ),
    runtime=Runtime(timeout=60, memory=1769),
    repeatable=True,
)
def outline_file(services: Services, context: RequestContext, request: OutlineFileInput) -> OutlineOutput:
    """[SPECIFICATION] Returns the relation tree for every symbol declared in a source file.

    Tool exposure: `outline_file` (experimental)

    Every declaration of the file, the module or package first, each with its
    relations `depth` levels out. Long answers come in pages: `hasMore` and
    `nextCursor` give the next one.

    **When to use:** to understand a file before editing it, or to review what a
    file depends on and what depends on it.

    **Usage:**
    ```json
    {"file": "shop/orders/repository.py", "language": "python", "depth": 1, "relations": ["extends"], "format": "json", "limit": 2}
    ```

    **Returns:**
    ```json
    {"success": true, "language": "python", "format": "json", "text": null, "symbols": [{"name": "shop.orders.repository", "kind": "module", "origin": "project", "path": "shop/orders/repository.py", "line": 1, "endLine": 23, "relation": null, "atLine": null, "cycle": false, "children": []}, {"name": "shop.orders.repository.Repository", "kind": "class", "origin": "project", "path": "shop/orders/repository.py", "line": 8, "endLine": 11, "relation": null, "atLine": null, "cycle": false, "children": [{"name": "typing.Protocol", "kind": "native", "origin": "native", "path": null, "line": null, "endLine": null, "relation": "extends", "atLine": 8, "cycle": false, "children": []}]}], "roots": 2, "nodes": 3, "files": 5, "parsed": 0, "skipped": [], "hasMore": true, "nextCursor": "eyJvIjoyLCJmIjoiYjBiYWRiZGRkNjRlNmNiNyJ9"}
    ```

    **Errors:**
    - INVALID_INPUT: `file` is not a relative workspace path, is not a file of
      `language`, or is too large to outline; an unknown language or relation,
      depth outside 1-6; a cursor of another query or of files since changed;
      a workspace over the outline's size limit (`language`, with `limitFiles`,
      `limitBytes`, `files` and `bytes`); a tree too large for one answer
      (`depth`, with `tooLarge`). Details name the field.
    - NOT_FOUND: the file is not in the workspace.

    @see mnemo.outline.service.OutlineService.file
    """
    return services.outline.file(context, request)


@tool(
    "outline",
    rights=Rights(records="read-write", bucket=WORKSPACE_READ),
    runtime=Runtime(timeout=60, memory=1769),
    repeatable=True,
)
def outline_project(services: Services, context: RequestContext, request: OutlineProjectInput) -> OutlineOutput:
    """[SPECIFICATION] Returns the full relation tree for every symbol across the entire project.

    Tool exposure: `outline_project` (experimental)

    Every symbol of the language in the workspace, in file and line order, each
    with its relations `depth` levels out, `limit` symbols per answer: follow
    `nextCursor` for the rest. A workspace whose files of the language exceed
    the outline's limits (5,000 files, 20 MB) gets INVALID_INPUT at once, not a
    timeout.

    **When to use:** for a map of a codebase: its modules, types and how they
    connect. Ask for `relations` such as `["contains"]` or `["imports"]` to keep
    it short.

    **Usage:**
    ```json
    {"language": "python", "depth": 1, "relations": ["imports"], "limit": 3}
    ```

    **Returns:**
    ```json
    {"success": true, "language": "python", "format": "text", "text": "shop [module] shop/__init__.py:1\\n\\nshop.orders [module] shop/orders/__init__.py:1\\n\\nshop.orders.models [module] shop/orders/models.py:1\\n└── imports dataclasses.dataclass (native)\\n", "symbols": null, "roots": 3, "nodes": 4, "files": 5, "parsed": 0, "skipped": [], "hasMore": true, "nextCursor": "eyJvIjozLCJmIjoiODJlNjI3NTI2YmVjYzc1ZiJ9"}
    ```

    **Errors:**
    - INVALID_INPUT: an unknown language or relation, depth outside 1-6, a
      cursor of another query or of files since changed, a project over the
      size limit (`language`; details give `limitFiles`, `limitBytes`, `files`
      and `bytes`), or a single tree too large for one answer (`depth`, with
      `tooLarge`). Details name the field.

    @see mnemo.outline.service.OutlineService.project
    """
    return services.outline.project(context, request)
