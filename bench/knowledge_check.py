"""knowledge_check on 1,000 files against 50 constraints: the engine alone, and the tool in process.

    python bench/knowledge_check.py [--files 1000] [--runs 10] [--seed 11] [--smoke]

A seeded, synthetic monorepo: Python, TypeScript, Go and Java services (source
files of 50-400 lines, plus the block that crosses the target, with imports, a
few secrets and violations planted at the rates in RATES), their manifests
(package.json, requirements*.txt, pyproject.toml, go.mod, pom.xml) and
configuration (YAML, JSON, properties, .env files, Dockerfiles). The 50 constraints cover every operator and target,
with and without appliesTo, in 11 knowledge files written like those of
examples/knowledge; they are pushed to the repository of an embedded stack
(hashing embedder) and synced for real, then read back from the catalog.

Two paths are timed, each with one warm-up then --runs runs (alternating, so that
other load on the machine hits both alike), minSeverity info (every constraint
evaluated):
  * engine: ``mnemo.knowledge.check.evaluate`` on already validated files;
  * tool: ``get_tool("knowledge_check").invoke`` with the JSON-like payload, so
    request validation, the catalog read and the response dump are included.
The violations must be the same in every run of both paths (checked).
Writes bench/results/knowledge-check.json. --smoke: 100 files (the manifests and configuration,
and 14 sources) and 2 runs, the 50 constraints all the same, results to a temporary folder
(bench/common.py).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import string
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fresh_services, parse_args, table, write_results
from mnemo.context import RequestContext
from mnemo.knowledge.check import evaluate
from mnemo.knowledge.models import Dependency, FileToCheck
from mnemo.sync.models import SyncNowInput
from mnemo.tools.registry import get_tool

TENANT = "bench"
CONTEXT = RequestContext(tenant=TENANT, user="checker", org="engineering", team="payments", project="checkout-api")
MIN_SEVERITY = "info"
MB = 1_000_000

#: Probabilities used by the generator: per file unless said otherwise.
RATES: dict[str, float] = {
    "spdx_header": 0.92,  # Python / TypeScript files carrying the license header (the rest: *_missing)
    "java_copyright": 0.90,
    "aws_key": 0.004,
    "github_token": 0.003,
    "slack_token": 0.002,
    "private_key": 0.001,
    "python_bare_except": 0.03,  # per try block
    "python_verify_false": 0.01,
    "python_md5": 0.02,
    "python_pickle_import": 0.015,
    "python_pymysql_import": 0.005,
    "python_telnetlib_import": 0.003,
    "python_camel_case_name": 0.01,
    "handler_print": 0.08,  # per Python handler file
    "handler_without_powertools": 0.05,
    "payments_float_money": 0.05,  # per dataclass in payments code
    "payments_handler_without_idempotency": 0.15,
    "payments_client_without_jitter": 0.30,
    "eval_call": 0.003,
    "ts_console_log": 0.02,  # per function
    "ts_any": 0.03,  # per function
    "ts_lodash_import": 0.04,
    "ts_moment_import": 0.02,
    "tsx_dangerous_html": 0.01,
    "go_ioutil_import": 0.08,
    "go_insecure_tls": 0.01,
    "java_print_stack_trace": 0.04,  # per catch block
    "java_date_import": 0.05,
    "config_literal_password": 0.08,  # per YAML config
    "prod_debug_true": 0.10,
    "image_latest": 0.10,  # per image line
}

# -------------------------------------------------------------- constraints ---
C = dict[str, Any]


def rule(operator: str, target: str, pattern: str, *globs: str, severity: str | None = None, message: str = "") -> C:
    out: C = {"operator": operator, "target": target, "pattern": pattern}
    if globs:
        out["appliesTo"] = list(globs)
    if severity:
        out["severity"] = severity
    if message:
        out["message"] = message
    return out


PY, TS = "**/*.py", "**/*.{ts,tsx}"
HANDLERS = "**/handlers/**/*.py"
KNOWLEDGE: list[tuple[str, str, str, str, list[C]]] = [
    # (path, type, title, severity, constraints)
    (
        "company/policy-secrets-handling.md",
        "policy",
        "Secrets Handling",
        "block",
        [
            rule("must_not_match", "code", "(AKIA|ASIA)[0-9A-Z]{16}", message="An AWS access key id is committed."),
            rule("must_not_match", "code", "-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED) )?PRIVATE KEY-----"),
            rule("must_not_exist", "file", r"(^|/)\.env$", message="Do not commit .env files."),
            rule(
                "must_not_match",
                "config",
                r"""(?i)(password|passwd)["']?\s*[:=]\s*["']?[^"'\s$!{}<>]{6,}""",
                severity="warn",
            ),
            rule("must_not_match", "code", "gh[pousr]_[A-Za-z0-9]{36}"),
            rule("must_not_exist", "code", "xox[baprs]-[0-9]{10,13}-[0-9]{10,13}-[A-Za-z0-9]{24}"),
            rule("must_not_exist", "file", r"\.(pem|key|p12|pfx)$"),
        ],
    ),
    (
        "company/policy-cryptography.md",
        "policy",
        "Cryptography",
        "warn",
        [
            rule("must_not_use", "dependency", "pycrypto", severity="block"),
            rule("must_not_match", "code", r"hashlib\.(md5|sha1)\(", PY),
            rule("must_not_match", "code", r"verify\s*=\s*False", PY),
            rule("must_not_match", "code", r"InsecureSkipVerify:\s*true", "**/*.go", severity="block"),
        ],
    ),
    (
        "company/policy-license-headers.md",
        "policy",
        "License Headers",
        "info",
        [
            rule("must_match", "code", "SPDX-License-Identifier:", PY, "**/*.ts", "**/*.tsx"),
            rule("must_exist", "file", "(^|/)LICENSE$"),
            rule("must_match", "code", r"Copyright \(c\) 20[0-9]{2} Acme", "**/*.java"),
        ],
    ),
    (
        "orgs/engineering/adr-042-database-selection.md",
        "adr",
        "Database Selection for New Services",
        "block",
        [
            rule("must_not_use", "dependency", "mysql|mysql2|mariadb|mysqlclient|pymysql|mysql-connector-java"),
            rule("must_not_use", "import", r"(pymysql|mysql|mysql2|MySQLdb)(\..+|/.+)?"),
            rule("must_not_match", "config", "jdbc:mysql://"),
        ],
    ),
    (
        "orgs/engineering/adr-051-event-streaming.md",
        "adr",
        "Event Streaming with EventBridge and Kinesis",
        "warn",
        [
            rule("must_not_use", "dependency", "kafka-python|confluent-kafka|aiokafka|kafkajs"),
            rule("must_not_use", "dependency", "pika|aio-pika|amqplib"),
            rule("must_not_use", "import", r"(kafka|confluent_kafka|pika)(\..+)?"),
            rule("must_use", "dependency", "@aws-sdk/client-eventbridge", "services/orders/**", severity="info"),
        ],
    ),
    (
        "orgs/engineering/policy-python-services.md",
        "policy",
        "Python Service Standards",
        "warn",
        [
            rule(
                "must_use",
                "dependency",
                "aws[-_]lambda[-_]powertools",
                "services/*/requirements*.txt",
                "services/*/pyproject.toml",
                severity="info",
            ),
            rule("must_not_use", "import", r"(pickle|cpickle|_pickle|shelve|dill|cloudpickle)(\..+)?"),
            rule("must_not_match", "code", r"(?m)^\s*except\s*:", PY),
            rule("must_not_match", "code", r"\beval\s*\(", PY, TS),
            rule("must_exist", "dependency", "pytest", "**/requirements-dev.txt", "**/pyproject.toml", severity="info"),
            rule("must_not_exist", "import", "telnetlib|ftplib|imp"),
        ],
    ),
    (
        "orgs/engineering/pattern-lambda-observability.md",
        "pattern",
        "Lambda Observability",
        "warn",
        [
            rule("must_use", "import", r"aws_lambda_powertools(\..+)?", HANDLERS),
            rule("must_not_match", "code", r"(?m)^\s*print\(", HANDLERS),
            rule("must_match", "config", r"Tracing:\s*Active", "**/template.yaml", "**/template.yml"),
            rule("must_not_match", "code", r"\bconsole\.log\(", "services/**/*.ts"),
            rule("must_use", "code", "Logger|getLogger|logger", HANDLERS, severity="info"),
        ],
    ),
    (
        "orgs/engineering/policy-frontend.md",
        "policy",
        "Frontend Standards",
        "warn",
        [
            rule("must_not_use", "dependency", "moment|left-pad|request", "**/package.json"),
            rule("must_not_use", "import", "lodash(/.+)?|moment", "apps/**"),
            rule("must_not_match", "code", "dangerouslySetInnerHTML", "**/*.tsx", severity="block"),
            rule("must_not_match", "code", r":\s*any\b", TS, severity="info"),
            rule("must_exist", "file", r"(^|/)tsconfig\.json$"),
        ],
    ),
    (
        "orgs/engineering/policy-go-java.md",
        "policy",
        "Go and Java Standards",
        "warn",
        [
            rule("must_not_use", "import", "io/ioutil", "**/*.go"),
            rule("must_not_use", "dependency", r"github\.com/dgrijalva/jwt-go", severity="block"),
            rule("must_not_match", "code", r"e\.printStackTrace\(\)", "**/*.java"),
            rule("must_not_use", "import", r"java\.util\.Date|java\.text\.SimpleDateFormat"),
            rule("must_not_use", "dependency", r"(org\.apache\.logging\.log4j:)?log4j-core", severity="block"),
            rule("must_not_match", "file", r"(^|/)[^/]*[A-Z][^/]*\.py$", severity="info"),
        ],
    ),
    (
        "teams/payments/policy-money-representation.md",
        "policy",
        "Money Representation in Payment Code",
        "warn",
        [
            rule(
                "must_not_match",
                "code",
                r"(?i)(amount|price|total|balance)\w*\s*(:\s*float\b|=\s*float\()",
                "services/payments/**/*.py",
            ),
            rule("must_match", "code", "(?i)idempotency", "services/payments/src/payments/handlers/**/*.py"),
            rule("must_match", "code", "(?i)jitter", "services/payments/src/payments/clients/**/*.py"),
        ],
    ),
    (
        "projects/checkout-api/spec-checkout-api.md",
        "spec",
        "Checkout API",
        "warn",
        [
            rule("must_exist", "file", r"^services/checkout/openapi\.ya?ml$"),
            rule("must_not_use", "dependency", "requests", "services/checkout/**", severity="info"),
            rule("must_not_match", "config", r"image:\s*\S+:latest\b", "**/*.{yaml,yml}"),
            rule(
                "must_not_exist",
                "config",
                r"""(?i)"?debug"?\s*[:=]\s*"?true""",
                "**/config/prod*.{yaml,json}",
                "**/*-prod.properties",
            ),
        ],
    ),
]


