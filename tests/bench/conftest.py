"""Benchmarks: every script of bench/ (each module with a ``__main__`` entry) run in smoke mode, ``--smoke``
(bench/common.py), as a child process of this checkout's Python, with MNEMO_BENCH_RESULTS and TMPDIR in the
test's temporary directory: tiny sizes, the scripts' own path end to end. What they start is theirs: `mnemo
serve` subprocesses on free loopback ports (load.py, concurrency.py), a moto server and osmem-server
(deploy_cost.py, blocks.py, graph.py, portability.py), fresh interpreters (cold_start.py, regex_safety.py,
scale.py), the bge model. Nothing reads ../shared (the LoCoMo scripts read bench/fixtures/). Only the exit
status and the JSON written are checked, never a figure or a clock. No fixtures of their own."""
