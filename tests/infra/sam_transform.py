"""Run the SAM transform offline for every AuthMode, ApiType, OpenSearch, alarm and tracing choice, then cfn-lint.

cfn-lint checks template.yaml as SAM source; this script checks what CloudFormation would
actually receive. It needs aws-sam-translator and cfn-lint, so it runs in the SAM virtual
environment (`make lint-template`), never under pytest:

    .venv/sam/bin/python tests/infra/sam_transform.py [--region eu-west-1] [--write DIR] [--jobs N]

No AWS call is made: the template uses no managed policy by name, so the IAM lookup that
`sam validate` (without --lint) performs is replaced by an empty map. The cases are checked
in processes side by side (one per core unless --jobs says otherwise; each case is tens of
seconds of one core's work), and reported in the order of CASES.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

COGNITO_POOL = "arn:aws:cognito-idp:eu-west-1:123456789012:userpool/eu-west-1_Example1"

# Each case is a set of parameter overrides that changes what the transform produces. The defaults: AuthMode IAM
# on the HTTP API, Stage dev (so alarms off, scale to zero on), tracing off.
CASES: dict[str, dict[str, str]] = {
    "iam-serverless": {},
    # AuthMode x ApiType: IAM on either API; API_KEY and COGNITO use the REST API whatever ApiType says (JWT
    # with REST is refused by a rule, which the transform does not evaluate: the jwt cases below are HTTP).
    # Each case also carries parameters orthogonal to its own, so that every value is transformed and linted
    # in as few cases as possible (each is tens of seconds of a core in `make test`).
    "iam-rest-tracing": {"ApiType": "REST", "Tracing": "Active", "LogLevel": "DEBUG"},
    "api-key-rest": {"AuthMode": "API_KEY", "ApiType": "REST"},
    "cognito-http": {"AuthMode": "COGNITO", "CognitoUserPoolArn": COGNITO_POOL, "ApiType": "HTTP"},
    # Stage x OpenSearchScaleToZero x Alarms: auto follows the stage; on and off override it either way.
    "dev-alarms-on-scale-off-admin": {
        "Alarms": "on",
        "ChangeEvents": "on",
        "ChangeEventContent": "on",
        "OpenSearchScaleToZero": "off",
        "OpenSearchAdminPrincipalArn": "arn:aws:iam::123456789012:role/MnemoAdmin",
    },
    "prod-defaults": {"Stage": "prod"},
    "prod-alarms-off-scale-on-standby": {
        "Stage": "prod",
        "Alarms": "off",
        "OpenSearchScaleToZero": "on",
        "OpenSearchStandbyReplicas": "ENABLED",
    },
    "prod-rest-alarms-on-scale-off": {
        "Stage": "prod",
        "ApiType": "REST",
        "Alarms": "on",
        "OpenSearchScaleToZero": "off",
    },
    "jwt": {
        "AuthMode": "JWT",
        "JwtIssuer": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example1",
        "JwtAudience": "client-a,client-b",
        "JwtClaimMapping": "user=email,roles=cognito:groups",
    },
    "jwt-experimental": {
        "AuthMode": "JWT",
        "JwtIssuer": "https://example.eu.auth0.com/",
        "JwtAudience": "https://mnemo.example.com",
        "ExperimentalTools": "true",
    },
    # The console's routes carry no authorizer, on either API (SAM must not add the JWT one).
    "cognito-console": {
        "AuthMode": "COGNITO",
        "CognitoUserPoolArn": COGNITO_POOL,
        "Console": "Enabled",
    },
    "jwt-console": {
        "AuthMode": "JWT",
        "JwtIssuer": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example1",
        "JwtAudience": "client-a",
        "Console": "Enabled",
    },
    # Tracing Active (X-Ray on the functions; the REST API's stage in iam-rest-tracing), with another LogLevel.
    "trusted-delegates-tracing": {
        "TrustedDelegateArns": (
            "arn:aws:iam::123456789012:role/AgentRole,arn:aws:iam::123456789012:role/service/AgentRole2"
        ),
        "Tracing": "Active",
        "LogLevel": "WARNING",
    },
    "existing-domain": {
        "ExistingOpenSearchEndpoint": "https://search-mnemo-abc123.eu-west-1.es.amazonaws.com",
        "ExistingOpenSearchDomainName": "mnemo",
        "AlarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:mnemo-alarms",
        "Stage": "prod",
    },
    # VectorStore s3vectors: a vector bucket, no collection; prod with alarms (the throttle alarm's metric).
    "s3vectors-prod": {"VectorStore": "s3vectors", "Stage": "prod", "Alarms": "on"},
    "bedrock-agent": {"CreateBedrockAgent": "true"},
    "bedrock-agent-all-families": {"CreateBedrockAgent": "true", "BedrockAgentAllFamilies": "true"},
    "adopted-table-standby": {
        "ExistingRecordsTableStreamArn": (
            "arn:aws:dynamodb:eu-west-1:123456789012:table/mnemo-records-dev/stream/2026-01-05T10:11:12.345"
        ),
        "OpenSearchStandbyReplicas": "ENABLED",
    },
    "experimental-bedrock-agent-all-families": {
        "ExperimentalTools": "true",
        "CreateBedrockAgent": "true",
        "BedrockAgentAllFamilies": "true",
    },
    # Extraction on (its queues' event source mappings enabled), through a cross-Region inference profile.
    "extraction": {
        "ExtractionStrategies": "facts,preferences,summary,lessons,graph",
        "ExtractionEveryTurns": "4",
        "ExtractionIdleMinutes": "15",
        "ExtractionJudge": "off",
        "ExtractorModelId": "eu.amazon.nova-lite-v1:0",
    },
}


# Rules that only fire on the transform's own output, never on what template.yaml says.
IGNORED_ON_OUTPUT = {
    # SAM resolves ${Stage} inside the layer's !Sub at transform time (it hashes the layer
    # name into the LayerVersion's logical id) and leaves a Sub with no variables behind.
    "W1020",
}


class _NoManagedPolicies:
    """Stands in for samtranslator's ManagedPolicyLoader, which would call iam:ListPolicies."""

    def load(self) -> dict[str, str]:
        return {}


