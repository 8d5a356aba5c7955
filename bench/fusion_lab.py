"""Fusion of conversation turns and extracted facts on LoCoMo dev: ranks once, tries fusion variants in seconds.

    python bench/fusion_lab.py [--limit-conversations N] [--smoke]

Builds one embedded stack (bge, bench/common.py fresh_services) with each LoCoMo conversation its own user:

- every turn is a conversation record of a single message (``meta_data.mnemo_message`` = role and speaker,
  as add_messages stores it), indexed by ``mnemo.conversations.indexing.Indexer`` (the product path: the
  previous turn is looked up in the store); a second namespace holds the same turns indexed as a
  conversation pair was before (``"Speaker: text\\n"``, no date, no context keywords), for comparison;
- every LoCoMo observation is a fact memory (memory_add, user layer, tag ``fact``, happening at its
  session's date) citing the observation's evidence ids.

Each question of categories 1-4 is ranked once per source (``hybrid_rank`` over the user's scope: the turns
of the conversations namespace, the facts of the memory namespace); each fusion variant then only reorders
those cached candidates, and is scored as the extraction bench scores memory_search: a turn counts for
itself, a fact for the turns it cites. R@1, R@5, R@10 and MRR@10 per variant; results to
bench/results/fusion-lab.json. Embeddings are cached in $MNEMO_LAB_CACHE (bench/retrieval_lab.py).

--smoke: the same on bench/fixtures/locomo-smoke.json (which has observations too).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay_model import evidence_ids
from retrieval_lab import CACHE, EmbeddingCache, context_texts

from common import fresh_services, parse_args, table, write_results
from locomo import CATEGORIES, DEFAULT_PATH, SMOKE_PATH, Conversation, load
from mnemo.context import RequestContext
from mnemo.conversations.indexing import Indexer, index_doc, previous_turn, turn_doc, turn_embedding_text
from mnemo.conversations.store import CONVERSATIONS, EntryStore, doc_id, key_time
from mnemo.memory.indexing import NAMESPACE as MEMORY
from mnemo.memory.indexing import index_doc as memory_index_doc
from mnemo.ports import Filter, IndexDoc
from mnemo.retrieval import fusion
from mnemo.retrieval.fusion import FactHit, Fused, TurnHit
from mnemo.retrieval.ranker import CANDIDATES, hybrid_rank
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

#: The namespace of the turns indexed as a pair was before this work (text only, no context keywords).
PLAIN = "conversations_plain"
#: The turns indexed with the facts that cite them appended (key expansion, for comparison).
EXPANDED = "conversations_expanded"
#: The facts each embedded alone (memory_add embeds a dated memory with its predecessor), for comparison.
FLAT = "facts_flat"
KEYS = ["R@1", "R@5", "R@10", "MRR@10"]


class CachedEmbedder:
    """The bge embedder behind the lab's on-disk cache (same vectors, same name, so the same calibration)."""

    def __init__(self, cache: EmbeddingCache, name: str) -> None:
        self._cache = cache
        self.name = name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The vectors of ``texts``, from the cache or embedded once."""
        return [list(map(float, row)) for row in self._cache.embed(list(texts))]


@dataclass
class Ranked:
    """One question's cached candidates, per way of indexing and ranking (see ``_build``)."""

    category: str
    evidence: list[str]
    turn_rankings: dict[str, list[TurnHit]]
    fact_rankings: dict[str, list[FactHit]]
    text: str

    @property
    def turns(self) -> list[TurnHit]:
        """The product's turn ranking: turn indexing, ranked with the context signals."""
        return self.turn_rankings["turn+context"]

    @property
    def facts(self) -> list[FactHit]:
        """The product's fact ranking: memory_add's indexing, memory search's ranking (context)."""
        return self.fact_rankings["memory+context"]


