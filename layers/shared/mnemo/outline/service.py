"""The outline tools over the caller's workspace: find the roots, build their trees, fit the answer.

Each call first brings the outline index up to date (``OutlineIndex.refresh``:
only files changed since the last build are parsed), then resolves the project
graph, which a process keeps while the workspace's files of that language stay
the same, so repeated calls on a warm Lambda read the workspace heads and
nothing else. Trees are added root by root until ``limit`` or the front door's
response budget is reached; the rest is one ``nextCursor`` away.
"""

from __future__ import annotations

import difflib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

from mnemo.budget import RESERVE_BYTES, wire_bytes
from mnemo.context import RequestContext
from mnemo.errors import MnemoError, NotFound, invalid_field
from mnemo.files.paths import parse_path
from mnemo.files.scopes import workspace_location
from mnemo.files.store import FileStore, Location
from mnemo.outline.graph import Graph, build_graph
from mnemo.outline.index import OutlineIndex, Refresh
from mnemo.outline.languages import LanguageSpec, get_language
from mnemo.outline.models import (
    OutlineFileInput,
    OutlineNode,
    OutlineOutput,
    OutlineProjectInput,
    OutlineSymbolInput,
    SkippedFile,
)
from mnemo.outline.tree import TreeNode, TreeTooLarge, relation_tree, render_text
from mnemo.paging import decode_cursor, encode_cursor, fingerprint
from mnemo.ports import RecordStore

#: What an answer may take when the front door sets no budget (Lambda's response limit is 6 MB).
DEFAULT_BUDGET_BYTES = 4_000_000
#: The most nodes one answer's trees hold: a dense graph at depth 6 would otherwise be built in full before
#: its size could be measured.
MAX_ANSWER_NODES = 50_000
#: Nodes plus edges the process keeps resolved (layers/: 26k; a 20 MB project: about 600k).
CACHED_GRAPH_ELEMENTS = 1_500_000


@dataclass(frozen=True)
class _Built:
    graph: Graph
    refresh: Refresh


class _GraphCache:
    """Resolved graphs by (workspace, language), each valid for one fingerprint of the language's files.
    One per service, so per process on Lambda (and per data directory locally); bounded by the nodes and
    edges it holds, so that a warm container serving several large projects stays within its memory."""

    def __init__(self, capacity: int = CACHED_GRAPH_ELEMENTS) -> None:
        self._graphs: OrderedDict[tuple[str, str], tuple[tuple[tuple[str, str], ...], _Built, int]] = OrderedDict()
        self._capacity = capacity
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str], files: tuple[tuple[str, str], ...]) -> _Built | None:
        with self._lock:
            found = self._graphs.get(key)
            if found is None or found[0] != files:
                return None
            self._graphs.move_to_end(key)
            return found[1]

    def put(self, key: tuple[str, str], files: tuple[tuple[str, str], ...], built: _Built) -> None:
        size = len(built.graph.nodes) + sum(len(edges) for edges in built.graph.edges.values())
        with self._lock:
            replaced = self._graphs.pop(key, None)
            self._held -= replaced[2] if replaced else 0
            self._graphs[key] = (files, built, size)
            self._held += size
            while len(self._graphs) > 1 and self._held > self._capacity:
                _, (_, _, evicted) = self._graphs.popitem(last=False)
                self._held -= evicted


