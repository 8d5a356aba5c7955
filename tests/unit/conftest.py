"""Unit tests: one part of mnemo at a time, in process, on temporary directories with the hashing embedder
(Hypothesis for the path rules and the token estimate). Nothing is started: no server, no moto, no
browser; test_tokens.py counts once more in a fresh Python process, and test_import_rules.py and
test_docstring_coverage.py read the package's sources.
No fixtures of their own (``services`` is the root conftest.py's)."""