def knowledge_file(path: str, kind: str, title: str, severity: str, constraints: list[C]) -> bytes:
    item_id = path.rsplit("/", 1)[-1].removesuffix(".md")
    front = {
        "id": item_id,
        "type": kind,
        "title": title,
        "summary": f"{title}: the rules every service of the monorepo follows",
        "status": "accepted",
        "severity": severity,
        "tags": ["benchmark", kind],
        "constraints": constraints,
    }
    body = f"# {title}\n\nWhy these {len(constraints)} rules exist, and how to comply with them.\n"
    return f"---\n{yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=200)}---\n{body}".encode()


# --------------------------------------------------------------- workload ---
NOUNS = [
    "order",
    "payment",
    "invoice",
    "refund",
    "customer",
    "account",
    "ledger",
    "shipment",
    "parcel",
    "stock",
    "warehouse",
    "cart",
    "session",
    "token",
    "price",
    "discount",
    "receipt",
    "event",
    "report",
    "webhook",
]
VERBS = ["get", "create", "update", "delete", "list", "sync", "validate", "build", "load", "publish", "apply", "fetch"]
FIELDS = ["id", "status", "created_at", "currency", "reference", "region", "owner", "version", "tenant", "source"]
MESSAGES = ["not found", "invalid state", "upstream timeout", "retrying request", "processed", "skipped duplicate"]
SERVICES: dict[str, tuple[str, str]] = {  # name -> (language, root)
    "payments": ("python", "services/payments/src/payments"),
    "checkout": ("python", "services/checkout/src/checkout"),
    "analytics": ("python", "services/analytics/src/analytics"),
    "web": ("ts", "apps/web/src"),
    "orders": ("ts", "services/orders/src"),
    "inventory": ("go", "services/inventory"),
    "shipping": ("go", "services/shipping"),
    "ledger": ("java", "services/ledger/src/main/java/com/acme/ledger"),
    "notifications": ("java", "services/notifications/src/main/java/com/acme/notifications"),
}
LANGUAGE_SHARE = {"python": 0.36, "ts": 0.28, "go": 0.20, "java": 0.16}
SUBDIRS = {
    "python": ["handlers", "clients", "domain", "models", "repositories", "utils"],
    "ts": ["handlers", "lib", "domain", "components", "hooks", "pages"],
    "go": ["internal/api", "internal/store", "internal/domain", "internal/worker", "pkg/client"],
    "java": ["controller", "service", "repository", "model", "config"],
}