class OutlineService:
    def __init__(self, records: RecordStore, files: FileStore) -> None:
        self._index = OutlineIndex(records, files)
        self._graphs = _GraphCache()

    @property
    def index(self) -> OutlineIndex:
        return self._index

    # ------------------------------------------------------------ the tools
    def symbol(self, context: RequestContext, request: OutlineSymbolInput) -> OutlineOutput:
        spec = get_language(request.language)
        built = self._built(workspace_location(context), spec)
        path = self._workspace_path(request.file, spec, built) if request.file else None
        roots = [node_id for node_id in built.graph.find(request.symbol, path) if self._ours(built, spec, node_id)]
        if not roots:
            raise self._no_symbol(built.graph, request.symbol, path)
        return self._answer(context, request, built, roots, ["symbol", path])

    def file(self, context: RequestContext, request: OutlineFileInput) -> OutlineOutput:
        spec = get_language(request.language)
        built = self._built(workspace_location(context), spec)
        path = self._workspace_path(request.file, spec, built)
        return self._answer(context, request, built, built.graph.declared_in(path), ["file", path])

    def project(self, context: RequestContext, request: OutlineProjectInput) -> OutlineOutput:
        spec = get_language(request.language)
        built = self._built(workspace_location(context), spec)
        roots = [node_id for node_id in built.graph.order if self._ours(built, spec, node_id)]
        return self._answer(context, request, built, roots, ["project"])

    # ------------------------------------------------------------ the index
    def _built(self, where: Location, spec: LanguageSpec) -> _Built:
        workspace = self._index.workspace_files(where)
        specs = [spec, *(get_language(name) for name in spec.companions)]
        claimed = [item for item in workspace.values() if any(each.claims(item.path) for each in specs)]
        # Go's graph also depends on the go.mod files (their module paths name the project's packages).
        markers = [
            item for item in workspace.values() if spec.name == "go" and item.path.rpartition("/")[2] == "go.mod"
        ]
        files = tuple(sorted((item.path, item.sha256) for item in [*claimed, *markers]))
        key = (where.pk, spec.name)
        cached = self._graphs.get(key, files)
        if cached is not None:
            return _Built(cached.graph, Refresh(skipped=cached.refresh.skipped, fingerprint=files))
        self._index.check_size(spec, claimed)  # companions count together: one graph holds them all
        refresh = Refresh(fingerprint=files)
        for each in specs:
            part = self._index.refresh(where, each, workspace)
            refresh.outlines += part.outlines
            refresh.skipped += part.skipped
            refresh.parsed += part.parsed
            refresh.removed += part.removed
        go_modules = self._index.go_modules(where, workspace) if spec.name == "go" else None
        built = _Built(build_graph(spec, refresh.outlines, go_modules), refresh)
        # The outlines are in the graph now: the cache keeps the graph, not them twice.
        self._graphs.put(key, files, _Built(built.graph, Refresh(skipped=refresh.skipped, fingerprint=files)))
        return built

    # ------------------------------------------------------------ answers
    @staticmethod
    def _ours(built: _Built, spec: LanguageSpec, node_id: str) -> bool:
        """Whether a symbol is declared in a file of the requested language (not of a companion)."""
        return spec.claims(built.graph.nodes[node_id].path or "")

    def _workspace_path(self, raw: str, spec: LanguageSpec, built: _Built) -> str:
        path = parse_path(raw, field="file")
        if path.store != "workspace":
            raise invalid_field("file", "a relative path in the project workspace, e.g. src/app.py")
        if not spec.claims(path.name):
            raise invalid_field(
                "file", f"'{path.name}' is not a {spec.name} file ({', '.join(spec.extensions)})", language=spec.name
            )
        if path.name not in built.graph.files:
            skipped = next((item for item in built.refresh.skipped if item["path"] == path.name), None)
            if skipped is not None:
                raise invalid_field("file", f"'{path.name}' is not outlined: {skipped['reason']}")
            raise NotFound(f"'{path.name}' is not in the workspace", {"field": "file", "path": path.name})
        return path.name

    @staticmethod
    def _too_large(name: str, size: str) -> MnemoError:
        return invalid_field(
            "depth", f"the tree of '{name}' takes {size}; ask for a smaller depth or fewer relations", tooLarge=size
        )

    @staticmethod
    def _no_symbol(graph: Graph, symbol: str, path: str | None) -> NotFound:
        names = {graph.nodes[node_id].name for node_id in graph.order}
        shorts = {name.rpartition(".")[2]: name for name in names}
        close = difflib.get_close_matches(symbol, list(names), n=5, cutoff=0.6)
        close += [shorts[short] for short in difflib.get_close_matches(symbol, list(shorts), n=5, cutoff=0.6)]
        where = f" in {path}" if path else ""
        return NotFound(
            f"no {graph.language} symbol '{symbol}'{where}",
            {"field": "symbol", "symbol": symbol, "didYouMean": list(dict.fromkeys(close))[:5]},
        )

    def _answer(
        self,
        context: RequestContext,
        request: OutlineSymbolInput | OutlineFileInput | OutlineProjectInput,
        built: _Built,
        roots: list[str],
        query_parts: list[object],
    ) -> OutlineOutput:
        # A cursor belongs to one query over one state of the files: after a change it is refused, not
        # silently shifted.
        query = fingerprint([*query_parts, request.model_dump(exclude={"limit", "cursor"}), built.refresh.fingerprint])
        offset = decode_cursor(request.cursor, query)
        output = OutlineOutput(
            language=request.language,
            format=request.format,
            roots=0,
            nodes=0,
            files=sum(1 for path in built.graph.files if get_language(request.language).claims(path)),
            parsed=built.refresh.parsed,
            skipped=[SkippedFile(**item) for item in built.refresh.skipped],
        )
        # Measured as the front doors send it: JSON with non-ASCII escaped (a tree's "├" takes 6 bytes).
        room = (context.response_budget or DEFAULT_BUDGET_BYTES) - wire_bytes(output) - RESERVE_BYTES
        trees: list[TreeNode] = []
        used = nodes = 0
        for node_id in roots[offset : offset + request.limit]:
            name = built.graph.nodes[node_id].name
            try:
                tree = relation_tree(
                    built.graph,
                    node_id,
                    depth=request.depth,
                    relations=request.relations,
                    omit_native=request.omit_native,
                    max_nodes=MAX_ANSWER_NODES - nodes,
                )
            except TreeTooLarge:
                if trees:
                    break
                raise self._too_large(name, f"more than {MAX_ANSWER_NODES:,} nodes") from None
            shown = render_text([tree]) if request.format == "text" else tree.to_json()
            size = len(json.dumps(shown))
            if used + size > room:
                if trees:
                    break
                raise self._too_large(name, f"{size:,} bytes (this answer holds {max(room, 0):,})")
            trees.append(tree)
            used += size
            nodes += tree.count()
        end = offset + len(trees)
        output.roots, output.nodes = len(trees), nodes
        if request.format == "text":
            output.text = render_text(trees)
        else:
            output.symbols = [OutlineNode.model_validate(tree.to_json()) for tree in trees]
        if end < len(roots):
            output.has_more, output.next_cursor = True, encode_cursor(end, query)
        return output
