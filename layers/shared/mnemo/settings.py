"""One settings model, read from ``MNEMO_*`` environment variables.

Each port picks its adapter independently; with nothing set, every port uses
the embedded default, so ``mnemo serve`` runs on a laptop with no cloud at all.

| variable | meaning | default |
|---|---|---|
| MNEMO_DATA_DIR | where the embedded adapters keep their files | .mnemo |
| MNEMO_RECORDS | records store: sqlite or dynamodb | sqlite |
| MNEMO_RECORDS_TABLE | DynamoDB table name | mnemo-records |
| MNEMO_VECTOR_INDEX | vector index: local, opensearch or s3vectors | local |
| MNEMO_S3VECTORS_BUCKET | the S3 vector bucket (vector index s3vectors) | |
| MNEMO_OPENSEARCH_ENDPOINT | https://... of a domain or Serverless collection | |
| MNEMO_OPENSEARCH_SERVICE | SigV4 service: es (domain) or aoss (Serverless) | aoss |
| MNEMO_INDEX_PREFIX | prefix of the OpenSearch index names | mnemo- |
| MNEMO_OPENSEARCH_TIMEOUT | seconds a search may wait on OpenSearch (a collection waking takes 10-30 s) | 25 |
| MNEMO_OPENSEARCH_WRITE_TIMEOUT | seconds memory_add's own index write may wait, then it queues | 3 |
| MNEMO_EMBEDDER | bge (local model), hashing (tests) or titan (Bedrock) | bge |
| MNEMO_TITAN_MODEL_ID | Bedrock model id | amazon.titan-embed-text-v2:0 |
| MNEMO_TITAN_DIMENSIONS | 256, 512 or 1024 | 1024 |
| MNEMO_BLOBS | blob store: local or s3 | local |
| MNEMO_BLOB_BUCKET | S3 bucket (versioning on) | |
| MNEMO_EVENTS | events: local or eventbridge | local |
| MNEMO_EVENT_BUS | EventBridge bus name | default |
| MNEMO_AWS_REGION | region for every AWS client (else AWS_REGION) | |
| MNEMO_AWS_ENDPOINT | one endpoint for every AWS client (a moto server) | |
| MNEMO_SYNC_STALE_AFTER_SECONDS | sync_status is unhealthy when the last sync is older | 86400 |
| MNEMO_BLOCK_BUDGET_TOKENS | the most tokens one agent may keep pinned (blocks and skills) | 100000 |
| MNEMO_EXTRACTOR | build_memory_from_text's model: none, bedrock or openai | openai with a base URL, else none |
| MNEMO_EXTRACTOR_MODEL_ID | Bedrock model id (Converse with tool use) | amazon.nova-lite-v1:0 |
| MNEMO_OPENAI_BASE_URL | an OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1 | |
| MNEMO_OPENAI_MODEL | the model that server should use | |
| MNEMO_OPENAI_API_KEY | its bearer token, if it needs one | |
| MNEMO_EXTRACTOR_MAX_CALLS | model calls one build_memory_from_text may make | 4 |
| MNEMO_EXTRACTOR_CHUNK_CHARS | characters of text per model call | 12000 |
| MNEMO_EXTRACTOR_TIMEOUT_SECONDS | how long one model call may take | 60 |
| MNEMO_REQUEST_DEADLINE_SECONDS | how long one long tool call may run (sync_now, build_memory_from_text) | none |
| MNEMO_EXPERIMENTAL | serve the experimental tools (code outline): 1 or true | off |
| MNEMO_EXTRACTION_STRATEGIES | facts,preferences,summary,lessons,graph,profile; all; none | none |
| MNEMO_EXTRACTION_EVERY_TURNS | run the strategies once this many turns of a session wait | 6 |
| MNEMO_EXTRACTION_IDLE_MINUTES | ... or once a session with waiting turns has been quiet this long | 10 |
| MNEMO_EXTRACTION_JUDGE | one batched model call decides update, same or merge for close candidates: on or off | on |
| MNEMO_EXTRACTION_MAX_CANDIDATES | the most memories one strategy may propose for one batch (more is a failure) | 50 |
| MNEMO_EXTRACTION_CONFIG | JSON per strategy: model, appendToPrompt, metadataKeys, expiresAfterDays, maxTokens | {} |
| MNEMO_EXTRACTION_QUEUE_URL | the SQS FIFO queue extraction notices go to (AWS) | |
| MNEMO_EXTRACTION_WAKE_QUEUE_URL | the SQS queue of delayed idle wake-ups (AWS) | |
| MNEMO_WEBHOOKS | change events' webhooks (local): JSON [{"url", "secret", "kinds"?}] (docs/events.md) | none |
| MNEMO_WEBHOOK_URL, MNEMO_WEBHOOK_SECRET | one webhook, every kind (beside MNEMO_WEBHOOKS) | none |
| MNEMO_CHANGE_EVENT_CONTENT | change events carry what was written (memory text, fact text): on or off | off |
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Webhook(BaseModel):
    """A webhook change events are POSTed to (docs/events.md): an http(s) URL, the secret its signature uses,
    and the kinds it wants (None: all)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    secret: str = Field(min_length=1)
    kinds: tuple[str, ...] | None = None

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("a webhook URL is http:// or https:// with a host")
        return value


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    data_dir: Path = Path(".mnemo")
    records: Literal["sqlite", "dynamodb"] = "sqlite"
    records_table: str = "mnemo-records"
    vector_index: Literal["local", "opensearch", "s3vectors"] = "local"
    #: The vector bucket of the S3 Vectors store (``vector_index`` s3vectors).
    s3vectors_bucket: str | None = None
    opensearch_endpoint: str | None = None
    opensearch_service: Literal["es", "aoss"] = "aoss"
    index_prefix: str = "mnemo-"
    #: A search waits this long (a Serverless collection at 0 OCU wakes in 10-30 s), within API Gateway's
    #: 29 s; then it answers a retryable TIMEOUT. The stream indexer's and drains' writes wait as long.
    opensearch_timeout: float = Field(25.0, gt=0, le=900)
    #: memory_add's own index write waits this long, then queues the memory for the stream indexer.
    opensearch_write_timeout: float = Field(3.0, gt=0, le=900)
    embedder: Literal["bge", "hashing", "titan"] = "bge"
    hashing_dimensions: int = Field(256, ge=16, le=4096)
    titan_model_id: str = "amazon.titan-embed-text-v2:0"
    titan_dimensions: int = 1024
    blobs: Literal["local", "s3"] = "local"
    blob_bucket: str | None = None
    events: Literal["local", "eventbridge"] = "local"
    event_bus: str = "default"
    aws_region: str | None = None
    aws_endpoint: str | None = None

    #: Cosine similarity at which memory_add treats new content as a duplicate.
    dedupe_similarity: float = Field(0.95, ge=0.0, le=1.0)
    #: sync_status reports unhealthy when the last sync is older than this.
    sync_stale_after_seconds: float = Field(86400.0, gt=0)
    #: The most tokens (mnemo.files.tokens) one agent may keep pinned.
    block_budget_tokens: int = Field(100_000, ge=1, le=10_000_000)
    #: build_memory_from_text's model (None: openai when openai_base_url is set, else none).
    extractor: Literal["none", "bedrock", "openai"] | None = None
    extractor_model_id: str = "amazon.nova-lite-v1:0"
    openai_base_url: str | None = None
    openai_model: str = "default"
    openai_api_key: str | None = None
    extractor_max_calls: int = Field(4, ge=1, le=20)
    extractor_chunk_chars: int = Field(12_000, ge=500, le=100_000)
    extractor_timeout_seconds: float = Field(60.0, gt=0, le=900)
    #: How long sync_now and build_memory_from_text may run before they answer (None: no limit). Behind
    #: API Gateway it stays under the integration timeout (29 s): build_memory_from_text refuses a text
    #: whose model calls could not finish by then, sync_now stops between items and says what is left.
    request_deadline_seconds: float | None = Field(None, gt=0, le=900)
    #: Serve the experimental tools (read by mnemo.tools.registry.experimental_enabled, which the front
    #: doors consult before any Services exist).
    experimental: bool = False
    #: The extraction strategies that run over stored turns (none: extraction is off).
    extraction_strategies: tuple[str, ...] = ()
    #: A session's waiting turns are extracted once there are this many ...
    extraction_every_turns: int = Field(6, ge=1, le=100)
    #: ... or once it has been quiet this long.
    extraction_idle_minutes: float = Field(10.0, gt=0, le=15)
    #: Whether close candidates go to one batched model call that chooses update or add (else rules decide).
    extraction_judge: bool = True
    #: The most memories one strategy may propose for one batch; more is refused as a failure.
    extraction_max_candidates: int = Field(50, ge=1, le=500)
    #: Per strategy: ``model`` (a Bedrock model id or the OpenAI-compatible model), ``appendToPrompt``,
    #: ``metadataKeys``, ``expiresAfterDays`` (its memories expire that many days after extraction), ``maxTokens``
    #: (the profile's bound, default 300).
    extraction_config: dict[str, dict[str, Any]] = Field(default_factory=dict)
    extraction_queue_url: str | None = None
    extraction_wake_queue_url: str | None = None
    #: Where the local server POSTs change events (docs/events.md); none: no change is even logged.
    webhooks: tuple[Webhook, ...] = ()
    webhook_url: str | None = None
    webhook_secret: str | None = None
    #: Whether change events carry content (memory text, fact text, a file's preview): off unless opted in.
    change_event_content: bool = False
    #: Roles granted to a local-server caller that sends no X-Mnemo-Roles header.
    default_local_roles: tuple[str, ...] = ("writer",)

    @model_validator(mode="after")
    def _webhook_has_secret(self) -> Settings:
        # Refused when the settings are read (the server does not start), not at every call that writes.
        if self.webhook_url is not None and not self.webhook_secret:
            raise ValueError("MNEMO_WEBHOOK_SECRET is required with MNEMO_WEBHOOK_URL")
        return self

    @field_validator("extraction_config")
    @classmethod
    def _expiry_days(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name, values in value.items():
            days = values.get("expiresAfterDays") if isinstance(values, dict) else None
            # The same bound as a caller's expiresAt (mnemo.memory.models.MAX_EXPIRY_DAYS, docs/lifecycle.md).
            number = isinstance(days, int | float) and not isinstance(days, bool)
            if days is not None and not (number and 0 < days <= 3650):
                raise ValueError(f"{name}.expiresAfterDays must be a number of days above 0 and at most 3650")
            limit = values.get("maxTokens") if isinstance(values, dict) else None
            whole = isinstance(limit, int) and not isinstance(limit, bool)
            if limit is not None and not (whole and 20 <= limit <= 4000):
                raise ValueError(f"{name}.maxTokens must be a whole number of tokens from 20 to 4000")
        return value

    @field_validator("titan_dimensions")
    @classmethod
    def _titan_size(cls, value: int) -> int:
        if value not in (256, 512, 1024):
            raise ValueError("Titan Text Embeddings V2 offers 256, 512 or 1024 dimensions")
        return value

    @field_validator("extraction_strategies")
    @classmethod
    def _strategies(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        names = ("facts", "preferences", "summary", "lessons", "graph", "profile")
        if value in (("none",), ("off",)):
            return ()
        if value == ("all",):
            return names
        unknown = [name for name in value if name not in names]
        if unknown:
            raise ValueError(f"unknown extraction strategy {unknown[0]!r}; choose from {', '.join(names)}")
        return tuple(dict.fromkeys(value))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from ``MNEMO_{FIELD}`` variables (``environ``, else the process's); empty ones are ignored, and
        AWS_REGION or AWS_DEFAULT_REGION stand in for MNEMO_AWS_REGION."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for name in cls.model_fields:
            raw = env.get(f"MNEMO_{name.upper()}")
            if raw is None or raw == "":
                continue
            if name in ("default_local_roles", "extraction_strategies"):
                values[name] = tuple(part.strip() for part in raw.split(",") if part.strip())
            elif name in ("extraction_config", "webhooks"):
                values[name] = json.loads(raw)
            else:
                values[name] = raw
        if "aws_region" not in values and (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")):
            values["aws_region"] = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        return cls.model_validate(values)

    @property
    def extractor_kind(self) -> Literal["none", "bedrock", "openai"]:
        """The extractor to build: the one MNEMO_EXTRACTOR names, else ``openai`` when an OpenAI-compatible URL is set,
        else ``none``."""
        if self.extractor is not None:
            return self.extractor
        return "openai" if self.openai_base_url else "none"

    @property
    def webhook_targets(self) -> tuple[Webhook, ...]:
        """Every webhook: MNEMO_WEBHOOKS, and the one of MNEMO_WEBHOOK_URL with MNEMO_WEBHOOK_SECRET."""
        if self.webhook_url is None:
            return self.webhooks
        if not self.webhook_secret:
            raise ValueError("MNEMO_WEBHOOK_SECRET is required with MNEMO_WEBHOOK_URL")
        return (*self.webhooks, Webhook(url=self.webhook_url, secret=self.webhook_secret))

    @property
    def sqlite_path(self) -> Path:
        """The embedded record store's file: ``mnemo.sqlite3`` in the data directory."""
        return self.data_dir / "mnemo.sqlite3"
