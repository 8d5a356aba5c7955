"""Constraint patterns run in linear time: catastrophic-backtracking patterns on RE2, against Python's re.

    python bench/regex_safety.py [--sizes 1000 10000 100000 1000000] [--re-limit 2.0] [--timeout 30]
                                 [--line-sizes 10000 20000 ...] [--smoke]

For each pattern, an input of n characters that makes a backtracking engine
try every way to split it (and fail): n-1 'a' then '!', or for ``(.*a){12}``
eleven 'a' spread over n-1 'x' (one 'a' short of a match). RE2 is timed on
n = 1k ... 1M, twice: ``compile_pattern(p).search(text)``, and the whole
``evaluate()`` of a must_not_match code constraint on one file holding the
text (1M characters is the largest file a request may send). Python's ``re``
runs the same search on tiny n, each in a subprocess killed after --timeout
seconds, growing n until one search takes longer than --re-limit seconds.

A last probe times ``evaluate()`` where a match spans lines but no single line
matches (``eval\\([^)]*\\)`` on lines "eval("), the case where the engine
re-searches the text from every line (--line-sizes, doubling from 10k to 320k characters). Nothing
is asserted on a clock.
Writes bench/results/regex-safety.json.

--smoke: RE2 on n = 1k and 10k, Python's re and the line probe growing only until a run takes
0.05 s (each still in its subprocess), line sizes 1k and 2k; results to a temporary folder
(bench/common.py).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parse_args, table, write_results
from mnemo.knowledge.check import evaluate
from mnemo.knowledge.models import Constraint, FileToCheck, KnowledgeItem
from mnemo.knowledge.patterns import compile_pattern

MB = 1_000_000
#: (pattern, input kind, the n Python's re is tried on, in order; None: re is not run)
CASES: list[tuple[str, str, list[int] | None]] = [
    ("(a+)+$", "a!", [16, 18, 20, 22, 24, 26, 28]),
    ("(a|aa)+$", "a!", [16, 20, 24, 28, 30, 32, 34, 36, 38]),
    (r"^(\w+\s?)*$", "a!", [16, 18, 20, 22, 24, 26, 28]),
    ("(.*a){12}", "spread", [400, 800, 1600, 3200, 6400, 12800]),
    ("(.*a){12}", "a!", None),  # matches: RE2 must find where; re finds it at once as well
]
INPUTS = {"a!": "n-1 'a' then '!'", "spread": "11 'a' among n-11 'x'", "eval(": "lines 'eval(' then ')'"}
LINE_PATTERN = r"eval\([^)]*\)"


def make(kind: str, n: int) -> str:
    """An input of exactly ``n`` characters."""
    if kind == "a!":
        return "a" * (n - 1) + "!"
    if kind == "spread":
        gap = n // 11
        return "x" * (n - 11 * gap) + ("x" * (gap - 1) + "a") * 11
    if kind == "eval(":
        lines = (n - 1) // 6
        return "x" * (n - 1 - 6 * lines) + "eval(\n" * lines + ")"
    raise ValueError(kind)


def item(pattern: str) -> KnowledgeItem:
    constraint = Constraint(operator="must_not_match", target="code", pattern=pattern, severity="block")
    return KnowledgeItem(
        id="regex-safety",
        type="policy",
        layer="company",
        title="Regex safety",
        summary="-",
        content="-",
        constraints=[constraint],
    )


def run_evaluate(pattern: str, text: str) -> int:
    file = FileToCheck(path="src/input.py", content=text)
    return len(evaluate([item(pattern)], [file], [], "info").violations)


def timed(call: Callable[[], object], budget: float = 0.3, most: int = 50) -> float:
    """Median milliseconds of ``call`` over at least 3 runs, more while under ``budget`` seconds."""
    call()  # warm-up: compiles and caches the pattern
    samples: list[float] = []
    spent = 0.0
    while len(samples) < 3 or (spent < budget and len(samples) < most):
        started = time.perf_counter()
        call()
        elapsed = time.perf_counter() - started
        samples.append(1000 * elapsed)
        spent += elapsed
    return statistics.median(samples)


def child(argv: list[str]) -> None:
    """In a subprocess: time one search (``re``) or one evaluate (``evaluate``), print the seconds."""
    engine, pattern, kind, n = argv[0], argv[1], argv[2], int(argv[3])
    text = make(kind, n)
    if engine == "re":
        compiled = re.compile(pattern)
        started = time.perf_counter()
        found = compiled.search(text) is not None
    else:
        compile_pattern(pattern)
        started = time.perf_counter()
        found = run_evaluate(pattern, text) > 0
    print(f"{time.perf_counter() - started} {int(found)}")


def in_subprocess(engine: str, pattern: str, kind: str, n: int, timeout: float) -> tuple[float | None, bool]:
    """(seconds, matched) of one timed run in a fresh interpreter; (None, False) when killed at ``timeout``."""
    command = [sys.executable, __file__, "--child", engine, pattern, kind, str(n)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None, False
    seconds, found = done.stdout.split()
    return float(seconds), found == "1"


def growing(
    engine: str, pattern: str, kind: str, sizes: list[int], limit: float, timeout: float
) -> list[dict[str, Any]]:
    """Runs at growing n until one takes longer than ``limit`` seconds or is killed."""
    runs: list[dict[str, Any]] = []
    for n in sizes:
        seconds, found = in_subprocess(engine, pattern, kind, n, timeout)
        killed = timeout if seconds is None else None
        runs.append({"n": n, "seconds": seconds, "matched": found, "killedAfterSeconds": killed})
        shown = f"{seconds:.3f} s" if seconds is not None else f"killed after {timeout:.0f} s"
        print(f"  {engine} {pattern!r} n={n}: {shown}", flush=True)
        if seconds is None or seconds > limit:
            break
    return runs


def fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    text = f"{value:.3g}" if value < 100 else f"{value:.0f}"
    return text + unit


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--re-limit", type=float, default=2.0, help="stop growing n once a run exceeds this (s)")
    parser.add_argument("--timeout", type=float, default=30.0, help="kill a subprocess run after this (s)")
    parser.add_argument("--line-sizes", type=int, nargs="+", default=[10_000, 20_000, 40_000, 80_000, 160_000, 320_000])
    args = parse_args(
        parser, {"sizes": [1_000, 10_000], "re_limit": 0.05, "timeout": 10.0, "line_sizes": [1_000, 2_000]}
    )
    load = os.getloadavg()[0]  # other work on the machine skews the clocks: recorded
    sizes = sorted(args.sizes)

    print("RE2, in process (median ms)", flush=True)
    linear: list[dict[str, Any]] = []
    for pattern, kind, _ in CASES:
        compiled = compile_pattern(pattern)
        for path, call in (
            ("RE2 search", lambda text, compiled=compiled: compiled.search(text)),
            ("evaluate()", lambda text, pattern=pattern: run_evaluate(pattern, text)),
        ):
            row: dict[str, Any] = {"pattern": pattern, "input": INPUTS[kind], "path": path, "milliseconds": {}}
            for n in sizes:
                text = make(kind, n)
                row["milliseconds"][str(n)] = timed(lambda call=call, text=text: call(text))
            row["matched"] = compiled.search(make(kind, sizes[-1])) is not None
            biggest, before = row["milliseconds"][str(sizes[-1])], row["milliseconds"][str(sizes[-2])]
            row["msPerMB"] = biggest / (sizes[-1] / MB)
            row["ratioLastTwo"] = biggest / before
            print(f"  {pattern!r} {path}: {row['milliseconds']}", flush=True)
            linear.append(row)

    print(f"Python re, one subprocess per run, until a run exceeds {args.re_limit:.0f} s", flush=True)
    backtracking: list[dict[str, Any]] = []
    for pattern, kind, re_sizes in CASES:
        if re_sizes is None:
            continue
        runs = growing("re", pattern, kind, re_sizes, args.re_limit, args.timeout)
        compiled = compile_pattern(pattern)
        for run in runs:
            text = make(kind, run["n"])
            run["re2Milliseconds"] = timed(lambda text=text, compiled=compiled: compiled.search(text), budget=0.05)
        backtracking.append({"pattern": pattern, "input": INPUTS[kind], "runs": runs})

    print("evaluate() with matches spanning lines, one subprocess per run", flush=True)
    spanning = growing("evaluate", LINE_PATTERN, "eval(", sorted(args.line_sizes), args.re_limit, args.timeout)
    line_re2 = compile_pattern(LINE_PATTERN)
    for run in spanning:
        text = make("eval(", run["n"])
        run["re2WholeTextMilliseconds"] = timed(lambda text=text: line_re2.search(text), budget=0.05)

    headers = ["pattern", "input", "path", *(f"n={n:,}" for n in sizes), "ms/MB", "last ratio"]
    rows = [
        [
            r["pattern"],
            r["input"],
            r["path"],
            *(fmt(r["milliseconds"][str(n)]) for n in sizes),
            fmt(r["msPerMB"]),
            f"x{r['ratioLastTwo']:.1f}",
        ]
        for r in linear
    ]
    step = sizes[-1] / sizes[-2]
    print(f"\nRE2: median ms per search (n characters; 'last ratio' is the time ratio for x{step:.0f} input)")
    print(table(headers, rows))

    rows = []
    for case in backtracking:
        previous = None
        for run in case["runs"]:
            seconds = run["seconds"]
            growth = f"x{seconds / previous:.1f}" if seconds and previous else ""
            shown = fmt(seconds, " s") if seconds is not None else f"> {run['killedAfterSeconds']:.0f} s (killed)"
            rows.append([case["pattern"], case["input"], run["n"], shown, growth, fmt(run["re2Milliseconds"], " ms")])
            previous = seconds
    print("\nPython re vs RE2 on the same tiny inputs")
    print(table(["pattern", "input", "n", "re", "growth", "RE2"], rows))

    rows = []
    previous = None
    for run in spanning:
        seconds = run["seconds"]
        growth = f"x{seconds / previous:.1f}" if seconds and previous else ""
        shown = fmt(seconds, " s") if seconds is not None else f"> {run['killedAfterSeconds']:.0f} s (killed)"
        rows.append([LINE_PATTERN, run["n"], shown, growth, fmt(run["re2WholeTextMilliseconds"], " ms")])
        previous = seconds
    print("\nevaluate() when a match spans lines and no line matches alone (size doubles each row)")
    print(table(["pattern", "n", "evaluate", "growth", "RE2 whole text"], rows))

    path = write_results(
        "regex-safety",
        {
            "cpus": os.cpu_count(),
            "loadAverage1mAtStart": round(load, 2),
            "sizes": sizes,
            "reLimitSeconds": args.re_limit,
            "timeoutSeconds": args.timeout,
            "inputs": INPUTS,
            "re2": linear,
            "pythonRe": backtracking,
            "lineSpanning": {"pattern": LINE_PATTERN, "input": INPUTS["eval("], "runs": spanning},
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