# ------------------------------------------------------- manifests, configs ---
MANIFESTS = {
    "services/payments/requirements.txt": """
        boto3==1.34.90
        aws-lambda-powertools[tracer]==2.38.1
        pydantic>=2.7,<3
        httpx==0.27.0
    """,
    "services/payments/requirements-dev.txt": """
        -r requirements.txt
        pytest==8.2.0
        moto[dynamodb]==5.0.6
    """,
    "services/checkout/requirements.txt": """
        # runtime
        boto3==1.34.90
        requests==2.31.0  # legacy partner API
        pymysql==1.1.0
        aws-lambda-powertools==2.38.1
    """,
    "services/checkout/requirements-dev.txt": """
        pytest==8.2.0
        responses==0.25.0
    """,
    "services/analytics/pyproject.toml": """
        [project]
        name = "analytics"
        version = "0.4.0"
        requires-python = ">=3.12"
        dependencies = [
            "boto3>=1.34",
            "kafka-python==2.0.2",
            "pandas>=2.2",
            "pycrypto==2.6.1",
        ]

        [project.optional-dependencies]
        dev = ["pytest>=8", "ruff>=0.4"]
    """,
    "package.json": """
        {
          "name": "acme-monorepo",
          "private": true,
          "devDependencies": {
            "typescript": "^5.4.5",
            "prettier": "^3.2.5"
          }
        }
    """,
    "apps/web/package.json": """
        {
          "name": "@acme/web",
          "version": "1.8.0",
          "dependencies": {
            "next": "14.2.3",
            "react": "18.3.1",
            "react-dom": "18.3.1",
            "zod": "^3.23.8",
            "moment": "^2.30.1",
            "lodash": "^4.17.21"
          },
          "devDependencies": {
            "@types/react": "^18.3.1",
            "jest": "^29.7.0"
          }
        }
    """,
    "services/orders/package.json": """
        {
          "name": "@acme/orders",
          "version": "2.3.1",
          "dependencies": {
            "@aws-sdk/client-dynamodb": "^3.577.0",
            "@aws-sdk/lib-dynamodb": "^3.577.0",
            "@aws-sdk/client-eventbridge": "^3.577.0",
            "kafkajs": "^2.2.4",
            "uuid": "^9.0.1"
          },
          "devDependencies": {
            "left-pad": "1.3.0"
          }
        }
    """,
}
GO_MOD = (
    "module github.com/acme/{service}\n\ngo 1.22\n\nrequire (\n\tgithub.com/aws/aws-sdk-go-v2 v1.27.0\n"
    "\tgithub.com/aws/aws-sdk-go-v2/service/dynamodb v1.32.3\n{extra}\tgo.uber.org/zap v1.27.0\n)\n"
)
POM = dedent("""\
    <?xml version="1.0" encoding="UTF-8"?>
    <project xmlns="http://maven.apache.org/POM/4.0.0">
      <modelVersion>4.0.0</modelVersion>
      <groupId>com.acme</groupId>
      <artifactId>{service}</artifactId>
      <version>1.0.0</version>
      <dependencies>
    {dependencies}  </dependencies>
    </project>
""")
POM_DEPENDENCY = (
    "    <dependency>\n      <groupId>{group}</groupId>\n      <artifactId>{artifact}</artifactId>\n"
    "      <version>{version}</version>\n    </dependency>\n"
)
DEPLOYMENT = dedent("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: {service}
    spec:
      replicas: 3
      template:
        spec:
          containers:
            - name: {service}
              image: 123456789012.dkr.ecr.eu-west-1.amazonaws.com/{service}:{image}
              ports:
                - containerPort: 8080
""")
DOCKERFILE = "FROM public.ecr.aws/docker/library/python:3.12-slim\nWORKDIR /app\nCOPY . .\nUSER 1000\n"
TEMPLATE = dedent("""\
    AWSTemplateFormatVersion: '2010-09-09'
    Transform: AWS::Serverless-2016-10-31
    Globals:
      Function:
        Runtime: python3.12
        Tracing: {tracing}
        Timeout: 10
    Resources:
      {name}Function:
        Type: AWS::Serverless::Function
        Properties:
          Handler: {service}.handlers.app.handler
          MemorySize: 512
""")
TSCONFIG = '{\n  "compilerOptions": {\n    "target": "ES2022",\n    "strict": true,\n    "module": "NodeNext"\n  }\n}\n'
APPLICATION_PROPERTIES = "spring.datasource.url={url}\nspring.datasource.password=${{DB_PASSWORD}}\nserver.port=8080\n"
WORKFLOW = dedent("""\
    name: {name}
    on: [push]
    jobs:
      {name}:
        runs-on: ubuntu-latest
        steps:
          - uses: actions/checkout@v4
          - run: make {name}
""")
OTHER_FILES = {
    "services/checkout/.env": """
        CHECKOUT_DB_PASSWORD=s3cr3t-Passw0rd
        STRIPE_KEY=sk_test_51H...
    """,
    "services/checkout/openapi.yaml": """
        openapi: 3.0.3
        info:
          title: Checkout API
          version: 1.4.0
        paths:
          /orders:
            post:
              operationId: createOrder
    """,
    "docker-compose.yml": """
        services:
          postgres:
            image: postgres:latest
            environment:
              POSTGRES_PASSWORD: localdevonly
    """,
    "Makefile": "test:\n\tpytest services\n\nlint:\n\truff check .\n",
    "LICENSE": """
        Apache License
        Version 2.0, January 2004
        http://www.apache.org/licenses/
    """,
    "README.md": "# Acme monorepo\n\nServices, apps and their deployment.\n",
    "services/shipping/certs/dev-key.pem": """
        -----BEGIN PRIVATE KEY-----
        MIIEvQIBADANBgkqhkiG9w0BAQEFAASC
        -----END PRIVATE KEY-----
    """,
}


def camel(*words: str) -> str:
    return "".join(word.capitalize() for word in words)


def token(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


class Workload:
    """Generates the files; ``planted`` counts each kind of violation written on purpose."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.planted: Counter[str] = Counter()
        self.files: dict[str, str] = {}

    def chance(self, kind: str) -> bool:
        if self.rng.random() < RATES[kind]:
            self.planted[kind] += 1
            return True
        return False

    def header(self, kind: str) -> bool:
        """Whether a file gets its mandatory header (RATES[kind]); the files left without count as planted."""
        if self.rng.random() < RATES[kind]:
            return True
        self.planted[kind + "_missing"] += 1
        return False

    def add(self, path: str, content: str) -> None:
        while path in self.files:  # same generated name twice: number it
            stem, dot, extension = path.rpartition(".")
            path = f"{stem}_{len(self.files)}.{extension}" if dot else f"{path}_{len(self.files)}"
        self.files[path] = content

    def noun(self) -> str:
        return self.rng.choice(NOUNS)

    def secret_line(self, comment: str, assign: Callable[[str, str], str]) -> list[str]:
        """Now and then a committed credential, written as the language assigns a string."""
        out = []
        if self.chance("aws_key"):
            out.append(assign("awsAccessKeyId", "AKIA" + token(self.rng, string.ascii_uppercase + string.digits, 16)))
        if self.chance("github_token"):
            out.append(assign("githubToken", "ghp_" + token(self.rng, string.ascii_letters + string.digits, 36)))
        if self.chance("slack_token"):
            digits = string.digits
            slack = f"xoxb-{token(self.rng, digits, 11)}-{token(self.rng, digits, 12)}-"
            out.append(assign("slackToken", slack + token(self.rng, string.ascii_letters + string.digits, 24)))
        if self.chance("private_key"):
            out += [f"{comment} test fixture", assign("privateKey", "-----BEGIN RSA PRIVATE KEY-----\\nMIIEow...")]
        return out

    # ------------------------------------------------------------- python
    def python(self, path: str, target: str) -> str:
        rng = self.rng
        handler, payments = "/handlers/" in path, path.startswith("services/payments/")
        out = []
        if self.header("spdx_header"):
            out = ["# SPDX-License-Identifier: Apache-2.0", "# Copyright (c) 2024 Acme Corp.", ""]
        out += [f'"""{camel(self.noun())} {rng.choice(VERBS)} logic."""', "", "from __future__ import annotations", ""]
        modules = rng.sample(["os", "json", "logging", "uuid", "re", "time", "functools", "itertools"], 4)
        out += [f"import {module}" for module in modules]
        out += [
            "from dataclasses import dataclass, field",
            "from datetime import UTC, datetime",
            "from decimal import Decimal",
            "from typing import Any",
            "",
            "import boto3",
            "from botocore.exceptions import ClientError",
        ]
        if handler and not self.chance("handler_without_powertools"):
            out += [
                "from aws_lambda_powertools import Logger, Tracer",
                "from aws_lambda_powertools.utilities.typing import LambdaContext",
            ]
        if self.chance("python_pickle_import"):
            out.append(rng.choice(["import pickle", "import dill", "from shelve import open as open_shelf"]))
        if self.chance("python_pymysql_import"):
            out.append("import pymysql")
        if self.chance("python_telnetlib_import"):
            out.append("import telnetlib")
        md5 = self.chance("python_md5")
        if md5:
            out.append("import hashlib")
        if rng.random() < 0.3:
            out.append("import requests")
        out += ["", "logger = logging.getLogger(__name__)", f'TABLE = os.environ.get("TABLE_NAME", "{self.noun()}s")']
        out.append("")
        if handler and payments and not self.chance("payments_handler_without_idempotency"):
            out += ["# Every write goes through the idempotency layer (see pattern-idempotent-payments).", ""]
        if "/clients/" in path and payments and not self.chance("payments_client_without_jitter"):
            out += ["BACKOFF = {'base': 0.2, 'cap': 5.0, 'jitter': 'full'}", ""]
        out += self.secret_line("#", lambda name, value: f'{name.upper()} = "{value}"')
        if md5:
            out += ["", "def fingerprint(payload: bytes) -> str:", "    return hashlib.md5(payload).hexdigest()", ""]
        while len(out) < target:
            out += self.python_class(payments) if rng.random() < 0.25 else self.python_function(handler)
        return "\n".join(out) + "\n"

    def python_class(self, payments: bool) -> list[str]:
        rng, name = self.rng, camel(self.noun(), self.rng.choice(["record", "request", "result", "state"]))
        out = ["", "@dataclass(frozen=True)", f"class {name}:", f'    """A {name} as stored in DynamoDB."""', ""]
        for field_name in rng.sample(FIELDS, rng.randint(3, 7)):
            out.append(f"    {field_name}: str")
        if payments:
            float_money = self.chance("payments_float_money")
            out.append("    amount: float = 0.0" if float_money else "    amount_minor: int = 0")
            out.append('    currency: str = "EUR"')
        out += ["    tags: list[str] = field(default_factory=list)", "", "    def to_item(self) -> dict[str, Any]:"]
        out += ["        return {", *(f'            "{f}": self.{f},' for f in rng.sample(FIELDS, 3)), "        }", ""]
        return out

    def python_function(self, handler: bool) -> list[str]:
        rng = self.rng
        noun, verb = self.noun(), rng.choice(VERBS)
        if handler and rng.random() < 0.3:
            out = ["", "def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:"]
        else:
            out = ["", f"def {verb}_{noun}({noun}_id: str, *, limit: int = {rng.randint(10, 500)}) -> dict[str, Any]:"]
        out.append(f'    """{verb.capitalize()} the {noun} and return its stored form."""')
        for _ in range(rng.randint(2, 9)):
            kind = rng.random()
            if kind < 0.25:
                out += [
                    "    try:",
                    f'        response = client.get_item(TableName=TABLE, Key={{"pk": {{"S": {noun}_id}}}})',
                    "    except:" if self.chance("python_bare_except") else "    except ClientError as error:",
                    f'        logger.exception("{rng.choice(MESSAGES)}")',
                    "        raise",
                ]
            elif kind < 0.45:
                out += [f"    if not {noun}_id:", f'        raise ValueError("{noun} {rng.choice(MESSAGES)}")']
            elif kind < 0.65:
                out.append("    for entry in items[:limit]:")
                out.append(f"        total += Decimal(entry['{rng.choice(FIELDS)}'] or 0)")
            elif kind < 0.85:
                out.append(f'    logger.info("{rng.choice(MESSAGES)}", extra={{"{noun}Id": {noun}_id}})')
            elif kind < 0.95:
                out.append(f"    # TODO({rng.choice(['ana', 'bo', 'chen'])}): paginate past {rng.randint(2, 99)} pages")
            else:
                out.append(f'    started = datetime.now(UTC).isoformat(timespec="seconds")  # {noun}')
        if handler and self.chance("handler_print"):
            out.append(f'    print("handled", {noun}_id)')
        if self.chance("python_verify_false"):
            out.append(f'    requests.get(f"https://{noun}.internal/health", timeout=5, verify=False)')
        if self.chance("eval_call"):
            out.append("    expression = eval(event.get('filter', 'True'))")
        out.append(f'    return {{"{noun}Id": {noun}_id, "status": "ok"}}')
        return out

    # --------------------------------------------------------- typescript
    def typescript(self, path: str, target: str) -> str:
        rng = self.rng
        tsx = path.endswith(".tsx")
        out = []
        if self.header("spdx_header"):
            out = ["// SPDX-License-Identifier: Apache-2.0", ""]
        packages = ["zod", "uuid", "date-fns", "@aws-sdk/client-dynamodb", "@aws-sdk/lib-dynamodb", "axios"]
        if tsx:
            out.append('import React, { useEffect, useState } from "react";')
            out.append('import { useRouter } from "next/router";')
        for package in rng.sample(packages, 3):
            out.append(f'import {{ {camel(self.noun())} }} from "{package}";')
        out.append(f'import {{ {camel(self.noun())}Schema }} from "../lib/{self.noun()}";')
        out.append(f'import type {{ {camel(self.noun())} }} from "./types";')
        if self.chance("ts_lodash_import"):
            out.append('import debounce from "lodash/debounce";')
        if self.chance("ts_moment_import"):
            out.append('import moment from "moment";')
        out.append("")
        out += self.secret_line("//", lambda name, value: f'export const {name} = "{value}";')
        while len(out) < target:
            out += self.tsx_component() if tsx and rng.random() < 0.4 else self.ts_function()
        return "\n".join(out) + "\n"

    def ts_function(self) -> list[str]:
        rng, noun, verb = self.rng, self.noun(), self.rng.choice(VERBS)
        kind = ": any" if self.chance("ts_any") else f": {camel(noun)}Input"
        out = ["", f"export async function {verb}{camel(noun)}(input{kind}): Promise<{camel(noun)}> {{"]
        for _ in range(rng.randint(2, 8)):
            kind_ = rng.random()
            if kind_ < 0.3:
                get = "new GetCommand({ TableName, Key: { id: input.id } })"
                out.append(f"  const {noun} = await client.send({get});")
            elif kind_ < 0.55:
                out.append(f"  if (!input.{rng.choice(FIELDS)}) {{")
                out += [f'    throw new Error("{noun} {rng.choice(MESSAGES)}");', "  }"]
            elif kind_ < 0.8:
                status = rng.choice(FIELDS)
                out.append(f'  const items = (input.items ?? []).filter((item) => item.status === "{status}");')
            else:
                out += [f"  // {rng.choice(MESSAGES)}: keep in sync with the {noun} service"]
        if self.chance("ts_console_log"):
            out.append(f'  console.log("{verb} {noun}", input);')
        if self.chance("eval_call"):
            out.append("  const rule = eval(input.expression);")
        out += [f"  return {camel(noun)}Schema.parse({{ ...input, updatedAt: new Date().toISOString() }});", "}"]
        return out

    def tsx_component(self) -> list[str]:
        rng, name = self.rng, camel(self.noun(), self.rng.choice(["list", "card", "panel", "form"]))
        out = ["", f"export function {name}(props: {name}Props) {{", "  const [items, setItems] = useState([]);"]
        out += ["  useEffect(() => {", "    props.load().then(setItems);", "  }, [props]);", "  return ("]
        out.append(f'    <section className="{name.lower()}">')
        if self.chance("tsx_dangerous_html"):
            out.append("      <div dangerouslySetInnerHTML={{ __html: props.description }} />")
        for _ in range(rng.randint(2, 6)):
            out.append(f"      <p>{{props.{rng.choice(FIELDS)}}}</p>")
        out += ["    </section>", "  );", "}"]
        return out

    # ----------------------------------------------------------------- go
    def golang(self, path: str, target: str) -> str:
        rng = self.rng
        package = path.rsplit("/", 2)[-2]
        imports = ['"context"', '"encoding/json"', '"fmt"', '"net/http"', '"time"', ""]
        imports += ['"github.com/aws/aws-sdk-go-v2/aws"', '"github.com/aws/aws-sdk-go-v2/service/dynamodb"']
        imports += ['"go.uber.org/zap"']
        if self.chance("go_ioutil_import"):
            imports.insert(2, '"io/ioutil"')
        if rng.random() < 0.2:
            imports.insert(3, '"crypto/tls"')
        out = ["// SPDX-License-Identifier: Apache-2.0", "", f"package {package}", "", "import ("]
        out += [f"\t{line}" if line else "" for line in imports] + [")", ""]
        out += self.secret_line("//", lambda name, value: f'const {name} = "{value}"')
        while len(out) < target:
            noun = self.noun()
            out += ["", f"// {camel(noun)}Store reads and writes {noun}s.", f"type {camel(noun)}Store struct {{"]
            out += ["\tclient *dynamodb.Client", "\tlog    *zap.Logger", "\ttable  string", "}", ""]
            for _ in range(rng.randint(1, 3)):
                verb = camel(rng.choice(VERBS))
                kind = camel(noun)
                out.append(f"func (s *{kind}Store) {verb}(ctx context.Context, id string) (*{kind}, error) {{")
                for _ in range(rng.randint(2, 6)):
                    out += [
                        "\tout, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table)})",
                        "\tif err != nil {",
                        f'\t\treturn nil, fmt.Errorf("{verb} {noun} %s: {rng.choice(MESSAGES)}: %w", id, err)',
                        "\t}",
                    ]
                if self.chance("go_insecure_tls"):
                    out.append("\ttransport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}")
                    out.append("\t_ = transport")
                out.append(f'\ts.log.Info("{rng.choice(MESSAGES)}", zap.String("id", id))')
                out += ["\treturn decode(out)", "}", ""]
        return "\n".join(out) + "\n"

    # --------------------------------------------------------------- java
    def java(self, path: str, target: str) -> str:
        rng = self.rng
        parts = path.split("/java/", 1)[1].rsplit("/", 1)
        name = parts[1].removesuffix(".java")
        out = []
        if self.header("java_copyright"):
            out = ["/*", " * Copyright (c) 2024 Acme Corp. All rights reserved.", " */"]
        out += [f"package {parts[0].replace('/', '.')};", ""]
        imports = ["java.time.Instant", "java.util.List", "java.util.Map", "java.util.Optional", "org.slf4j.Logger"]
        imports += ["org.slf4j.LoggerFactory", "org.springframework.stereotype.Service"]
        if self.chance("java_date_import"):
            imports.append(rng.choice(["java.util.Date", "java.text.SimpleDateFormat"]))
        out += [f"import {module};" for module in imports] + ["", "@Service", f"public class {name} {{"]
        out += [f"    private static final Logger LOG = LoggerFactory.getLogger({name}.class);", ""]
        out += self.secret_line("    //", lambda key, value: f'    static final String {key.upper()} = "{value}";')
        while len(out) < target - 1:
            noun, verb = self.noun(), rng.choice(VERBS)
            kind = camel(noun)
            out.append(f"    public Optional<{kind}> {verb}{kind}(String id, Map<String, String> attributes) {{")
            for _ in range(rng.randint(1, 3)):
                out += [
                    "        try {",
                    f"            {camel(noun)} found = repository.findById(id).orElseThrow();",
                    f'            LOG.info("{rng.choice(MESSAGES)} {{}}", id);',
                    "        } catch (RuntimeException e) {",
                    "            e.printStackTrace();"
                    if self.chance("java_print_stack_trace")
                    else f'            LOG.error("{verb} {noun} failed", e);',
                    "        }",
                ]
            out += ["        return Optional.empty();", "    }", ""]
        out.append("}")
        return "\n".join(out) + "\n"

    # ---------------------------------------------------------- the tree
    def source_path(self, service: str) -> str:
        rng = self.rng
        language, root = SERVICES[service]
        subdir = rng.choice(SUBDIRS[language])
        noun, verb = self.noun(), rng.choice(VERBS)
        if language == "python":
            name = camel(noun, "client") if self.chance("python_camel_case_name") else f"{verb}_{noun}"
            return f"{root}/{subdir}/{name}.py" if rng.random() < 0.8 else f"services/{service}/tests/test_{name}.py"
        if language == "ts":
            if subdir in ("components", "pages", "hooks") or service == "web":
                return f"{root}/{subdir}/{camel(noun, rng.choice(['list', 'view', 'form', 'card']))}.tsx"
            return f"{root}/{subdir}/{verb}-{noun}.ts"
        if language == "go":
            return f"{root}/{subdir}/{noun}_{verb}.go"
        return f"{root}/{subdir}/{camel(noun, subdir.capitalize())}.java"

    def sources(self, count: int) -> None:
        by_language: dict[str, list[str]] = {}
        for service, (language, _) in SERVICES.items():
            by_language.setdefault(language, []).append(service)
        languages = list(LANGUAGE_SHARE)
        for _ in range(count):
            language = self.rng.choices(languages, weights=[LANGUAGE_SHARE[x] for x in languages])[0]
            service = self.rng.choice(by_language[language])
            path = self.source_path(service)
            target = self.rng.randint(50, 400)
            write = {"python": self.python, "ts": self.typescript, "go": self.golang, "java": self.java}[language]
            self.add(path, write(path, target))

    def manifests(self) -> None:
        for path, content in MANIFESTS.items():
            self.add(path, dedent(content).lstrip())
        for service, extra in (("inventory", ""), ("shipping", "\tgithub.com/dgrijalva/jwt-go v3.2.0+incompatible\n")):
            self.add(f"services/{service}/go.mod", GO_MOD.format(service=service, extra=extra))
        for service in ("ledger", "notifications"):
            dependencies = [
                ("org.springframework.boot", "spring-boot-starter-web", "3.2.5"),
                ("org.postgresql", "postgresql", "42.7.3"),
            ]
            if service == "ledger":
                dependencies.append(("org.apache.logging.log4j", "log4j-core", "2.14.1"))
            body = "".join(POM_DEPENDENCY.format(group=g, artifact=a, version=v) for g, a, v in dependencies)
            self.add(f"services/{service}/pom.xml", POM.format(service=service, dependencies=body))

    def configs(self) -> None:
        rng = self.rng
        for service, (language, _) in SERVICES.items():
            base = "apps/web" if service == "web" else f"services/{service}"
            for stage in ("dev", "staging", "prod"):
                lines = [f"service: {service}", f"stage: {stage}", f"region: {rng.choice(['eu-west-1', 'us-east-1'])}"]
                lines += ["logging:", f"  level: {'DEBUG' if stage == 'dev' else 'INFO'}", "database:"]
                lines += [f"  host: {service}-{stage}.cluster-abc123.eu-west-1.rds.amazonaws.com", "  port: 5432"]
                if self.chance("config_literal_password"):
                    lines.append(f"  password: {token(rng, string.ascii_letters + string.digits, 14)}")
                else:
                    lines.append(f"  password: ${{{service.upper()}_DB_PASSWORD}}")
                debug = stage == "prod" and self.chance("prod_debug_true")
                lines += ["features:", f"  debug: {'true' if debug else 'false'}"]
                for flag in rng.sample(FIELDS, rng.randint(4, 8)):
                    lines.append(f"  {flag}_enabled: {rng.choice(['true', 'false'])}")
                lines.append("limits:")
                lines += [f"  {noun}_per_minute: {rng.randint(10, 5000)}" for noun in rng.sample(NOUNS, 10)]
                self.add(f"{base}/config/{stage}.yaml", "\n".join(lines) + "\n")
            image = "latest" if self.chance("image_latest") else f"1.{rng.randint(0, 40)}.{rng.randint(0, 9)}"
            self.add(f"deploy/k8s/{service}/deployment.yaml", DEPLOYMENT.format(service=service, image=image))
            self.add(f"{base}/Dockerfile", DOCKERFILE)
            if language == "python" or service == "orders":
                tracing = "PassThrough" if service == "checkout" else "Active"
                template = TEMPLATE.format(name=camel(service), service=service, tracing=tracing)
                self.add(f"{base}/template.yaml", template)
            if language == "ts":
                self.add(f"{base}/tsconfig.json", TSCONFIG)
            if language == "java":
                resources = f"services/{service}/src/main/resources"
                url = "jdbc:mysql://ledger-db:3306/ledger" if service == "ledger" else "jdbc:postgresql://db:5432/app"
                self.add(f"{resources}/application.properties", APPLICATION_PROPERTIES.format(url=url))
                debug = "true" if service == "notifications" else "false"
                self.add(f"{resources}/application-prod.properties", f"debug={debug}\nlogging.level.root=INFO\n")
            self.add(f"{base}/.env.example", f"{service.upper()}_DB_PASSWORD=\nLOG_LEVEL=INFO\n")
        for workflow in ("ci", "deploy", "lint"):
            self.add(f".github/workflows/{workflow}.yml", WORKFLOW.format(name=workflow))
        for path, content in OTHER_FILES.items():
            self.add(path, dedent(content).lstrip())


def build_workload(count: int, seed: int) -> Workload:
    workload = Workload(seed)
    workload.manifests()
    workload.configs()
    workload.sources(count - len(workload.files))
    if len(workload.files) != count:
        raise RuntimeError(f"generated {len(workload.files)} files, wanted {count}")
    return workload


# ----------------------------------------------------------------- timing ---
def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],  # nearest rank: with few runs, the slowest
        "min": ordered[0],
        "max": ordered[-1],
    }


