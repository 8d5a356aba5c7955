"""knowledge_check's engine (mnemo.knowledge.check): what violates a constraint, where, and what is reported."""

from __future__ import annotations

from typing import Any

import pytest

from mnemo.knowledge.check import evaluate, glob_matches, glob_to_regex, is_config, posix_path
from mnemo.knowledge.models import (
    Constraint,
    Dependency,
    FileToCheck,
    KnowledgeCheckOutput,
    KnowledgeItem,
    Location,
    Severity,
    SeveritySummary,
)

ADR_042 = "adr-042-database-selection"
ADR_042_MESSAGE = "MySQL not allowed for new services per ADR-042. Use PostgreSQL instead."


def rule(operator: str, target: str, pattern: str, **fields: Any) -> Constraint:
    return Constraint.model_validate({"operator": operator, "target": target, "pattern": pattern, **fields})


def item(*constraints: Constraint, id: str = "item-1", title: str = "An item") -> KnowledgeItem:
    return KnowledgeItem(
        id=id, type="policy", layer="org", title=title, summary="", content="", constraints=list(constraints)
    )


def adr_042() -> KnowledgeItem:
    constraint = rule("must_not_use", "dependency", "mysql|mysql2|mariadb", severity="block", message=ADR_042_MESSAGE)
    return item(constraint, id=ADR_042, title="Database Selection for New Services")


def check(
    items: list[KnowledgeItem] | KnowledgeItem,
    files: dict[str, str] | None = None,
    dependencies: list[str] | None = None,
    min_severity: Severity = "info",
) -> KnowledgeCheckOutput:
    return evaluate(
        items if isinstance(items, list) else [items],
        [FileToCheck(path=path, content=content) for path, content in (files or {}).items()],
        [Dependency(name=name) for name in dependencies or []],
        min_severity,
    )


def where(output: KnowledgeCheckOutput) -> list[tuple[str, int | None] | None]:
    return [(v.location.file, v.location.line) if v.location else None for v in output.violations]


# ------------------------------------------------------------ the seed's example ---
def test_seed_example_a_forbidden_requested_dependency() -> None:
    output = evaluate([adr_042()], [], [Dependency(name="mysql2", version="3.0.0")], "warn")

    assert output.passed is False
    assert output.summary == SeveritySummary(info=0, warn=0, block=1)
    assert output.checked_items == [ADR_042]
    assert [v.model_dump(mode="json", exclude_none=True) for v in output.violations] == [
        {
            "knowledgeItemId": ADR_042,
            "knowledgeItemTitle": "Database Selection for New Services",
            "constraint": {"operator": "must_not_use", "target": "dependency", "pattern": "mysql|mysql2|mariadb"},
            "severity": "block",
            "message": ADR_042_MESSAGE,
        }
    ]


def test_seed_example_a_forbidden_dependency_in_package_json() -> None:
    package_json = '{\n  "name": "svc",\n  "dependencies": {\n    "pg": "8.0.0",\n    "mysql2": "3.0.0"\n  }\n}\n'

    output = evaluate([adr_042()], [FileToCheck(path="package.json", content=package_json)], [], "warn")

    assert output.passed is False
    assert output.summary == SeveritySummary(info=0, warn=0, block=1)
    [violation] = output.violations
    assert violation.message == ADR_042_MESSAGE
    assert violation.location == Location(file="package.json", line=5)


# ---------------------------------------------------- operator x target table ---
#: target -> (pattern, inputs where something matches, inputs where nothing does); inputs = (files, dependencies)
SCENARIOS: dict[str, tuple[str, tuple[dict[str, str], list[str]], tuple[dict[str, str], list[str]]]] = {
    "dependency": ("mysql2?", ({}, ["express", "mysql2"]), ({}, ["express", "pg"])),
    "import": ("requests", ({"a.py": "import os\nimport requests\n"}, []), ({"a.py": "import httpx\n"}, [])),
    "file": (r"\.sql$", ({"db/schema.sql": "", "a.py": ""}, []), ({"db/schema.txt": "", "a.py": ""}, [])),
    "code": (r"eval\(", ({"a.py": "x = 1\ny = eval(s)\n"}, []), ({"a.py": "x = 1\ny = s\n"}, [])),
    "config": ("debug: true", ({"app.yaml": "debug: true\n"}, []), ({"app.yaml": "debug: false\n"}, [])),
}
NEGATIVE = ["must_not_use", "must_not_match", "must_not_exist"]
POSITIVE = ["must_use", "must_match", "must_exist"]
COMBINATIONS = [(operator, target) for operator in NEGATIVE + POSITIVE for target in SCENARIOS]


