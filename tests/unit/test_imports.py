"""Imports found in source files, with their lines (mnemo.knowledge.imports)."""

from __future__ import annotations

import pytest

from mnemo.knowledge.imports import FoundImport, imports_in, is_source, scans_imports


def found(path: str, content: str) -> list[tuple[str, str, int]]:
    return [(found.module, found.package, found.line) for found in imports_in(path, content)]


@pytest.mark.parametrize("path", ["a.py", "src/b.TS", "c.tsx", "d.mjs", "e.cjs", "f.jsx", "g.go", "H.java", "i.kt"])
def test_scanned_languages_are_source(path: str) -> None:
    assert is_source(path)
    assert scans_imports(path)


@pytest.mark.parametrize("path", ["lib.rb", "main.rs", "x.cs", "run.sh"])
def test_other_languages_are_source_but_not_scanned(path: str) -> None:
    assert is_source(path)
    assert not scans_imports(path)
    assert imports_in(path, "import os\nrequire 'json'\n") == []


@pytest.mark.parametrize("path", ["README.md", "package.json", "Dockerfile", ".py", "py"])
def test_non_source_files(path: str) -> None:
    assert not is_source(path)
    assert imports_in(path, "import os\n") == []


# ------------------------------------------------------------------ Python ---
PYTHON = """\"\"\"Module.\"\"\"
import os.path
import sys as system, json
from collections.abc import Mapping
from . import sibling
from ..parent import thing
from .local import other
    import indented  # inside a function
x = 1; import re
from mysql . connector import (
    connect,
)
import first, \\
    second
importlib = None
text = "from nowhere import x"
"""


def test_python_imports() -> None:
    assert found("app.py", PYTHON) == [
        ("os.path", "os", 2),
        ("sys", "sys", 3),
        ("json", "json", 3),
        ("collections.abc", "collections", 4),
        ("indented", "indented", 8),
        ("re", "re", 9),
        ("mysql.connector", "mysql", 10),
        ("first", "first", 13),
        ("second", "second", 13),
    ]


def test_found_import_carries_file_and_names() -> None:
    assert imports_in("pkg/app.py", "import os.path\nimport os\n") == [
        FoundImport("os.path", "os", "pkg/app.py", 1),
        FoundImport("os", "os", "pkg/app.py", 2),
    ]
    assert FoundImport("os.path", "os", "a.py", 1).names == ("os.path", "os")
    assert FoundImport("os", "os", "a.py", 1).names == ("os",)


def test_python_crlf_lines() -> None:
    assert found("a.py", "import a\r\nfrom b.c import d\r\n") == [("a", "a", 1), ("b.c", "b", 2)]


# -------------------------------------------------------------- JavaScript ---
JAVASCRIPT = """import express from 'express';
import 'reflect-metadata'
import { Pool } from "mysql2/promise";
import * as ns from '@aws-sdk/client-s3/dist/x';
import {
  a,
  b,
} from "@scope/pkg";
const db = require('pg');
const lazy = await import("lodash/fp");
export { x } from './relative';
export * from '../up';
import type { T } from 'node:fs';
const arr = Array.from('abc');
const fromage = 'x';
"""


def test_javascript_imports() -> None:
    assert found("src/app.ts", JAVASCRIPT) == [
        ("express", "express", 1),
        ("reflect-metadata", "reflect-metadata", 2),
        ("mysql2/promise", "mysql2", 3),
        ("@aws-sdk/client-s3/dist/x", "@aws-sdk/client-s3", 4),
        ("@scope/pkg", "@scope/pkg", 8),
        ("pg", "pg", 9),
        ("lodash/fp", "lodash", 10),
        ("node:fs", "node:fs", 13),
    ]


@pytest.mark.parametrize("extension", [".js", ".jsx", ".tsx", ".mjs", ".cjs", ".vue"])
def test_javascript_family(extension: str) -> None:
    assert found("x" + extension, "const m = require('mysql')\n") == [("mysql", "mysql", 1)]


def test_javascript_skips_relative_and_absolute_paths() -> None:
    assert found("a.js", "import a from './a'\nimport b from '../b'\nimport c from '/abs/c'\nimport '.'\n") == []


def test_javascript_hostile_content_finishes() -> None:
    content = "require(" * 50_000 + "from '" + "x" * 100_000 + "\nimport 'ok'\n"

    assert found("a.js", content) == [("ok", "ok", 2)]


# ---------------------------------------------------------------------- Go ---
GO = """package main

import "fmt"
import sql "database/sql"

import (
\t"os"
\t_ "github.com/go-sql-driver/mysql" // driver
\t. "strings"
\t// "commented/out"
)

func main() { fmt.Println("import \\"nope\\"") }
import ("a/b"; "c/d")
"""


def test_go_imports() -> None:
    assert found("main.go", GO) == [
        ("fmt", "fmt", 3),
        ("database/sql", "database/sql", 4),
        ("os", "os", 7),
        ("github.com/go-sql-driver/mysql", "github.com/go-sql-driver/mysql", 8),
        ("strings", "strings", 9),
        ("a/b", "a/b", 14),
        ("c/d", "c/d", 14),
    ]


# ------------------------------------------------------------- Java/Kotlin ---
def test_java_imports() -> None:
    java = (
        "package a.b;\n\nimport java.sql.Connection;\nimport static org.junit.Assert.assertEquals;\n"
        "import com.mysql.cj.*;\n// import x.y;\n"
    )

    assert found("src/A.java", java) == [
        ("java.sql.Connection", "java.sql.Connection", 3),
        ("org.junit.Assert.assertEquals", "org.junit.Assert.assertEquals", 4),
        ("com.mysql.cj.*", "com.mysql.cj", 5),
    ]


def test_kotlin_imports() -> None:
    kotlin = "package a\nimport kotlinx.coroutines.launch\nimport org.x.Y as Z\n"

    assert found("A.kt", kotlin) == [
        ("kotlinx.coroutines.launch", "kotlinx.coroutines.launch", 2),
        ("org.x.Y", "org.x.Y", 3),
    ]


def test_python_hostile_lines_finish() -> None:
    content = "from " + "." * 200_000 + "x\nimport " + "a." * 100_000 + "\nimport ok\n"

    assert found("a.py", content) == [("ok", "ok", 3)]
