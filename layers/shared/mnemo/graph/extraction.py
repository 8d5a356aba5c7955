"""build_memory_from_text: a model extracts entities and facts, and each fact is added as add_memory_link adds it.

The model answers by calling one tool whose input is ``EXTRACTION_SCHEMA``
(checked against its JSON Schema before anything is written). Calls are bounded: the
text is cut at paragraph ends into at most ``max_calls`` pieces of at most
``chunk_chars`` characters, and a longer text is refused before any call.
Facts are added one by one through ``GraphService.add_link``, so the same
fact twice is stored once and an exclusive fact invalidates the one it replaces.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pydantic import ValidationError

from mnemo.budget import fit_head
from mnemo.context import Layer, RequestContext
from mnemo.errors import InvalidInput, ProviderError, invalid_field
from mnemo.graph.models import (
    MAX_NAME_CHARS,
    MAX_SUMMARY_CHARS,
    AddMemoryLinkInput,
    BuildMemoryFromTextInput,
    BuildMemoryFromTextOutput,
    FactSource,
    Relationship,
)
from mnemo.graph.names import name_key, predicate_key
from mnemo.graph.scopes import writable_scope
from mnemo.graph.service import GraphService
from mnemo.graph.temporal import now, stamp
from mnemo.ports import Extraction, ExtractionTool, Extractor
from mnemo.schema_check import first_problem
from mnemo.visible import hidden_character

logger = logging.getLogger(__name__)

EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "maxItems": 50,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The name as the text uses it."},
                    "type": {"type": "string", "description": "person, organization, project, technology, ..."},
                    "summary": {"type": "string", "description": "One sentence about it, from the text."},
                },
                "required": ["name", "type"],
            },
        },
        "facts": {
            "type": "array",
            "maxItems": 100,
            "items": {
                "type": "object",
                "properties": {
                    "subject": {"type": "string"},
                    "predicate": {"type": "string", "description": "snake_case relation, e.g. works_at, uses"},
                    "object": {"type": "string"},
                    "text": {"type": "string", "description": "The fact as one self-contained sentence."},
                    "validAt": {"type": "string", "description": "ISO 8601 time it became true, if the text says."},
                    "exclusive": {
                        "type": "boolean",
                        "description": "True when the subject can hold this relation with one object at a time "
                        "(lives_in, works_at, uses_database), so the new fact replaces an older one.",
                    },
                },
                "required": ["subject", "predicate", "object", "text"],
            },
        },
    },
    "required": ["entities", "facts"],
}

#: Seconds of the deadline kept for saving the extracted facts after the last model call.
SAVE_RESERVE_SECONDS = 4.0

TOOL = ExtractionTool(
    name="record_knowledge_graph",
    description="Record the entities and the facts between them that the text states.",
    schema=EXTRACTION_SCHEMA,
)

SYSTEM = (
    "You extract a knowledge graph from text for an AI agent's long-term memory. Record the entities the text "
    "names (people, organizations, projects, technologies, places, concepts) and the facts it states between "
    "them as subject-predicate-object with a self-contained sentence. Use the names as written; resolve "
    "pronouns with the context. Only facts the text states: no guesses. Give validAt when the text dates a "
    "fact; resolve relative dates against the reference time. Mark exclusive the relations a subject holds with "
    "one object at a time."
)


def _chunks(text: str, size: int) -> list[str]:
    """Pieces of at most ``size`` characters, cut at paragraph, then line, then word ends where possible."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > size:
        window = rest[: size + 1]  # a boundary right after the last character still counts
        cut = next(
            (at for at in (window.rfind(mark) for mark in ("\n\n", "\n", " ")) if at > size // 2),
            size,
        )
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def _model_date(value: Any) -> str | None:
    """A date a model gave, with "2024" and "2024-03" read as their first day (a bare number would otherwise be
    refused); anything else is passed on as given, so a fact with a date that is not one is skipped."""
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and _YEAR.fullmatch(text):
        return text + "-01-01"
    if isinstance(text, str) and _YEAR_MONTH.fullmatch(text):
        return text + "-01"
    return text or None


_YEAR, _YEAR_MONTH = re.compile(r"\d{4}"), re.compile(r"\d{4}-\d{2}")


class UnconfiguredExtractor:
    """What build_memory_from_text meets when no model is configured: a clear error saying how to set one."""

    name = "none"

    def extract(self, system: str, prompt: str, tool: ExtractionTool) -> dict[str, Any]:
        """Always raise a non-retryable PROVIDER_ERROR naming the settings that configure a model."""
        error = ProviderError(
            "build_memory_from_text needs a language model and none is configured. On AWS set MNEMO_EXTRACTOR=bedrock "
            "and MNEMO_EXTRACTOR_MODEL_ID (the template's ExtractorModelId); locally set MNEMO_OPENAI_BASE_URL "
            "(and MNEMO_OPENAI_MODEL) to any OpenAI-compatible server. add_memory_link needs no model.",
            {"service": "extractor", "configured": False, "settings": ["MNEMO_EXTRACTOR", "MNEMO_OPENAI_BASE_URL"]},
        )
        error.retryable = False  # the same call fails until someone configures a model
        raise error

    def extract_counted(self, system: str, prompt: str, tool: ExtractionTool) -> Extraction:
        """Always raise, as ``extract`` does."""
        return Extraction(self.extract(system, prompt, tool))


class GraphBuilder:
    def __init__(
        self,
        graph: GraphService,
        extractor: Extractor,
        *,
        max_calls: int = 4,
        chunk_chars: int = 12_000,
        call_timeout: float | None = None,
        deadline_seconds: float | None = None,
    ):
        """``call_timeout``: the longest one model call may take; ``deadline_seconds``: how long one build
        may run. With both, a text needing more calls than fit (each counted at its timeout, plus
        ``SAVE_RESERVE_SECONDS`` to save the facts) is refused before any call."""
        self._graph = graph
        self._extractor = extractor
        self._max_calls = max_calls
        self._chunk_chars = chunk_chars
        self._call_timeout = call_timeout
        self._deadline = deadline_seconds

    def build(self, context: RequestContext, request: BuildMemoryFromTextInput) -> BuildMemoryFromTextOutput:
        """build_memory_from_text: the text in pieces, one model call each, then the entities and facts saved (nothing
        saved with ``dryRun``). A text needing more calls than allowed, or than the deadline leaves room for, is refused
        before any call."""
        if not request.dry_run:
            writable_scope(context, request.layer)  # refuse before paying for any model call
        pieces = _chunks(request.content, self._chunk_chars)
        if len(pieces) > self._max_calls:
            raise invalid_field(
                "content",
                f"needs {len(pieces)} model calls of {self._chunk_chars} characters; the limit is {self._max_calls}: "
                "send a shorter text or split it",
                limit=self._max_calls * self._chunk_chars,
            )
        self._check_time(len(pieces))
        reference = stamp(request.reference_time or now())
        extractions = [self._extract(piece, request.previous_messages, reference) for piece in pieces]
        return self._save(context, request, extractions)

    def _check_time(self, calls: int) -> None:
        """Refuse, before paying for any call, a text whose model calls cannot all end within the deadline."""
        if self._deadline is None or self._call_timeout is None:
            return
        fits = max(0, int((self._deadline - SAVE_RESERVE_SECONDS) // self._call_timeout))
        if calls <= fits:
            return
        raise invalid_field(
            "content",
            f"needs {calls} model calls of up to {self._call_timeout:g} s each, and this deployment answers "
            f"within {self._deadline:g} s ({SAVE_RESERVE_SECONDS:g} s kept to save the facts): at most {fits} "
            f"call(s), {fits * self._chunk_chars} characters; send a shorter text or split it",
            modelCalls=calls,
            callTimeoutSeconds=self._call_timeout,
            deadlineSeconds=self._deadline,
            callsThatFit=fits,
            limit=fits * self._chunk_chars,
        )

    def _extract(self, piece: str, previous: str | None, reference: str) -> dict[str, Any]:
        prompt = f"Reference time: {reference}\n"
        if previous:
            prompt += f"\nContext (earlier messages):\n{previous}\n"
        prompt += f"\nText:\n{piece}"
        answer = self._extractor.extract(SYSTEM, prompt, TOOL)
        problem = first_problem(EXTRACTION_SCHEMA, answer)
        if problem is not None:
            raise ProviderError(
                f"The model's extraction does not match the schema at {problem.where}: {problem.message}; retry",
                {"service": "extractor", "model": self._extractor.name, "path": problem.where},
            )
        return answer

    def _save(
        self, context: RequestContext, request: BuildMemoryFromTextInput, extractions: list[dict[str, Any]]
    ) -> BuildMemoryFromTextOutput:
        types: dict[str, str] = {}
        names: dict[str, str] = {}
        summaries: dict[str, str] = {}
        for extraction in extractions:
            for entity in extraction["entities"]:
                if entity["name"].strip():
                    key = name_key(entity["name"])
                    names.setdefault(key, entity["name"].strip())
                    types.setdefault(key, entity["type"])
                    summaries.setdefault(key, (entity.get("summary") or "").strip())
        relationships: list[Relationship] = []
        invalidated: list[str] = []
        source = request.source or FactSource(kind="extraction")
        for extraction in extractions:
            for fact in extraction["facts"]:
                for end in (fact["subject"], fact["object"]):
                    names.setdefault(name_key(end), end.strip())
                relationship = Relationship(
                    **{"from": fact["subject"]}, to=fact["object"], relation=predicate_key(fact["predicate"])
                )
                if not request.dry_run:
                    added = self._add(context, request, fact, types, source)
                    if added is None:
                        continue
                    relationship.fact_id, relationship.created = added.fact_id, added.created
                    invalidated += added.invalidated
                relationships.append(relationship)
        entities = [name for name in names.values() if name]
        if not request.dry_run:
            for key in summaries:
                self._describe(context, request.layer, names[key], types[key], summaries[key])
        verb = "Found" if request.dry_run else "Added"
        output = BuildMemoryFromTextOutput(
            summary=f"{verb} {len(entities)} entities and {len(relationships)} relationships"
            + (" (dry run: nothing saved)" if request.dry_run else " to the knowledge graph"),
            entities=entities,
            relationships=relationships,
            invalidated=invalidated,
            model_calls=len(extractions),
            dry_run=request.dry_run,
        )
        return self._fitted(output, context.response_budget)

    @staticmethod
    def _fitted(output: BuildMemoryFromTextOutput, budget: int | None) -> BuildMemoryFromTextOutput:
        """The answer within the transport's size: everything was saved, so what is cut is only listed less."""
        relationships = fit_head(output.model_copy(update={"entities": []}), output.relationships, budget)
        entities = fit_head(output.model_copy(update={"relationships": relationships}), output.entities, budget)
        if len(relationships) < len(output.relationships) or len(entities) < len(output.entities):
            output.summary += f" (the answer lists {len(relationships)} of them to fit its size limit)"
            output.relationships, output.entities, output.has_more = relationships, entities, True
        return output

    def _describe(self, context: RequestContext, layer: Layer, name: str, kind: str, summary: str) -> None:
        """Store an extracted entity (and its summary when it has none); a name the model got wrong is skipped."""
        if len(name) > MAX_NAME_CHARS:
            logger.warning("skipped an extracted entity whose name is over %d characters", MAX_NAME_CHARS)
            return
        if hidden_character(name) is not None:
            logger.warning("skipped an extracted entity whose name holds an invisible character")
            return
        self._graph.describe(context, layer, name, kind.strip()[:64], summary[:MAX_SUMMARY_CHARS])

    def _add(
        self,
        context: RequestContext,
        request: BuildMemoryFromTextInput,
        fact: dict[str, Any],
        types: dict[str, str],
        source: FactSource,
    ) -> Any:
        try:
            link = AddMemoryLinkInput(
                subject=fact["subject"],
                predicate=fact["predicate"],
                object=fact["object"],
                text=fact["text"] or None,
                subject_type=types.get(name_key(fact["subject"]), "").strip()[:64] or None,
                object_type=types.get(name_key(fact["object"]), "").strip()[:64] or None,
                layer=request.layer,
                valid_at=_model_date(fact.get("validAt")),
                exclusive=bool(fact.get("exclusive")),
                source=source,
            )
        except ValidationError as error:  # one malformed fact from the model does not lose the others
            logger.warning("skipped an extracted fact that is not valid: %s", error.errors(include_url=False)[:1])
            return None
        try:
            return self._graph.add_link(context, link)
        except InvalidInput as error:
            logger.warning("skipped an extracted fact: %s", error.message)
            return None