@pytest.mark.parametrize(("operator", "target"), COMBINATIONS)
def test_every_operator_and_target_fails_and_passes(operator: str, target: str) -> None:
    pattern, matching, not_matching = SCENARIOS[target]
    constraint = rule(operator, target, pattern, severity="block")
    failing, passing = (matching, not_matching) if operator in NEGATIVE else (not_matching, matching)

    failed = check(item(constraint), *failing)
    succeeded = check(item(constraint), *passing)

    assert len(failed.violations) == 1
    assert failed.passed is False
    assert failed.violations[0].constraint.model_dump() == {"operator": operator, "target": target, "pattern": pattern}
    assert succeeded.violations == []
    assert succeeded.passed is True


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("dependency", [None]),
        ("import", [("a.py", 2)]),
        ("file", [("db/schema.sql", None)]),
        ("code", [("a.py", 2)]),
        ("config", [("app.yaml", 1)]),
    ],
)
def test_negative_violations_point_at_the_offence(target: str, expected: list[tuple[str, int | None] | None]) -> None:
    pattern, matching, _ = SCENARIOS[target]

    assert where(check(item(rule("must_not_use", target, pattern)), *matching)) == expected


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("dependency", [None]),
        ("import", [None]),
        ("file", [None]),
        ("code", [("a.py", None)]),
        ("config", [("app.yaml", None)]),
    ],
)
def test_positive_violations_point_at_the_file_only_for_contents(
    target: str, expected: list[tuple[str, int | None] | None]
) -> None:
    pattern, _, not_matching = SCENARIOS[target]

    assert where(check(item(rule("must_use", target, pattern)), *not_matching)) == expected


# -------------------------------------------------------- positive operators ---
@pytest.mark.parametrize(
    ("target", "files"),
    [
        ("dependency", {"a.py": "import x\n", "package.json": '{"name": "no deps"}'}),
        ("import", {"README.md": "import requests", "Dockerfile": "FROM x"}),
        ("file", {}),
        ("code", {"README.md": "nothing"}),
        ("config", {"a.py": "x = 1"}),
    ],
)
def test_positive_operators_over_nothing_to_judge_pass(target: str, files: dict[str, str]) -> None:
    assert check(item(rule("must_use", target, "anything", severity="block")), files).violations == []


def test_must_use_import_is_violated_by_a_source_file_without_imports() -> None:
    output = check(item(rule("must_use", "import", "logging")), {"a.py": "x = 1\n"})

    assert where(output) == [None]


def test_must_match_code_reports_each_file_without_a_matching_line() -> None:
    files = {"a.py": "# Copyright ACME\nx = 1\n", "b.py": "x = 2\n", "c.go": "package c\n", "README.md": "no"}

    output = check(item(rule("must_match", "code", "Copyright ACME")), files)

    assert where(output) == [("b.py", None), ("c.go", None)]


def test_must_use_dependency_matches_manifest_and_requested_dependencies() -> None:
    constraint = rule("must_use", "dependency", "pg")

    assert check(item(constraint), {"package.json": '{"dependencies": {"pg": "8"}}'}, ["mysql2"]).violations == []
    assert len(check(item(constraint), {"package.json": '{"dependencies": {"knex": "3"}}'}, ["mysql2"]).violations) == 1


# -------------------------------------------------------------- name matching ---
@pytest.mark.parametrize(
    ("name", "forbidden"),
    [("mysql2", True), ("MySQL", True), ("MariaDB", True), ("mysql2-wrapper", False), ("my-mysql", False)],
)
def test_dependency_names_match_whole_and_ignore_case(name: str, forbidden: bool) -> None:
    output = check(adr_042(), dependencies=[name])

    assert bool(output.violations) is forbidden


@pytest.mark.parametrize(
    ("pattern", "forbidden"),
    [("mysql2", True), ("mysql2/promise", True), ("promise", False), ("mysql", False)],
)
def test_javascript_imports_match_by_module_or_package(pattern: str, forbidden: bool) -> None:
    files = {"src/db.ts": "import { createPool } from 'mysql2/promise';\n"}

    output = check(item(rule("must_not_use", "import", pattern)), files)

    assert where(output) == ([("src/db.ts", 1)] if forbidden else [])


@pytest.mark.parametrize(("pattern", "forbidden"), [("os", True), (r"os\.path", True), ("path", False)])
def test_python_imports_match_by_module_or_top_level_package(pattern: str, forbidden: bool) -> None:
    output = check(item(rule("must_not_use", "import", pattern)), {"a.py": "import os.path\n"})

    assert bool(output.violations) is forbidden


