"""The quality bench ranks what Recall ranks (console/bench/quality.py).

A real import of a small set (the `planes` fixture: real tantivy, LanceDB and
model), the bench's core run over it, and `Engine.recall` asked the same queries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.bench import quality

pytestmark = pytest.mark.django_db

SHORT = 60  # short memories holding the query's word once
LONG = 4  # long ones holding it often: tantivy's own BM25 ranks them past 50


def _dataset(folder: Path) -> tuple[Path, Path]:
    """Memories where tantivy's own BM25 (b 0.75) puts the long texts below every
    short one while the BM25F re-score (b 0.4) puts them first: which ones a query
    ranks depends on how deep the full text is read before the re-score."""
    rows = [
        {"id": f"s{n}", "project": "p", "name": f"note {n}",
         "description": f"apple pie number {n} with tea"}
        for n in range(SHORT)
    ]  # fmt: skip
    filler = " ".join(f"word{k}" for k in range(40))
    rows += [
        {"id": f"l{n}", "project": "p", "name": f"orchard log {n}",
         "description": " ".join(f"apple {filler}" for _ in range(15))}
        for n in range(LONG)
    ]  # fmt: skip
    memories, queries = folder / "memories.jsonl", folder / "queries.jsonl"
    memories.write_text("".join(json.dumps(r) + "\n" for r in rows))
    asked = [
        {"id": "q1", "project": "p", "query": "apple", "gold": ["l0"]},
        {"id": "q2", "project": "p", "query": "apple pie", "gold": ["s3"]},
        {"id": "q3", "project": "p", "query": "apple orchard", "gold": ["l1"]},
    ]
    queries.write_text("".join(json.dumps(q) + "\n" for q in asked))
    return memories, queries


def test_the_core_ranks_what_engine_recall_returns(planes: Path) -> None:
    memories, queries = _dataset(planes)
    spec = {"dataset": str(memories), "queries": str(queries), "ablate": False,
            "skip_peers": True}  # fmt: skip

    body = quality.evaluate(spec, planes)

    check = body["engine_check"]
    assert check["checked"] == 3
    assert check["same_top10"] == 3, check.get("differ")


def _conversation(folder: Path) -> tuple[Path, Path]:
    """One session where the turn that asks shares the query's words and the turn
    after it, which answers, is the gold one."""
    said = [
        "Caroline: what got you into pottery classes?",
        "Melanie: my sister signed me up for them last spring.",
        "Caroline: pottery sounds relaxing.",
        "Melanie: I made a bowl in my pottery class.",
        "Caroline: I went hiking with my dog yesterday.",
    ]
    rows = [
        {"id": f"t{n}", "project": "p", "name": f"turn {n}", "description": text,
         "metadata": {"session": 1, "turn_index": n}}
        for n, text in enumerate(said)
    ]  # fmt: skip
    memories, queries = folder / "memories.jsonl", folder / "queries.jsonl"
    memories.write_text("".join(json.dumps(r) + "\n" for r in rows))
    asked = [{"id": "q1", "project": "p", "query": "what got Melanie into pottery classes",
              "gold": ["t1"]}]  # fmt: skip
    queries.write_text("".join(json.dumps(q) + "\n" for q in asked))
    return memories, queries


def test_the_asking_row_lowers_the_turn_that_asks(planes: Path) -> None:
    # `asking_turns` is on by default: the turn that asks falls below the answer, and
    # the ablations show it off (`default-noasking`) where turns end by asking.
    memories, queries = _conversation(planes)
    spec = {"dataset": str(memories), "queries": str(queries), "skip_peers": True}

    body = quality.evaluate(spec, planes)

    ranks = body["first_gold_rank"]
    assert ranks["default"] == [1]
    assert ranks["default-noasking"] == [2]  # the asking turn first
    assert "default-asking" not in ranks
