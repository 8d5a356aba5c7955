"""Relation trees: a symbol and what it relates to, ``depth`` levels out, as JSON-able nodes or text.

Children are listed by relation kind (docs/outline.md's order) and then line. A
symbol already on the path from the root is shown once more, marked ``cycle``,
and not expanded again, so a recursive call or a mutual import ends the branch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mnemo.outline.graph import Graph, Node
from mnemo.outline.structure import RELATION_KINDS

#: Edges a tree may look at per node it may hold (the rest are omitted natives).
EXAMINED_PER_NODE = 4


@dataclass
class TreeNode:
    node: Node
    relation: str | None = None
    #: Where the parent's code makes the relation (the line of the call, import or annotation).
    at_line: int | None = None
    cycle: bool = False
    children: list[TreeNode] = field(default_factory=list)

    def count(self) -> int:
        return 1 + sum(child.count() for child in self.children)

    def to_json(self) -> dict[str, Any]:
        node = self.node
        return {
            "name": node.name,
            "kind": node.kind,
            "origin": node.origin,
            "path": node.path,
            "line": node.line,
            "endLine": node.end_line,
            "relation": self.relation,
            "atLine": self.at_line,
            "cycle": self.cycle,
            "children": [child.to_json() for child in self.children],
        }


class TreeTooLarge(Exception):
    """The tree would hold more than the nodes allowed: stopped while being built, not after."""


def relation_tree(
    graph: Graph,
    root: str,
    *,
    depth: int,
    relations: Iterable[str] | None,
    omit_native: bool,
    max_nodes: int,
) -> TreeNode:
    """``root`` and its relations ``depth`` levels out; TreeTooLarge past ``max_nodes`` nodes (a dense graph
    grows as its degree to the power of the depth)."""
    kinds = [kind for kind in RELATION_KINDS if kind in set(relations or RELATION_KINDS)]
    count = examined = 1

    def expand(node_id: str, levels: int, path: frozenset[str], into: TreeNode) -> None:
        nonlocal count, examined
        grouped = graph.relations_by_kind(node_id)
        for kind in kinds:
            for edge in grouped.get(kind, ()):
                # Edges passed over (native ones omitted) are work too: a hub with 20,000 callers costs
                # its 20,000 even when none is shown.
                examined += 1
                if examined > max_nodes * EXAMINED_PER_NODE:
                    raise TreeTooLarge
                target = graph.nodes[edge.target]
                if omit_native and target.native:
                    continue
                count += 1
                if count > max_nodes:
                    raise TreeTooLarge
                child = TreeNode(target, edge.kind, edge.line, cycle=edge.target in path)
                into.children.append(child)
                if levels > 1 and not child.cycle:
                    expand(edge.target, levels - 1, path | {edge.target}, child)

    tree = TreeNode(graph.nodes[root])
    expand(root, depth, frozenset({root}), tree)
    return tree


def _label(node: Node) -> str:
    if node.origin != "project":
        return f"{node.name} ({node.origin})"
    return f"{node.name} [{node.kind}] {node.path}:{node.line}"


def render_text(trees: Iterable[TreeNode]) -> str:
    """Each tree as indented lines: ``├── calls shop.Order.add [method] shop/orders.py:21``."""
    lines: list[str] = []

    def walk(tree: TreeNode, prefix: str) -> None:
        for position, child in enumerate(tree.children):
            last = position == len(tree.children) - 1
            mark = " (cycle)" if child.cycle else ""
            lines.append(f"{prefix}{'└── ' if last else '├── '}{child.relation} {_label(child.node)}{mark}")
            walk(child, prefix + ("    " if last else "│   "))

    for tree in trees:
        if lines:
            lines.append("")
        lines.append(_label(tree.node))
        walk(tree, "")
    return "\n".join(lines) + ("\n" if lines else "")
