"""Precision and recall of the duplicate hint on labelled pairs (a plain script).

Usage: .venv/bin/python tests/bench/measure_dedup_pairs.py [--eval /work/shared/eval]

tests/recall/data/dedup_pairs.jsonl holds 40 paraphrases (the same constraint,
fact or decision about a codebase said in other words, under another name) and
40 related-but-distinct pairs (the same subject, another claim). The pairs are
split in two halves by their subject (lines 1-2, 5-6, ... of each group, then
3-4, 7-8, ...; half the distinct pairs of each half share the other's wording), so a rule
chosen on the first half is judged on the second, never on the pairs it was
chosen on. Each rule is a hint or not per pair; a hint on a paraphrase is right,
on a distinct pair wrong. With `--eval`, each rule's false hints on LoCoMo as
`calibrate_dedup.py` counts them (each observation against the others of its
conversation, each turn against the earlier ones): a rule that catches more
paraphrases here must not hint many of those.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recall.dedup import probe, said_words  # noqa: E402
from recall.embedders.onnx import OnnxEmbedder  # noqa: E402
from recall.query import WORD_RE, fold, kept  # noqa: E402

PAIRS = Path(__file__).resolve().parents[1] / "recall" / "data" / "dedup_pairs.jsonl"


def words(text: str) -> set[str]:
    return {w for w in WORD_RE.findall(fold(text.lower())) if kept(w)}


def features(rows: list[dict[str, object]], embedder: OnnxEmbedder) -> list[dict[str, float]]:
    texts = []
    for row in rows:
        for name, text in (row["a"], row["b"]):  # type: ignore[misc]
            texts.append(probe("p", name, text, "").embedding_text())
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    out = []
    for i, row in enumerate(rows):
        a, b = vectors[2 * i], vectors[2 * i + 1]
        (na, ta), (nb, tb) = row["a"], row["b"]  # type: ignore[misc]
        wa, wb = said_words(ta, "").words, said_words(tb, "").words
        names_a, names_b = words(na.replace("-", " ")), words(nb.replace("-", " "))
        out.append({
            "same": float(row["label"] == "same"),
            "cos": float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))),
            "held": len(wa & wb) / max(len(wb), 1),
            "jaccard": len(wa & wb) / max(len(wa | wb), 1),
            "names": len(names_a & names_b) / max(len(names_a | names_b), 1),
        })  # fmt: skip
    return out


Rule = Callable[[dict[str, float]], bool]


def rules() -> dict[str, Rule]:
    table: dict[str, Rule] = {}
    for t in (0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.93):
        table[f"cos>={t:.2f}"] = lambda f, t=t: f["cos"] >= t
    table["current (0.93, or 0.80 + 90% words)"] = lambda f: (
        f["cos"] >= 0.93 or (f["cos"] >= 0.80 and f["held"] >= 0.9)
    )
    for t, w in ((0.80, 0.5), (0.80, 0.6), (0.75, 0.5), (0.85, 0.4), (0.85, 0.5)):
        table[f"cos>={t:.2f} and held>={w}"] = lambda f, t=t, w=w: f["cos"] >= t and f["held"] >= w
    for a, t in ((0.5, 1.0), (0.5, 1.05), (0.3, 0.95), (0.3, 1.0)):
        name = f"cos+{a}*jaccard>={t}"
        table[name] = lambda f, a=a, t=t: f["cos"] + a * f["jaccard"] >= t
    table["cos>=0.80 and names share a word"] = lambda f: f["cos"] >= 0.80 and f["names"] > 0
    return table


def score(rule: Rule, feats: list[dict[str, float]]) -> tuple[float, float, int]:
    hinted = [f for f in feats if rule(f)]
    right = sum(f["same"] for f in hinted)
    same = sum(f["same"] for f in feats)
    precision = right / len(hinted) if hinted else 1.0
    return precision, right / same, len(hinted) - int(right)


def pair(row: dict[str, str], other: dict[str, str], cosine: float) -> dict[str, float]:
    wa, wb = words(other["description"]), words(row["description"])
    na, nb = words(other["name"]), words(row["name"])
    return {"same": 0.0, "cos": cosine, "held": len(wa & wb) / max(len(wb), 1),
            "jaccard": len(wa & wb) / max(len(wa | wb), 1),
            "names": len(na & nb) / max(len(na | nb), 1)}  # fmt: skip


def locomo(eval_dir: Path, embedder: OnnxEmbedder) -> None:
    """The share of LoCoMo rows each rule hints (all false, `calibrate_dedup.py`)."""
    for name, earlier in (("memories_observation.jsonl", False), ("memories.jsonl", True)):
        path = eval_dir / "locomo" / name
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        texts = [
            probe(
                r["project"], r["name"], r["description"][:150], r["description"]
            ).embedding_text()
            for r in rows
        ]
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        hinted = dict.fromkeys(rules(), 0)
        for i, row in enumerate(rows):
            others = [j for j, other in enumerate(rows[: i if earlier else len(rows)])
                      if other["project"] == row["project"] and j != i]  # fmt: skip
            cosines = vectors[others] @ vectors[i] if others else []
            near = [(j, float(c)) for j, c in zip(others, cosines, strict=True) if c >= 0.7]
            close = [pair(row, rows[j], c) for j, c in near]
            for rule_name, rule in rules().items():
                hinted[rule_name] += any(rule(f) for f in close)
        for rule_name, n in hinted.items():
            print(f"LoCoMo {name}: {rule_name:40} false hints {n / len(rows):.2%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, help="also count false hints on LoCoMo there")
    args = parser.parse_args()
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line]
    same = [r for r in rows if r["label"] == "same"]
    distinct = [r for r in rows if r["label"] == "distinct"]
    fit = [r for i, r in enumerate(same + distinct) if i % 4 < 2]
    held_out = [r for i, r in enumerate(same + distinct) if i % 4 >= 2]
    embedder = OnnxEmbedder(threads=1)
    print(embedder.model)
    parts = {"fit": features(fit, embedder), "held out": features(held_out, embedder)}
    for part, feats in parts.items():
        cos_same = sorted(round(f["cos"], 3) for f in feats if f["same"])
        cos_diff = sorted(round(f["cos"], 3) for f in feats if not f["same"])
        print(f"{part}: paraphrase cosines {cos_same}")
        print(f"{part}: distinct cosines   {cos_diff}")
    print(f"{'rule':40} | fit P / R / false | held-out P / R / false")
    for name, rule in rules().items():
        (p1, r1, f1), (p2, r2, f2) = (score(rule, parts[k]) for k in ("fit", "held out"))
        print(f"{name:40} | {p1:.2f} / {r1:.2f} / {f1:2d} | {p2:.2f} / {r2:.2f} / {f2:2d}")
    if args.eval is not None:
        locomo(args.eval, embedder)


if __name__ == "__main__":
    main()
