"""Dependencies declared in manifest files, with their lines (mnemo.knowledge.manifests)."""

from __future__ import annotations

import pytest

from mnemo.knowledge.manifests import FoundDependency, dependencies_in, is_manifest, parse_requirement


def found(path: str, content: str) -> list[tuple[str, str | None, int]]:
    return [(dependency.name, dependency.version, dependency.line) for dependency in dependencies_in(path, content)]


@pytest.mark.parametrize(
    "path",
    [
        "package.json",
        "web/package.json",
        "pyproject.toml",
        "requirements.txt",
        "requirements-dev.txt",
        "deploy/requirements_prod.txt",
        "requirements/base.txt",
        "go.mod",
        "svc\\pom.xml",
    ],
)
def test_manifests_are_recognised_by_name(path: str) -> None:
    assert is_manifest(path)


@pytest.mark.parametrize("path", ["package-lock.json", "requirements.md", "src/main.py", "go.sum", "pom.xml.bak"])
def test_other_files_are_not_manifests(path: str) -> None:
    assert not is_manifest(path)
    assert dependencies_in(path, '{"dependencies": {"a": "1"}}\nrequire x v1\n') == []


# ------------------------------------------------------------ package.json ---
PACKAGE_JSON = """{
  "name": "svc",
  "scripts": {"mysql2": "echo not a dependency"},
  "dependencies": {
    "express": "^4.18.0",
    "mysql2": "3.0.0"
  },
  "devDependencies": {
    "@types/node": "20"
  },
  "peerDependencies": {"react": ">=18", "mysql2": "*"},
  "optionalDependencies": {
    "fsevents": {"weird": true}
  }
}
"""


def test_package_json_reads_every_section_with_the_line_of_each_key() -> None:
    assert found("package.json", PACKAGE_JSON) == [
        ("express", "^4.18.0", 5),
        ("mysql2", "3.0.0", 6),
        ("@types/node", "20", 9),
        ("react", ">=18", 11),
        ("mysql2", "*", 11),
        ("fsevents", None, 13),
    ]


def test_package_json_results_carry_the_file_and_no_other_names() -> None:
    first = dependencies_in("web/package.json", PACKAGE_JSON)[0]

    assert first == FoundDependency("express", "^4.18.0", "web/package.json", 5)
    assert first.names == ("express",)


def test_package_json_keys_with_escapes_and_crlf_lines() -> None:
    content = '{\r\n"dependencies": {\r\n"\\u0040scope/pkg": "1",\r\n"plain": "2"}}'

    assert found("package.json", content) == [("@scope/pkg", "1", 3), ("plain", "2", 4)]


@pytest.mark.parametrize(
    "content", ['{"dependencies": {"a": "1",}', "[1, 2]", "", '{"dependencies": ["a"]}', "{" * 100_000]
)
def test_malformed_package_json_yields_nothing(content: str) -> None:
    assert dependencies_in("package.json", content) == []


# ------------------------------------------------------------ requirements ---
REQUIREMENTS = """# pinned for prod
-r base.txt
-e git+https://github.com/org/repo.git#egg=repo
--index-url https://pypi.example.com/simple
Django[bcrypt,argon2]==4.2.7 ; python_version >= "3.10"
requests>=2.31,<3  # http
numpy ~= 1.26
six
./vendor/local-pkg
https://example.com/pkg.tar.gz
internal-lib @ https://example.com/internal.zip
pyyaml \\
    ==6.0.1
bad-name-
"""


def test_requirements_lines_names_and_versions() -> None:
    assert found("requirements.txt", REQUIREMENTS) == [
        ("Django", "4.2.7", 5),
        ("requests", ">=2.31,<3", 6),
        ("numpy", "~=1.26", 7),
        ("six", None, 8),
        ("internal-lib", None, 11),
        ("pyyaml", "6.0.1", 12),
    ]


def test_requirements_in_a_requirements_folder() -> None:
    assert found("requirements/dev.txt", "pytest==8\n") == [("pytest", "8", 1)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pkg", ("pkg", None)),
        ("pkg===1.0", ("pkg", "1.0")),
        ("pkg == 1.0", ("pkg", "1.0")),
        ("pkg==1.*", ("pkg", "==1.*")),
        ("pkg (>=1.0)", ("pkg", ">=1.0")),
        ("pkg[extra]>=1; sys_platform == 'linux'", ("pkg", ">=1")),
        ("pkg !=1.5, >1", ("pkg", "!=1.5,>1")),
        ("/abs/path", None),
        ("git+https://x/y", None),
        ("", None),
    ],
)
def test_parse_requirement(text: str, expected: tuple[str, str | None] | None) -> None:
    assert parse_requirement(text) == expected


def test_requirements_with_a_hostile_line_finish() -> None:
    assert found("requirements.txt", "a" + "-" * 200_000 + "\nok==1\n") == [("ok", "1", 2)]