def observations(path: Path) -> dict[str, list[tuple[str, list[str], str]]]:
    """Per sample id: (observation text, evidence ids, session date) of each observation."""
    out: dict[str, list[tuple[str, list[str], str]]] = {}
    for sample in json.loads(path.read_text()):
        conv, found = sample["conversation"], []
        for key, per_speaker in sorted(sample.get("observation", {}).items(), key=lambda kv: int(kv[0].split("_")[1])):
            session = key.removesuffix("_observation")
            when = datetime.strptime(conv[f"{session}_date_time"].strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
            for items in per_speaker.values():
                for text, evidence in items:
                    found.append((text, evidence_ids(evidence), when.isoformat()))
        out[sample["sample_id"]] = found
    return out


def store_turns(services: Services, conversation: Conversation, scope: str) -> None:
    """The turns as single-message conversation records, indexed by the product Indexer and the plain way."""
    store = EntryStore(services.records, CONVERSATIONS)
    indexer = Indexer(services.index, services.embedder)
    family = services.conversations.families[0]
    records: list[dict[str, Any]] = []
    for position, turn in enumerate(conversation.turns):
        speaker, _, text = turn.content.partition(": ")
        data = {
            "message_id": turn.dia_id,
            "scope": scope,
            "timestamp": key_time(turn.occurred_at),
            "user_input": text,
            "agent_response": "",
            "meta_data": {"mnemo_message": {"role": "user", "name": speaker}},
            "explanation": "",
            # Turns of one session share a time: the order they were stored in breaks the tie.
            "stored_at": f"{position:08d}",
        }
        marker = services.outbox.marker(family.family, family.reference(scope, turn.dia_id))
        store.create(scope, data, {"message_id": turn.dia_id, "timestamp": data["timestamp"]}, marker)
        records.append(data)
    for data in records:
        indexer.index(store, scope, data)
    texts = [f"{turn.content}\n" for turn in conversation.turns]
    vectors = services.embedder.embed(texts)
    docs: list[IndexDoc] = [
        index_doc(doc_id(scope, data["message_id"]), scope, data, text, vector)
        for data, text, vector in zip(records, texts, vectors, strict=True)
    ]
    services.index.upsert(PLAIN, docs)


def store_facts(
    services: Services, context: RequestContext, facts: list[tuple[str, list[str], str]]
) -> dict[str, tuple[str, ...]]:
    """Each observation as a fact memory; memory id -> the turns it cites."""
    add = get_tool("memory_add")
    sources: dict[str, tuple[str, ...]] = {}
    for text, ids, when in facts:
        out = add.invoke(
            services,
            context,
            {"content": text, "tags": ["fact"], "occurredAt": when, "metadata": {"source": "import"}},
        )
        sources[out["memoryId"]] = tuple(dict.fromkeys([*sources.get(out["memoryId"], ()), *ids]))
    return sources


def rank_turns(
    services: Services, namespace: str, query: str, scope: str, *, context: bool, k: int = CANDIDATES
) -> list[TurnHit]:
    """The turn candidates of ``namespace`` for ``query``, best first (``k`` hits from each of k-NN and BM25)."""
    flt: Filter = {"scope": [scope]}
    ranking = hybrid_rank(services.index, services.embedder, namespace, query, flt, k=k, context=context)
    return [TurnHit((c.hit.keywords.get("message_id") or [""])[0], c.score) for c in ranking.candidates]


def rank_facts(
    services: Services, namespace: str, query: str, scope: str, sources: dict[str, tuple[str, ...]], *, context: bool
) -> list[FactHit]:
    """The fact candidates of ``namespace`` for ``query``, best first."""
    ranking = hybrid_rank(services.index, services.embedder, namespace, query, {"scope": [scope]}, context=context)
    return [FactHit(c.id, c.score, sources.get(c.id, ())) for c in ranking.candidates]


def store_flat_facts(
    services: Services, scope: str, facts: list[tuple[str, list[str], str]]
) -> dict[str, tuple[str, ...]]:
    """The facts in FLAT: each embedded alone (no previous memory), with its day and subject keywords."""
    vectors = services.embedder.embed([text for text, _, _ in facts])
    docs: list[IndexDoc] = []
    sources: dict[str, tuple[str, ...]] = {}
    for position, ((text, ids, when), vector) in enumerate(zip(facts, vectors, strict=True)):
        data: dict[str, Any] = {
            "memoryId": f"{scope}-fact-{position}",
            "scope": scope,
            "layer": "user",
            "tags": ["fact"],
            "metadata": {},
            "contentHash": str(position),
            "content": text,
            "occurredAt": when,
        }
        docs.append(memory_index_doc(data, vector))
        sources[f"{scope}-fact-{position}"] = tuple(ids)
    services.index.upsert(FLAT, docs)
    return sources


def store_expanded_turns(
    services: Services, conversation: Conversation, scope: str, facts: list[tuple[str, list[str], str]]
) -> None:
    """The turns in EXPANDED: as the turn indexing does, each text followed by the facts that cite it."""
    store = EntryStore(services.records, CONVERSATIONS)
    citing: dict[str, list[str]] = defaultdict(list)
    for text, ids, _ in facts:
        for dia_id in ids:
            citing[dia_id].append(text)
    texts, docs = [], []
    for turn in conversation.turns:
        data = store.get(scope, turn.dia_id)
        assert data is not None
        previous = previous_turn(store, scope, data)
        extra = "\n".join(citing.get(turn.dia_id, []))
        texts.append(turn_embedding_text(data, previous) + (f"\n{extra}" if extra else ""))
        doc = turn_doc(doc_id(scope, turn.dia_id), scope, data, [], previous)
        docs.append((doc, extra))
    vectors = services.embedder.embed(texts)
    services.index.upsert(
        EXPANDED,
        [
            IndexDoc(doc.id, vector, f"{doc.text} {extra}" if extra else doc.text, doc.keywords)
            for (doc, extra), vector in zip(docs, vectors, strict=True)
        ],
    )


def build(limit: int | None, rebuild: bool) -> list[Ranked]:
    """Store everything and rank every question once; the ranked cases are kept in the lab cache (pickle)
    unless ``rebuild`` or in smoke mode."""
    saved = CACHE / f"fusion-cases-{limit or 'all'}.pickle"
    if saved.is_file() and not rebuild and not _is_smoke():
        cases: list[Ranked] = pickle.loads(saved.read_bytes())
        return cases
    cases = _build(limit)
    if not _is_smoke():
        saved.write_bytes(pickle.dumps(cases))
    return cases


def _build(limit: int | None) -> list[Ranked]:
    services = fresh_services("bge")
    from mnemo.adapters.local.embedders import BgeSmallEmbedder

    services.__dict__["embedder"] = CachedEmbedder(EmbeddingCache(), BgeSmallEmbedder.name)
    conversations = load()[:limit]
    facts_of = observations(SMOKE_PATH if _is_smoke() else DEFAULT_PATH)
    cases: list[Ranked] = []
    for conversation in conversations:
        started = time.perf_counter()
        context = RequestContext(tenant="bench", user=conversation.sample_id)
        scope = context.scope_key("user")
        # Warm the cache in batches: the texts the Indexer and memory_add will embed one at a time.
        facts = facts_of.get(conversation.sample_id, [])
        chained = [
            f"{text}\n{facts[i - 1][0]}"
            for i, (text, _, when) in enumerate(facts)
            if i and facts[i - 1][2][:10] == when[:10]
        ]
        services.embedder.embed([*context_texts(conversation, "prev"), *(f[0] for f in facts), *chained])
        store_turns(services, conversation, scope)
        sources = store_facts(services, context, facts)
        flat_sources = store_flat_facts(services, scope, facts)
        store_expanded_turns(services, conversation, scope, facts)
        services.embedder.embed([q.text for q in conversation.questions])  # warm the cache in one batch
        for q in conversation.questions:
            turn_rankings = {
                "turn+context": rank_turns(services, CONVERSATIONS.namespace, q.text, scope, context=True),
                "turn+context k=50": rank_turns(services, CONVERSATIONS.namespace, q.text, scope, context=True, k=50),
                "turn": rank_turns(services, CONVERSATIONS.namespace, q.text, scope, context=False),
                "pair": rank_turns(services, PLAIN, q.text, scope, context=False),
                "expanded+context": rank_turns(services, EXPANDED, q.text, scope, context=True),
            }
            fact_rankings = {
                "memory+context": rank_facts(services, MEMORY, q.text, scope, sources, context=True),
                "memory": rank_facts(services, MEMORY, q.text, scope, sources, context=False),
                "flat+context": rank_facts(services, FLAT, q.text, scope, flat_sources, context=True),
                "flat": rank_facts(services, FLAT, q.text, scope, flat_sources, context=False),
            }
            cases.append(Ranked(CATEGORIES[q.category], q.evidence, turn_rankings, fact_rankings, q.text))
        print(
            f"{conversation.sample_id}: {len(conversation.turns)} turns, {len(sources)} facts, "
            f"{len(conversation.questions)} questions in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    return cases


def _is_smoke() -> bool:
    from common import smoke

    return smoke()


def metrics(items: Sequence[Fused], evidence: list[str]) -> dict[str, float]:
    """R@k counting a turn for itself and a fact for the turns it cites; MRR@10 of the first item naming one."""
    wanted = set(evidence)

    def recall(k: int) -> float:
        found = set().union(*(set(item.sources) for item in items[:k])) if items[:k] else set()
        return len(found & wanted) / len(wanted)

    first = next((rank for rank, item in enumerate(items[:10], 1) if set(item.sources) & wanted), None)
    return {"R@1": recall(1), "R@5": recall(5), "R@10": recall(10), "MRR@10": 1.0 / first if first else 0.0}


def evaluate(cases: list[Ranked], ranker: Callable[[Ranked], Sequence[Fused]]) -> dict[str, dict[str, float]]:
    """Mean metrics overall and per category, as percentages."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for case in cases:
        m = metrics(ranker(case), case.evidence)
        groups["overall"].append(m)
        groups[case.category].append(m)
    return {name: {k: 100 * sum(m[k] for m in ms) / len(ms) for k in KEYS} for name, ms in groups.items()}


def turns_only(hits: Callable[[Ranked], list[TurnHit]]) -> Callable[[Ranked], Sequence[Fused]]:
    """The turns alone, as ranked."""
    return lambda case: fusion.fuse(hits(case), [], limit=10)


def facts_only(case: Ranked) -> Sequence[Fused]:
    """The facts alone, as ranked."""
    return [Fused(f.id, "fact", f.score, f.sources) for f in case.facts[:10]]


def interleaved(case: Ranked) -> Sequence[Fused]:
    """Turns and facts competing on their own scores."""
    items = [Fused(t.id, "turn", t.score, (t.id,)) for t in case.turns] + [
        Fused(f.id, "fact", f.score, f.sources) for f in case.facts
    ]
    items.sort(key=lambda item: -item.score)
    return items[:10]


def vote(weight: float, mode: str, top: int = 100, turn_only: bool = True) -> Callable[[Ranked], Sequence[Fused]]:
    """Each turn's score plus ``weight`` times the max (or sum) of the scores of the facts citing it."""

    def ranker(case: Ranked) -> Sequence[Fused]:
        base = {t.id: t.score for t in case.turns}
        lift: dict[str, float] = defaultdict(float)
        for f in case.facts[:top]:
            for s in f.sources:
                lift[s] = max(lift[s], f.score) if mode == "max" else lift[s] + f.score
        ids = set(base) | set(lift)
        items = [Fused(i, "turn", base.get(i, 0.0) + weight * lift.get(i, 0.0), (i,)) for i in ids]
        items.sort(key=lambda item: (-item.score, item.id))
        return items[:10]

    return ranker


def rrf(k: float, fact_weight: float, top: int = 100) -> Callable[[Ranked], Sequence[Fused]]:
    """Reciprocal rank fusion of the turn ranking and the facts' ranking projected onto the turns they cite."""

    def ranker(case: Ranked) -> Sequence[Fused]:
        score: dict[str, float] = defaultdict(float)
        for rank, t in enumerate(case.turns[:top], 1):
            score[t.id] += 1.0 / (k + rank)
        best: dict[str, int] = {}
        for rank, f in enumerate(case.facts[:top], 1):
            for s in f.sources:
                best.setdefault(s, rank)
        for s, rank in best.items():
            score[s] += fact_weight / (k + rank)
        items = [Fused(i, "turn", v, (i,)) for i, v in score.items()]
        items.sort(key=lambda item: (-item.score, item.id))
        return items[:10]

    return ranker


def product(**options: Any) -> Callable[[Ranked], Sequence[Fused]]:
    """The module's fuse with these options."""
    return lambda case: fusion.fuse(case.turns, case.facts, limit=10, **options)


def variants() -> dict[str, Callable[[Ranked], Sequence[Fused]]]:
    """Every variant tried, by name."""
    found: dict[str, Callable[[Ranked], Sequence[Fused]]] = {
        "turns only, pair indexing (before)": turns_only(lambda c: c.turn_rankings["pair"]),
        "turns only, turn indexing, no context": turns_only(lambda c: c.turn_rankings["turn"]),
        "turns only, turn indexing + context": turns_only(lambda c: c.turns),
        "turns only, turn indexing + context, 50 candidates": turns_only(
            lambda c: c.turn_rankings["turn+context k=50"]
        ),
        "turns only, key expansion + context": turns_only(lambda c: c.turn_rankings["expanded+context"]),
        "facts only": facts_only,
        "interleaved by score": interleaved,
    }
    for weight in (0.25, 0.5, 1.0):
        for mode in ("max", "sum"):
            found[f"vote {mode} w={weight}"] = vote(weight, mode)
    for k in (10.0, 60.0):
        for w in (0.5, 1.0):
            found[f"rrf k={k:g} facts x{w}"] = rrf(k, w)
    found["fusion.fuse (module)"] = product()
    found["fusion.fuse, facts only vote"] = product(show_facts=False)
    for k in (3.0, 5.0, 10.0):
        for weight in (0.15, 0.25, 0.4):
            found[f"fusion.fuse k={k:g} facts x{weight}"] = product(k=k, fact_weight=weight)
    found["fusion.fuse, turns ranked from 50 candidates"] = lambda c: fusion.fuse(
        c.turn_rankings["turn+context k=50"], c.facts, limit=10
    )
    found["fusion.fuse on key-expanded turns"] = lambda c: fusion.fuse(
        c.turn_rankings["expanded+context"], c.facts, limit=10
    )
    return found


def main() -> None:
    """Build, rank, try the variants, print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--only", default=None, help="only the variants whose name contains this")
    parser.add_argument("--rebuild", action="store_true", help="store and rank again instead of the cached cases")
    args = parse_args(parser, {})
    cases = build(args.limit_conversations, args.rebuild)
    results = {}
    rows = []
    for name, ranker in variants().items():
        if args.only and args.only not in name:
            continue
        result = evaluate(cases, ranker)
        results[name] = result
        per = [result.get(c, {}).get("R@10", 0.0) for c in CATEGORIES.values()]
        rows.append([name, *[result["overall"][k] for k in KEYS], *per])
    print(table(["variant", *KEYS, *[f"R@10 {c}" for c in CATEGORIES.values()]], rows))
    path = write_results("fusion-lab", {"questions": len(cases), "variants": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
