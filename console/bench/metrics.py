"""Ranking metrics as the eval README defines them (binary gains), and latency percentiles."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

CUTOFF = 100  # MRR counts the first gold id within the top 100
METRICS = ("R@5", "R@10", "nDCG@10", "MRR")


def recall_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return len(gold.intersection(ranked[:k])) / len(gold)


def ndcg_at(ranked: Sequence[str], gold: set[str], k: int = 10) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if doc in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal


def first_rank(ranked: Sequence[str], gold: set[str], cutoff: int = CUTOFF) -> int | None:
    """1-based rank of the first gold id within the cutoff, or None."""
    return next((i for i, doc in enumerate(ranked[:cutoff], 1) if doc in gold), None)


def score(ranked: Sequence[str], gold: set[str]) -> dict[str, float]:
    rank = first_rank(ranked, gold)
    return {
        "R@5": recall_at(ranked, gold, 5),
        "R@10": recall_at(ranked, gold, 10),
        "nDCG@10": ndcg_at(ranked, gold, 10),
        "MRR": 1 / rank if rank else 0.0,
    }


def mean(rows: Iterable[Mapping[str, float]]) -> dict[str, float]:
    rows = list(rows)
    if not rows:
        return dict.fromkeys(METRICS, 0.0) | {"n": 0}
    out = {m: round(sum(r[m] for r in rows) / len(rows), 4) for m in METRICS}
    return out | {"n": len(rows)}


def breakdown(
    per_query: Sequence[Mapping[str, float]], categories: Sequence[str | None]
) -> dict[str, dict[str, float]]:
    """Overall, without category 5 (when categories exist), and per category."""
    out = {"overall": mean(per_query)}
    groups: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    for row, category in zip(per_query, categories, strict=True):
        if category is not None:
            groups[category].append(row)
    if groups:
        out["no-cat5"] = mean(r for r, c in zip(per_query, categories, strict=True) if c != "5")
        for category in sorted(groups):
            out[f"cat{category}"] = mean(groups[category])
    return out


BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20261130


def paired_bootstrap(
    ours: Sequence[Mapping[str, float]],
    theirs: Sequence[Mapping[str, float]],
    categories: Sequence[str | None],
    *,
    metrics: Sequence[str] = ("R@10", "nDCG@10"),
    samples: int = BOOTSTRAP_SAMPLES,
) -> dict[str, dict[str, float]]:
    """Mean of ours minus theirs per metric, with a 95% percentile bootstrap interval.

    Paired: each resample draws the same queries for both systems (Efron and
    Tibshirani 1993, ch. 13; Sakai 2006 for IR evaluation). Computed overall
    and, when categories exist, without category 5. Seeded, so a report is
    reproducible.
    """
    import numpy as np

    groups = {"overall": list(range(len(ours)))}
    if any(c is not None for c in categories):
        groups["no-cat5"] = [i for i, c in enumerate(categories) if c != "5"]
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    out: dict[str, dict[str, float]] = {}
    for group, rows in groups.items():
        if not rows:
            continue
        draws = rng.integers(0, len(rows), size=(samples, len(rows)))
        for metric in metrics:
            diff = np.array([ours[i][metric] - theirs[i][metric] for i in rows])
            means = diff[draws].mean(axis=1)
            low, high = np.percentile(means, [2.5, 97.5])
            out[f"{group} {metric}"] = {
                "diff": round(float(diff.mean()), 4),
                "low": round(float(low), 4),
                "high": round(float(high), 4),
            }
    return out


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 (nearest rank, ms to 3 places) and how many samples."""
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "n": len(ordered)}