def translate(region: str, overrides: dict[str, str]) -> dict[str, Any]:
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse

    os.environ.setdefault("AWS_DEFAULT_REGION", region)
    template = yaml_parse((ROOT / "template.yaml").read_text())
    # `sam package` would have uploaded the code: stand in for the S3 locations it writes.
    for logical_id, resource in template["Resources"].items():
        for key in ("CodeUri", "ContentUri"):
            if key in resource.get("Properties", {}):
                resource["Properties"][key] = f"s3://mnemo-artifacts/{logical_id}.zip"
    translated: dict[str, Any] = transform(template, dict(overrides), _NoManagedPolicies())
    return translated


def lint(translated: dict[str, Any], region: str) -> list[str]:
    from cfnlint.api import ManualArgs, lint

    matches = lint(json.dumps(translated), config=ManualArgs(regions=[region]))
    return [
        f"{m.rule.id} {m.message} ({'/'.join(str(p) for p in m.path)})"
        for m in matches
        if m.rule.id not in IGNORED_ON_OUTPUT
    ]


def check(case: str, overrides: dict[str, str], region: str, write: Path | None) -> tuple[bool, list[str]]:
    """Transform and lint one case: whether it is clean, and the lines that report it."""
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    try:
        translated = translate(region, overrides)
    except Exception as error:
        return False, [f"{case}: the SAM transform failed: {error}"]
    if write:
        write.mkdir(parents=True, exist_ok=True)
        (write / f"{case}.json").write_text(json.dumps(translated, indent=2))
    problems = lint(translated, region)
    if problems:
        return False, [f"{case}: {problem}" for problem in problems]
    return True, [f"{case}: transformed, {len(translated['Resources'])} resources, cfn-lint clean"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--region", default="eu-west-1")
    parser.add_argument("--write", type=Path, help="also write each translated template to DIR/<case>.json")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases checked at once (processes)")
    args = parser.parse_args(argv)
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    failed = False
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        checked = pool.map(check, CASES, CASES.values(), repeat(args.region), repeat(args.write))
        for clean, lines in checked:
            for line in lines:
                print(line, flush=True)
            failed = failed or not clean
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
