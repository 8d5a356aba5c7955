"""Score calibration on LoCoMo: where the signals sit, and what 0.7 keeps.

    python bench/calibrate.py [--smoke]

Embeds every turn (as memory_add does: with the previous turn of the same day)
and every question with the local model (cached, see bench/retrieval_lab.py),
scores every turn of a conversation against each of its questions as the memory
service does (cosine, scaled BM25, and the context signals: neighbour, episode,
subject), then prints:
* R@10 for a grid of (dense floor, dense ceiling, dense weight), exhaustive
  over all turns rather than through the top-N candidate lists;
* for the calibration in use, the share of evidence turns and of other turns
  whose score passes each threshold, and the raw values that two thirds of the
  evidence and 97% of the other turns stay at or under (where the anchor goes).
Writes bench/results/calibration.json. This is how the numbers in
mnemo/retrieval/scoring.py were chosen; rerun it when the model or the blend changes.

--smoke: the same on bench/fixtures/locomo-smoke.json (see bench/locomo.py), embedded by the model into a
fresh cache; results to a temporary folder (bench/common.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval_lab import EmbeddingCache, context_texts

from common import parse_args, table, write_results
from locomo import load
from mnemo.adapters.local.lexical import Bm25
from mnemo.memory.indexing import lexical_text
from mnemo.memory.records import iso
from mnemo.retrieval.ranker import query_names, subject_of
from mnemo.retrieval.scoring import DEFAULT_THRESHOLD, Calibration, calibration_for

GRID = [(lo, hi, w) for lo in (0.4, 0.45, 0.5) for hi in (0.75, 0.8, 0.85) for w in (0.5, 0.6, 0.7)]
MODEL = "bge-small-en-v1.5-int8"


def main() -> None:
    parse_args(argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter), {})
    cache = EmbeddingCache()
    cases = []
    for conversation in load():
        turns = cache.embed(context_texts(conversation, "prev"))
        questions = cache.embed([q.text for q in conversation.questions])
        bm25 = Bm25()
        for row, turn in enumerate(conversation.turns):
            bm25.add(row, lexical_text(turn.content, iso(turn.occurred_at)))
        row_of = {turn.dia_id: row for row, turn in enumerate(conversation.turns)}
        days = np.array([turn.occurred_at.toordinal() for turn in conversation.turns])
        # memory_add links each turn to the one before it on the same day
        linked = np.concatenate([[False], days[1:] == days[:-1]])
        subjects = [subject_of(turn.content) for turn in conversation.turns]
        for index, q in enumerate(conversation.questions):
            lexical = np.zeros(len(conversation.turns), dtype=np.float32)
            scores, reference = bm25.scores(q.text, None)
            for row, score in scores.items():
                lexical[row] = min(1.0, score / reference)
            names = query_names(q.text)
            subject = np.array([1.0 if s in names else 0.0 for s in subjects], dtype=np.float32)
            cases.append(([row_of[e] for e in q.evidence], turns @ questions[index], lexical, days, linked, subject))

    def raws(calibration: Calibration, case: tuple, context: bool = True) -> np.ndarray:
        _, cosine, lexical, days, linked, subject = case
        span = calibration.dense_ceiling - calibration.dense_floor
        dense = np.clip((cosine - calibration.dense_floor) / span, 0, 1)
        blend = calibration.dense_weight * dense + (1 - calibration.dense_weight) * lexical
        if not context:
            return blend
        before = np.where(linked, np.roll(blend, 1), 0.0)
        after = np.where(np.roll(linked, -1), np.roll(blend, -1), 0.0)
        after[-1] = 0.0
        neighbour = np.maximum(before, after)
        episode = np.zeros_like(blend)
        for day in np.unique(days):
            mask = days == day
            episode[mask] = blend[mask].max()
        a, b = calibration.neighbour_weight, calibration.episode_weight
        near = (blend + a * np.maximum(neighbour, blend) + b * np.maximum(episode, blend)) / (1 + a + b)
        return near + calibration.subject_weight * subject

    def recall_at_10(calibration: Calibration, context: bool = True) -> float:
        total = 0.0
        for case in cases:
            top = set(np.argsort(-raws(calibration, case, context), kind="stable")[:10].tolist())
            total += len(top & set(case[0])) / len(case[0])
        return 100 * total / len(cases)

    in_use = calibration_for(MODEL)
    grid: list[list[str | float]] = []
    for lo, hi, w in GRID:
        calibration = Calibration(lo, hi, w, in_use.anchor)
        grid.append([f"{lo:.2f}", f"{hi:.2f}", f"{w:.2f}", round(recall_at_10(calibration), 1)])
    print(table(["dense floor", "dense ceiling", "dense weight", "R@10 (exhaustive, with context)"], grid))
    print(f"\nwithout the context signals: R@10 {recall_at_10(in_use, context=False):.1f}")

    evidence_raw, other_raw = [], []
    for case in cases:
        raw = raws(in_use, case)
        mask = np.zeros(len(raw), dtype=bool)
        mask[case[0]] = True
        evidence_raw.append(raw[mask])
        other_raw.append(raw[~mask])
    ev, other = np.concatenate(evidence_raw), np.concatenate(other_raw)
    suggested = {"evidence 1/3 quantile": float(np.quantile(ev, 1 / 3)), "others 97%": float(np.quantile(other, 0.97))}
    for anchor in (0.56, 0.57, 0.58, 0.59, 0.60):
        kept = 100 * float((ev > anchor).mean()), 100 * float((other > anchor).mean())
        print(f"anchor {anchor:.2f}: evidence kept {kept[0]:.1f}%, other turns kept {kept[1]:.1f}%")
    print(f"\ncalibration in use: {in_use}")
    print("raw with context: " + ", ".join(f"{k} {v:.3f}" for k, v in suggested.items()))

    def scored(raw: np.ndarray) -> np.ndarray:
        top = 1 + in_use.subject_weight
        return np.array([in_use.calibrated(float(r), in_use.context_anchor, top) for r in raw])

    ev_scores, other_scores = scored(ev), scored(other)
    passes = [
        [t, 100 * float((ev_scores >= t).mean()), 100 * float((other_scores >= t).mean())]
        for t in (0.5, 0.6, DEFAULT_THRESHOLD, 0.8, 0.9)
    ]
    print(table(["threshold", "evidence kept %", "other turns kept %"], passes))
    write_results(
        "calibration",
        {
            "grid": [
                {"floor": lo, "ceiling": hi, "weight": w, "R@10": row[3]}
                for (lo, hi, w), row in zip(GRID, grid, strict=True)
            ],
            "inUse": in_use.__dict__,
            "rawQuantiles": suggested,
            "passRates": [{"threshold": p[0], "evidenceKept": p[1], "otherKept": p[2]} for p in passes],
        },
    )


if __name__ == "__main__":
    main()