@pytest.mark.parametrize(
    "pattern", ["mysql-connector-java", "mysql:mysql-connector-java", r"mysql:.*", "MYSQL-CONNECTOR-JAVA"]
)
def test_pom_dependencies_match_by_coordinates_or_bare_artifact(pattern: str) -> None:
    pom = (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <dependencies>\n    <dependency>\n'
        "      <groupId>mysql</groupId>\n      <artifactId>mysql-connector-java</artifactId>\n"
        "    </dependency>\n  </dependencies>\n</project>\n"
    )

    output = check(item(rule("must_not_use", "dependency", pattern)), {"services/api/pom.xml": pom})

    assert where(output) == [("services/api/pom.xml", 5)]


def test_go_imports_and_go_mod_requirements() -> None:
    files = {
        "go.mod": "module x\n\nrequire github.com/go-sql-driver/mysql v1.7.1\n",
        "main.go": 'package main\n\nimport (\n\t_ "github.com/go-sql-driver/mysql"\n)\n',
    }
    forbidden = item(
        rule("must_not_use", "dependency", r"github\.com/go-sql-driver/mysql"),
        rule("must_not_use", "import", r".*/go-sql-driver/mysql"),
    )

    assert where(check(forbidden, files)) == [("go.mod", 3), ("main.go", 4)]


# ----------------------------------------------------- file and content matching ---
def test_file_patterns_search_the_posix_path_case_sensitively() -> None:
    constraint = rule("must_not_exist", "file", r"^migrations/.*\.sql$")
    files = {
        "./migrations/001.sql": "",
        "migrations\\002.sql": "",
        "src/migrations/003.sql": "",
        "migrations/X.SQL": "",
    }

    assert where(check(item(constraint), files)) == [("./migrations/001.sql", None), ("migrations\\002.sql", None)]


def test_code_reports_every_matching_line_and_is_case_sensitive() -> None:
    content = "a = eval(x)\nb = EVAL(y)\n\nc = 1; d = eval(z)\n"

    output = check(item(rule("must_not_match", "code", r"eval\(")), {"m.py": content})

    assert where(output) == [("m.py", 1), ("m.py", 4)]


def test_code_reads_only_source_files_unless_applies_to_says_otherwise() -> None:
    files = {"a.py": "eval(x)", "notes.md": "eval(x)", "run.sh": "eval(x)"}

    by_default = check(item(rule("must_not_match", "code", r"eval\(")), files)
    with_globs = check(item(rule("must_not_match", "code", r"eval\(", applies_to=["*.md"])), files)

    assert where(by_default) == [("a.py", 1), ("run.sh", 1)]
    assert where(with_globs) == [("notes.md", 1)]


def test_config_reads_config_files_by_default() -> None:
    files = {
        "config/app.yml": "password: x",
        ".env": "password=x",
        ".env.local": "password=x",
        "Dockerfile": "ENV password=x",
        "settings.py": "password = x",
        "docs/readme.md": "password",
    }

    output = check(item(rule("must_not_match", "config", "password")), files)

    assert sorted(where(output), key=str) == [(".env", 1), (".env.local", 1), ("Dockerfile", 1), ("config/app.yml", 1)]


@pytest.mark.parametrize(
    ("path", "config"),
    [("a.JSON", True), ("x/b.toml", True), ("c.properties", True), ("Makefile", True), ("api.Dockerfile", True)],
)
def test_is_config(path: str, config: bool) -> None:
    assert is_config(path) is config
    assert not is_config("main.py")


@pytest.mark.parametrize(
    ("content", "pattern", "lines"),
    [
        ("x\nimport os\ny\n", "^import os$", [2]),
        ("x\r\nimport os\r\ny\r\n", "^import os$", [2]),
        ("old\rimport os\r", "^import os$", [2]),
        ("foo\nbar foo\nfoo bar\n", r"\Afoo", [1, 3]),  # \A and \z mean the start and end of each line
        ("foo\nbar foo\n", r"foo\z", [1, 2]),
        ("a\nb\n", r"a\s+b", []),  # lines are searched alone: no match spans lines
        ("a\nb a  b\n", r"a\s+b", [2]),
        ("a\nb\n", "^$", []),  # a final newline does not open an empty line
        ("a\n\nb", "^$", [2]),
        ("", "^$", [1]),
        ("naïve\nthé eval(1)\n", r"eval\(", [2]),
        ("word\nsword\n", r"\bword", [1]),
    ],
)
def test_content_lines_follow_line_semantics(content: str, pattern: str, lines: list[int]) -> None:
    output = check(item(rule("must_not_match", "code", pattern)), {"m.py": content})

    assert [v.location.line for v in output.violations if v.location] == lines


