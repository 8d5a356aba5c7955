"""Wiring: builds each port's adapter from settings, lazily and once per container.

A handler that never embeds never loads a model (or creates a Bedrock client),
and a Lambda container keeps its clients between invocations.
"""

from __future__ import annotations

from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from mnemo.families import Families
from mnemo.outbox import IndexedFamily, IndexOutbox
from mnemo.ports import BlobStore, Embedder, EventPublisher, ExtractionQueue, Extractor, RecordStore, VectorIndex
from mnemo.settings import Settings

#: What extraction_status says when no strategy runs.
HOW_TO_ENABLE = (
    "set MNEMO_EXTRACTION_STRATEGIES (facts,preferences,summary,lessons,graph,profile or all; on AWS the template's "
    "ExtractionStrategies parameter) and a model: MNEMO_EXTRACTOR=bedrock with MNEMO_EXTRACTOR_MODEL_ID, or "
    "MNEMO_OPENAI_BASE_URL for any OpenAI-compatible server (Ollama, vLLM, llama.cpp)"
)

if TYPE_CHECKING:
    from mnemo.briefing.service import ContextService
    from mnemo.context import RequestContext
    from mnemo.conversations.service import ConversationService
    from mnemo.events.delivery import WebhookDelivery
    from mnemo.files.expansion import Expander
    from mnemo.files.index import BlockIndex
    from mnemo.files.pinning import Pinning
    from mnemo.files.service import FileService
    from mnemo.files.store import FileStore
    from mnemo.graph.extraction import GraphBuilder
    from mnemo.graph.service import GraphService
    from mnemo.knowledge.repository import KnowledgeRepository
    from mnemo.knowledge.service import KnowledgeService
    from mnemo.learning.consolidation import Candidate
    from mnemo.learning.recall import Recall
    from mnemo.learning.service import LearningService
    from mnemo.learning.transcript import Turn
    from mnemo.memory.service import MemoryService
    from mnemo.outline.service import OutlineService
    from mnemo.portability.erasure import Erasure
    from mnemo.sync.service import SyncService
    from mnemo.topics.service import TopicService


@cache
def record_families() -> Families:
    """Every record family, registered: what the change events, erasure, export and import, expiry and the
    index outbox loop over (``mnemo.families``; docs/architecture.md, "Adding a record family"). Each family's
    declaration is a light module of its package, loaded on the first call."""
    from mnemo.conversations.family import CONVERSATION_FAMILY, EXECUTION_FAMILY
    from mnemo.files.family import BLOCKS_FAMILY, PINS_FAMILY, WORKSPACE_FAMILY
    from mnemo.graph.family import FAMILY as GRAPH_FAMILY
    from mnemo.knowledge.family import FAMILY as KNOWLEDGE_FAMILY
    from mnemo.learning.family import FAMILY as LEARNING_FAMILY
    from mnemo.learning.family import QUEUE_FAMILY as LEARNING_QUEUE_FAMILY
    from mnemo.memory.family import FAMILY as MEMORY_FAMILY
    from mnemo.outline.family import FAMILY as OUTLINE_FAMILY
    from mnemo.portability.family import FAMILY as RECEIPT_FAMILY
    from mnemo.sync.family import FAMILY as SYNC_FAMILY
    from mnemo.topics.family import FAMILY as TOPIC_FAMILY

    return Families(
        (
            MEMORY_FAMILY,
            CONVERSATION_FAMILY,
            EXECUTION_FAMILY,
            TOPIC_FAMILY,
            BLOCKS_FAMILY,
            PINS_FAMILY,
            WORKSPACE_FAMILY,
            OUTLINE_FAMILY,
            GRAPH_FAMILY,
            LEARNING_FAMILY,
            LEARNING_QUEUE_FAMILY,
            SYNC_FAMILY,
            KNOWLEDGE_FAMILY,
            RECEIPT_FAMILY,
        )
    )