def interleaved(runs: int, calls: dict[str, Callable[[], Any]]) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """One warm-up of each path, then ``runs`` rounds calling each path once.

    Alternating the paths makes other load on the machine hit both alike. Returns
    the milliseconds of the timed calls and every answer (warm-up included).
    """
    answers: dict[str, list[Any]] = {name: [call()] for name, call in calls.items()}
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            started = time.perf_counter()
            answer = call()
            samples[name].append(1000 * (time.perf_counter() - started))
            answers[name].append(answer)
    return samples, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=11)
    args = parse_args(parser, {"files": 100, "runs": 2})
    load = os.getloadavg()[0]  # other work on the machine skews the clocks: recorded

    started = time.perf_counter()
    workload = build_workload(args.files, args.seed)
    payload_files = [{"path": path, "content": content} for path, content in workload.files.items()]
    dependencies = [
        {"name": "requests", "version": "2.32.3"},
        {"name": "boto3"},
        {"name": "left-pad", "version": "1.3.0"},
    ]
    total_bytes = sum(len(content.encode()) for content in workload.files.values())
    total_lines = sum(content.count("\n") for content in workload.files.values())
    kinds = Counter(path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else "other" for path in workload.files)
    print(
        f"generated {len(workload.files)} files, {total_bytes / MB:.2f} MB, {total_lines} lines "
        f"in {time.perf_counter() - started:.1f} s",
        flush=True,
    )

    services = fresh_services("hashing")
    for path, kind, title, severity, constraints in KNOWLEDGE:
        content = knowledge_file(path, kind, title, severity, constraints)
        services.repository.push(TENANT, path, content, author="bench", message="benchmark constraints")
    synced = services.sync.sync(TENANT, SyncNowInput())
    items = services.knowledge.applicable(CONTEXT, None)
    constraint_count = sum(len(item.constraints) for item in items)
    if synced.result.failures or len(items) != len(KNOWLEDGE) or constraint_count != 50:
        raise RuntimeError(f"sync: {synced.result}, {len(items)} items, {constraint_count} constraints")
    operators = Counter(c.operator for item in items for c in item.constraints)
    targets = Counter(c.target for item in items for c in item.constraints)
    globbed = sum(1 for item in items for c in item.constraints if c.applies_to)

    files = [FileToCheck(path=f["path"], content=f["content"]) for f in payload_files]
    deps = [Dependency.model_validate(d) for d in dependencies]
    tool = get_tool("knowledge_check")
    payload = {"files": payload_files, "dependencies": dependencies, "minSeverity": MIN_SEVERITY}
    samples, answers = interleaved(
        args.runs,
        {
            "engine": lambda: evaluate(items, files, deps, MIN_SEVERITY),
            "tool": lambda: tool.invoke(services, CONTEXT, payload),
        },
    )
    engine_out = answers["engine"][0]
    engine_violations = engine_out.model_dump(mode="json", by_alias=True)["violations"]
    dumps = [answer.model_dump(mode="json", by_alias=True) for answer in answers["engine"]] + answers["tool"]
    if any(dump["violations"] != engine_violations for dump in dumps):
        raise RuntimeError("the violations differ between runs or between the engine and the tool")
    engine_samples, tool_samples = samples["engine"], samples["tool"]

    results = {"engine (evaluate)": summary(engine_samples), "tool (knowledge_check.invoke)": summary(tool_samples)}
    rows = []
    for name, r in results.items():
        seconds = r["median"] / 1000
        r["mbPerSecond"] = total_bytes / MB / seconds
        r["filesPerSecond"] = len(files) / seconds
        rows.append([name, r["median"], r["p95"], r["mbPerSecond"], round(r["filesPerSecond"]), len(engine_violations)])
    by_item = Counter(v["knowledgeItemId"] for v in engine_violations)
    by_severity = Counter(v["severity"] for v in engine_violations)
    print(
        f"\n{len(files)} files ({total_bytes / MB:.2f} MB) x {constraint_count} constraints, "
        f"{args.runs} runs after 1 warm-up (ms)"
    )
    print(table(["path", "median", "p95", "MB/s", "files/s", "violations"], rows))
    print(f"violations by severity: {dict(sorted(by_severity.items()))}, passed: {engine_out.passed}")
    path = write_results(
        "knowledge-check",
        {
            "cpus": os.cpu_count(),
            "loadAverage1mAtStart": round(load, 2),
            "seed": args.seed,
            "runs": args.runs,
            "warmups": 1,
            "minSeverity": MIN_SEVERITY,
            "input": {
                "files": len(files),
                "bytes": total_bytes,
                "lines": total_lines,
                "requestDependencies": len(deps),
                "byExtension": dict(kinds.most_common()),
            },
            "constraints": {
                "count": constraint_count,
                "knowledgeFiles": len(items),
                "withAppliesTo": globbed,
                "byOperator": dict(sorted(operators.items())),
                "byTarget": dict(sorted(targets.items())),
            },
            "plantedRates": RATES,
            "planted": dict(sorted(workload.planted.items())),
            "violations": {
                "count": len(engine_violations),
                "identicalAcrossRuns": True,
                "passed": engine_out.passed,
                "bySeverity": dict(sorted(by_severity.items())),
                "byItem": dict(sorted(by_item.items())),
            },
            "milliseconds": results,
            "samples": {"engine": engine_samples, "tool": tool_samples},
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