# --------------------------------------------------------------- pyproject ---
PYPROJECT = """[build-system]
requires = ["setuptools"]

[project]
name = "svc"
dependencies = [
    "fastapi>=0.110",
    'pymysql==1.1.0',
    "requests",
]

[project.optional-dependencies]
dev = ["pytest==8.0", "requests[socks]"]
db = [
    "pymysql",
]

[dependency-groups]
lint = ["ruff==0.5", {include-group = "dev"}]

[tool.poetry.dependencies]
python = "^3.12"
sqlalchemy = "^2.0"
"mysqlclient" = { version = "2.2.0", optional = true }
psycopg = { git = "https://example.com/psycopg.git" }

[tool.poetry.group.test.dependencies]
pytest = "^8"
"""


def test_pyproject_pep621_optional_groups_and_poetry() -> None:
    assert found("pyproject.toml", PYPROJECT) == [
        ("fastapi", ">=0.110", 7),
        ("pymysql", "1.1.0", 8),
        ("requests", None, 9),
        ("pytest", "8.0", 13),
        ("requests", None, 13),
        ("pymysql", None, 15),
        ("ruff", "0.5", 19),
        ("sqlalchemy", "^2.0", 23),
        ("mysqlclient", "2.2.0", 24),
        ("psycopg", None, 25),
        ("pytest", "^8", 28),
    ]


def test_malformed_pyproject_yields_nothing() -> None:
    assert dependencies_in("pyproject.toml", '[project]\ndependencies = ["a"\n') == []
    assert dependencies_in("pyproject.toml", '[project]\ndependencies = "not-a-list"\n') == []


# ------------------------------------------------------------------ go.mod ---
GO_MOD = """module github.com/org/svc

go 1.22

require github.com/go-sql-driver/mysql v1.7.1

require (
\tgithub.com/lib/pq v1.10.9 // indirect
\t// a comment
\tgolang.org/x/sync v0.6.0
)

replace github.com/lib/pq => ../pq
require ( example.com/one v1.0.0 )
"""


def test_go_mod_require_lines_and_blocks() -> None:
    assert found("go.mod", GO_MOD) == [
        ("github.com/go-sql-driver/mysql", "v1.7.1", 5),
        ("github.com/lib/pq", "v1.10.9", 8),
        ("golang.org/x/sync", "v0.6.0", 10),
        ("example.com/one", "v1.0.0", 14),
    ]


def test_malformed_go_mod_keeps_the_readable_lines() -> None:
    assert found("go.mod", 'require\nrequire (\n"unterminated\ngood.example/x v1\n') == [("good.example/x", "v1", 4)]


# ----------------------------------------------------------------- pom.xml ---
POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <properties>
    <mysql.version>8.0.33</mysql.version>
  </properties>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>org.springframework</groupId>
        <artifactId>spring-framework-bom</artifactId>
        <version>6.1.0</version>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>mysql</groupId>
      <artifactId>mysql-connector-java</artifactId>
      <version>${mysql.version}</version>
      <exclusions>
        <exclusion>
          <groupId>com.google.protobuf</groupId>
          <artifactId>protobuf-java</artifactId>
        </exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <artifactId>no-group</artifactId>
    </dependency>
  </dependencies>
</project>
"""


def test_pom_dependencies_with_artifact_lines_and_bare_artifact_names() -> None:
    dependencies = dependencies_in("pom.xml", POM)

    assert [(d.name, d.version, d.line, d.also_known_as) for d in dependencies] == [
        ("org.springframework:spring-framework-bom", "6.1.0", 10, ("spring-framework-bom",)),
        ("mysql:mysql-connector-java", "8.0.33", 18, ("mysql-connector-java",)),
        ("no-group", None, 28, ()),
    ]
    assert dependencies[1].names == ("mysql:mysql-connector-java", "mysql-connector-java")


def test_pom_without_namespace_and_with_prefix() -> None:
    plain = (
        "<project><dependencies><dependency><groupId>g</groupId><artifactId>a</artifactId>"
        "</dependency></dependencies></project>"
    )
    prefixed = (
        '<m:project xmlns:m="http://maven.apache.org/POM/4.0.0">\n<m:dependencies>\n<m:dependency>\n'
        "<m:groupId>g</m:groupId>\n<m:artifactId>a</m:artifactId>\n</m:dependency>\n</m:dependencies>\n</m:project>"
    )

    assert found("pom.xml", plain) == [("g:a", None, 1)]
    assert found("pom.xml", prefixed) == [("g:a", None, 5)]


def test_truncated_pom_keeps_the_dependencies_read_before_the_error() -> None:
    truncated = POM[: POM.index("<artifactId>no-group")]

    assert [name for name, _, _ in found("pom.xml", truncated)] == [
        "org.springframework:spring-framework-bom",
        "mysql:mysql-connector-java",
    ]


@pytest.mark.parametrize(
    "content",
    [
        "not xml at all",
        "",
        '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]>'
        "<project><dependencies><dependency><artifactId>&b;</artifactId></dependency></dependencies></project>",
    ],
)
def test_malformed_or_entity_pom_yields_nothing(content: str) -> None:
    assert dependencies_in("pom.xml", content) == []