def test_must_match_with_a_match_spanning_lines_is_still_violated() -> None:
    output = check(item(rule("must_match", "code", r"begin\s+end")), {"m.py": "begin\nend\n"})

    assert where(output) == [("m.py", None)]


def test_catastrophic_backtracking_pattern_completes() -> None:
    output = check(item(rule("must_not_match", "code", "(a+)+$")), {"m.py": "a" * 100_000 + "b"})

    assert output.violations == []
    assert output.passed is True


def test_a_pattern_re2_rejects_is_skipped_and_the_rest_evaluated() -> None:
    output = check(item(rule("must_not_match", "code", r"(a)\1"), rule("must_not_exist", "file", "a")), {"a.py": "aa"})

    assert [v.constraint.pattern for v in output.violations] == ["a"]


# --------------------------------------------------------------------- appliesTo ---
@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "lib/a.py", False),
        ("src/**/*.py", "src/a.pyc", False),
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "src/a.py", True),
        ("**/*.py", "a.py", True),
        ("src/**", "src/a/b.txt", True),
        ("./src/*.ts", "src/a.ts", True),
        ("src/?.ts", "src/a.ts", True),
        ("src/?.ts", "src/ab.ts", False),
        ("src/?.ts", "src//.ts", False),
        ("**/*.{ts,tsx}", "web/a.tsx", True),
        ("**/*.{ts,tsx}", "web/a.js", False),
        ("[!a]*.md", "b.md", True),
        ("[!a]*.md", "a.md", False),
        ("docs/[abc].md", "docs/b.md", True),
        ("a+b(1).txt", "a+b(1).txt", True),
        ("a+b(1).txt", "aab(1).txt", False),
        ("**/**/x", "x", True),
    ],
)
def test_globs(glob: str, path: str, matches: bool) -> None:
    assert glob_matches([glob], posix_path(path)) is matches


def test_globs_translate_without_nested_quantifiers() -> None:
    assert glob_to_regex("src/**/*.py") == r"src/(?:|.*/)[^/]*\.py"


def test_a_glob_with_many_stars_against_a_long_path_completes() -> None:
    assert glob_matches(["*a*a*a*a*a*a*b"], "a" * 1000) is False


def test_applies_to_restricts_imports_files_and_manifests_but_not_requested_dependencies() -> None:
    files = {
        "services/new/package.json": '{"dependencies": {"mysql2": "3"}}',
        "services/legacy/package.json": '{"dependencies": {"mysql2": "3"}}',
        "services/new/db.js": "require('mysql2')",
        "services/legacy/db.js": "require('mysql2')",
    }
    constraints = [
        rule("must_not_use", "dependency", "mysql2", applies_to=["services/new/**"]),
        rule("must_not_use", "import", "mysql2", applies_to=["services/new/**"]),
        rule("must_not_exist", "file", "db", applies_to=["services/new/**"]),
    ]

    output = check(item(*constraints), files, ["mysql2"])

    assert where(output) == [
        None,
        ("services/new/db.js", None),
        ("services/new/db.js", 1),
        ("services/new/package.json", 1),
    ]


# ------------------------------------------------------------- dedupe, messages ---
def test_identical_violations_are_reported_once() -> None:
    duplicate = rule("must_not_use", "import", "os")
    files = {"a.py": "import os, os.path\n"}

    output = check(item(duplicate, duplicate), files, ["mysql2", "mysql2"])
    requested = check(adr_042(), dependencies=["mysql2", "mysql2", "mariadb"])

    assert where(output) == [("a.py", 1)]
    assert len(requested.violations) == 2


def test_the_same_item_twice_counts_once() -> None:
    output = check([adr_042(), adr_042()], dependencies=["mysql2"])

    assert len(output.violations) == 1
    assert output.checked_items == [ADR_042]


def test_generated_messages_name_the_item_operator_pattern_and_offence() -> None:
    constraints = [
        rule("must_not_use", "dependency", "mysql|mysql2|mariadb"),
        rule("must_not_match", "code", r"eval\("),
        rule("must_exist", "file", "README"),
    ]

    output = check(item(*constraints, title="Safe services"), {"a.py": "x = eval(y)"}, ["mysql2"])

    assert sorted(v.message for v in output.violations) == [
        "Safe services: code 'eval(' is not allowed (must_not_match /eval\\(/)",
        "Safe services: dependency 'mysql2' is not allowed (must_not_use /mysql|mysql2|mariadb/)",
        "Safe services: no file matches, one is required (must_exist /README/)",
    ]


