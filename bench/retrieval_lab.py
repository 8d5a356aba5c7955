"""Fast ranking experiments on LoCoMo dev, with the bge embeddings of turns and questions cached on disk.

    python bench/retrieval_lab.py [--half a|b|all] [--smoke]

Runs the shared ranker's arithmetic (k-NN top 100 and BM25 top 100 of one
conversation, merged, blended, with the context signals of docs/scoring.md)
over cached vectors, so that a ranking variant takes seconds, not the minutes
of embedding that bench/retrieval.py spends; prints the ablation rows of
docs/benchmarks.md and a learned fusion fitted on one half of the conversations
and scored on the other. The figures of record come from bench/retrieval.py,
through the public tools; this is for choosing what to put there. Cache:
$MNEMO_LAB_CACHE (default /tmp/mnemo-lab). Writes both tables to bench/results/retrieval-lab.json.

--smoke: the same on bench/fixtures/locomo-smoke.json (two short conversations written by hand, see
bench/locomo.py), embedded by the model into a fresh temporary cache; results to a temporary folder
(bench/common.py).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sqlite3
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parse_args, smoke, table, write_results
from locomo import CATEGORIES, Conversation, load
from mnemo.adapters.local.lexical import Bm25
from mnemo.memory import indexing
from mnemo.memory.records import iso
from mnemo.retrieval.ranker import _WORD, query_names, subject_of

CACHE = Path(os.environ.get("MNEMO_LAB_CACHE", "/tmp/mnemo-lab"))


class EmbeddingCache:
    """text -> bge vector, in SQLite; misses are embedded in one batch."""

    def __init__(self, path: Path | None = None) -> None:
        """``path``: by default $MNEMO_LAB_CACHE's, or in smoke mode one of a fresh temporary folder (so that
        a smoke run embeds for real)."""
        if path is None:
            path = Path(tempfile.mkdtemp(prefix="mnemo-lab-smoke-")) if smoke() else CACHE
            path = path / "bge.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS v (h TEXT PRIMARY KEY, vec BLOB)")
        self._embedder: Any = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for h, blob in self._db.execute(f"SELECT h, vec FROM v WHERE h IN ({marks})", chunk):
                found[h] = np.frombuffer(blob, dtype=np.float32)
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in found}.items())
        if missing:
            if self._embedder is None:
                from mnemo.adapters.local.embedders import BgeSmallEmbedder

                self._embedder = BgeSmallEmbedder()
            print(f"embedding {len(missing)} texts", file=sys.stderr, flush=True)
            for start in range(0, len(missing), 256):
                part = missing[start : start + 256]
                vectors = self._embedder.embed([t for _, t in part])
                rows = [(h, np.asarray(v, dtype=np.float32).tobytes()) for (h, _), v in zip(part, vectors, strict=True)]
                self._db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
                self._db.commit()
                for h, blob in rows:
                    found[h] = np.frombuffer(blob, dtype=np.float32)
        return np.stack([found[k] for k in keys])


BGE_PREFIX = "Represent this sentence for searching relevant passages: "


@dataclass
class Case:
    conversation: int
    category: str
    evidence: list[int]
    #: cosine of the question with every turn (plain question), and with the instruction prefix
    cosine: np.ndarray
    cosine_prefixed: np.ndarray
    lexical: np.ndarray
    query_vec: np.ndarray
    query_vec_prefixed: np.ndarray
    text: str


@dataclass
class Corpus:
    conversations: list[Conversation]
    cases: list[Case]
    #: per conversation: turn vectors (plain), turn session index, turn position, lexical index
    turn_vecs: list[np.ndarray]
    sessions: list[np.ndarray]
    extra_vecs: dict[str, list[np.ndarray]] = field(default_factory=dict)


def _session_of(dia_id: str) -> int:
    return int(dia_id.split(":")[0][1:])


def context_texts(conversation: Conversation, mode: str) -> list[str]:
    """What would be embedded per turn when memory_add folds in the previous memory of the same day."""
    texts = []
    turns = conversation.turns
    for i, turn in enumerate(turns):
        prev = turns[i - 1] if i > 0 and turns[i - 1].occurred_at.date() == turn.occurred_at.date() else None
        same_day = i + 1 < len(turns) and turns[i + 1].occurred_at.date() == turn.occurred_at.date()
        nxt = turns[i + 1] if same_day else None
        if mode == "prev" and prev is not None:  # as memory_add embeds it (mnemo.memory.indexing.embedding_text)
            texts.append(f"{turn.content}\n{prev.content}")
        elif mode == "prev-first" and prev is not None:
            texts.append(f"{prev.content}\n{turn.content}")
        elif mode == "prevnext":
            texts.append("\n".join(t.content for t in (prev, turn, nxt) if t is not None))
        else:
            texts.append(turn.content)
    return texts


def build(lexical_text: Callable[[str, str], str] = indexing.lexical_text, contexts: Sequence[str] = ()) -> Corpus:
    cache = EmbeddingCache()
    conversations = load()
    cases: list[Case] = []
    turn_vecs, sessions = [], []
    extra: dict[str, list[np.ndarray]] = defaultdict(list)
    # One BM25 over every conversation, as the memory namespace of bench/retrieval.py holds them all
    # (its statistics are the namespace's); each question is scored within its own conversation.
    bm25 = Bm25()
    offsets, rows = [], 0
    for conversation in conversations:
        offsets.append(rows)
        for turn in conversation.turns:
            bm25.add(rows, lexical_text(turn.content, iso(turn.occurred_at)))
            rows += 1
    for ci, conversation in enumerate(conversations):
        vecs = cache.embed([t.content for t in conversation.turns])
        for mode in contexts:
            extra[mode].append(cache.embed(context_texts(conversation, mode)))
        questions = [q.text for q in conversation.questions]
        qv = cache.embed(questions)
        qvp = cache.embed([BGE_PREFIX + q for q in questions])
        offset = offsets[ci]
        allowed = set(range(offset, offset + len(conversation.turns)))
        row_of = {turn.dia_id: row for row, turn in enumerate(conversation.turns)}
        for qi, q in enumerate(conversation.questions):
            lexical = np.zeros(len(conversation.turns), dtype=np.float32)
            scores, reference = bm25.scores(q.text, allowed)
            for row, score in scores.items():
                lexical[row - offset] = min(1.0, score / reference)
            cases.append(
                Case(
                    ci,
                    CATEGORIES[q.category],
                    [row_of[e] for e in q.evidence],
                    vecs @ qv[qi],
                    vecs @ qvp[qi],
                    lexical,
                    qv[qi],
                    qvp[qi],
                    q.text,
                )
            )
        turn_vecs.append(vecs)
        sessions.append(np.array([_session_of(t.dia_id) for t in conversation.turns]))
    return Corpus(conversations, cases, turn_vecs, sessions, dict(extra))


def metrics(order: Sequence[int], evidence: list[int]) -> dict[str, float]:
    wanted = set(evidence)

    def recall(k: int) -> float:
        return len(set(order[:k]) & wanted) / len(wanted)

    first = next((rank for rank, row in enumerate(order[:10], 1) if row in wanted), None)
    return {"R@1": recall(1), "R@5": recall(5), "R@10": recall(10), "MRR@10": 1.0 / first if first else 0.0}


KEYS = ["R@1", "R@5", "R@10", "MRR@10"]


def evaluate(
    corpus: Corpus, ranker: Callable[[Corpus, Case], Sequence[int]], half: str = "all"
) -> dict[str, dict[str, float]]:
    per: dict[str, list[dict[str, float]]] = defaultdict(list)
    for case in corpus.cases:
        if half == "a" and case.conversation % 2:
            continue
        if half == "b" and not case.conversation % 2:
            continue
        m = metrics(list(ranker(corpus, case)), case.evidence)
        per["overall"].append(m)
        per[case.category].append(m)
    return {
        name: {"n": len(rows), **{k: 100 * sum(r[k] for r in rows) / len(rows) for k in KEYS}}
        for name, rows in per.items()
    }


def candidates(cosine: np.ndarray, lexical: np.ndarray, k: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """The union of the k-NN and BM25 top k, and each one's cosine (floored as the ranker does)."""
    dense_top = np.argsort(-cosine, kind="stable")[:k]
    lex_nonzero = np.flatnonzero(lexical > 0)
    lex_top = lex_nonzero[np.argsort(-lexical[lex_nonzero], kind="stable")[:k]]
    rows = np.union1d(dense_top, lex_top)
    floor = cosine[dense_top].min()
    in_dense = np.isin(rows, dense_top)
    cos = np.where(in_dense, cosine[rows], floor)
    return rows, cos


