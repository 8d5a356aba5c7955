"""The embedded index at 10k, 100k and 1M memories in one scope: exact k-NN against HNSW.

    python bench/scale.py [--sizes 10000,100000,1000000] [--queries 300] [--samples 300] [--smoke]

What is measured, at each size (the store grows from one size to the next):

* fill: records written straight to the record store (100 per transaction, the
  shape memory_add writes) and documents upserted to the index (1,000 per call);
  neither the embedding model nor memory_add's duplicate check is in it.
* build: the first HNSW k-NN, which builds the graph over every row (and saves it).
* knn: ``index.knn`` alone, k=100 with the scope filter (what memory_search asks),
  exact (``exact_below`` above the size) and HNSW (``exact_below`` 0); lexical:
  ``index.lexical`` alone, k=100.
* recall@10 of the HNSW answer against the exact one over ``--queries`` queries:
  strict (the share of the exact ten ids found) and tie-aware (a returned id counts
  when its cosine is within 1e-4 of the exact tenth, since synthetic vectors tie).
* memory_search: ``get_tool("memory_search").invoke`` in process, p50/p95/p99 over
  ``--samples`` queries (threshold 0, so ten results are hydrated from the records),
  in both modes. The query embedding comes from the same generator as the
  documents (about 0.05 ms), so model inference is excluded; bge-small's own
  single-query time is reported as its own row.
* reload: a fresh process opens the data directory and answers one HNSW k-NN
  (reading SQLite and the saved graph); its time and peak RSS.
* RSS: this process's resident and peak resident memory after each size.

Texts: a made-up vocabulary of 6,000 words (seeded), Zipf-distributed and grouped into
1,000 topics of 40 words; a memory is 9 words of its topic and 3 common ones, a query 5
words of one topic and 1 common word (another seed), so BM25 sees shared words.

Vectors (``--vectors bge``, the default), made to have bge-small's statistics: each word
has a random 384-dimension vector (lognormal length); a memory's vector is the unit sum
of its words' vectors, plus ``TOPIC_WEIGHT`` (0.72) times a random unit vector of its
topic, plus ``MEAN_WEIGHT`` (1.25) times one unit vector shared by every memory,
normalised. The two weights were chosen so that 2,000 generated memories match 2,000
sentences of this repository's README.md and docs/*.md embedded by bge-small
(``doc_sentences``; the vectors are cached in the temporary directory); every run prints
and records both (``vectorStats``; the docs change, so bge's figures move in the third
decimal); at 2,000 points:

    statistic                                   bge-small on the docs    generator "bge"        generator "uniform"
    pairwise cosine, mean (10th-90th pct)       0.534 (0.446-0.620)      0.538 (0.480-0.601)    0.092 (-0.035-0.258)
    1st neighbour's cosine, 10/50/90th pct      0.716 / 0.798 / 0.908    0.695 / 0.798 / 0.884  0.377 / 0.544 / 0.729
    10th neighbour's cosine, 10/50/90th pct     0.653 / 0.710 / 0.764    0.610 / 0.685 / 0.797  0.249 / 0.408 / 0.619
    10th - 11th neighbour, median (< 0.001)     0.0019 (31%)             0.0017 (35%)           0.0030 (21%)
    local intrinsic dimension (20 neighbours)   19.5                     19.1                   25.9
    variance in the top 10 components           0.28                     0.21                   0.25

The shared direction alone changes no ranking (it adds the same to every inner product);
what makes neighbours easier to find is the topic direction, which brings the local
intrinsic dimension (the usual predictor of a graph's recall) from 26 down to bge's 19.
The generated neighbourhoods are slightly more crowded than bge's (more 10th/11th gaps
under 0.001), so the match does not flatter the index.

``--vectors uniform``: the words' unit sum alone, as in the first version of this script
(near-orthogonal memories, neighbourhoods of high intrinsic dimension: the hard case for a
graph). Its recall and k-NN times at ``--hard-sizes`` (10k and 100k by default) are
measured in every run, in an index in memory (``uniformVectors``).

sweep: at each size, recall@10 and k-NN times for efSearch 128/256/512 and re-scoring
1/2/4 x k candidates (``sweep``).

Writes bench/results/scale.json and docs/scale.png.

--smoke: sizes 500 and 1,000, 20 queries and samples, the hard case at 1,000, the vector statistics on
200 points (bge-small on 200 doc sentences, not cached); scale.json and scale.png go to a temporary folder
(bench/common.py), docs/scale.png is left alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one query is one thread, as in the server

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fresh_services, parse_args, results_dir, smoke, table, write_results
from mnemo.adapters.local import ann
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.context import RequestContext
from mnemo.ports import IndexDoc, Item, Put
from mnemo.tools.registry import get_tool

DIMS = 384
VOCABULARY = 6_000
TOPICS = 1_000
TOPIC_WORDS = 40
#: Weights of the shared direction and of the topic's direction against the words' unit sum ("bge" vectors).
MEAN_WEIGHT = 1.25
TOPIC_WEIGHT = 0.72
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "fi", "gu", "ha", "jo", "ba", "ce", "wy"]
ROOT = Path(__file__).resolve().parent.parent
CONTEXT = RequestContext(tenant="bench", user="scale")


class Words:
    """The seeded generator of texts and their vectors (also the embedder of the queries).

    ``kind="bge"``: a memory's vector is its words' normalised sum plus ``TOPIC_WEIGHT`` times a unit vector of its
    topic plus ``MEAN_WEIGHT`` times one unit vector shared by all, normalised (the statistics of bge-small on real
    sentences, see the module docstring); ``kind="uniform"``: the words' normalised sum alone (near-orthogonal
    memories, the hard case).
    """

    name = "synthetic-words"
    dimensions = DIMS

    def __init__(self, seed: int = 11, kind: str = "bge") -> None:
        rng = np.random.default_rng(seed)
        words: list[str] = []
        seen: set[str] = set()
        while len(words) < VOCABULARY:
            word = "".join(rng.choice(SYLLABLES, size=int(rng.integers(3, 5))))
            if word not in seen:
                seen.add(word)
                words.append(word)
        self.words = words
        self.number = {word: i for i, word in enumerate(words)}
        vectors = rng.standard_normal((VOCABULARY, DIMS)).astype(np.float32)
        weights = rng.lognormal(0.0, 0.5, VOCABULARY).astype(np.float32)
        self.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True) * weights[:, None]
        zipf = 1.0 / np.arange(1, VOCABULARY + 1) ** 0.9
        self.common = zipf / zipf.sum()
        self.topics = rng.choice(VOCABULARY, size=(TOPICS, TOPIC_WORDS), p=self.common)
        popularity = 1.0 / np.arange(1, TOPICS + 1) ** 0.8
        self.popularity = popularity / popularity.sum()
        extra = np.random.default_rng(seed + 1)
        mean = extra.standard_normal(DIMS).astype(np.float32)
        topics = extra.standard_normal((TOPICS, DIMS)).astype(np.float32)
        self.mean = mean / np.linalg.norm(mean)
        self.topic_vectors = topics / np.linalg.norm(topics, axis=1, keepdims=True)
        self.kind = kind
        self.mean_weight, self.topic_weight = (MEAN_WEIGHT, TOPIC_WEIGHT) if kind == "bge" else (0.0, 0.0)
        self.known: dict[str, np.ndarray] = {}  # query texts and their vectors, for memory_search's embedding

    def sample(self, rng: np.random.Generator, count: int, own: int, shared: int) -> tuple[np.ndarray, np.ndarray]:
        """Words (``own`` of one topic, ``shared`` common ones) of ``count`` texts, and their topics."""
        topic = rng.choice(TOPICS, size=count, p=self.popularity)
        mine = self.topics[topic[:, None], rng.integers(0, TOPIC_WORDS, size=(count, own))]
        return np.concatenate([mine, rng.choice(VOCABULARY, size=(count, shared), p=self.common)], axis=1), topic

    def texts(self, picks: np.ndarray) -> list[str]:
        return [" ".join(self.words[w] for w in row) for row in picks]

    def embed_picks(self, picks: np.ndarray, topic: np.ndarray) -> np.ndarray:
        summed = self.vectors[picks].sum(axis=1)
        vectors = summed / np.linalg.norm(summed, axis=1, keepdims=True)
        vectors += self.topic_weight * self.topic_vectors[topic] + self.mean_weight * self.mean
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            known = self.known.get(text)
            if known is not None:
                out.append(known.tolist())
                continue
            row = [self.number[w] for w in re.findall(r"[a-z]+", text) if w in self.number]
            summed = self.vectors[row].sum(axis=0) if row else np.ones(DIMS, dtype=np.float32)
            vector = summed / np.linalg.norm(summed) + self.mean_weight * self.mean
            out.append((vector / np.linalg.norm(vector)).tolist())
        return out


# -- how the generated vectors compare with bge-small's -------------------------------------------------------------
CACHE = Path(tempfile.gettempdir()) / "mnemo-scale-bge-docs.npz"
#: Points of the comparison of the generators with bge-small (--points; smoke mode uses fewer).
POINTS = 2000


def doc_sentences(limit: int = POINTS) -> list[str]:
    """Sentences (4 to 80 words) of README.md and docs/*.md, code blocks left out, table cells as sentences;
    ``limit`` of them picked with a fixed seed."""
    out: list[str] = []
    seen: set[str] = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "\n", path.read_text(), flags=re.S)
        pieces: list[str] = []
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "<", "![", "|---", "| ---")):
                continue
            if line.startswith("|"):
                pieces.extend("- " + cell.strip() for cell in line.strip("|").split("|"))
            else:
                pieces.append(line)
        text = re.sub(r"\n(?![*\-\d])", " ", "\n".join(pieces))  # a paragraph's lines, one piece per bullet
        text = re.sub(r"`([^`]*)`", r"\1", text)
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("**", "")
        for paragraph in text.split("\n"):
            for sentence in re.split(r"(?<=[.!?;:])\s+", paragraph.lstrip("*-0123456789. ").strip()):
                sentence = sentence.strip()
                if 4 <= len(sentence.split()) <= 80 and sentence not in seen:
                    seen.add(sentence)
                    out.append(sentence)
    if len(out) > limit:
        picked = np.random.default_rng(0).choice(len(out), limit, replace=False)
        out = [out[i] for i in sorted(picked)]
    return out


def bge_doc_vectors(points: int = POINTS) -> np.ndarray:
    """bge-small vectors of ``doc_sentences(points)``, cached in the temporary directory (keyed by the
    sentences) for the default number of points."""
    sentences = doc_sentences(points)
    if points == POINTS and CACHE.exists():
        cached = np.load(CACHE, allow_pickle=False)
        if list(cached["sentences"]) == sentences:
            return np.asarray(cached["vectors"], dtype=np.float32)
    from mnemo.adapters.local.embedders import BgeSmallEmbedder

    vectors = np.asarray(BgeSmallEmbedder().embed(sentences), dtype=np.float32)
    if points == POINTS:
        np.savez(CACHE, sentences=np.array(sentences), vectors=vectors)
    return vectors


def neighbour_stats(matrix: np.ndarray) -> dict[str, Any]:
    """Pairwise cosines, the 1st/10th nearest neighbours' cosines and the 10th-11th gap (10th/50th/90th
    percentiles over the points), the local intrinsic dimension (Levina-Bickel, 20 neighbours) and the share of
    variance in the top ten principal components."""
    matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    gram = matrix @ matrix.T
    pairs = gram[np.triu_indices(len(matrix), 1)]
    np.fill_diagonal(gram, -np.inf)
    top = -np.sort(-gram, axis=1)[:, :20]
    distances = np.sqrt(np.maximum(2 - 2 * top, 1e-12))
    lid = -1 / np.mean(np.log(distances / distances[:, -1:]), axis=1)
    centred = matrix - matrix.mean(axis=0)
    spectrum = np.linalg.svd(centred, compute_uv=False) ** 2

    def spread(values: np.ndarray) -> list[float]:
        return [round(float(np.percentile(values, q)), 4) for q in (10, 50, 90)]

    return {
        "points": len(matrix),
        "pairCosineMean": round(float(pairs.mean()), 3),
        "pairCosineMedian": round(float(np.median(pairs)), 3),
        "pairCosineP10P90": [round(float(np.percentile(pairs, 10)), 3), round(float(np.percentile(pairs, 90)), 3)],
        "nn1Cosine": spread(top[:, 0]),
        "nn10Cosine": spread(top[:, 9]),
        "gap10to11": spread(top[:, 9] - top[:, 10]),
        "gapBelow0001": round(float(np.mean(top[:, 9] - top[:, 10] < 0.001)), 3),
        "intrinsicDimension": round(float(np.median(lid)), 1),
        "top10PcShare": round(float(spectrum[:10].sum() / spectrum.sum()), 3),
    }


def vector_stats(points: int = POINTS) -> dict[str, Any]:
    """bge-small on this repository's docs against both generators, ``points`` points each (2,000)."""
    out: dict[str, Any] = {"weights": {"mean": MEAN_WEIGHT, "topic": TOPIC_WEIGHT}}
    try:
        out["bge"] = neighbour_stats(bge_doc_vectors(points))
    except Exception as error:  # the model package is optional for this benchmark
        print(f"bge-small unavailable: {error}")
    for kind in ("bge", "uniform"):
        words = Words(kind=kind)
        picks, topic = words.sample(np.random.default_rng(1000), points, own=9, shared=3)
        out[f"generator-{kind}"] = neighbour_stats(words.embed_picks(picks, topic))
    print(
        table(
            ["statistic", *[k for k in out if k != "weights"]],
            [[name, *[str(out[k][name]) for k in out if k != "weights"]] for name in out["generator-bge"]],
        )
    )
    return out


def hard_case(sizes: list[int], queries: int) -> list[dict[str, Any]]:
    """Recall@10 and k-NN times of the graph on the uniform generator (the hard case), in an index in memory."""
    words = Words(kind="uniform")
    index = LocalVectorIndex(":memory:", exact_below=0)
    query_picks, query_topics = words.sample(np.random.default_rng(5), queries, own=5, shared=1)
    query_vectors = [v.tolist() for v in words.embed_picks(query_picks, query_topics)]
    rng = np.random.default_rng(1000)
    rows: list[dict[str, Any]] = []
    filled = 0
    flt = {"scope": ["s"]}
    for size in sizes:
        for first in range(filled, size, 10_000):
            picks, topic = words.sample(rng, min(10_000, size - first), own=9, shared=3)
            matrix = words.embed_picks(picks, topic)
            index.upsert(
                "memory",
                [IndexDoc(f"m{first + i}", v.tolist(), "", {"scope": ["s"]}) for i, v in enumerate(matrix)],
            )
        filled = size
        started = time.perf_counter()
        index.exact_below = 0
        index.knn("memory", query_vectors[0], flt, 100)
        build = time.perf_counter() - started
        answers: list[list[Any]] = []

        def ask(i: int, out: list[list[Any]] = answers) -> None:
            out.append(index.knn("memory", query_vectors[i], flt, 100))

        ann_times = timed(queries, ask)
        index.exact_below = 10**12
        exact = [index.knn("memory", v, flt, 100) for v in query_vectors]
        pairs = [recall(e, a) for e, a in zip(exact, answers, strict=True)]
        row = {
            "memories": size,
            "buildSeconds": build,
            "knnMs": {"hnsw": percentiles(ann_times)},
            "recallAt10": {
                "strict": float(np.mean([p[0] for p in pairs])),
                "tieAware": float(np.mean([p[1] for p in pairs])),
            },
        }
        rows.append(row)
    return rows


def rss_mib() -> dict[str, float]:
    status = Path("/proc/self/status").read_text()
    current = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"rssMiB": round(current), "peakRssMiB": round(peak)}


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50": pick(0.50), "p95": pick(0.95), "p99": pick(0.99), "mean": float(np.mean(ordered))}


def timed(count: int, call: Callable[[int], object]) -> list[float]:
    out = []
    for i in range(count):
        started = time.perf_counter()
        call(i)
        out.append(1000 * (time.perf_counter() - started))
    return out


def fill(services: Any, words: Words, start: int, stop: int, scope: str) -> None:
    rng = np.random.default_rng(1000 + start)
    step = 1000
    for first in range(start, stop, step):
        count = min(step, stop - first)
        picks, topic = words.sample(rng, count, own=9, shared=3)
        texts = words.texts(picks)
        vectors = words.embed_picks(picks, topic)
        items = []
        docs = []
        for offset, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            memory_id = f"mem_{first + offset:012x}"
            data: dict[str, Any] = {
                "memoryId": memory_id,
                "content": text,
                "layer": "user",
                "scope": scope,
                "tags": [],
                "metadata": {"source": "bench"},
                "createdAt": "2026-01-01T00:00:00Z",
                "occurredAt": None,
                "contentHash": f"{first + offset:064x}",
                "embeddingModel": words.name,
                "createdBy": CONTEXT.user,
            }
            items.append(Put(Item(f"MEM|{scope}", f"MEM#{memory_id}", data)))
            keywords = {"scope": [scope], "layer": ["user"], "tags": [], "meta.source": [json.dumps("bench")]}
            docs.append(IndexDoc(memory_id, vector, text, keywords))
        for batch in range(0, len(items), 100):
            services.records.write(items[batch : batch + 100])
        services.index.upsert("memory", docs)


def recall(exact: list[Any], approximate: list[Any]) -> tuple[float, float]:
    truth = [hit.id for hit in exact[:10]]
    found = [hit for hit in approximate[:10]]
    strict = len({hit.id for hit in found} & set(truth)) / max(len(truth), 1)
    tenth = exact[min(9, len(exact) - 1)].score
    tied = sum(1 for hit in found if hit.score >= tenth - 1e-4) / max(len(truth), 1)
    return strict, min(tied, 1.0)


def reload_probe(data_dir: str, query: list[float], scope: str) -> None:
    """Run in a fresh process: open the index, answer one HNSW k-NN, print the time and peak RSS."""
    started = time.perf_counter()
    index = LocalVectorIndex(Path(data_dir) / "index.sqlite3", exact_below=0)
    hits = index.knn("memory", query, {"scope": [scope]}, 100)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "hits": len(hits), **rss_mib()}))


def bge_query_ms() -> dict[str, float] | None:
    try:
        from mnemo.adapters.local.embedders import BgeSmallEmbedder

        embedder = BgeSmallEmbedder()
        embedder.embed(["warm up"])
    except Exception as error:  # the model package is optional for this benchmark
        print(f"bge-small unavailable: {error}")
        return None
    return percentiles(timed(50, lambda i: embedder.embed([f"who reviewed the billing service {i}"])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300, help="queries for recall and raw k-NN times")
    parser.add_argument("--samples", type=int, default=300, help="memory_search calls per mode")
    parser.add_argument("--vectors", choices=("bge", "uniform"), default="bge", help="generator of the memories")
    parser.add_argument(
        "--hard-sizes", default="10000,100000", help="sizes for the recall of the uniform vectors ('' for none)"
    )
    parser.add_argument("--vector-stats", action="store_true", help="only compare the generators with bge-small")
    parser.add_argument("--points", type=int, default=POINTS, help="points of that comparison")
    parser.add_argument("--hard-case", metavar="SIZES", help=argparse.SUPPRESS)
    parser.add_argument("--reload-probe", nargs=3, metavar=("DATA_DIR", "QUERY_JSON", "SCOPE"), help=argparse.SUPPRESS)
    args = parse_args(parser, {"sizes": "500,1000", "queries": 20, "samples": 20, "hard_sizes": "1000", "points": 200})
    if args.reload_probe:
        reload_probe(args.reload_probe[0], json.loads(args.reload_probe[1]), args.reload_probe[2])
        return
    if args.hard_case:
        print(json.dumps(hard_case(sorted(int(size) for size in args.hard_case.split(",")), args.queries)))
        return
    if args.vector_stats:
        print(json.dumps(vector_stats(args.points)))
        return
    # In a process of its own (it may load bge-small), so that this one's RSS is the scope's alone.
    probe = subprocess.run(
        [sys.executable, __file__, "--vector-stats", "--points", str(args.points)],
        capture_output=True,
        text=True,
        check=True,
    )
    print("\n".join(probe.stdout.strip().splitlines()[:-1]), flush=True)
    stats = json.loads(probe.stdout.strip().splitlines()[-1])
    sizes = sorted(int(size) for size in args.sizes.split(","))
    hard: list[dict[str, Any]] = []
    if args.hard_sizes:  # in a process of its own too
        probe = subprocess.run(
            [sys.executable, __file__, "--hard-case", args.hard_sizes, "--queries", str(args.queries)],
            capture_output=True,
            text=True,
            check=True,
        )
        hard = json.loads(probe.stdout.strip().splitlines()[-1])
        print(f"uniform vectors (hard case): {json.dumps(hard)}", flush=True)
    extra = {"vectors": args.vectors, "vectorStats": stats, "uniformVectors": hard}

    words = Words(kind=args.vectors)
    data_dir = Path(tempfile.mkdtemp(prefix="mnemo-scale-"))
    services = fresh_services("hashing", data_dir)
    services.__dict__["embedder"] = words  # queries are embedded by the generator, not a model
    index = services.index
    assert isinstance(index, LocalVectorIndex)
    scope = CONTEXT.scope_key("user")
    search = get_tool("memory_search")
    query_rng = np.random.default_rng(5)
    query_picks, query_topics = words.sample(query_rng, max(args.queries, args.samples), own=5, shared=1)
    query_texts = words.texts(query_picks)
    query_matrix = words.embed_picks(query_picks, query_topics)
    words.known.update(zip(query_texts, query_matrix, strict=True))
    query_vectors = [vector.tolist() for vector in query_matrix]
    flt = {"scope": [scope]}

    rows: list[dict[str, Any]] = []
    filled = 0
    for size in sizes:
        started = time.perf_counter()
        fill(services, words, filled, size, scope)
        fill_seconds = time.perf_counter() - started
        filled = size
        print(f"{size}: filled {size - (rows[-1]['memories'] if rows else 0)} in {fill_seconds:.0f} s", flush=True)

        index.exact_below = 0
        started = time.perf_counter()
        index.knn("memory", query_vectors[0], flt, 100)
        build_seconds = time.perf_counter() - started
        print(f"{size}: graph built in {build_seconds:.0f} s", flush=True)

        def knn_times(mode_below: int) -> tuple[dict[str, float], list[list[Any]]]:
            index.exact_below = mode_below
            answers: list[list[Any]] = []
            samples = timed(args.queries, lambda i: answers.append(index.knn("memory", query_vectors[i], flt, 100)))
            return percentiles(samples), answers

        ann_knn, ann_answers = knn_times(0)
        exact_knn, exact_answers = knn_times(10**12)
        pairs = [recall(e, a) for e, a in zip(exact_answers, ann_answers, strict=True)]
        sweep = []
        defaults = ann.EF_SEARCH, ann.RESCORE
        for ef in (128, 256, 512):
            for rescore in (1, 2, 4):
                ann.EF_SEARCH, ann.RESCORE = ef, rescore
                times, answers = knn_times(0)
                got = [recall(e, a) for e, a in zip(exact_answers, answers, strict=True)]
                sweep.append(
                    {
                        "efSearch": ef,
                        "rescore": rescore,
                        "recallAt10": float(np.mean([p[0] for p in got])),
                        "knnMs": times,
                    }
                )
                print(f"{size}: {json.dumps(sweep[-1])}", flush=True)
        ann.EF_SEARCH, ann.RESCORE = defaults
        lexical = percentiles(timed(args.queries, lambda i: index.lexical("memory", query_texts[i], flt, 100)))

        searches: dict[str, dict[str, float]] = {}
        for mode, below in (("exact", 10**12), ("hnsw", 0)):
            index.exact_below = below
            search.invoke(services, CONTEXT, {"query": "warm up", "threshold": 0.0})
            searches[mode] = percentiles(
                timed(
                    args.samples,
                    lambda i: search.invoke(services, CONTEXT, {"query": query_texts[i], "threshold": 0.0}),
                )
            )
        index.exact_below = LocalVectorIndex.EXACT_BELOW

        probe = subprocess.run(
            [sys.executable, __file__, "--reload-probe", str(data_dir), json.dumps(query_vectors[1]), scope],
            capture_output=True,
            text=True,
            check=True,
        )
        reload = json.loads(probe.stdout.strip().splitlines()[-1])
        row = {
            "memories": index.count("memory"),
            "fillSeconds": fill_seconds,
            "buildSeconds": build_seconds,
            "knnMs": {"exact": exact_knn, "hnsw": ann_knn},
            "lexicalMs": lexical,
            "recallAt10": {
                "strict": float(np.mean([p[0] for p in pairs])),
                "tieAware": float(np.mean([p[1] for p in pairs])),
            },
            "sweep": sweep,
            "memorySearchMs": searches,
            "reload": reload,
            **rss_mib(),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
        if size != sizes[-1]:
            report(rows, args, None, extra)  # a long run keeps what it has measured so far

    report(rows, args, bge_query_ms(), extra)


def report(
    rows: list[dict[str, Any]], args: argparse.Namespace, bge: dict[str, float] | None, extra: dict[str, Any]
) -> None:
    printable = [
        [
            r["memories"],
            r["memorySearchMs"]["exact"]["p95"],
            r["memorySearchMs"]["hnsw"]["p95"],
            r["knnMs"]["exact"]["p95"],
            r["knnMs"]["hnsw"]["p95"],
            r["lexicalMs"]["p95"],
            f"{r['recallAt10']['strict']:.3f} / {r['recallAt10']['tieAware']:.3f}",
            r["buildSeconds"],
            r["reload"]["seconds"],
            r["rssMiB"],
        ]
        for r in rows
    ]
    print()
    print(
        table(
            [
                "memories",
                "search p95 exact",
                "search p95 hnsw",
                "knn p95 exact",
                "knn p95 hnsw",
                "lexical p95",
                "recall@10 strict / tie-aware",
                "build s",
                "reload s",
                "RSS MiB",
            ],
            printable,
        )
    )
    if bge:
        print(f"bge-small single-query embedding: p50 {bge['p50']:.1f} ms, p95 {bge['p95']:.1f} ms")
    path = write_results(
        "scale",
        {
            "dimensions": DIMS,
            "queries": args.queries,
            "samples": args.samples,
            "k": 100,
            "hnsw": {
                "M": ann.M,
                "efConstruction": ann.EF_CONSTRUCTION,
                "efSearch": ann.EF_SEARCH,
                "rescore": ann.RESCORE,
                "storage": ann.STORAGE,
            },
            "exactBelow": LocalVectorIndex.EXACT_BELOW,
            "bgeQueryEmbeddingMs": bge,
            **extra,
            "sizes": rows,
        },
    )
    print(f"wrote {path}")
    plot(rows, results_dir() / "scale.png" if smoke() else ROOT / "docs" / "scale.png")


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["memories"] for r in rows]
    figure, (latency, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode, style in (("exact", "o--"), ("hnsw", "o-")):
        latency.plot(sizes, [r["memorySearchMs"][mode]["p95"] for r in rows], style, label=f"memory_search p95, {mode}")
        latency.plot(sizes, [r["knnMs"][mode]["p95"] for r in rows], style, alpha=0.5, label=f"knn p95, {mode}")
    latency.plot(sizes, [r["lexicalMs"]["p95"] for r in rows], "s:", label="BM25 p95")
    latency.axhline(10, color="grey", linewidth=0.8)
    latency.axhline(30, color="grey", linewidth=0.8)
    latency.set_xscale("log")
    latency.set_yscale("log")
    latency.set_xlabel("memories in one scope")
    latency.set_ylabel("milliseconds (in process)")
    latency.set_title("Embedded index latency, k=100")
    latency.legend(fontsize=7)
    memory.plot(sizes, [r["rssMiB"] for r in rows], "o-", label="RSS (bench process)")
    memory.plot(sizes, [r["reload"]["peakRssMiB"] for r in rows], "o--", label="peak RSS, fresh process")
    memory.set_xscale("log")
    memory.set_xlabel("memories in one scope")
    memory.set_ylabel("MiB")
    memory.set_title("Memory")
    memory.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(exist_ok=True)
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