# ----------------------------------------------------- severity and reporting ---
def graded() -> KnowledgeItem:
    return item(
        rule("must_not_use", "dependency", "a", severity="info"),
        rule("must_not_use", "dependency", "b", severity="warn"),
        rule("must_not_use", "dependency", "c", severity="block"),
    )


@pytest.mark.parametrize(
    ("min_severity", "reported", "summary"),
    [
        ("info", ["block", "warn", "info"], SeveritySummary(info=1, warn=1, block=1)),
        ("warn", ["block", "warn"], SeveritySummary(info=0, warn=1, block=1)),
        ("block", ["block"], SeveritySummary(info=0, warn=0, block=1)),
    ],
)
def test_min_severity_filters_reported_violations_and_the_summary(
    min_severity: Severity, reported: list[str], summary: SeveritySummary
) -> None:
    output = check(graded(), dependencies=["a", "b", "c"], min_severity=min_severity)

    assert [v.severity for v in output.violations] == reported
    assert output.summary == summary
    assert output.passed is False


def test_passed_is_false_exactly_when_a_block_violation_exists() -> None:
    assert check(graded(), dependencies=["a", "b"]).passed is True
    assert check(graded(), dependencies=["a", "b"]).summary == SeveritySummary(info=1, warn=1, block=0)
    assert check(graded(), dependencies=["c"], min_severity="block").passed is False
    assert check(graded(), dependencies=["z"]).passed is True


def test_violations_are_ordered_by_severity_item_file_and_line() -> None:
    first = item(rule("must_not_match", "code", "x", severity="warn"), id="b-item")
    second = item(
        rule("must_not_match", "code", "y", severity="warn"),
        rule("must_not_use", "dependency", "d", severity="block"),
        id="a-item",
    )
    files = {"z.py": "x\ny\nx\n", "a.py": "y\nx\n"}

    output = check([first, second], files, ["d"])

    assert [
        (v.severity, v.knowledge_item_id, *(where_one or ()))
        for v, where_one in zip(output.violations, where(output), strict=True)
    ] == [
        ("block", "a-item"),
        ("warn", "a-item", "a.py", 1),
        ("warn", "a-item", "z.py", 2),
        ("warn", "b-item", "a.py", 2),
        ("warn", "b-item", "z.py", 1),
        ("warn", "b-item", "z.py", 3),
    ]


def test_checked_items_are_every_item_evaluated_sorted() -> None:
    output = check([item(id="zeta"), adr_042(), item(id="alpha")])

    assert output.checked_items == ["adr-042-database-selection", "alpha", "zeta"]
    assert output.passed is True
    assert output.summary == SeveritySummary()


def test_many_files_and_constraints() -> None:
    files = {f"src/m{i}.py": f"import os\nvalue = {i}\n" + "pass\n" * 50 for i in range(500)}
    constraints = [rule("must_not_match", "code", rf"value = {i}$", severity="warn") for i in range(0, 500, 10)]

    output = check(item(*constraints), files)

    assert where(output) == sorted((f"src/m{i}.py", 2) for i in range(0, 500, 10))


# ------------------------------------------------------------- found in review ---
def test_lines_after_a_match_that_spans_lines_are_still_found() -> None:
    """`eval\\([^)]*\\)` matches across the first two lines, then within lines 4 and 6."""
    content = "eval(\nx)\nok\neval(y)\nfine\nprefix eval() suffix\n"
    output = check(item(rule("must_not_match", "code", r"eval\([^)]*\)")), {"a.py": content})
    assert where(output) == [("a.py", 4), ("a.py", 6)]


def test_a_hostile_file_of_open_calls_is_judged_line_by_line() -> None:
    """Each line opens a call that only the last line closes: every whole-text match spans lines and none
    counts (resuming the whole-text search after each would rescan the rest once per line)."""
    content = "eval(\n" * 20_000 + ")\n"
    output = check(item(rule("must_not_match", "code", r"eval\([^)]*\)")), {"a.py": content})
    assert output.violations == []
    assert output.passed is True


def test_two_rules_differing_only_in_severity_and_scope_are_both_reported() -> None:
    relaxed = rule("must_not_match", "code", "TODO", severity="warn", appliesTo=["**/*.py"])
    strict = rule("must_not_match", "code", "TODO", severity="block", appliesTo=["src/critical/**"])
    output = check(item(relaxed, strict), {"src/critical/pay.py": "# TODO: finish\n"})
    assert sorted(v.severity for v in output.violations) == ["block", "warn"]
    assert output.passed is False