class Services:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.from_env()

    def _aws(self, service: str) -> Any:
        from mnemo.adapters.aws.clients import aws_client

        return aws_client(service, self.settings.aws_region, self.settings.aws_endpoint)

    @cached_property
    def records(self) -> RecordStore:
        """The record store: DynamoDB when ``records`` is ``dynamodb``, else SQLite under the data directory."""
        if self.settings.records == "dynamodb":
            from mnemo.adapters.aws.dynamodb_records import DynamoDbRecordStore

            return DynamoDbRecordStore(self.settings.records_table, lambda: self._aws("dynamodb"))
        from mnemo.adapters.local.sqlite_records import SqliteRecordStore

        if self.settings.webhook_targets:  # change events go somewhere: log the changes they come from
            return SqliteRecordStore(self.settings.sqlite_path, capture=record_families().captured)
        return SqliteRecordStore(self.settings.sqlite_path)

    @cached_property
    def change_delivery(self) -> WebhookDelivery | None:
        """The local change events' webhook worker; None unless webhooks are set and the records are SQLite's
        (on AWS the records' stream feeds ``mnemo.entry.change_events`` instead)."""
        if self.settings.records != "sqlite" or not self.settings.webhook_targets:
            return None
        from mnemo.adapters.local.change_log import SqliteChangeLog
        from mnemo.adapters.local.webhooks import post
        from mnemo.events.delivery import WebhookDelivery

        return WebhookDelivery(
            SqliteChangeLog(self.settings.sqlite_path),
            post,
            self.settings.webhook_targets,
            families=record_families(),
            include_content=self.settings.change_event_content,
        )

    @cached_property
    def index(self) -> VectorIndex:
        """The vector index: OpenSearch or S3 Vectors when ``vector_index`` names one, else the local index under
        the data directory."""
        if self.settings.vector_index == "opensearch":
            from mnemo.adapters.aws.opensearch.adapter import OpenSearchVectorIndex

            return OpenSearchVectorIndex.from_settings(self.settings)
        if self.settings.vector_index == "s3vectors":
            from mnemo.adapters.aws.s3vectors.adapter import S3VectorsIndex

            return S3VectorsIndex.from_settings(self.settings)
        from mnemo.adapters.local.vector_index import LocalVectorIndex

        return LocalVectorIndex(self.settings.data_dir / "index.sqlite3")

    @cached_property
    def embedder(self) -> Embedder:
        """The embedder: Titan on Bedrock, the hashing embedder (tests), or the local bge-small ONNX model (the
        default)."""
        if self.settings.embedder == "titan":
            from mnemo.adapters.aws.titan import TitanEmbedder

            return TitanEmbedder(
                lambda: self._aws("bedrock-runtime"),
                model_id=self.settings.titan_model_id,
                dimensions=self.settings.titan_dimensions,
            )
        from mnemo.adapters.local.embedders import BgeSmallEmbedder, HashingEmbedder

        if self.settings.embedder == "hashing":
            return HashingEmbedder(self.settings.hashing_dimensions)
        return BgeSmallEmbedder()

    @cached_property
    def blobs(self) -> BlobStore:
        """The blob store: S3 (``blob_bucket`` required) or a directory under the data directory."""
        if self.settings.blobs == "s3":
            from mnemo.adapters.aws.s3_blobs import S3BlobStore

            if not self.settings.blob_bucket:
                raise ValueError("MNEMO_BLOB_BUCKET is required when MNEMO_BLOBS=s3")
            return S3BlobStore(self.settings.blob_bucket, lambda: self._aws("s3"))
        from mnemo.adapters.local.blobs import LocalBlobStore

        return LocalBlobStore(self.settings.data_dir / "blobs")

    @cached_property
    def events(self) -> EventPublisher:
        """The event publisher: EventBridge, or the in-process bus."""
        if self.settings.events == "eventbridge":
            from mnemo.adapters.aws.eventbridge import EventBridgePublisher

            return EventBridgePublisher(self.settings.event_bus, lambda: self._aws("events"))
        from mnemo.adapters.local.events import LocalEventBus

        return LocalEventBus()

    @cached_property
    def extraction_queue(self) -> ExtractionQueue:
        """Where extraction notices go: SQS when ``extraction_queue_url`` is set (the FIFO queue; idle wake-ups go
        to ``extraction_wake_queue_url``), else the in-process queue the embedded server's worker drains."""
        if self.settings.extraction_queue_url:
            from mnemo.adapters.aws.sqs_extraction_queue import SqsExtractionQueue

            return SqsExtractionQueue(
                self.settings.extraction_queue_url, self.settings.extraction_wake_queue_url, lambda: self._aws("sqs")
            )
        from mnemo.adapters.local.extraction_queue import LocalExtractionQueue

        return LocalExtractionQueue()

    @cached_property
    def outbox(self) -> IndexOutbox:
        """The index outbox, knowing every indexed family (memory, conversations and executions, topics, blocks,
        graph)."""
        return IndexOutbox(self.records, self._indexed_families, self.index)

    def _indexed_families(self) -> dict[str, IndexedFamily]:
        families: list[IndexedFamily] = [
            self.memory,
            *self.conversations.families,
            self.topics,
            self.block_index,
            self.graph.index,
        ]
        described = [family for family in record_families() if family.document is not None]
        if described:  # a family no service of its own indexes: the generic indexer embeds what it declares
            from mnemo.family_index import DocumentIndex

            families += [DocumentIndex(family, self.records, self.index, self.embedder) for family in described]
        return {family.family: family for family in families}

    @property
    def families(self) -> Families:
        """Every registered record family (``record_families``)."""
        return record_families()

    @cached_property
    def erasure(self) -> Erasure:
        """Erasing a user (erase_user, ``mnemo erase-user``), over every registered record family."""
        from mnemo.portability.erasure import Erasure

        return Erasure(self.records, self.index, self.blobs, families=record_families())

    @cached_property
    def memory(self) -> MemoryService:
        """The memory tools' service."""
        # Imported here, as every other family's service is: a function of another family that never reads
        # memories does not load the memory package at its cold start.
        from mnemo.memory.service import MemoryService

        return MemoryService(
            self.records, self.index, self.embedder, self.outbox, dedupe_similarity=self.settings.dedupe_similarity
        )

    @cached_property
    def repository(self) -> KnowledgeRepository:
        """The knowledge repository: the markdown files and their versions, in the blob store."""
        from mnemo.knowledge.repository import KnowledgeRepository

        return KnowledgeRepository(self.blobs)

    @cached_property
    def knowledge(self) -> KnowledgeService:
        """The knowledge tools' service (query, show, check)."""
        from mnemo.knowledge.service import KnowledgeService

        return KnowledgeService(self.records, self.index, self.embedder, self.repository)

    @cached_property
    def sync(self) -> SyncService:
        """The sync service: knowledge mirrored into memory as pointers."""
        from mnemo.sync.service import SyncService

        return SyncService(
            self.records,
            self.index,
            self.embedder,
            self.repository,
            lambda: self.memory,
            stale_after_seconds=self.settings.sync_stale_after_seconds,
        )

    @cached_property
    def conversations(self) -> ConversationService:
        """The conversation and execution memory service."""
        from mnemo.conversations.service import ConversationService

        return ConversationService(
            self.records,
            self.index,
            self.embedder,
            self.outbox,
            observer=lambda: self.learning if self._learns else None,
        )

    @property
    def _learns(self) -> bool:
        """Whether any extraction strategy is on and a model is configured."""
        # A function that only stores turns has no model on AWS: the queue's worker (the extraction function)
        # has it, so a queue URL says extraction is on as much as a model does.
        return bool(self.settings.extraction_strategies) and (
            self.settings.extractor_kind != "none" or bool(self.settings.extraction_queue_url)
        )

    @cached_property
    def learning(self) -> LearningService:
        """Memory that learns: add_messages, the extraction strategies and their workers (mnemo.learning)."""
        from mnemo.learning.consolidation import Consolidator
        from mnemo.learning.pipeline import LearningConfig, Pipeline, StrategyConfig

        settings = self.settings
        config = LearningConfig(
            strategies=settings.extraction_strategies if self._learns else (),
            every_turns=settings.extraction_every_turns,
            idle_minutes=settings.extraction_idle_minutes,
            judge=settings.extraction_judge,
            max_candidates=settings.extraction_max_candidates,
            per_strategy={
                name: StrategyConfig(
                    model=values.get("model"),
                    append_to_prompt=values.get("appendToPrompt"),
                    metadata_keys=tuple(values.get("metadataKeys") or ()),
                    expires_after_days=values.get("expiresAfterDays"),
                    max_tokens=values.get("maxTokens"),
                )
                for name, values in settings.extraction_config.items()
            },
        )
        pipeline = Pipeline(
            self.records,
            Consolidator(self.memory.extracted, same_similarity=settings.dedupe_similarity),
            self.extractor_for,
            self._graph_run,
            config,
        )
        from mnemo.learning.service import LearningService

        return LearningService(
            self.records,
            self.conversations,
            pipeline,
            lambda: self.extraction_queue,
            config,
            how_to_enable=HOW_TO_ENABLE,
            models=lambda model: self.extractor_for(model).name,
            deadline_seconds=settings.request_deadline_seconds,
        )

    @cached_property
    def recall(self) -> Recall:
        """memory_search with includeTurns (memories and turns fused) and includeSources."""
        from mnemo.learning.recall import Recall

        return Recall(self.records, self.index, self.embedder, self.memory)

    @cached_property
    def briefing(self) -> ContextService:
        """memory_context: profile, summary, memories, turns and pinned blocks packed into a token budget."""
        from mnemo.briefing.service import ContextService

        return ContextService(self.recall, self.memory, self.memory.extracted, self.pinning, self.records)

    def extractor_for(self, model: str | None) -> Extractor:
        """The extractor of one strategy: the configured one, or the same provider with another model."""
        if not model:
            return self.extractor
        if model not in self._extractors:
            kind = self.settings.extractor_kind
            if kind == "bedrock":
                from mnemo.adapters.aws.bedrock_extractor import BedrockExtractor

                self._extractors[model] = BedrockExtractor(self._bedrock_for_extraction, model)
            elif kind == "openai" and self.settings.openai_base_url:
                from mnemo.adapters.local.openai_extractor import OpenAICompatibleExtractor

                self._extractors[model] = OpenAICompatibleExtractor(
                    self.settings.openai_base_url,
                    model,
                    self.settings.openai_api_key,
                    timeout=self.settings.extractor_timeout_seconds,
                )
            else:
                return self.extractor
        return self._extractors[model]

    @cached_property
    def _extractors(self) -> dict[str, Extractor]:
        return {}

    def _graph_run(self, extractor: Extractor, context: RequestContext, turns: list[Turn]) -> list[Candidate]:
        """The graph strategy: build_memory_from_text over the turns' transcript, into the user's graph."""
        from mnemo.graph.extraction import GraphBuilder
        from mnemo.learning.graph_strategy import graph_candidates

        builder = GraphBuilder(
            self.graph,
            extractor,
            max_calls=self.settings.extractor_max_calls,
            chunk_chars=self.settings.extractor_chunk_chars,
        )
        limit = self.settings.extractor_max_calls * self.settings.extractor_chunk_chars
        return graph_candidates(builder, context, turns, limit)

    @cached_property
    def topics(self) -> TopicService:
        """The topic memory service."""
        from mnemo.topics.service import TopicService

        return TopicService(self.records, self.index, self.embedder, self.outbox)

    @cached_property
    def file_store(self) -> FileStore:
        """The records and blobs behind blocks, skills and the workspace."""
        from mnemo.files.store import FileStore

        return FileStore(self.records, lambda: self.blobs)

    @cached_property
    def block_index(self) -> BlockIndex:
        """The vector index family of blocks and skills."""
        from mnemo.files.index import BlockIndex

        return BlockIndex(self.records, self.file_store, self.index, self.embedder)

    @cached_property
    def pinning(self) -> Pinning:
        """Pinned blocks, held to ``block_budget_tokens``."""
        from mnemo.files.pinning import Pinning

        return Pinning(self.records, self.file_store, self.settings.block_budget_tokens)

    @cached_property
    def files(self) -> FileService:
        """The file tools' service (read, write, edit, delete, list, search over every path scheme)."""
        from mnemo.files.service import FileService

        return FileService(
            self.records,
            self.file_store,
            self.block_index,
            self.pinning,
            self.outbox,
            lambda: self.topics,
            lambda: self.knowledge,
        )

    @cached_property
    def expander(self) -> Expander:
        """expand_prompt: ``@path`` and ``@@name`` markers replaced by what they name."""
        from mnemo.files.expansion import Expander

        return Expander(self.files)

    @cached_property
    def outline(self) -> OutlineService:
        """The code outline service (experimental)."""
        from mnemo.outline.service import OutlineService

        return OutlineService(self.records, self.file_store)

    @cached_property
    def graph(self) -> GraphService:
        """The memory graph service."""
        from mnemo.graph.service import GraphService

        return GraphService(self.records, self.index, self.embedder, self.outbox)

    @cached_property
    def extractor(self) -> Extractor:
        """The model build_memory_from_text calls: Bedrock, an OpenAI-compatible server, or one that refuses every call
        with a message saying how to configure a model."""
        kind = self.settings.extractor_kind
        if kind == "bedrock":
            from mnemo.adapters.aws.bedrock_extractor import BedrockExtractor

            return BedrockExtractor(self._bedrock_for_extraction, self.settings.extractor_model_id)
        if kind == "openai" and self.settings.openai_base_url:
            from mnemo.adapters.local.openai_extractor import OpenAICompatibleExtractor

            return OpenAICompatibleExtractor(
                self.settings.openai_base_url,
                self.settings.openai_model,
                self.settings.openai_api_key,
                timeout=self.settings.extractor_timeout_seconds,
            )
        from mnemo.graph.extraction import UnconfiguredExtractor

        return UnconfiguredExtractor()

    def _bedrock_for_extraction(self) -> Any:
        # A model call runs far longer than an embedding and is billed each time it is sent: its own client,
        # with the extraction timeout and no retry of a timed-out generation (clients.model_client).
        from mnemo.adapters.aws.clients import model_client

        return model_client(
            self.settings.aws_region, self.settings.aws_endpoint, self.settings.extractor_timeout_seconds
        )

    @cached_property
    def graph_builder(self) -> GraphBuilder:
        """build_memory_from_text: the extractor's facts saved to the graph, within the settings' call, size and time
        limits."""
        from mnemo.graph.extraction import GraphBuilder

        return GraphBuilder(
            self.graph,
            self.extractor,
            max_calls=self.settings.extractor_max_calls,
            chunk_chars=self.settings.extractor_chunk_chars,
            call_timeout=self.settings.extractor_timeout_seconds,
            deadline_seconds=self.settings.request_deadline_seconds,
        )


_services: Services | None = None


def get_services() -> Services:
    """The process-wide services, built on first use from the environment."""
    global _services
    if _services is None:
        _services = Services()
    return _services


def set_services(services: Services | None) -> None:
    """Replace the process-wide services (None: build them again from the environment on next use); for tests and
    embedders."""
    global _services
    _services = services
