"""Score calibration on LoCoMo: where the dense and lexical signals sit, and what 0.7 keeps.

    python bench/calibrate.py

Embeds every turn and question with the local model, scores every turn of a
conversation against each of its questions (cosine and scaled BM25, as the
memory service does), then prints:
* R@10 for a grid of (dense floor, dense ceiling, dense weight), exhaustive
  over all turns rather than through the top-N candidate lists;
* for the calibration in use, the share of evidence turns and of other turns
  whose score passes each threshold.
Writes bench/results/calibration.json. This is how the numbers in
mnemo/memory/scoring.py were chosen; rerun it when the model changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import table, write_results
from locomo import load
from mnemo.adapters.local.embedders import BgeSmallEmbedder
from mnemo.adapters.local.lexical import Bm25
from mnemo.memory.scoring import calibration_for
from mnemo.memory.service import _iso, _lexical_text

GRID = [(lo, hi, w) for lo in (0.3, 0.4, 0.45, 0.5) for hi in (0.75, 0.8) for w in (0.5, 0.6, 0.7)]


def main() -> None:
    embedder = BgeSmallEmbedder()
    cases = []
    for conversation in load():
        turns = np.array(embedder.embed([t.content for t in conversation.turns]), dtype=np.float32)
        questions = np.array(embedder.embed([q.text for q in conversation.questions]), dtype=np.float32)
        bm25 = Bm25()
        for row, turn in enumerate(conversation.turns):
            bm25.add(row, _lexical_text(turn.content, _iso(turn.occurred_at)))
        row_of = {turn.dia_id: row for row, turn in enumerate(conversation.turns)}
        for index, q in enumerate(conversation.questions):
            lexical = np.zeros(len(conversation.turns), dtype=np.float32)
            scores, reference = bm25.scores(q.text, None)
            for row, score in scores.items():
                lexical[row] = min(1.0, score / reference)
            cases.append(([row_of[e] for e in q.evidence], turns @ questions[index], lexical))

    def recall_at_10(lo: float, hi: float, w: float) -> float:
        total = 0.0
        for evidence, cosine, lexical in cases:
            raw = w * np.clip((cosine - lo) / (hi - lo), 0, 1) + (1 - w) * lexical
            top = set(np.argsort(-raw)[:10].tolist())
            total += len(top & set(evidence)) / len(evidence)
        return 100 * total / len(cases)

    grid = [[f"{lo:.2f}", f"{hi:.2f}", f"{w:.2f}", round(recall_at_10(lo, hi, w), 1)] for lo, hi, w in GRID]
    print(table(["dense floor", "dense ceiling", "dense weight", "R@10"], grid))

    calibration = calibration_for(embedder.name)
    evidence_scores, other_scores = [], []
    for evidence, cosine, lexical in cases:
        scores = np.array([calibration.score(float(c), float(x)) for c, x in zip(cosine, lexical, strict=True)])
        mask = np.zeros(len(scores), dtype=bool)
        mask[evidence] = True
        evidence_scores.append(scores[mask])
        other_scores.append(scores[~mask])
    ev, other = np.concatenate(evidence_scores), np.concatenate(other_scores)
    passes = [[t, 100 * float((ev >= t).mean()), 100 * float((other >= t).mean())] for t in (0.5, 0.6, 0.7, 0.8, 0.9)]
    print(f"\ncalibration in use: {calibration}")
    print(table(["threshold", "evidence kept %", "other turns kept %"], passes))
    write_results(
        "calibration",
        {
            "grid": [{"floor": float(g[0]), "ceiling": float(g[1]), "weight": float(g[2]), "R@10": g[3]} for g in grid],
            "inUse": calibration.__dict__,
            "passRates": [{"threshold": p[0], "evidenceKept": p[1], "otherKept": p[2]} for p in passes],
        },
    )


if __name__ == "__main__":
    main()