@dataclass(frozen=True)
class Variant:
    """One ranking configuration: the blend, the context signals and where the vectors come from."""

    floor: float = 0.45
    ceiling: float = 0.80
    weight: float = 0.6
    k: int = 100
    context_vectors: str = "prev"  # turns embedded with the previous turn of the same day ("prev-first": before it)
    prefix: bool = False  # the bge query instruction
    neighbour: float = 0.3
    episode: float = 0.6
    subject: float = 0.1
    names: str = "subject"  # "subject": query names vs the memory's first word; "any": vs any word of it
    fusion: str = "weighted"  # or "rrf"
    prf: float = 0.0  # Rocchio: second k-NN round with the query plus this share of the top 3 vectors
    learned: tuple[float, ...] | None = None  # weights of (dense, lexical, neighbour, episode, subject)


def _names_match(variant: Variant, content: str, names: set[str]) -> float:
    if not names:
        return 0.0
    if variant.names == "subject":
        return 1.0 if subject_of(content) in names else 0.0
    words = {w.lower() for w in _WORD.findall(content)}
    return len(words & names) / len(names)


def features(corpus: Corpus, case: Case, variant: Variant) -> tuple[np.ndarray, np.ndarray]:
    """Candidate rows and their (dense, lexical, neighbour, episode, subject) features, as the ranker builds them."""
    source = corpus.extra_vecs[variant.context_vectors] if variant.context_vectors else corpus.turn_vecs
    vecs = source[case.conversation]
    query = case.query_vec_prefixed if variant.prefix else case.query_vec
    cosine = vecs @ query
    span = variant.ceiling - variant.floor

    def blend_of(cosine: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows, cos = candidates(cosine, case.lexical, variant.k)
        dense = np.clip((cos - variant.floor) / span, 0, 1)
        return rows, dense, variant.weight * dense + (1 - variant.weight) * case.lexical[rows]

    rows, dense, blend = blend_of(cosine)
    if variant.prf:
        top = rows[np.argsort(-blend, kind="stable")[:3]]
        second = query + variant.prf * vecs[top].mean(axis=0)
        rows, dense, blend = blend_of(vecs @ (second / np.linalg.norm(second)))
    sessions = corpus.sessions[case.conversation]
    turns = corpus.conversations[case.conversation].turns
    position = {row: i for i, row in enumerate(rows.tolist())}
    neighbour = np.zeros_like(blend)
    episode_best: dict[int, float] = defaultdict(float)
    for i, row in enumerate(rows.tolist()):
        episode_best[sessions[row]] = max(episode_best[sessions[row]], blend[i])
        for other in (row - 1, row + 1):
            j = position.get(other)
            if j is not None and sessions[other] == sessions[row]:
                neighbour[i] = max(neighbour[i], blend[j])
    episode = np.array([episode_best[sessions[row]] for row in rows.tolist()])
    names = query_names(case.text)
    subject = np.array([_names_match(variant, turns[row].content, names) for row in rows.tolist()])
    return rows, np.stack([dense, case.lexical[rows], neighbour, episode, subject], axis=1)


def ranker_of(variant: Variant) -> Callable[[Corpus, Case], Sequence[int]]:
    def ranker(corpus: Corpus, case: Case) -> Sequence[int]:
        rows, f = features(corpus, case, variant)
        if variant.learned is not None:
            raw = f @ np.array(variant.learned)
        elif variant.fusion == "rrf":
            raw = np.zeros(len(rows))
            for column in (0, 1):
                order = np.argsort(-f[:, column], kind="stable")
                raw[order] += 1.0 / (60 + np.arange(1, len(rows) + 1))
        else:  # as mnemo.retrieval.scoring.Calibration.raw
            blend = variant.weight * f[:, 0] + (1 - variant.weight) * f[:, 1]
            near = blend + variant.neighbour * np.maximum(f[:, 2], blend) + variant.episode * np.maximum(f[:, 3], blend)
            near /= 1 + variant.neighbour + variant.episode
            raw = near + variant.subject * f[:, 4]
        return rows[np.argsort(-raw, kind="stable")][:10].tolist()

    return ranker


def fit_fusion(corpus: Corpus, variant: Variant, half: str, steps: int = 300) -> tuple[float, ...]:
    """Logistic regression of "is evidence" on the five features of the candidates of one half."""
    xs, ys = [], []
    for case in corpus.cases:
        if (half == "a") == bool(case.conversation % 2):
            continue
        rows, f = features(corpus, case, variant)
        xs.append(f)
        ys.append(np.isin(rows, case.evidence).astype(np.float64))
    x, y = np.concatenate(xs), np.concatenate(ys)
    x1 = np.hstack([x, np.ones((len(x), 1))])
    weights = np.zeros(x1.shape[1])
    for _ in range(steps):  # Newton's method
        p = 1 / (1 + np.exp(-x1 @ weights))
        gradient = x1.T @ (y - p)
        hessian = (x1 * (p * (1 - p))[:, None]).T @ x1 + 1e-6 * np.eye(x1.shape[1])
        weights += np.linalg.solve(hessian, gradient)
    return tuple(float(w) for w in weights[:5])


def report(name: str, result: dict[str, dict[str, float]]) -> list:
    o = result["overall"]
    cats = [result.get(c, {}).get("R@10", 0.0) for c in CATEGORIES.values()]
    return [name, o["R@1"], o["R@5"], o["R@10"], o["MRR@10"], *cats]


HEAD = ["variant", "R@1", "R@5", "R@10", "MRR@10", *[f"{c} R@10" for c in CATEGORIES.values()]]

BASE = Variant(context_vectors="", neighbour=0.0, episode=0.0, subject=0.0)
FINAL = Variant()
ABLATION: dict[str, Variant] = {
    "blend only (before)": BASE,
    "+ bge query instruction": replace(BASE, prefix=True),
    "+ turn embedded with the previous one": replace(BASE, context_vectors="prev"),
    "+ neighbour 0.3": replace(BASE, context_vectors="prev", neighbour=0.3),
    "+ episode 0.6": replace(BASE, context_vectors="prev", neighbour=0.3, episode=0.6),
    "+ subject 0.1 (final)": FINAL,
    "final without context vectors": replace(FINAL, context_vectors=""),
    "final, previous turn embedded first": replace(FINAL, context_vectors="prev-first"),
    "final without neighbour": replace(FINAL, neighbour=0.0),
    "final without episode": replace(FINAL, episode=0.0),
    "final without subject": replace(FINAL, subject=0.0),
    "final, names matched anywhere": replace(FINAL, names="any"),
    "final + bge query instruction": replace(FINAL, prefix=True),
    "final + PRF (Rocchio 0.5, top 3)": replace(FINAL, prf=0.5),
    "final, dense weight 0.5": replace(FINAL, weight=0.5),
    "final, dense weight 0.7": replace(FINAL, weight=0.7),
    "final, candidates 50": replace(FINAL, k=50),
    "final, candidates 200": replace(FINAL, k=200),
    "RRF (k=60) of dense and BM25": replace(BASE, fusion="rrf"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--half", default="all", choices=["a", "b", "all"])
    args = parse_args(parser, {})
    corpus = build(contexts=["prev", "prev-first"])
    rows = [report(name, evaluate(corpus, ranker_of(variant), args.half)) for name, variant in ABLATION.items()]
    print(table(HEAD, rows))
    # Learned fusion: fitted on one half of the conversations, scored on the other, against the hand weights
    # (those were chosen on half a: their figures on half b are the held-out ones).
    fitted = []
    for fit_on, score_on in (("a", "b"), ("b", "a")):
        weights = fit_fusion(corpus, FINAL, fit_on)
        learned = evaluate(corpus, ranker_of(replace(FINAL, learned=weights)), score_on)
        hand = evaluate(corpus, ranker_of(FINAL), score_on)
        fitted.append(report(f"learned on {fit_on}, scored on {score_on}", learned))
        fitted.append(report(f"hand weights, scored on {score_on}", hand))
        print(f"fitted on {fit_on}: " + ", ".join(f"{w:.2f}" for w in weights), file=sys.stderr)
    print()
    print(table(HEAD, fitted))
    path = write_results(
        "retrieval-lab",
        {
            "half": args.half,
            "columns": HEAD,
            "ablation": [dict(zip(HEAD, row, strict=True)) for row in rows],
            "fusion": [dict(zip(HEAD, row, strict=True)) for row in fitted],
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
