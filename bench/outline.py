"""Code outline over this repository's own layers/ directory (docs/benchmarks.md, "Code outline").

Pushes every Python file under layers/ into a fresh embedded workspace (as `mnemo workspace push` does)
and times, each over ``--repeat`` runs (median and max):

- the first outline_project call: every file parsed, the index written, the graph resolved, one page;
- a warm call: the index is current and the process keeps the resolved graph;
- a call after one file changed: that file parsed again, the graph resolved again;
- the whole project in pages (depth 2, text), as an agent reads it, cursor after cursor;
- outline_symbol and outline_file on a warm index.

Prints a table and writes bench/results/outline.json. Run: .venv/bin/python bench/outline.py
(``--source DIR`` outlines another folder of this checkout instead, into outline-<name>.json).
``--smoke``: one run over layers/shared/mnemo/outline/ (outline-outline.json), results to a temporary
folder (bench/common.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import fresh_services, parse_args, table, write_results
from mnemo.context import RequestContext
from mnemo.errors import MnemoError
from mnemo.files.scopes import workspace_location
from mnemo.outline.languages import get_language
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog

ROOT = Path(__file__).resolve().parents[1]
CONTEXT = RequestContext(tenant="bench", user="bench", project="mnemo", roles=frozenset({"writer"}))
CATALOG = load_catalog(experimental=True)


def call(services: Services, tool: str, body: dict[str, Any]) -> dict[str, Any]:
    return CATALOG[tool].invoke(services, CONTEXT, body)


def source_files(source: Path) -> list[Path]:
    """The Python files to push: a workspace file holds at most 1,000,000 characters (file_write refuses
    more, as `mnemo workspace push` does)."""
    return sorted(
        path for path in source.rglob("*.py") if "__pycache__" not in path.parts and path.stat().st_size <= 1_000_000
    )


def push(services: Services, source: Path) -> tuple[int, int]:
    files = source_files(source)
    for path in files:
        call(services, "file_write", {"path": str(path.relative_to(source.parent)), "content": path.read_text()})
    return len(files), sum(path.stat().st_size for path in files)


def timed(action: Callable[[], dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    answer = action()
    return (time.perf_counter() - start) * 1000.0, answer


def whole_project(services: Services) -> dict[str, Any]:
    pages, roots, nodes, cursor, chars = 0, 0, 0, None, 0
    while True:
        body: dict[str, Any] = {"language": "python", "depth": 2}
        if cursor:
            body["cursor"] = cursor
        page = call(services, "outline_project", body)
        pages, roots, nodes, chars = pages + 1, roots + page["roots"], nodes + page["nodes"], chars + len(page["text"])
        cursor = page["nextCursor"]
        if not page["hasMore"]:
            return {"pages": pages, "roots": roots, "nodes": nodes, "chars": chars}


#: What the symbol, file and edit cases use over layers/; another --source uses its largest file and a method
#: in it.
LAYERS_CASES = ("FileStore.write_ops", "layers/shared/mnemo/files/store.py", "layers/shared/mnemo/outline/tree.py")


def cases(services: Services, source: Path) -> tuple[str, str, str]:
    if source == ROOT / "layers":
        return LAYERS_CASES
    for largest in sorted(source_files(source), key=lambda path: -path.stat().st_size):
        path = str(largest.relative_to(source.parent))
        try:  # the largest file the outline covers (a generated parser's outline may be over the item limit)
            answer = call(services, "outline_file", {"file": path, "language": "python", "depth": 1, "format": "json"})
        except MnemoError:
            continue
        methods = [root["name"] for root in answer["symbols"] if root["kind"] == "method"]
        return (methods or [answer["symbols"][0]["name"]])[0], path, path
    raise SystemExit(f"no file of {source} is outlined")


def one_run(source: Path) -> dict[str, Any]:
    services = fresh_services(embedder="hashing")
    files, size = push(services, source)
    first_ms, first = timed(lambda: call(services, "outline_project", {"language": "python", "limit": 200}))
    warm_ms, _ = timed(lambda: call(services, "outline_project", {"language": "python", "limit": 200}))
    symbol, file, changed = cases(services, source)
    content = (source.parent / changed).read_text() + "\n\ndef added_for_the_benchmark() -> None:\n    pass\n"
    call(services, "file_write", {"path": changed, "content": content})
    edit_ms, edited = timed(lambda: call(services, "outline_project", {"language": "python", "limit": 200}))
    pages_ms, pages = timed(lambda: whole_project(services))
    symbol_ms, _ = timed(lambda: call(services, "outline_symbol", {"symbol": symbol, "language": "python"}))
    file_ms, _ = timed(lambda: call(services, "outline_file", {"file": file, "language": "python"}))
    graph = services.outline._built(workspace_location(CONTEXT), get_language("python")).graph  # its size
    return {
        "files": files,
        "bytes": size,
        "symbols": len(graph.order),
        "relations": sum(len(edges) for edges in graph.edges.values()),
        "parsed_first": first["parsed"],
        "parsed_after_edit": edited["parsed"],
        "first_ms": first_ms,
        "warm_ms": warm_ms,
        "after_edit_ms": edit_ms,
        "whole_project_ms": pages_ms,
        "whole_project": pages,
        "symbol_ms": symbol_ms,
        "file_ms": file_ms,
        "symbol": symbol,
        "file": file,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", type=Path, default=ROOT / "layers")
    parser.add_argument("--repeat", type=int, default=5)
    args = parse_args(parser, {"source": ROOT / "layers" / "shared" / "mnemo" / "outline", "repeat": 1})
    args.source = args.source.resolve()
    runs = [one_run(args.source) for _ in range(args.repeat)]
    first = runs[0]
    timings = ("first_ms", "warm_ms", "after_edit_ms", "whole_project_ms", "symbol_ms", "file_ms")
    summary = {
        name: {"median": statistics.median(run[name] for run in runs), "max": max(run[name] for run in runs)}
        for name in timings
    }
    rows = [
        ["first call: parse every file, index, resolve, one page", first["parsed_first"]],
        ["warm call (index current, graph kept)", 0],
        ["after one file changed", first["parsed_after_edit"]],
        [f"whole project, depth 2, text ({first['whole_project']['pages']} pages)", 0],
        [f"outline_symbol {first['symbol']}, depth 2", 0],
        [f"outline_file {first['file']}, depth 2", 0],
    ]
    print(
        f"{args.source.name}/: {first['files']} Python files, {first['bytes']:,} bytes, {first['symbols']:,} symbols, "
        f"{first['relations']:,} relations; {args.repeat} runs, load {os.getloadavg()[0]:.1f}"
    )
    print(
        table(
            ["call", "files parsed", "median ms", "max ms"],
            [[*row, summary[name]["median"], summary[name]["max"]] for row, name in zip(rows, timings, strict=True)],
        )
    )
    pages = first["whole_project"]
    print(f"whole project: {pages['roots']:,} trees, {pages['nodes']:,} nodes, {pages['chars']:,} characters")
    name = "outline" if args.source == ROOT / "layers" else f"outline-{args.source.name}"
    path = write_results(
        name,
        {"source": str(args.source.relative_to(ROOT)), "repeat": args.repeat, "runs": runs, "summary": summary},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
